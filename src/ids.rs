//! Identifiers of the platform and their validation: domain names, table names, record keys
//! and full RecordIDs (`<domain>.<table>:<key>`). Everything here that passes validation is safe
//! to embed in SQL as a quoted identifier.

use rand::distributions::{Alphanumeric, DistString};
use std::fmt;

/// The built-in administrative domain, used when no `Domain` header is sent.
pub const ADMIN_DOMAIN: &str = "svc_admin";

/// Length of generated record keys.
const KEY_LEN: usize = 20;

/// `^[a-z][a-z0-9_]{0,62}$`
pub fn is_domain_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z'))
        && s.len() <= 63
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `^[A-Za-z_][A-Za-z0-9_]{0,62}$`
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && s.len() <= 63
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `^[A-Za-z0-9_-]{1,128}$`
/// Names of functions and flows (`what`): 1 to 64 letters, digits, `_` or `-`, so they fit in
/// a URL path segment as they are.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} name `{name}` must be 1 to 64 letters, digits, `_` or `-`"
        ))
    }
}

pub fn is_record_key(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A fresh random record key: 20 lowercase alphanumerics.
pub fn new_key() -> String {
    Alphanumeric
        .sample_string(&mut rand::thread_rng(), KEY_LEN)
        .to_ascii_lowercase()
}

/// Parses `domains:<name>` into the domain name.
pub fn parse_domain_header(value: &str) -> Result<&str, String> {
    let name = value
        .strip_prefix("domains:")
        .ok_or_else(|| format!("invalid Domain header `{value}`: expected domains:<name>"))?;
    if is_domain_name(name) {
        Ok(name)
    } else {
        Err(format!(
            "invalid Domain header `{value}`: the name must match [a-z][a-z0-9_]{{0,62}}"
        ))
    }
}

/// A validated table reference inside a domain.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableRef {
    pub domain: String,
    pub table: String,
}

impl TableRef {
    pub fn new(domain: &str, table: &str) -> Result<TableRef, String> {
        if !is_domain_name(domain) {
            return Err(format!("invalid domain name `{domain}`"));
        }
        if !is_identifier(table) {
            return Err(format!(
                "invalid table name `{table}`: it must match [A-Za-z_][A-Za-z0-9_]{{0,62}}"
            ));
        }
        Ok(TableRef {
            domain: domain.to_string(),
            table: table.to_string(),
        })
    }

    /// The storage name `<domain>.<table>`.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.domain, self.table)
    }

    pub fn record_id(&self, key: &str) -> String {
        format!("{}.{}:{}", self.domain, self.table, key)
    }
}

/// A parsed full RecordID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordId {
    pub table: TableRef,
    pub key: String,
}

impl RecordId {
    pub fn parse(s: &str) -> Result<RecordId, String> {
        let bad = || format!("invalid record id `{s}`: expected <domain>.<table>:<key>");
        let (qualified, key) = s.split_once(':').ok_or_else(bad)?;
        let (domain, table) = qualified.split_once('.').ok_or_else(bad)?;
        if !is_record_key(key) {
            return Err(bad());
        }
        let table = TableRef::new(domain, table).map_err(|_| bad())?;
        Ok(RecordId {
            table,
            key: key.to_string(),
        })
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.table.record_id(&self.key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_names() {
        assert!(is_domain_name("acme"));
        assert!(is_domain_name("svc_admin"));
        assert!(!is_domain_name("Acme"));
        assert!(!is_domain_name("1acme"));
        assert!(!is_domain_name(""));
        assert!(!is_domain_name("a-b"));
        assert!(!is_domain_name(&"a".repeat(64)));
    }

    #[test]
    fn identifiers_reject_sql() {
        for bad in ["x;DROP TABLE y", "a'--", "\"q\"", "a b", "", "1a", "a.b"] {
            assert!(!is_identifier(bad), "{bad}");
        }
        assert!(is_identifier("_products_2"));
    }

    #[test]
    fn domain_header() {
        assert_eq!(parse_domain_header("domains:acme"), Ok("acme"));
        assert!(parse_domain_header("acme").is_err());
        assert!(parse_domain_header("domains:").is_err());
        assert!(parse_domain_header("domains:Bad!").is_err());
    }

    #[test]
    fn record_ids() {
        let id = RecordId::parse("acme.products:k3j9").unwrap();
        assert_eq!(id.table.domain, "acme");
        assert_eq!(id.table.table, "products");
        assert_eq!(id.key, "k3j9");
        assert_eq!(id.to_string(), "acme.products:k3j9");
        for bad in [
            "acme.products",
            "acme:k",
            "acme.pro ducts:k",
            "acme.p:",
            "acme.p:a:b",
            "ACME.p:k",
        ] {
            assert!(RecordId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn generated_keys() {
        let k = new_key();
        assert_eq!(k.len(), 20);
        assert!(is_record_key(&k));
        assert!(k.chars().all(|c| !c.is_ascii_uppercase()));
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A RecordID made of valid parts parses to those parts and prints as it was written.
        #[test]
        fn valid_record_ids_parse_and_print_back(
            domain in "[a-z][a-z0-9_]{0,20}",
            table in "[A-Za-z_][A-Za-z0-9_]{0,20}",
            key in "[A-Za-z0-9_-]{1,40}",
        ) {
            let text = format!("{domain}.{table}:{key}");
            let id = RecordId::parse(&text).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&id.table.domain, &domain);
            prop_assert_eq!(&id.table.table, &table);
            prop_assert_eq!(&id.key, &key);
            prop_assert_eq!(id.to_string(), text);
        }

        /// Whatever is accepted prints back to the same text; nothing panics.
        #[test]
        fn any_text_either_fails_or_prints_back(text in ".{0,60}") {
            if let Ok(id) = RecordId::parse(&text) {
                prop_assert_eq!(id.to_string(), text.clone());
            }
            let _ = parse_domain_header(&text);
        }
    }
}
