//! `filter[<field>][<op>][<type>]` and `filter_or[<n>][<field>][<op>][<type>]`: the key's
//! brackets and the value become one [`Filter`], with the operator checked against the type.

use super::op;
use super::path::FieldPath;
use super::value::{self, ValueType};
use super::{Filter, FilterValue, Op, QueryError};

/// Builds a `filter[...]` entry from the key's bracket contents and the value.
pub(super) fn parse_filter(key: &str, brackets: &[&str], raw: &str) -> Result<Filter, QueryError> {
    build("filter", brackets, raw).map_err(|reason| QueryError::new(key, reason))
}

/// Builds a `filter_or[<n>][...]` entry; the group number is checked, then dropped.
pub(super) fn parse_or_filter(
    key: &str,
    brackets: &[&str],
    raw: &str,
) -> Result<Filter, QueryError> {
    build_or(brackets, raw).map_err(|reason| QueryError::new(key, reason))
}

fn build_or(brackets: &[&str], raw: &str) -> Result<Filter, String> {
    let Some((group, rest)) = brackets.split_first() else {
        return Err("missing `[<n>][<field>][<op>]` after `filter_or`".into());
    };
    if group.is_empty() {
        return Err("empty group number in `filter_or[]`".into());
    }
    if !group.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "`{group}` is not a group number (a non-negative integer)"
        ));
    }
    build(&format!("filter_or[{group}]"), rest, raw)
}

/// Builds a filter from `[<field>][<op>]` or `[<field>][<op>][<type>]`; `prefix` is the key text
/// before them, for messages.
fn build(prefix: &str, parts: &[&str], raw: &str) -> Result<Filter, String> {
    let (field, op_text, type_text) = match parts {
        [] => return Err(format!("missing `[<field>][<op>]` after `{prefix}`")),
        [field] => return Err(format!("missing `[<op>]` after `{prefix}[{field}]`")),
        [field, op] => (field, op, None),
        [field, op, ty] => (field, op, Some(*ty)),
        [_, _, ty, extra, ..] => return Err(format!("unexpected `[{extra}]` after `[{ty}]`")),
    };
    let mut field = FieldPath::parse(field)?;
    let (op, element) = match strip_array_where(op_text) {
        Some(inner) => {
            let op = op::parse_element(inner)?;
            let Some(element) = field.pop_last() else {
                return Err(format!(
                    "`{op_text}` needs `[<array>.<field>]`, got `[{}]`",
                    field.as_dotted()
                ));
            };
            (op, Some(element))
        }
        None => (op::parse(op_text)?, None),
    };
    let ty = type_text.map(parse_type).transpose()?;
    if let (Some(ty), Some(text)) = (ty, type_text) {
        if !op::allows(op, ty) {
            return Err(format!(
                "operator `{op_text}` does not apply to type `{text}`"
            ));
        }
    }
    let value = if op.takes_list() {
        value::list(ty, raw)?
    } else {
        value::scalar(ty, raw)?
    };
    check_op_for_value(op, op_text, &value)?;
    Ok(Filter {
        field,
        op,
        value,
        element,
    })
}

/// `ARRAY_WHERE_<op>` (any case) → `<op>`.
fn strip_array_where(op_text: &str) -> Option<&str> {
    const PREFIX: &str = "array_where_";
    let head = op_text.get(..PREFIX.len())?;
    head.eq_ignore_ascii_case(PREFIX)
        .then(|| &op_text[PREFIX.len()..])
}

fn parse_type(text: &str) -> Result<ValueType, String> {
    match ValueType::parse(text) {
        Some(ty) => Ok(ty),
        None if text.is_empty() => Err("empty type".into()),
        None => Err(format!("unknown type `{text}`")),
    }
}

