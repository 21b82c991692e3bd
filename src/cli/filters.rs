//! `--filter 'field op value'`, `--or-filter` and `--sort field[:dir]` from the command line,
//! turned into the server's query pairs (`filter[f][op][type]=v`, `filter_or[n][…]`,
//! `sort=[f][dir]`). The field may carry a type (`price:number > 10`); a value in quotes is
//! forced to a string; a bare `null` means the null type; otherwise the server infers the type.

use super::error::{CliError, CliResult};
use super::ListArgs;

/// Type words the server accepts in `filter[..][..][<type>]`.
const TYPES: [&str; 6] = ["string", "number", "boolean", "date", "null", "object"];

/// Characters of the symbol operators: an unquoted value may not start with one.
const OPERATOR_CHARS: [char; 8] = ['=', '!', '<', '>', '~', '?', '*', '@'];

/// One parsed condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub field: String,
    /// The operator as sent on the wire (`eq`, `gt`, `nin`, `~`, `CONTAINSALL`, …).
    pub op: String,
    pub ty: Option<String>,
    pub value: String,
}

impl Condition {
    /// The key after `filter` / `filter_or[n]`: `[field][op]` or `[field][op][type]`.
    fn brackets(&self) -> String {
        match &self.ty {
            Some(ty) => format!("[{}][{}][{ty}]", self.field, self.op),
            None => format!("[{}][{}]", self.field, self.op),
        }
    }
}

fn usage(expr: &str, why: impl std::fmt::Display) -> CliError {
    CliError::usage(format!(
        "invalid filter `{expr}`: {why} (expected 'field op value', e.g. 'price > 10' or \
         'name = \"Pump 1\"'; ops: = == != > >= < <= ~ !~ ?~ *~ ?= *= @@ eq ne gt gte lt lte \
         contains containsnot containsall containsany containsnone in nin \"not in\" inside \
         notinside allinside anyinside noneinside, and array_where_<op> on `array.member`)"
    ))
}

/// Parses `'field op value'`.
pub fn parse_condition(expr: &str) -> CliResult<Condition> {
    let text = expr.trim_start();
    let field_end = text
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | ':' | '$')))
        .unwrap_or(text.len());
    let (field_part, rest) = text.split_at(field_end);
    if field_part.is_empty() {
        return Err(usage(expr, "missing field name"));
    }
    let (field, ty) = match field_part.rsplit_once(':') {
        Some((f, t)) => {
            let t = t.to_ascii_lowercase();
            if !TYPES.contains(&t.as_str()) {
                return Err(usage(
                    expr,
                    format!("unknown type `{t}` (types: {})", TYPES.join(" ")),
                ));
            }
            (f.to_string(), Some(t))
        }
        None => (field_part.to_string(), None),
    };
    if field.is_empty() {
        return Err(usage(expr, "missing field name"));
    }
    let (op, rest) =
        wire_op(rest.trim_start()).ok_or_else(|| usage(expr, "missing or unknown operator"))?;
    let raw = rest.trim();
    if unquote(raw).is_none() && raw.starts_with(OPERATOR_CHARS) {
        // `price >> 5` is a typo far more often than a comparison with the text `> 5`.
        let head = expr[..expr.len() - rest.len()].trim_end();
        return Err(usage(
            expr,
            format!(
                "the value `{raw}` starts with an operator character; quote it if it is \
                 meant as text ('{head} \"{raw}\"')"
            ),
        ));
    }
    let (value, ty) = match unquote(raw) {
        Some(inner) if ty.is_none() => (inner.to_string(), Some("string".to_string())),
        Some(inner) => (inner.to_string(), ty),
        None if ty.is_none() && raw == "null" => (String::new(), Some("null".to_string())),
        None => (raw.to_string(), ty),
    };
    Ok(Condition {
        field,
        op,
        ty,
        value,
    })
}

/// The wire operator at the start of `text` (`array_where_<op>` included) and what follows.
fn wire_op(text: &str) -> Option<(String, &str)> {
    const ARRAY_WHERE: &str = "array_where_";
    match text.get(..ARRAY_WHERE.len()) {
        Some(head) if head.eq_ignore_ascii_case(ARRAY_WHERE) => {
            let (op, rest) = parse_op(&text[ARRAY_WHERE.len()..])?;
            Some((format!("ARRAY_WHERE_{op}"), rest))
        }
        _ => parse_op(text).map(|(op, rest)| (op.to_string(), rest)),
    }
}

