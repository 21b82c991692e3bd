//! Translates a parsed list query into SQL over a `jsonb` record table, with the meaning the
//! SQLite engine gives it (`sqlite/filter_sql.rs`). Field paths reach SQL only as validated
//! identifiers (`#> '{a,b}'`, so expression indexes on the same expression match); every
//! value is a bound parameter with an explicit type.
//!
//! A member is read as `NULLIF(data #> '{path}', 'null')`: a JSON null and a missing member
//! are both SQL NULL, as `json_extract` makes them in SQLite. Equality is `jsonb` equality
//! (numbers compare as numbers, so `1` equals `1.0`); order comparisons are typed by the
//! filter's value (`svc_num`, `svc_text`, `svc_time` from the migrations); strings compare
//! byte-wise (`COLLATE "C"`) as SQLite's do.

use crate::ids::TableRef;
use crate::query::{FieldPath, Filter, FilterValue, Op, SortKey};
use crate::time::format_rfc3339;
use serde_json::Value;
use tokio_postgres::types::ToSql;

/// A bound value.
pub type Param = Box<dyn ToSql + Sync + Send>;

/// A WHERE clause (without the keyword; `TRUE` when there is nothing to filter) and its
/// parameters, numbered from `$1`.
pub struct Where {
    pub sql: String,
    pub params: Vec<Param>,
}

/// The parameters as tokio-postgres takes them.
pub fn as_params(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

/// Binds values and hands back their placeholders.
struct Binder<'p> {
    params: &'p mut Vec<Param>,
}

impl Binder<'_> {
    fn bind(&mut self, value: Param, cast: &str) -> String {
        self.params.push(value);
        format!("${}::{cast}", self.params.len())
    }

    fn json(&mut self, value: Value) -> String {
        self.bind(Box::new(value), "jsonb")
    }

    fn text(&mut self, value: String) -> String {
        self.bind(Box::new(value), "text")
    }

    fn float(&mut self, value: f64) -> String {
        self.bind(Box::new(value), "float8")
    }
}

/// The path literal of a dotted field: `'{a,b}'` (segments are validated identifiers).
fn path_literal(dotted: &str) -> String {
    format!("'{{{}}}'", dotted.replace('.', ","))
}

/// The expression an index on `field` must use for filters to find it.
pub fn index_expr(field: &str) -> String {
    member_expr("data", field)
}

fn member_expr(doc: &str, dotted: &str) -> String {
    format!("NULLIF({doc} #> {}, 'null'::jsonb)", path_literal(dotted))
}

/// Where a field lives in the row.
enum Column {
    /// A server-owned text column (`created_dt`, `updated_dt`).
    Time(&'static str),
    /// The full RecordID, built from the table's literal prefix and the key column.
    Id(String),
    /// A member of a `jsonb` document.
    Json(String),
}

impl Column {
    fn of(table: &TableRef, field: &FieldPath) -> Column {
        match field.as_dotted().as_str() {
            "created_dt" => Column::Time("created_dt"),
            "updated_dt" => Column::Time("updated_dt"),
            // The prefix is a validated domain and table name: no quote can be in it.
            "id" => Column::Id(format!("('{}' || key)", table.record_id(""))),
            dotted => Column::Json(member_expr("data", dotted)),
        }
    }

    fn expr(&self) -> &str {
        match self {
            Column::Time(name) => name,
            Column::Id(expr) | Column::Json(expr) => expr,
        }
    }

    /// The member's text (a string's content, a number's or a boolean's literal, an object's
    /// or array's JSON); the column itself for the server's columns.
    fn text(&self) -> String {
        match self {
            Column::Json(expr) => format!("svc_text({expr})"),
            other => other.expr().to_string(),
        }
    }

    fn is_array(&self) -> String {
        match self {
            Column::Json(expr) => format!("coalesce(jsonb_typeof({expr}) = 'array', false)"),
            _ => "false".into(),
        }
    }

