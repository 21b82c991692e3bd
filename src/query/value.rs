//! Typed filter values: the `[<type>]` words, explicit parsing per type, inference when the type
//! is omitted, and the lists taken by `in` / `nin`.

use super::FilterValue;
use chrono::{DateTime, Utc};
use serde_json::Value as Json;

/// A declared `[<type>]` of a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ValueType {
    String,
    Number,
    Boolean,
    Date,
    Null,
    Object,
}

impl ValueType {
    /// Parses a type word, case-insensitively.
    pub(super) fn parse(text: &str) -> Option<ValueType> {
        match text.to_ascii_lowercase().as_str() {
            "string" => Some(ValueType::String),
            "number" => Some(ValueType::Number),
            "boolean" => Some(ValueType::Boolean),
            "date" => Some(ValueType::Date),
            "null" => Some(ValueType::Null),
            "object" => Some(ValueType::Object),
            _ => None,
        }
    }
}

/// Parses one value of the declared type, or infers it when no type was given.
pub(super) fn scalar(ty: Option<ValueType>, raw: &str) -> Result<FilterValue, String> {
    match ty {
        None => Ok(infer(raw)),
        Some(ValueType::String) => Ok(FilterValue::String(raw.to_string())),
        Some(ValueType::Number) => number(raw),
        Some(ValueType::Boolean) => boolean(raw),
        Some(ValueType::Date) => date(raw),
        Some(ValueType::Null) => Ok(FilterValue::Null),
        Some(ValueType::Object) => object(raw),
    }
}

/// The SDK's `String(value)` of a plain object; it carries nothing to filter on.
const PLAIN_OBJECT: &str = "[object Object]";

/// Parses the value of a list operator: a JSON array when it starts with `[`, else a comma
/// list. Type `object` (JavaScript's `typeof` of an array) infers each item's type. The caller
/// has ruled out the `null` type.
pub(super) fn list(ty: Option<ValueType>, raw: &str) -> Result<FilterValue, String> {
    let item_type = ty.filter(|t| *t != ValueType::Object);
    if raw == PLAIN_OBJECT {
        return Err(plain_object());
    }
    let items = if raw.trim_start().starts_with('[') {
        json_list(item_type, raw)?
    } else {
        comma_list(item_type, raw)?
    };
    if items.is_empty() {
        return Err(format!("empty list `{raw}`"));
    }
    Ok(FilterValue::List(items))
}

/// A number if the text is a finite f64, a boolean for `true` / `false`, else the text.
fn infer(raw: &str) -> FilterValue {
    match raw {
        "true" => FilterValue::Bool(true),
        "false" => FilterValue::Bool(false),
        _ => finite(raw).map_or_else(|| FilterValue::String(raw.to_string()), FilterValue::Number),
    }
}

fn finite(raw: &str) -> Option<f64> {
    raw.parse::<f64>().ok().filter(|n| n.is_finite())
}

fn number(raw: &str) -> Result<FilterValue, String> {
    finite(raw)
        .map(FilterValue::Number)
        .ok_or_else(|| not_a(raw, "a number"))
}

fn boolean(raw: &str) -> Result<FilterValue, String> {
    match raw {
        "true" => Ok(FilterValue::Bool(true)),
        "false" => Ok(FilterValue::Bool(false)),
        _ => Err(not_a(raw, "a boolean (`true` or `false`)")),
    }
}

fn date(raw: &str) -> Result<FilterValue, String> {
    DateTime::parse_from_rfc3339(raw)
        .map(|t| FilterValue::Date(t.with_timezone(&Utc)))
        .map_err(|_| not_a(raw, "an RFC 3339 date"))
}