/// The operator at the start of `text` and what follows it.
fn parse_op(text: &str) -> Option<(&'static str, &str)> {
    // Longest symbols first, so `>=` is not read as `>`.
    const SYMBOLS: [(&str, &str); 14] = [
        (">=", "gte"),
        ("<=", "lte"),
        ("!=", "ne"),
        ("==", "eq"),
        ("!~", "!~"),
        ("?~", "?~"),
        ("*~", "*~"),
        ("?=", "?="),
        ("*=", "*="),
        ("@@", "@@"),
        ("=", "eq"),
        (">", "gt"),
        ("<", "lt"),
        ("~", "~"),
    ];
    for (symbol, word) in SYMBOLS {
        if let Some(rest) = text.strip_prefix(symbol) {
            return Some((word, rest));
        }
    }
    let word_end = text
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (word, rest) = text.split_at(word_end);
    let op = match word.to_ascii_lowercase().as_str() {
        "eq" => "eq",
        "ne" => "ne",
        "gt" => "gt",
        "gte" => "gte",
        "lt" => "lt",
        "lte" => "lte",
        "contains" => "contains",
        "containsnot" => "CONTAINSNOT",
        "containsall" => "CONTAINSALL",
        "containsany" => "CONTAINSANY",
        "containsnone" => "CONTAINSNONE",
        "in" => "in",
        "nin" => "nin",
        "inside" => "INSIDE",
        "notinside" => "NOTINSIDE",
        "allinside" => "ALLINSIDE",
        "anyinside" => "ANYINSIDE",
        "noneinside" => "NONEINSIDE",
        "not" => {
            let rest = rest.trim_start();
            let after = rest.get(..2).filter(|w| w.eq_ignore_ascii_case("in"))?;
            let rest = &rest[after.len()..];
            return rest
                .starts_with(|c: char| c.is_whitespace())
                .then_some(("nin", rest))
                .or_else(|| rest.is_empty().then_some(("nin", rest)));
        }
        _ => return None,
    };
    // A word operator must be followed by whitespace or the end (`in` vs `index`).
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    Some((op, rest))
}

/// The inside of `"…"` or `'…'`.
fn unquote(raw: &str) -> Option<&str> {
    let first = raw.chars().next()?;
    if raw.len() >= 2 && matches!(first, '"' | '\'') && raw.ends_with(first) {
        Some(&raw[1..raw.len() - 1])
    } else {
        None
    }
}

/// `name`, `name:asc`, `name:desc` or `-name` → the value of `sort=[name][dir]`.
pub fn parse_sort(text: &str) -> CliResult<String> {
    let text = text.trim();
    let (field, dir) = if let Some(f) = text.strip_prefix('-') {
        (f, "desc")
    } else {
        match text.rsplit_once(':') {
            Some((f, d)) if d.eq_ignore_ascii_case("asc") => (f, "asc"),
            Some((f, d)) if d.eq_ignore_ascii_case("desc") => (f, "desc"),
            Some((_, d)) => {
                return Err(CliError::usage(format!(
                    "invalid sort `{text}`: direction `{d}` is neither asc nor desc"
                )))
            }
            None => (text, "asc"),
        }
    };
    if field.is_empty() || field.contains(['[', ']']) {
        return Err(CliError::usage(format!(
            "invalid sort `{text}`: expected field[:asc|desc]"
        )));
    }
    Ok(format!("[{field}][{dir}]"))
}

/// The query pairs of filters and an OR group.
pub fn filter_pairs(filters: &[String], or_filters: &[String]) -> CliResult<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    for expr in filters {
        let c = parse_condition(expr)?;
        pairs.push((format!("filter{}", c.brackets()), c.value));
    }
    for (n, expr) in or_filters.iter().enumerate() {
        let c = parse_condition(expr)?;
        pairs.push((format!("filter_or[{n}]{}", c.brackets()), c.value));
    }
    Ok(pairs)
}

