//! Property tests of the list query grammar: any query the parser accepts, rendered back to
//! canonical query pairs, parses to the same query; and no input, however malformed, makes it
//! panic. `scripts/fuzz` runs these with a million cases each.

use super::{parse, Filter, FilterValue, ListQuery, Op};
use proptest::prelude::*;

/// The canonical word of an operator.
fn op_word(op: Op) -> &'static str {
    match op {
        Op::Eq => "eq",
        Op::Ne => "ne",
        Op::Gt => "gt",
        Op::Gte => "gte",
        Op::Lt => "lt",
        Op::Lte => "lte",
        Op::Like => "~",
        Op::NotLike => "!~",
        Op::AnyLike => "?~",
        Op::AllLike => "*~",
        Op::AnyEq => "?=",
        Op::AllEq => "*=",
        Op::Contains => "contains",
        Op::ContainsNot => "containsnot",
        Op::ContainsAll => "containsall",
        Op::ContainsAny => "containsany",
        Op::ContainsNone => "containsnone",
        Op::In => "in",
        Op::Nin => "nin",
        Op::AllInside => "allinside",
        Op::AnyInside => "anyinside",
        Op::NoneInside => "noneinside",
        Op::Match => "@@",
    }
}

fn date_text(d: &chrono::DateTime<chrono::Utc>) -> String {
    d.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

fn json_item(v: &FilterValue) -> serde_json::Value {
    match v {
        FilterValue::String(s) => serde_json::Value::String(s.clone()),
        FilterValue::Number(n) => serde_json::json!(n),
        FilterValue::Bool(b) => serde_json::Value::Bool(*b),
        FilterValue::Date(d) => serde_json::Value::String(date_text(d)),
        other => panic!("no list holds {other:?}"),
    }
}

/// `(type word, value text)` of a filter's value: typed where the operator takes that type,
/// else untyped (numbers and booleans infer back to themselves).
fn typed_value(op: Op, value: &FilterValue) -> (Option<&'static str>, String) {
    let (ty, text) = match value {
        FilterValue::String(s) => ("string", s.clone()),
        FilterValue::Number(n) => ("number", n.to_string()),
        FilterValue::Bool(b) => ("boolean", b.to_string()),
        FilterValue::Date(d) => ("date", date_text(d)),
        FilterValue::Null => ("null", String::new()),
        FilterValue::Object(json) => ("object", json.to_string()),
        FilterValue::List(items) => {
            let kinds: Vec<&str> = items
                .iter()
                .map(|i| typed_value(op, i).0.unwrap_or(""))
                .collect();
            let same = kinds.windows(2).all(|w| w[0] == w[1]);
            let array = serde_json::Value::Array(items.iter().map(json_item).collect());
            let ty = match kinds.first() {
                Some(kind) if same && !kind.is_empty() => Some(*kind),
                _ => None,
            };
            return (ty, array.to_string());
        }
    };
    let allowed = super::value::ValueType::parse(ty).is_some_and(|t| super::op::allows(op, t));
    (allowed.then_some(ty), text)
}

fn render_filter(key_prefix: &str, f: &Filter) -> (String, String) {
    let mut field = f.field.as_dotted();
    let op = match &f.element {
        Some(element) => {
            field = format!("{field}.{element}");
            format!("ARRAY_WHERE_{}", op_word(f.op))
        }
        None => op_word(f.op).to_string(),
    };
    let (ty, text) = typed_value(f.op, &f.value);
    let key = match ty {
        Some(ty) => format!("{key_prefix}[{field}][{op}][{ty}]"),
        None => format!("{key_prefix}[{field}][{op}]"),
    };
    (key, text)
}

/// Canonical query pairs of a parsed query.
pub(super) fn render(q: &ListQuery) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = q
        .filters
        .iter()
        .map(|f| render_filter("filter", f))
        .collect();
    pairs.extend(
        q.or_filters
            .iter()
            .map(|f| render_filter("filter_or[0]", f)),
    );
    for s in &q.sort {
        let dir = if s.descending { "desc" } else { "asc" };
        pairs.push(("sort".into(), format!("[{}][{dir}]", s.field.as_dotted())));
    }
    pairs.push(("limit".into(), q.limit.to_string()));
    pairs.push(("offset".into(), q.offset.to_string()));
    if let Some(fields) = &q.fields {
        pairs.push(("fields".into(), fields.join(",")));
    }
    if !q.expand.is_empty() {
        pairs.push(("expand".into(), q.expand.join(",")));
    }
    pairs
}