    /// `jsonb_array_elements(...)` over a member the caller checked is an array, as `el`.
    fn each(&self) -> String {
        match self {
            Column::Json(expr) => format!(
                "jsonb_array_elements(CASE WHEN jsonb_typeof({expr}) = 'array' \
                 THEN {expr} ELSE '[]'::jsonb END) AS el(value)"
            ),
            _ => "jsonb_array_elements('[]'::jsonb) AS el(value)".into(),
        }
    }
}

/// Builds the WHERE clause: every filter ANDed, the OR group ANDed as one term. `@@` is the
/// same expression whether or not a collection indexed the field: with its GIN index there,
/// the planner uses it.
pub fn build_where(table: &TableRef, filters: &[Filter], or_filters: &[Filter]) -> Where {
    let mut params = Vec::new();
    let mut binder = Binder {
        params: &mut params,
    };
    let mut terms: Vec<String> = filters
        .iter()
        .map(|f| condition(table, f, &mut binder))
        .collect();
    if !or_filters.is_empty() {
        let alternatives: Vec<String> = or_filters
            .iter()
            .map(|f| condition(table, f, &mut binder))
            .collect();
        terms.push(format!("({})", alternatives.join(" OR ")));
    }
    let sql = if terms.is_empty() {
        "TRUE".to_string()
    } else {
        terms.join(" AND ")
    };
    Where { sql, params }
}

/// ORDER BY list, NULLs first ascending as SQLite orders them; the key is the final tie-break
/// so paging is stable.
pub fn build_order(table: &TableRef, sort: &[SortKey]) -> String {
    if sort.is_empty() {
        return "created_dt ASC, key ASC".into();
    }
    let mut keys: Vec<String> = sort
        .iter()
        .map(|k| {
            let dir = if k.descending {
                "DESC NULLS LAST"
            } else {
                "ASC NULLS FIRST"
            };
            format!("{} {dir}", Column::of(table, &k.field).expr())
        })
        .collect();
    keys.push("key ASC".into());
    keys.join(", ")
}

fn condition(table: &TableRef, filter: &Filter, binder: &mut Binder) -> String {
    let column = Column::of(table, &filter.field);
    let Some(element) = &filter.element else {
        return op_condition(&column, filter.op, &filter.value, binder);
    };
    let member = Column::Json(member_expr("el.value", element));
    let inner = op_condition(&member, filter.op, &filter.value, binder);
    format!(
        "({} AND EXISTS(SELECT 1 FROM {} WHERE {inner}))",
        column.is_array(),
        column.each()
    )
}

fn op_condition(column: &Column, op: Op, value: &FilterValue, binder: &mut Binder) -> String {
    let lhs = column.expr().to_string();
    match (op, value) {
        (Op::Eq, FilterValue::Null) => format!("{lhs} IS NULL"),
        (Op::Ne, FilterValue::Null) => format!("{lhs} IS NOT NULL"),
        (Op::In, FilterValue::List(items)) => in_list(column, items, binder),
        (Op::Nin, FilterValue::List(items)) => {
            format!("({lhs} IS NULL OR NOT {})", in_list(column, items, binder))
        }
        (Op::Like, value) => like(column, value, binder),
        (Op::NotLike, value) => not(&like(column, value, binder)),
        (Op::AnyLike, value) => some(column, like_element(value, binder)),
        (Op::AllLike, value) => every(column, like_element(value, binder)),
        (Op::AnyEq, value) => some(column, element_eq(value, binder)),
        (Op::AllEq, value) => every(column, element_eq(value, binder)),
        (Op::Contains, value) => contains(column, value, binder),
        (Op::ContainsNot, value) => not(&contains(column, value, binder)),
        (Op::ContainsAll, FilterValue::List(items)) => {
            let terms: Vec<String> = items.iter().map(|i| contains(column, i, binder)).collect();
            format!("({})", terms.join(" AND "))
        }
        (Op::ContainsAny, FilterValue::List(items)) => contains_any(column, items, binder),
        (Op::ContainsNone, FilterValue::List(items)) => not(&contains_any(column, items, binder)),
        (Op::AnyInside, FilterValue::List(items)) => any_inside(column, items, binder),
        (Op::AllInside, FilterValue::List(items)) => all_inside(column, items, binder),
        (Op::NoneInside, FilterValue::List(items)) => not(&any_inside(column, items, binder)),
        (Op::Match, value) => words_match(column, value, binder),
        (Op::Eq | Op::Ne | Op::Gt | Op::Gte | Op::Lt | Op::Lte, value) => {
            compare(column, op, value, binder)
        }
        _ => "FALSE".into(),
    }
}

fn not(condition: &str) -> String {
    format!("NOT coalesce({condition}, false)")
}

/// `column <op> value`, typed by the value; `ne` is null-safe, so records lacking the field
/// match it.
fn compare(column: &Column, op: Op, value: &FilterValue, binder: &mut Binder) -> String {
    let (lhs, rhs) = operands(column, op, value, binder);
    let symbol = match op {
        Op::Ne => "IS DISTINCT FROM",
        Op::Gt => ">",
        Op::Gte => ">=",
        Op::Lt => "<",
        Op::Lte => "<=",
        _ => "=",
    };
    format!("{lhs} {symbol} {rhs}")
}

/// Both sides of a comparison with `value`, as comparable SQL expressions.
fn operands(column: &Column, op: Op, value: &FilterValue, binder: &mut Binder) -> (String, String) {
    let ordered = matches!(op, Op::Gt | Op::Gte | Op::Lt | Op::Lte);
    match (column, value) {
        (Column::Json(expr), FilterValue::Date(t)) => (
            format!("svc_time(svc_text({expr}))"),
            format!("{}::timestamptz", binder.text(format_rfc3339(*t))),
        ),
        (Column::Json(expr), FilterValue::Number(n)) if ordered => {
            (format!("svc_num({expr})"), binder.float(*n))
        }
        (Column::Json(expr), FilterValue::String(s)) if ordered => (
            format!("svc_text({expr}) COLLATE \"C\""),
            binder.text(s.clone()),
        ),
        (Column::Json(expr), value) => (expr.clone(), binder.json(as_json(value))),
        (other, value) => (
            format!("{} COLLATE \"C\"", other.expr()),
            binder.text(as_text(value)),
        ),
    }
}

fn in_list(column: &Column, items: &[FilterValue], binder: &mut Binder) -> String {
    let mut lhs = column.expr().to_string();
    let placeholders: Vec<String> = items
        .iter()
        .map(|item| {
            let (l, r) = operands(column, Op::Eq, item, binder);
            lhs = l;
            r
        })
        .collect();
    if placeholders.is_empty() {
        return "FALSE".into();
    }
    format!("{lhs} IN ({})", placeholders.join(", "))
}

/// `el.value` (an array element) is one of `items`.
fn element_in(items: &[FilterValue], binder: &mut Binder) -> String {
    let placeholders: Vec<String> = items.iter().map(|i| binder.json(as_json(i))).collect();
    if placeholders.is_empty() {
        return "FALSE".into();
    }
    format!("el.value IN ({})", placeholders.join(", "))
}

/// Case-insensitive substring of the member's text, or of any element of an array.
fn like(column: &Column, value: &FilterValue, binder: &mut Binder) -> String {
    let in_array = like_element(value, binder);
    let needle = binder.text(as_text(value).to_lowercase());
    format!(
        "(CASE WHEN {} THEN EXISTS(SELECT 1 FROM {} WHERE {in_array}) \
         ELSE strpos(lower({}), {needle}) > 0 END)",
        column.is_array(),
        column.each(),
        column.text()
    )
}

fn like_element(value: &FilterValue, binder: &mut Binder) -> String {
    let needle = binder.text(as_text(value).to_lowercase());
    format!("strpos(lower(svc_text(el.value)), {needle}) > 0")
}

fn element_eq(value: &FilterValue, binder: &mut Binder) -> String {
    match value {
        FilterValue::Date(t) => format!(
            "svc_time(svc_text(el.value)) = {}::timestamptz",
            binder.text(format_rfc3339(*t))
        ),
        other => format!("el.value = {}", binder.json(as_json(other))),
    }
}

fn some(column: &Column, element: String) -> String {
    format!(
        "({} AND EXISTS(SELECT 1 FROM {} WHERE {element}))",
        column.is_array(),
        column.each()
    )
}

fn every(column: &Column, element: String) -> String {
    format!(
        "({} AND NOT EXISTS(SELECT 1 FROM {} WHERE {}))",
        column.is_array(),
        column.each(),
        not(&element)
    )
}

/// An array with an element equal to the value; on a scalar, a case-sensitive substring.
fn contains(column: &Column, value: &FilterValue, binder: &mut Binder) -> String {
    let in_array = element_eq(value, binder);
    let needle = binder.text(as_text(value));
    format!(
        "(CASE WHEN {} THEN EXISTS(SELECT 1 FROM {} WHERE {in_array}) \
         ELSE strpos({}, {needle}) > 0 END)",
        column.is_array(),
        column.each(),
        column.text()
    )
}

fn contains_any(column: &Column, items: &[FilterValue], binder: &mut Binder) -> String {
    let in_array = element_in(items, binder);
    let substrings: Vec<String> = items
        .iter()
        .map(|item| {
            format!(
                "strpos({}, {}) > 0",
                column.text(),
                binder.text(as_text(item))
            )
        })
        .collect();
    let scalar = if substrings.is_empty() {
        "FALSE".to_string()
    } else {
        substrings.join(" OR ")
    };
    format!(
        "(CASE WHEN {} THEN EXISTS(SELECT 1 FROM {} WHERE {in_array}) ELSE {scalar} END)",
        column.is_array(),
        column.each(),
    )
}

/// Some element of the array (or the scalar itself) is one of the items.
fn any_inside(column: &Column, items: &[FilterValue], binder: &mut Binder) -> String {
    let in_array = element_in(items, binder);
    let scalar = in_list(column, items, binder);
    format!(
        "(CASE WHEN {} THEN EXISTS(SELECT 1 FROM {} WHERE {in_array}) ELSE {scalar} END)",
        column.is_array(),
        column.each(),
    )
}

/// Every element of the array (or the scalar itself) is one of the items.
fn all_inside(column: &Column, items: &[FilterValue], binder: &mut Binder) -> String {
    let in_array = element_in(items, binder);
    let scalar = in_list(column, items, binder);
    format!(
        "(CASE WHEN {} THEN NOT EXISTS(SELECT 1 FROM {} WHERE NOT coalesce({in_array}, false)) \
         ELSE {scalar} END)",
        column.is_array(),
        column.each(),
    )
}

/// Every word of the value is a word of the field (`svc_words`, the same words as SQLite's
/// `fulltext::words`); an array containment, which a GIN index on `svc_words(...)` serves.
fn words_match(column: &Column, value: &FilterValue, binder: &mut Binder) -> String {
    let query = binder.text(as_text(value));
    format!(
        "(cardinality(svc_words({query})) > 0 AND svc_words({}) @> svc_words({query}))",
        column.text()
    )
}

/// The value as the `jsonb` it equals when stored.
fn as_json(value: &FilterValue) -> Value {
    match value {
        FilterValue::String(s) => Value::String(s.clone()),
        FilterValue::Number(n) => {
            serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number)
        }
        FilterValue::Bool(b) => Value::Bool(*b),
        FilterValue::Date(t) => Value::String(format_rfc3339(*t)),
        FilterValue::Null | FilterValue::List(_) => Value::Null,
        FilterValue::Object(json) => json.clone(),
    }
}