/// The query pairs of a list: filters, sort keys, fields and expand.
pub fn list_pairs(args: &ListArgs) -> CliResult<Vec<(String, String)>> {
    let mut pairs = filter_pairs(&args.filters, &args.or_filters)?;
    for s in &args.sort {
        pairs.push(("sort".into(), parse_sort(s)?));
    }
    if let Some(f) = &args.fields {
        pairs.push(("fields".into(), f.clone()));
    }
    if let Some(e) = &args.expand {
        pairs.push(("expand".into(), e.clone()));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(expr: &str) -> (String, String, Option<String>, String) {
        let c = parse_condition(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        (c.field, c.op, c.ty, c.value)
    }

    fn t(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn a_value_starting_with_an_operator_character_must_be_quoted() {
        for expr in [
            "price >> 5",
            "price => 5",
            "name = =x",
            "tags ?~ *a",
            "n <= <3",
        ] {
            let err = parse_condition(expr).expect_err(expr).to_string();
            assert!(
                err.contains("starts with an operator character"),
                "{expr}: {err}"
            );
        }
        assert_eq!(
            cond(r#"price > "> 5""#),
            ("price".into(), "gt".into(), t("string"), "> 5".into())
        );
        assert_eq!(
            cond("price:number > '>5'"),
            ("price".into(), "gt".into(), t("number"), ">5".into())
        );
        assert_eq!(cond("price >= 5").3, "5");
    }

    #[test]
    fn sdk_operators() {
        for (expr, op) in [
            ("name ~ pump", "~"),
            ("name !~ pump", "!~"),
            ("tags ?~ nor", "?~"),
            ("tags *~ o", "*~"),
            ("tags ?= north", "?="),
            ("tags *= south", "*="),
            ("name @@ main pump", "@@"),
            ("tags containsall a,b", "CONTAINSALL"),
            ("tags CONTAINSNONE a", "CONTAINSNONE"),
            ("kind inside a,b", "INSIDE"),
            ("tags noneinside a", "NONEINSIDE"),
            ("parts.qty array_where_>= 3", "ARRAY_WHERE_gte"),
            ("parts.sku ARRAY_WHERE_contains A", "ARRAY_WHERE_contains"),
        ] {
            assert_eq!(cond(expr).1, op, "{expr}");
        }
        assert_eq!(cond("name @@ main pump").3, "main pump");
        assert!(parse_condition("a array_where_ 1").is_err());
    }

    #[test]
    fn symbols_and_words() {
        assert_eq!(
            cond("status = active"),
            ("status".into(), "eq".into(), None, "active".into())
        );
        assert_eq!(
            cond("price > 10"),
            ("price".into(), "gt".into(), None, "10".into())
        );
        assert_eq!(
            cond("price>=10"),
            ("price".into(), "gte".into(), None, "10".into())
        );
        assert_eq!(cond("a != b").1, "ne");
        assert_eq!(cond("a == b").1, "eq");
        assert_eq!(cond("a <= 1").1, "lte");
        assert_eq!(cond("a < 1").1, "lt");
        assert_eq!(cond("name CONTAINS pu").1, "contains");
        assert_eq!(
            cond("s in a,b"),
            ("s".into(), "in".into(), None, "a,b".into())
        );
        assert_eq!(
            cond("s NOT IN a,b"),
            ("s".into(), "nin".into(), None, "a,b".into())
        );
        assert_eq!(cond("s nin [\"a\"]").3, "[\"a\"]");
        assert_eq!(cond("site.name eq x").0, "site.name");
    }

    #[test]
    fn values_keep_spaces_quotes_and_equals() {
        assert_eq!(cond("note = a = b").3, "a = b");
        assert_eq!(cond("note = x=y&z").3, "x=y&z");
        assert_eq!(cond("name = Pump  one ").3, "Pump  one");
        assert_eq!(cond("name = O'Brien").3, "O'Brien");
        assert_eq!(
            cond("name = \"  padded \""),
            ("name".into(), "eq".into(), t("string"), "  padded ".into())
        );
        assert_eq!(
            cond("code = '007'"),
            ("code".into(), "eq".into(), t("string"), "007".into())
        );
        assert_eq!(cond("a = \"say \"hi\"\"").3, "say \"hi\"");
    }

    #[test]
    fn types() {
        assert_eq!(
            cond("code:string = 007"),
            ("code".into(), "eq".into(), t("string"), "007".into())
        );
        assert_eq!(cond("p:NUMBER > 1").2, t("number"));
        assert_eq!(
            cond("d:date >= 2026-01-01T00:00:00Z").3,
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(
            cond("x = null"),
            ("x".into(), "eq".into(), t("null"), String::new())
        );
        assert_eq!(cond("x = \"null\"").2, t("string"));
        assert_eq!(cond("x = ").3, "");
    }

    #[test]
    fn errors() {
        for bad in [
            "",
            "= 1",
            "price",
            "price %% 1",
            "price index 1",
            "p:float = 1",
            ":number = 1",
            "s not 1",
        ] {
            let err = parse_condition(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn sorts() {
        assert_eq!(parse_sort("name").unwrap(), "[name][asc]");
        assert_eq!(parse_sort("name:desc").unwrap(), "[name][desc]");
        assert_eq!(parse_sort("name:ASC").unwrap(), "[name][asc]");
        assert_eq!(parse_sort("-price").unwrap(), "[price][desc]");
        assert!(parse_sort("name:up").is_err());
        assert!(parse_sort("").is_err());
    }

    #[test]
    fn pairs() {
        let args = ListArgs {
            filters: vec!["price:number > 10".into()],
            or_filters: vec!["s = a".into(), "s = b c".into()],
            sort: vec!["price:desc".into(), "id".into()],
            fields: Some("name,price".into()),
            expand: None,
        };
        let p = list_pairs(&args).unwrap();
        let want: Vec<(String, String)> = [
            ("filter[price][gt][number]", "10"),
            ("filter_or[0][s][eq]", "a"),
            ("filter_or[1][s][eq]", "b c"),
            ("sort", "[price][desc]"),
            ("sort", "[id][asc]"),
            ("fields", "name,price"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(p, want);
    }
}