/// Type `object` is JavaScript's `typeof` of `null`, of arrays (sent comma-joined) and of plain
/// objects (sent as `[object Object]`, which is refused): `null` is null, JSON is taken as JSON,
/// anything else is a comma-joined array whose items' types are inferred.
fn object(raw: &str) -> Result<FilterValue, String> {
    if raw == "null" {
        return Ok(FilterValue::Null);
    }
    if raw == PLAIN_OBJECT {
        return Err(plain_object());
    }
    if raw.trim().is_empty() {
        return Ok(FilterValue::Object(Json::Array(Vec::new()))); // `String([])`
    }
    if raw.trim_start().starts_with(['{', '[', '"']) {
        return serde_json::from_str(raw)
            .map(FilterValue::Object)
            .map_err(|_| not_a(raw, "valid JSON"));
    }
    if let Ok(json) = serde_json::from_str(raw) {
        return Ok(FilterValue::Object(json));
    }
    let items = comma_list(None, raw)?
        .into_iter()
        .map(|item| match item {
            FilterValue::String(s) => Json::String(s),
            FilterValue::Number(n) => {
                serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number)
            }
            FilterValue::Bool(b) => Json::Bool(b),
            _ => Json::Null,
        })
        .collect();
    Ok(FilterValue::Object(Json::Array(items)))
}

fn plain_object() -> String {
    format!("`{PLAIN_OBJECT}` is a plain object, which cannot be a filter value (send its fields as separate filters)")
}

/// "`x` is not <what>", naming an empty value in words.
fn not_a(raw: &str, what: &str) -> String {
    if raw.is_empty() {
        format!("empty value is not {what}")
    } else {
        format!("`{raw}` is not {what}")
    }
}

fn comma_list(ty: Option<ValueType>, raw: &str) -> Result<Vec<FilterValue>, String> {
    if raw.trim().is_empty() {
        return Ok(Vec::new());
    }
    raw.split(',')
        .map(str::trim)
        .map(|item| match item {
            "" => Err(format!("empty item in list `{raw}`")),
            _ => scalar(ty, item),
        })
        .collect()
}

fn json_list(ty: Option<ValueType>, raw: &str) -> Result<Vec<FilterValue>, String> {
    let items: Vec<Json> =
        serde_json::from_str(raw).map_err(|_| format!("`{raw}` is not a valid JSON array"))?;
    items.iter().map(|item| json_item(ty, item)).collect()
}

/// One JSON array element, which must be the JSON kind matching the declared type.
fn json_item(ty: Option<ValueType>, item: &Json) -> Result<FilterValue, String> {
    match (ty, item) {
        (None | Some(ValueType::Number), Json::Number(n)) => n
            .as_f64()
            .filter(|n| n.is_finite())
            .map(FilterValue::Number)
            .ok_or_else(|| format!("list item `{item}` is not a finite number")),
        (None | Some(ValueType::String), Json::String(s)) => Ok(FilterValue::String(s.clone())),
        (None | Some(ValueType::Boolean), Json::Bool(b)) => Ok(FilterValue::Bool(*b)),
        (Some(ValueType::Date), Json::String(s)) => date(s),
        (ty, _) => Err(format!("list item `{item}` is not {}", json_kind(ty))),
    }
}

