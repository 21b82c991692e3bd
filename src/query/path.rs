//! Field paths and identifiers: the only record field names that leave this module, so every
//! segment is checked against `^[A-Za-z_][A-Za-z0-9_]{0,62}$` and callers may embed them.

/// Most segments a dot path may have.
const MAX_SEGMENTS: usize = 8;
/// Longest identifier, in bytes (identifiers are ASCII).
const MAX_IDENT_LEN: usize = 63;

/// A dot path into a record, every segment validated: ^[A-Za-z_][A-Za-z0-9_]{0,62}$ ; at most 8 segments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldPath(Vec<String>);

impl FieldPath {
    /// Parses `a.b.c`; the error is a short phrase naming what was wrong.
    pub fn parse(s: &str) -> Result<FieldPath, String> {
        if s.is_empty() {
            return Err("empty field path".into());
        }
        let segments: Vec<&str> = s.split('.').collect();
        if segments.len() > MAX_SEGMENTS {
            return Err(format!(
                "`{s}` is not a valid field path: more than {MAX_SEGMENTS} segments"
            ));
        }
        if !segments.iter().all(|segment| is_identifier(segment)) {
            return Err(format!("`{s}` is not a valid field path"));
        }
        Ok(FieldPath(segments.into_iter().map(String::from).collect()))
    }

    /// Splits off the last segment (`a.b.c` → `a.b` and `c`); `None` for a single segment.
    pub fn pop_last(&mut self) -> Option<String> {
        if self.0.len() < 2 {
            return None;
        }
        self.0.pop()
    }

    /// The segments joined with dots: `a.b.c`.
    pub fn as_dotted(&self) -> String {
        self.0.join(".")
    }
}

/// Whether `s` matches `^[A-Za-z_][A-Za-z0-9_]{0,62}$`.
pub(super) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let starts_well = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_');
    starts_well && s.len() <= MAX_IDENT_LEN && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses a comma list of identifiers (`fields`, `expand`); items are trimmed.
pub(super) fn parse_identifiers(value: &str) -> Result<Vec<String>, String> {
    if value.trim().is_empty() {
        return Err("empty list; expected comma-separated field names".into());
    }
    value
        .split(',')
        .map(|item| identifier(item.trim(), value))
        .collect()
}

fn identifier(item: &str, list: &str) -> Result<String, String> {
    if item.is_empty() {
        return Err(format!("empty item in `{list}`"));
    }
    if !is_identifier(item) {
        return Err(format!("`{item}` is not a valid field name"));
    }
    Ok(item.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_and_dotted_paths() {
        let path = FieldPath::parse("a").unwrap();
        assert_eq!(path.0, ["a"]);
        let path = FieldPath::parse("_meta.Sensor_1.value9").unwrap();
        assert_eq!(path.0, ["_meta", "Sensor_1", "value9"]);
        assert_eq!(path.as_dotted(), "_meta.Sensor_1.value9");
    }

    #[test]
    fn accepts_eight_segments_and_rejects_nine() {
        let eight = "a.b.c.d.e.f.g.h";
        assert_eq!(FieldPath::parse(eight).unwrap().0.len(), 8);
        let err = FieldPath::parse("a.b.c.d.e.f.g.h.i").unwrap_err();
        assert!(
            err.contains("`a.b.c.d.e.f.g.h.i`") && err.contains("8 segments"),
            "{err}"
        );
    }

    #[test]
    fn accepts_63_byte_segment_and_rejects_64() {
        let ok = format!("a{}", "b".repeat(62));
        assert!(FieldPath::parse(&ok).is_ok());
        let long = format!("a{}", "b".repeat(63));
        let err = FieldPath::parse(&long).unwrap_err();
        assert!(err.contains(&long), "{err}");
    }

    #[test]
    fn rejects_malformed_paths() {
        for bad in [
            "price..x", ".a", "a.", ".", "1a", "a.1b", "a-b", "a$", "é", "a.b c", " a", "a ",
        ] {
            let err = FieldPath::parse(bad).unwrap_err();
            assert_eq!(err, format!("`{bad}` is not a valid field path"));
        }
        assert_eq!(FieldPath::parse("").unwrap_err(), "empty field path");
    }

    #[test]
    fn rejects_sql_injection_looking_paths() {
        for bad in [
            "a;drop table x",
            "a'--",
            "a b",
            "a')",
            "a\"",
            "a/*",
            "$.a",
            "a[0]",
            "a\0",
        ] {
            let err = FieldPath::parse(bad).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn identifier_rules() {
        assert!(is_identifier("_"));
        assert!(is_identifier("A9_z"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("9a"));
        assert!(!is_identifier("a.b"));
    }

    #[test]
    fn identifier_lists_are_trimmed() {
        assert_eq!(parse_identifiers(" a , b_2,c").unwrap(), ["a", "b_2", "c"]);
    }

    #[test]
    fn identifier_lists_reject_empty_and_invalid_items() {
        assert!(parse_identifiers("").unwrap_err().starts_with("empty list"));
        assert!(parse_identifiers(" ")
            .unwrap_err()
            .starts_with("empty list"));
        assert_eq!(
            parse_identifiers("a,,b").unwrap_err(),
            "empty item in `a,,b`"
        );
        assert_eq!(parse_identifiers("a, ").unwrap_err(), "empty item in `a, `");
        assert_eq!(
            parse_identifiers("a,b.c").unwrap_err(),
            "`b.c` is not a valid field name"
        );
        assert_eq!(
            parse_identifiers("a'--").unwrap_err(),
            "`a'--` is not a valid field name"
        );
    }
}
