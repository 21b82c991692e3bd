//! Bracket syntax of parameter keys (`filter[a][eq]`) and bracketed sort values (`[a][desc]`).

/// Splits a key into its name (the text before the first `[`) and the bracketed rest.
pub(super) fn split_name(key: &str) -> (&str, &str) {
    key.split_at(key.find('[').unwrap_or(key.len()))
}

/// Parses `[x][y]...` exactly into its contents (`x`, `y`); an empty input yields no parts.
/// Contents may not contain `[`; nothing may follow the last `]`.
pub(super) fn brackets(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (part, after) = one_bracket(rest)?;
        parts.push(part);
        rest = after;
    }
    Ok(parts)
}

/// Parses one leading `[...]`, returning its content and the text after it.
fn one_bracket(text: &str) -> Result<(&str, &str), String> {
    let Some(inner) = text.strip_prefix('[') else {
        return Err(format!("unexpected text `{text}` after `]`"));
    };
    let Some(end) = inner.find(']') else {
        return Err(format!("missing `]` after `{text}`"));
    };
    let content = &inner[..end];
    if content.contains('[') {
        return Err(format!("unexpected `[` inside `[{content}]`"));
    }
    Ok((content, &inner[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_name_at_first_bracket() {
        assert_eq!(split_name("filter[a][eq]"), ("filter", "[a][eq]"));
        assert_eq!(split_name("limit"), ("limit", ""));
        assert_eq!(split_name("[a]"), ("", "[a]"));
        assert_eq!(split_name(""), ("", ""));
    }

    #[test]
    fn parses_exact_brackets() {
        assert_eq!(brackets("").unwrap(), Vec::<&str>::new());
        assert_eq!(brackets("[a]").unwrap(), ["a"]);
        assert_eq!(
            brackets("[a.b][>=][number]").unwrap(),
            ["a.b", ">=", "number"]
        );
        assert_eq!(brackets("[][NOT IN]").unwrap(), ["", "NOT IN"]);
    }

    #[test]
    fn rejects_unclosed_bracket() {
        assert_eq!(brackets("[a").unwrap_err(), "missing `]` after `[a`");
        assert_eq!(brackets("[a][eq").unwrap_err(), "missing `]` after `[eq`");
    }

    #[test]
    fn rejects_text_after_last_bracket() {
        assert_eq!(
            brackets("[a]x").unwrap_err(),
            "unexpected text `x` after `]`"
        );
        assert_eq!(
            brackets("[a] [b]").unwrap_err(),
            "unexpected text ` [b]` after `]`"
        );
        assert_eq!(
            brackets("[a]]").unwrap_err(),
            "unexpected text `]` after `]`"
        );
    }

    #[test]
    fn rejects_nested_bracket() {
        assert_eq!(
            brackets("[a[b]").unwrap_err(),
            "unexpected `[` inside `[a[b]`"
        );
    }
}