fn json_kind(ty: Option<ValueType>) -> &'static str {
    match ty {
        None => "a string, number or boolean",
        Some(ValueType::Number) => "a JSON number",
        Some(ValueType::Boolean) => "a JSON boolean",
        Some(ValueType::Date) => "a JSON string holding an RFC 3339 date",
        Some(ValueType::String | ValueType::Null | ValueType::Object) => "a JSON string",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn n(x: f64) -> FilterValue {
        FilterValue::Number(x)
    }

    fn s(x: &str) -> FilterValue {
        FilterValue::String(x.to_string())
    }

    fn list_of(items: Vec<FilterValue>) -> FilterValue {
        FilterValue::List(items)
    }

    #[test]
    fn type_words_are_case_insensitive() {
        assert_eq!(ValueType::parse("string"), Some(ValueType::String));
        assert_eq!(ValueType::parse("NUMBER"), Some(ValueType::Number));
        assert_eq!(ValueType::parse("Boolean"), Some(ValueType::Boolean));
        assert_eq!(ValueType::parse("date"), Some(ValueType::Date));
        assert_eq!(ValueType::parse("Null"), Some(ValueType::Null));
        assert_eq!(ValueType::parse("oBjEcT"), Some(ValueType::Object));
        for bad in ["int", "bool", "", "str", "number "] {
            assert_eq!(ValueType::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn infers_numbers_booleans_and_strings() {
        assert_eq!(scalar(None, "42").unwrap(), n(42.0));
        assert_eq!(scalar(None, "-1.5e3").unwrap(), n(-1500.0));
        assert_eq!(scalar(None, "0012").unwrap(), n(12.0));
        assert_eq!(scalar(None, "true").unwrap(), FilterValue::Bool(true));
        assert_eq!(scalar(None, "false").unwrap(), FilterValue::Bool(false));
        for text in [
            "TRUE",
            "abc",
            "",
            "NaN",
            "inf",
            "-infinity",
            "1e999",
            " 5",
            "1,5",
        ] {
            assert_eq!(scalar(None, text).unwrap(), s(text), "{text}");
        }
    }

    #[test]
    fn string_type_keeps_any_text() {
        for text in ["", "42", "true", " spaced ", "a'--"] {
            assert_eq!(scalar(Some(ValueType::String), text).unwrap(), s(text));
        }
    }

    #[test]
    fn number_type_needs_a_finite_number() {
        assert_eq!(scalar(Some(ValueType::Number), "3.25").unwrap(), n(3.25));
        assert_eq!(scalar(Some(ValueType::Number), "-7").unwrap(), n(-7.0));
        for bad in [
            "abc", "NaN", "inf", "-inf", "infinity", "1e400", " 1", "1 ", "0x10",
        ] {
            let err = scalar(Some(ValueType::Number), bad).unwrap_err();
            assert_eq!(err, format!("`{bad}` is not a number"));
        }
        let err = scalar(Some(ValueType::Number), "").unwrap_err();
        assert_eq!(err, "empty value is not a number");
    }

    #[test]
    fn boolean_type_needs_true_or_false() {
        let ty = Some(ValueType::Boolean);
        assert_eq!(scalar(ty, "true").unwrap(), FilterValue::Bool(true));
        assert_eq!(scalar(ty, "false").unwrap(), FilterValue::Bool(false));
        for bad in ["True", "1", "yes", ""] {
            let err = scalar(ty, bad).unwrap_err();
            assert!(
                err.contains("is not a boolean") && err.contains(bad),
                "{err}"
            );
        }
    }

    #[test]
    fn date_type_parses_rfc3339_to_utc() {
        let ty = Some(ValueType::Date);
        let expected = Utc.with_ymd_and_hms(2024, 5, 1, 10, 0, 0).unwrap();
        assert_eq!(
            scalar(ty, "2024-05-01T12:00:00+02:00").unwrap(),
            FilterValue::Date(expected)
        );
        assert_eq!(
            scalar(ty, "2024-05-01T10:00:00Z").unwrap(),
            FilterValue::Date(expected)
        );
        for bad in [
            "2024-05-01",
            "2024-13-01T00:00:00Z",
            "yesterday",
            "1714557600",
        ] {
            let err = scalar(ty, bad).unwrap_err();
            assert_eq!(err, format!("`{bad}` is not an RFC 3339 date"));
        }
    }

    #[test]
    fn null_type_ignores_the_value() {
        assert_eq!(
            scalar(Some(ValueType::Null), "").unwrap(),
            FilterValue::Null
        );
        assert_eq!(
            scalar(Some(ValueType::Null), "anything").unwrap(),
            FilterValue::Null
        );
    }

    #[test]
    fn object_type_takes_any_json() {
        let ty = Some(ValueType::Object);
        let value = scalar(ty, r#"{"a":[1,2],"b":null}"#).unwrap();
        assert_eq!(
            value,
            FilterValue::Object(serde_json::json!({"a": [1, 2], "b": null}))
        );
        assert_eq!(
            scalar(ty, "[1]").unwrap(),
            FilterValue::Object(serde_json::json!([1]))
        );
        assert_eq!(
            scalar(ty, "7").unwrap(),
            FilterValue::Object(serde_json::json!(7))
        );
        let err = scalar(ty, "{a:1}").unwrap_err();
        assert_eq!(err, "`{a:1}` is not valid JSON");
        // JavaScript's String() of an array, of [] and of null.
        assert_eq!(
            scalar(ty, "a,2,true").unwrap(),
            FilterValue::Object(serde_json::json!(["a", 2.0, true]))
        );
        assert_eq!(
            scalar(ty, "").unwrap(),
            FilterValue::Object(serde_json::json!([]))
        );
        assert_eq!(scalar(ty, "null").unwrap(), FilterValue::Null);
        assert!(scalar(ty, "[object Object]")
            .unwrap_err()
            .contains("plain object"));
    }

    #[test]
    fn comma_lists_are_trimmed_and_typed() {
        let value = list(Some(ValueType::Number), "1, 2 ,3.5").unwrap();
        assert_eq!(value, list_of(vec![n(1.0), n(2.0), n(3.5)]));
        let value = list(Some(ValueType::String), " a ,b").unwrap();
        assert_eq!(value, list_of(vec![s("a"), s("b")]));
        let value = list(None, "1,x,true").unwrap();
        assert_eq!(
            value,
            list_of(vec![n(1.0), s("x"), FilterValue::Bool(true)])
        );
        let value = list(Some(ValueType::Boolean), "true,false").unwrap();
        assert_eq!(
            value,
            list_of(vec![FilterValue::Bool(true), FilterValue::Bool(false)])
        );
        let value = list(Some(ValueType::Date), "2024-01-01T00:00:00Z").unwrap();
        let day = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(value, list_of(vec![FilterValue::Date(day)]));
    }

    #[test]
    fn comma_list_errors_name_the_item() {
        let err = list(Some(ValueType::Number), "1,x").unwrap_err();
        assert_eq!(err, "`x` is not a number");
        let err = list(Some(ValueType::String), "a,,b").unwrap_err();
        assert_eq!(err, "empty item in list `a,,b`");
        let err = list(Some(ValueType::Date), "2024-01-01").unwrap_err();
        assert_eq!(err, "`2024-01-01` is not an RFC 3339 date");
    }

    #[test]
    fn empty_lists_are_rejected() {
        for raw in ["", "  ", "[]", " [ ] "] {
            let err = list(None, raw).unwrap_err();
            assert_eq!(err, format!("empty list `{raw}`"));
        }
    }

    #[test]
    fn json_lists_are_typed() {
        let value = list(Some(ValueType::Number), "[1, 2.5]").unwrap();
        assert_eq!(value, list_of(vec![n(1.0), n(2.5)]));
        let value = list(Some(ValueType::String), r#"["a,b", " c "]"#).unwrap();
        assert_eq!(value, list_of(vec![s("a,b"), s(" c ")]));
        let value = list(Some(ValueType::Boolean), "[true]").unwrap();
        assert_eq!(value, list_of(vec![FilterValue::Bool(true)]));
        let value = list(Some(ValueType::Date), r#"["2024-01-01T01:00:00+01:00"]"#).unwrap();
        let day = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(value, list_of(vec![FilterValue::Date(day)]));
        let value = list(None, r#"[1, "1", false]"#).unwrap();
        assert_eq!(
            value,
            list_of(vec![n(1.0), s("1"), FilterValue::Bool(false)])
        );
    }

    #[test]
    fn json_list_elements_must_match_the_type() {
        let cases = [
            (
                Some(ValueType::Number),
                r#"[1, "2"]"#,
                "list item `\"2\"` is not a JSON number",
            ),
            (
                Some(ValueType::String),
                "[1]",
                "list item `1` is not a JSON string",
            ),
            (
                Some(ValueType::Boolean),
                r#"["true"]"#,
                "list item `\"true\"` is not a JSON boolean",
            ),
            (
                Some(ValueType::Date),
                "[0]",
                "list item `0` is not a JSON string holding",
            ),
            (
                None,
                "[null]",
                "list item `null` is not a string, number or boolean",
            ),
            (
                None,
                "[[1]]",
                "list item `[1]` is not a string, number or boolean",
            ),
            (None, r#"[{"a":1}]"#, r#"list item `{"a":1}` is not"#),
        ];
        for (ty, raw, expected) in cases {
            let err = list(ty, raw).unwrap_err();
            assert!(err.starts_with(expected), "{raw}: {err}");
        }
        let err = list(Some(ValueType::Date), r#"["soon"]"#).unwrap_err();
        assert_eq!(err, "`soon` is not an RFC 3339 date");
    }

    #[test]
    fn malformed_json_lists_are_rejected() {
        for raw in ["[1,", "[1] x", "[a]", "[1,]"] {
            let err = list(Some(ValueType::Number), raw).unwrap_err();
            assert_eq!(err, format!("`{raw}` is not a valid JSON array"));
        }
    }
}
