//! `sort` parameters: each occurrence is one key. Value forms `[<field>][asc|desc]`,
//! `[<field>]`, `<field>`, `<field>:asc|desc`, `-<field>`; key form `sort[<field>]=asc|desc`.

use super::key;
use super::path::FieldPath;
use super::{QueryError, SortKey};

/// Parses one `sort` occurrence; `brackets` are the contents of the key's brackets.
pub(super) fn parse_sort(key: &str, brackets: &[&str], raw: &str) -> Result<SortKey, QueryError> {
    let parsed = match brackets {
        [] => from_value(raw),
        [field] => from_key(field, raw),
        [_, extra, ..] => Err(format!(
            "unexpected `[{extra}]`; expected `sort[<field>]=asc|desc`"
        )),
    };
    parsed.map_err(|reason| QueryError::new(key, reason))
}

/// `sort[<field>]=asc|desc`.
fn from_key(field: &str, raw: &str) -> Result<SortKey, String> {
    let field = FieldPath::parse(field)?;
    let descending = direction(raw)?;
    Ok(SortKey { field, descending })
}

/// Parses the value of a plain `sort=` parameter.
fn from_value(raw: &str) -> Result<SortKey, String> {
    if raw.starts_with('[') {
        return from_brackets(raw);
    }
    if let Some(field) = raw.strip_prefix('-') {
        return sort_key(field, true);
    }
    match raw.split_once(':') {
        Some((field, dir)) => sort_key(field, direction(dir)?),
        None => sort_key(raw, false),
    }
}

/// `[<field>]` or `[<field>][asc|desc]`.
fn from_brackets(raw: &str) -> Result<SortKey, String> {
    match key::brackets(raw)?[..] {
        [field] => sort_key(field, false),
        [field, dir] => sort_key(field, direction(dir)?),
        _ => Err(format!(
            "`{raw}` is not a sort key; expected `[<field>]` or `[<field>][asc|desc]`"
        )),
    }
}

fn sort_key(field: &str, descending: bool) -> Result<SortKey, String> {
    let field = FieldPath::parse(field)?;
    Ok(SortKey { field, descending })
}

/// `asc` → false, `desc` → true, case-insensitively.
fn direction(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "asc" => Ok(false),
        "desc" => Ok(true),
        "" => Err("missing sort direction; expected `asc` or `desc`".into()),
        _ => Err(format!(
            "unknown sort direction `{text}`; expected `asc` or `desc`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{assert_fails, query};

    fn one(key: &str, value: &str) -> (String, bool) {
        let sort = query(&[(key, value)]).sort;
        assert_eq!(sort.len(), 1, "{key}={value}");
        (sort[0].field.as_dotted(), sort[0].descending)
    }

    #[test]
    fn bracket_value_forms() {
        assert_eq!(one("sort", "[a]"), ("a".into(), false));
        assert_eq!(one("sort", "[a][asc]"), ("a".into(), false));
        assert_eq!(one("sort", "[a.b][desc]"), ("a.b".into(), true));
        assert_eq!(one("sort", "[a][DESC]"), ("a".into(), true));
        assert_eq!(one("sort", "[a][Asc]"), ("a".into(), false));
    }

    #[test]
    fn plain_value_forms() {
        assert_eq!(one("sort", "a"), ("a".into(), false));
        assert_eq!(one("sort", "a.b"), ("a.b".into(), false));
        assert_eq!(one("sort", "-created_dt"), ("created_dt".into(), true));
        assert_eq!(one("sort", "a:asc"), ("a".into(), false));
        assert_eq!(one("sort", "a:desc"), ("a".into(), true));
        assert_eq!(one("sort", "a.b:DESC"), ("a.b".into(), true));
    }

    #[test]
    fn key_form() {
        assert_eq!(one("sort[a]", "asc"), ("a".into(), false));
        assert_eq!(one("sort[a.b]", "desc"), ("a.b".into(), true));
        assert_eq!(one("sort[a]", "DeSc"), ("a".into(), true));
    }

    #[test]
    fn keys_keep_their_order() {
        let pairs = [
            ("sort", "-b"),
            ("sort[a]", "asc"),
            ("sort", "[c][desc]"),
            ("sort", "d"),
        ];
        let sort = query(&pairs).sort;
        let got: Vec<(String, bool)> = sort
            .iter()
            .map(|k| (k.field.as_dotted(), k.descending))
            .collect();
        let expected = [("b", true), ("a", false), ("c", true), ("d", false)];
        let expected: Vec<(String, bool)> =
            expected.iter().map(|(f, d)| (f.to_string(), *d)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn bad_directions_are_rejected() {
        assert_fails("sort", "a:up", "unknown sort direction `up`");
        assert_fails("sort", "a:", "missing sort direction");
        assert_fails("sort", "[a][down]", "unknown sort direction `down`");
        assert_fails("sort", "[a][]", "missing sort direction");
        assert_fails(
            "sort[a]",
            "descending",
            "unknown sort direction `descending`",
        );
        assert_fails("sort[a]", "", "missing sort direction");
    }

    #[test]
    fn bad_fields_are_rejected() {
        assert_fails("sort", "", "empty field path");
        assert_fails("sort", "-", "empty field path");
        assert_fails("sort", "[]", "empty field path");
        assert_fails("sort[]", "asc", "empty field path");
        assert_fails("sort", "a,b", "`a,b` is not a valid field path");
        assert_fails("sort", "-a:desc", "`a:desc` is not a valid field path");
        assert_fails("sort", "--a", "`-a` is not a valid field path");
        assert_fails("sort", " a", "` a` is not a valid field path");
        assert_fails("sort", "a:b:desc", "unknown sort direction `b:desc`");
        assert_fails(
            "sort",
            "a;drop table x",
            "`a;drop table x` is not a valid field path",
        );
        assert_fails("sort", "a'--", "`a'--` is not a valid field path");
        assert_fails("sort", "a b:desc", "`a b` is not a valid field path");
        assert_fails("sort[a b]", "asc", "`a b` is not a valid field path");
    }

    #[test]
    fn bad_bracket_syntax_is_rejected() {
        assert_fails("sort", "[a", "missing `]` after `[a`");
        assert_fails("sort", "[a][desc]x", "unexpected text `x` after `]`");
        assert_fails("sort", "[a][desc][x]", "`[a][desc][x]` is not a sort key");
        assert_fails("sort[a][desc]", "", "unexpected `[desc]`");
        assert_fails("sort[a", "asc", "missing `]` after `[a`");
        assert_fails("sort[a]x", "asc", "unexpected text `x` after `]`");
    }
}