/// The value as text, for substring and word matching and the server's text columns.
fn as_text(value: &FilterValue) -> String {
    match value {
        FilterValue::String(s) => s.clone(),
        FilterValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => (*n as i64).to_string(),
        FilterValue::Number(n) => n.to_string(),
        FilterValue::Bool(b) => b.to_string(),
        FilterValue::Date(t) => format_rfc3339(*t),
        FilterValue::Null | FilterValue::List(_) => String::new(),
        FilterValue::Object(Value::String(s)) => s.clone(),
        FilterValue::Object(json) => json.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query;

    fn where_of(pairs: &[(&str, &str)]) -> Where {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let q = query::parse(&pairs).unwrap();
        let table = TableRef::new("acme", "items").unwrap();
        build_where(&table, &q.filters, &q.or_filters)
    }

    #[test]
    fn values_are_bound_and_paths_are_literals_of_identifiers() {
        let w = where_of(&[("filter[name][eq][string]", "x'); DROP TABLE t; --")]);
        assert_eq!(w.sql, "NULLIF(data #> '{name}', 'null'::jsonb) = $1::jsonb");
        assert_eq!(w.params.len(), 1);
    }

    #[test]
    fn ordered_comparisons_are_typed_by_the_value() {
        let w = where_of(&[("filter[a.b][gt][number]", "10")]);
        assert_eq!(
            w.sql,
            "svc_num(NULLIF(data #> '{a,b}', 'null'::jsonb)) > $1::float8"
        );
        let w = where_of(&[("filter[created_dt][lt][date]", "2026-01-01T00:00:00Z")]);
        assert_eq!(w.sql, "created_dt COLLATE \"C\" < $1::text");
    }
}
