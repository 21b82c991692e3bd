//! How a domain's tables are named in PostgreSQL. Each domain is a schema, `d_<domain>`, holding
//! its record tables by their own names: no domain's relations share a namespace with another's
//! or with svc's own tables (in `public`), and the report route can set `search_path` to the
//! domain alone. PostgreSQL cuts identifiers at 63 bytes, silently; a name that would be cut is
//! shortened here instead, with a hash of the whole name after a `$` (which no domain, table or
//! field name may hold), so two long names never meet.

use crate::ids::TableRef;
use sha2::{Digest, Sha256};

/// PostgreSQL's longest identifier, in bytes.
const MAX_IDENTIFIER: usize = 63;

/// `name` as a PostgreSQL identifier of at most 63 bytes (names here are ASCII).
pub fn short(name: &str) -> String {
    if name.len() <= MAX_IDENTIFIER {
        return name.to_string();
    }
    let hash = Sha256::digest(name.as_bytes());
    format!(
        "{}${}",
        &name[..MAX_IDENTIFIER - 17],
        hex::encode(&hash[..8])
    )
}

/// A validated identifier (no `"` in it) in double quotes.
pub fn quoted(name: &str) -> String {
    debug_assert!(!name.contains('"'));
    format!("\"{name}\"")
}

/// The schema of a domain's relations, quoted.
pub fn schema(domain: &str) -> String {
    quoted(&short(&format!("d_{domain}")))
}

/// The schema's name unquoted, as the catalogs hold it.
pub fn schema_name(domain: &str) -> String {
    short(&format!("d_{domain}"))
}

/// A record table, schema-qualified and quoted.
pub fn table(table: &TableRef) -> String {
    format!("{}.{}", schema(&table.domain), quoted(&table.table))
}

/// An index of a record table (indexes live in their table's schema), quoted, unqualified.
pub fn index(table: &TableRef, suffix: &str) -> String {
    quoted(&short(&format!("{}{suffix}", table.table)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_shortened_distinctly_and_short_ones_kept() {
        assert_eq!(short("items__created"), "items__created");
        let a = short(&format!("{}a", "x".repeat(70)));
        let b = short(&format!("{}b", "x".repeat(70)));
        assert_eq!(a.len(), 63);
        assert_ne!(a, b);
        assert!(a.contains('$'));
        let t = TableRef::new("acme", "items").unwrap();
        assert_eq!(table(&t), "\"d_acme\".\"items\"");
    }
}