/// Keys shaped like the grammar's, with parts drawn from its vocabulary and a little noise.
fn key_strategy() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        "[a-z]{1,3}",
        "[a-z]{1,2}\\.[a-z_]{1,2}",
        "[a-z]\\.[a-z]\\.[a-z]",
        ".{0,4}"
    ];
    let op = prop_oneof![
        prop::sample::select(vec![
            "eq",
            "EQ",
            "=",
            "==",
            "ne",
            "!=",
            "gt",
            ">",
            "gte",
            ">=",
            "lt",
            "<",
            "lte",
            "<=",
            "~",
            "!~",
            "?~",
            "*~",
            "?=",
            "*=",
            "contains",
            "CONTAINSNOT",
            "containsall",
            "CONTAINSANY",
            "containsnone",
            "in",
            "IN",
            "nin",
            "NOT IN",
            "inside",
            "NOTINSIDE",
            "allinside",
            "ANYINSIDE",
            "noneinside",
            "@@",
            "@2@",
            "ARRAY_WHERE_=",
            "array_where_<",
            "ARRAY_WHERE_IN",
            "ARRAY_WHERE_contains",
            "bogus",
            ""
        ])
        .prop_map(str::to_string),
        ".{0,3}",
    ];
    let ty = prop::option::of(prop_oneof![
        prop::sample::select(vec![
            "string", "number", "boolean", "date", "null", "object", "NUMBER", "int"
        ])
        .prop_map(str::to_string),
        ".{0,3}",
    ]);
    let filter = (field, op, ty).prop_map(|(f, o, t)| match t {
        Some(t) => format!("[{f}][{o}][{t}]"),
        None => format!("[{f}][{o}]"),
    });
    prop_oneof![
        4 => filter.clone().prop_map(|b| format!("filter{b}")),
        2 => (0u8..3, filter).prop_map(|(n, b)| format!("filter_or[{n}]{b}")),
        1 => prop::sample::select(vec!["sort", "limit", "offset", "fields", "expand", "sort[a]", "limit[x]", "other"])
            .prop_map(str::to_string),
        1 => ".{0,12}",
    ]
}

/// Values of every kind the grammar reads: numbers, booleans, dates, lists, JSON, noise.
fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<f64>().prop_map(|n| n.to_string()),
        any::<i32>().prop_map(|n| n.to_string()),
        Just("true".to_string()),
        Just("null".to_string()),
        Just("".to_string()),
        Just("[object Object]".to_string()),
        "[a-z0-9 ,]{0,12}",
        (0i64..4_000_000_000, 0u32..1_000_000_000).prop_map(|(s, n)| {
            chrono::DateTime::from_timestamp(s, n)
                .map(|d| date_text(&d))
                .unwrap_or_default()
        }),
        prop::collection::vec(any::<i16>(), 0..4).prop_map(|v| serde_json::json!(v).to_string()),
        prop::collection::vec("[a-z\"\\\\]{0,4}", 0..4)
            .prop_map(|v| serde_json::json!(v).to_string()),
        "\\[[a-z]{1,3}\\]\\[(asc|desc|up)\\]",
        "-?[a-z]{1,3}(:desc)?",
        ".{0,16}",
    ]
}

proptest! {
    #[test]
    fn accepted_queries_render_and_parse_to_themselves(
        pairs in prop::collection::vec((key_strategy(), value_strategy()), 0..6)
    ) {
        if let Ok(query) = parse(&pairs) {
            let rendered = render(&query);
            match parse(&rendered) {
                Ok(again) => prop_assert_eq!(again, query, "rendered as {:?}", rendered),
                Err(e) => prop_assert!(false, "{:?} rendered as {:?} fails: {}", pairs, rendered, e),
            }
        }
    }

    #[test]
    fn arbitrary_pairs_never_panic(pairs in prop::collection::vec((".{0,24}", ".{0,24}"), 0..5)) {
        let _ = parse(&pairs);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let text = String::from_utf8_lossy(&bytes);
        let (key, value) = text.split_once('=').unwrap_or((&text, ""));
        let _ = parse(&[(key.to_string(), value.to_string())]);
    }
}

/// The generator reaches the grammar: a good share of what it makes is accepted, with filters
/// (else the round trip above would pass by testing nothing).
#[test]
fn the_generator_reaches_accepted_queries_with_filters() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = prop::collection::vec((key_strategy(), value_strategy()), 1..4);
    let mut accepted = 0;
    let mut lists = 0;
    for _ in 0..2000 {
        let pairs = strategy.new_tree(&mut runner).expect("a value").current();
        if let Ok(q) = parse(&pairs) {
            if !q.filters.is_empty() || !q.or_filters.is_empty() {
                accepted += 1;
            }
            let all = q.filters.iter().chain(&q.or_filters);
            lists += all
                .filter(|f| matches!(f.value, FilterValue::List(_)))
                .count();
        }
    }
    assert!(
        accepted > 100,
        "only {accepted} of 2000 generated queries had accepted filters"
    );
    assert!(lists > 10, "only {lists} list filters");
}