/// What the type alone cannot rule out: a boolean (inferred) cannot be ordered, and `null`
/// (also as type `object`) only compares with `=` / `!=`.
fn check_op_for_value(op: Op, op_text: &str, value: &FilterValue) -> Result<(), String> {
    match value {
        FilterValue::Bool(b) if op.orders() => Err(format!(
            "operator `{op_text}` does not apply to boolean `{b}`"
        )),
        FilterValue::Null if !matches!(op, Op::Eq | Op::Ne) => {
            Err(format!("operator `{op_text}` does not apply to null"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{assert_fails, filter_of, only_filter};
    use super::super::FilterValue as V;
    use super::*;

    #[test]
    fn every_operator_word_and_symbol() {
        let cases = [
            ("eq", Op::Eq),
            ("EQ", Op::Eq),
            ("=", Op::Eq),
            ("==", Op::Eq),
            ("ne", Op::Ne),
            ("Ne", Op::Ne),
            ("!=", Op::Ne),
            ("gt", Op::Gt),
            (">", Op::Gt),
            ("gte", Op::Gte),
            (">=", Op::Gte),
            ("lt", Op::Lt),
            ("<", Op::Lt),
            ("lte", Op::Lte),
            ("<=", Op::Lte),
            ("contains", Op::Contains),
            ("CONTAINS", Op::Contains),
            ("in", Op::In),
            ("IN", Op::In),
            ("nin", Op::Nin),
            ("NIN", Op::Nin),
            ("NOT IN", Op::Nin),
            ("not in", Op::Nin),
            ("Not In", Op::Nin),
        ];
        for (text, op) in cases {
            let filter = only_filter(&format!("filter[a][{text}]"), "1");
            assert_eq!(filter.op, op, "{text}");
        }
    }

    #[test]
    fn unknown_operators_are_rejected() {
        for text in [
            "like", "NOT  IN", "notin", " eq", "===", "<>", "=<", "not_in",
        ] {
            let key = format!("filter[a][{text}]");
            assert_fails(&key, "1", &format!("unknown operator `{text}`"));
        }
        assert_fails("filter[a][]", "1", "empty operator");
    }

    #[test]
    fn filter_fields_are_paths() {
        let filter = only_filter("filter[meta.sensor.value][gt][number]", "5");
        assert_eq!(filter.field.as_dotted(), "meta.sensor.value");
        assert_eq!(filter.value, V::Number(5.0));
    }

    #[test]
    fn explicit_types_parse_the_value() {
        assert_eq!(
            filter_of("filter[a][eq][string]", "42").value,
            V::String("42".into())
        );
        assert_eq!(
            filter_of("filter[a][eq][NUMBER]", "42").value,
            V::Number(42.0)
        );
        assert_eq!(
            filter_of("filter[a][eq][boolean]", "false").value,
            V::Bool(false)
        );
        let date = filter_of("filter[a][gte][date]", "2024-01-01T00:00:00Z").value;
        assert!(matches!(date, V::Date(_)), "{date:?}");
        assert_eq!(filter_of("filter[a][eq][null]", "whatever").value, V::Null);
        assert_eq!(filter_of("filter[a][ne][null]", "").value, V::Null);
        let object = filter_of("filter[a][eq][object]", r#"{"x":1}"#).value;
        assert_eq!(object, V::Object(serde_json::json!({"x": 1})));
    }

    #[test]
    fn omitted_type_infers_the_value() {
        assert_eq!(filter_of("filter[a][eq]", "1.5").value, V::Number(1.5));
        assert_eq!(filter_of("filter[a][eq]", "true").value, V::Bool(true));
        assert_eq!(
            filter_of("filter[a][eq]", "abc").value,
            V::String("abc".into())
        );
        assert_eq!(filter_of("filter[a][contains]", "7").value, V::Number(7.0));
        assert_eq!(
            filter_of("filter[a][contains]", "true").value,
            V::Bool(true)
        );
        assert_eq!(filter_of("filter[a][gt]", "b").value, V::String("b".into()));
    }

    #[test]
    fn bad_values_are_reported_with_the_full_key() {
        assert_fails("filter[price][gt][number]", "abc", "`abc` is not a number");
        assert_fails("filter[ok][eq][boolean]", "yes", "`yes` is not a boolean");
        assert_fails(
            "filter[t][lt][date]",
            "2024",
            "`2024` is not an RFC 3339 date",
        );
        assert_fails("filter[o][eq][object]", "{", "`{` is not valid JSON");
        assert_fails("filter[a][eq][int]", "1", "unknown type `int`");
        assert_fails("filter[a][eq][]", "1", "empty type");
    }

    #[test]
    fn ordering_operators_need_string_number_or_date() {
        for op in ["gt", "gte", "lt", "lte", ">", ">=", "<", "<="] {
            for ty in ["string", "number", "date"] {
                let value = if ty == "date" {
                    "2024-01-01T00:00:00Z"
                } else {
                    "1"
                };
                filter_of(&format!("filter[a][{op}][{ty}]"), value);
            }
            for ty in ["boolean", "null", "object"] {
                let key = format!("filter[a][{op}][{ty}]");
                assert_fails(
                    &key,
                    "true",
                    &format!("operator `{op}` does not apply to type `{ty}`"),
                );
            }
            let key = format!("filter[a][{op}]");
            assert_fails(
                &key,
                "true",
                &format!("operator `{op}` does not apply to boolean `true`"),
            );
        }
    }

    #[test]
    fn contains_needs_string_or_number() {
        assert_eq!(
            filter_of("filter[a][contains][string]", "x").value,
            V::String("x".into())
        );
        assert_eq!(
            filter_of("filter[a][CONTAINS][number]", "3").value,
            V::Number(3.0)
        );
        assert_eq!(
            filter_of("filter[a][contains][boolean]", "true").value,
            V::Bool(true)
        );
        for ty in ["date", "null", "object"] {
            let key = format!("filter[a][contains][{ty}]");
            assert_fails(
                &key,
                "x",
                &format!("operator `contains` does not apply to type `{ty}`"),
            );
        }
    }

    #[test]
    fn null_allows_only_eq_and_ne_and_object_carries_lists() {
        for ty in ["null", "Object"] {
            for op in ["eq", "=", "==", "ne", "!="] {
                filter_of(&format!("filter[a][{op}][{ty}]"), "{}");
            }
        }
        for op in ["in", "nin", "NOT IN", "CONTAINSALL", "ALLINSIDE"] {
            let key = format!("filter[a][{op}][null]");
            assert_fails(
                &key,
                "[1]",
                &format!("operator `{op}` does not apply to type `null`"),
            );
            let list = filter_of(&format!("filter[a][{op}][object]"), "a,2").value;
            assert_eq!(list, V::List(vec![V::String("a".into()), V::Number(2.0)]));
        }
        assert_fails(
            "filter[a][>][object]",
            "null",
            "does not apply to type `object`",
        );
        assert_fails("filter[a][in][object]", "[object Object]", "plain object");
        assert_fails(
            "filter[a][?=][object]",
            "null",
            "does not apply to type `object`",
        );
    }

    #[test]
    fn array_where_splits_the_element_member_off_the_path() {
        let f = filter_of("filter[items.qty][ARRAY_WHERE_>=][number]", "3");
        assert_eq!(f.field.as_dotted(), "items");
        assert_eq!(f.element.as_deref(), Some("qty"));
        assert_eq!((f.op, f.value), (Op::Gte, V::Number(3.0)));
        let f = filter_of("filter[a.b.c][array_where_IN][string]", "x,y");
        assert_eq!(
            (f.field.as_dotted(), f.element.as_deref()),
            ("a.b".into(), Some("c"))
        );
        assert_fails(
            "filter[items][ARRAY_WHERE_=]",
            "1",
            "needs `[<array>.<field>]`",
        );
        assert_fails(
            "filter[a.b][ARRAY_WHERE_~]",
            "1",
            "cannot follow `ARRAY_WHERE_`",
        );
        assert_fails("filter[a.b][ARRAY_WHERE_]", "1", "empty operator");
    }

    #[test]
    fn text_operators_need_strings() {
        for op in ["~", "!~", "?~", "*~", "@@", "@2@"] {
            filter_of(&format!("filter[a][{op}][string]"), "x");
            assert_fails(
                &format!("filter[a][{op}][number]"),
                "1",
                "does not apply to type `number`",
            );
        }
    }

    #[test]
    fn in_and_nin_take_both_list_forms() {
        let expected = V::List(vec![V::Number(1.0), V::Number(2.0)]);
        assert_eq!(filter_of("filter[a][in][number]", "1,2").value, expected);
        assert_eq!(filter_of("filter[a][in][number]", "[1,2]").value, expected);
        assert_eq!(
            filter_of("filter[a][nin][number]", " 1 , 2 ").value,
            expected
        );
        assert_eq!(
            filter_of("filter[a][NOT IN][number]", "[1, 2]").value,
            expected
        );
        let inferred = filter_of("filter[a][in]", "1,b,false").value;
        let items = vec![V::Number(1.0), V::String("b".into()), V::Bool(false)];
        assert_eq!(inferred, V::List(items));
        let strings = filter_of("filter[a][IN][string]", r#"["x,y"]"#).value;
        assert_eq!(strings, V::List(vec![V::String("x,y".into())]));
        let bools = filter_of("filter[a][in][boolean]", "true,false").value;
        assert_eq!(bools, V::List(vec![V::Bool(true), V::Bool(false)]));
        let dates = filter_of("filter[a][in][date]", r#"["2024-01-01T00:00:00Z"]"#).value;
        assert!(matches!(&dates, V::List(items) if matches!(items[..], [V::Date(_)])));
    }

    #[test]
    fn in_list_errors() {
        assert_fails("filter[a][in][number]", "", "empty list ``");
        assert_fails("filter[a][in]", "[]", "empty list `[]`");
        assert_fails("filter[a][nin][number]", "1,x", "`x` is not a number");
        assert_fails("filter[a][in][number]", r#"["1"]"#, "list item `\"1\"`");
        assert_fails(
            "filter[a][in][number]",
            "[1,",
            "`[1,` is not a valid JSON array",
        );
        assert_fails("filter[a][in][string]", "a,,b", "empty item in list `a,,b`");
    }

    #[test]
    fn filter_key_shape_errors() {
        assert_fails("filter", "1", "missing `[<field>][<op>]` after `filter`");
        assert_fails("filter[a]", "1", "missing `[<op>]` after `filter[a]`");
        assert_fails(
            "filter[a][eq][string][x]",
            "1",
            "unexpected `[x]` after `[string]`",
        );
        assert_fails("filter[a", "1", "missing `]` after `[a`");
        assert_fails("filter[a][eq", "1", "missing `]` after `[eq`");
        assert_fails("filter[][eq]", "1", "empty field path");
        assert_fails("filter[a][eq]x", "1", "unexpected text `x` after `]`");
        assert_fails(
            "filter[a][eq][number]]",
            "1",
            "unexpected text `]` after `]`",
        );
        assert_fails("filter[a[b]][eq]", "1", "unexpected `[` inside `[a[b]`");
        assert_fails(
            "filter[price..x][eq]",
            "1",
            "`price..x` is not a valid field path",
        );
    }

    #[test]
    fn injection_looking_fields_are_rejected() {
        for field in [
            "a;drop table x",
            "a'--",
            "a b",
            "a')--",
            "a\"",
            "1=1",
            "a/**/b",
        ] {
            let key = format!("filter[{field}][eq]");
            assert_fails(&key, "1", &format!("`{field}` is not a valid field path"));
            let key = format!("filter_or[0][{field}][eq]");
            assert_fails(&key, "1", &format!("`{field}` is not a valid field path"));
        }
    }

    #[test]
    fn filter_or_needs_a_group_number() {
        let query = super::super::test_util::query(&[("filter_or[12][a][eq]", "1")]);
        assert_eq!(query.or_filters.len(), 1);
        assert_fails(
            "filter_or",
            "1",
            "missing `[<n>][<field>][<op>]` after `filter_or`",
        );
        assert_fails("filter_or[x][a][eq]", "1", "`x` is not a group number");
        assert_fails("filter_or[-1][a][eq]", "1", "`-1` is not a group number");
        assert_fails(
            "filter_or[][a][eq]",
            "1",
            "empty group number in `filter_or[]`",
        );
        assert_fails("filter_or[a][eq]", "1", "`a` is not a group number");
        assert_fails(
            "filter_or[0][a]",
            "1",
            "missing `[<op>]` after `filter_or[0][a]`",
        );
        assert_fails(
            "filter_or[0]",
            "1",
            "missing `[<field>][<op>]` after `filter_or[0]`",
        );
        assert_fails("filter_or[0][a][eq][string][x]", "1", "unexpected `[x]`");
        assert_fails("filter_or[0][a][like]", "1", "unknown operator `like`");
        assert_fails("filter_or[0][a][eq][int]", "1", "unknown type `int`");
        assert_fails("filter_or[0][a][eq][number]", "x", "`x` is not a number");
    }
}
