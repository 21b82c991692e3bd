//! Translates a parsed list query into SQL over a record table. Field paths reach SQL only as
//! validated identifiers (so expression indexes on `json_extract(data,'$.path')` match);
//! every value is a bound parameter.

use super::{fulltext, quoted};
use crate::ids::TableRef;
use crate::query::{FieldPath, Filter, FilterValue, Op, SortKey};
use crate::time::format_rfc3339;
use rusqlite::types::Value as SqlValue;
use std::collections::HashSet;

/// A WHERE clause (without the keyword; `1` when there is nothing to filter) and its parameters.
pub struct Where {
    pub sql: String,
    pub params: Vec<SqlValue>,
}

/// Where a field lives in the row.
enum Column {
    /// A server-owned column stored as normalized text (`created_dt`, `updated_dt`).
    Time(&'static str),
    /// The full RecordID, built from the table's literal prefix and the key column.
    Id(String),
    /// A member of a JSON document: the document expression (`data`, or an array element's
    /// `el.value`) and the `'$.path'` literal.
    Json { doc: &'static str, path: String },
}

impl Column {
    fn of(table: &TableRef, field: &FieldPath) -> Column {
        match field.as_dotted().as_str() {
            "created_dt" => Column::Time("created_dt"),
            "updated_dt" => Column::Time("updated_dt"),
            "id" => Column::Id(format!("('{}' || key)", table.record_id(""))),
            dotted => Column::Json {
                doc: "data",
                path: format!("'$.{dotted}'"),
            },
        }
    }

    fn expr(&self) -> String {
        match self {
            Column::Time(name) => (*name).to_string(),
            Column::Id(expr) => expr.clone(),
            Column::Json { doc, path } => format!("json_extract({doc}, {path})"),
        }
    }

    /// `json_type(...) = 'array'` for a JSON member; never true for the server's columns.
    fn is_array(&self) -> String {
        match self {
            Column::Json { doc, path } => format!("json_type({doc}, {path}) = 'array'"),
            _ => "0".into(),
        }
    }

    /// `json_each(...)` over a JSON member (the caller checks it is an array).
    fn each(&self) -> String {
        match self {
            Column::Json { doc, path } => format!("json_each({doc}, {path})"),
            _ => "json_each('[]')".into(),
        }
    }
}

/// Builds the WHERE clause: every filter ANDed, the OR group ANDed as one term. `searchable`
/// names the fields with a full-text index (see `fulltext`), which `@@` then uses.
pub fn build_where(
    table: &TableRef,
    filters: &[Filter],
    or_filters: &[Filter],
    searchable: &HashSet<String>,
) -> Where {
    let mut params = Vec::new();
    let mut terms: Vec<String> = filters
        .iter()
        .map(|f| condition(table, f, searchable, &mut params))
        .collect();
    if !or_filters.is_empty() {
        let alternatives: Vec<String> = or_filters
            .iter()
            .map(|f| condition(table, f, searchable, &mut params))
            .collect();
        terms.push(format!("({})", alternatives.join(" OR ")));
    }
    let sql = if terms.is_empty() {
        "1".to_string()
    } else {
        terms.join(" AND ")
    };
    Where { sql, params }
}

/// ORDER BY list; the key is always the final tie-break so paging is stable.
pub fn build_order(table: &TableRef, sort: &[SortKey]) -> String {
    if sort.is_empty() {
        return "created_dt ASC, key ASC".into();
    }
    let mut keys: Vec<String> = sort
        .iter()
        .map(|k| {
            let dir = if k.descending { "DESC" } else { "ASC" };
            format!("{} {dir}", Column::of(table, &k.field).expr())
        })
        .collect();
    keys.push("key ASC".into());
    keys.join(", ")
}

fn condition(
    table: &TableRef,
    filter: &Filter,
    searchable: &HashSet<String>,
    params: &mut Vec<SqlValue>,
) -> String {
    let column = Column::of(table, &filter.field);
    let Some(element) = &filter.element else {
        let field = filter.field.as_dotted();
        if filter.op == Op::Match && searchable.contains(&field) {
            return indexed_match(table, &field, &filter.value, params);
        }
        return op_condition(&column, filter.op, &filter.value, params);
    };
    // ARRAY_WHERE: some element (an object) of the array has `element op value`.
    let member = Column::Json {
        doc: "el.value",
        path: format!("'$.{element}'"),
    };
    let inner = op_condition(&member, filter.op, &filter.value, params);
    format!(
        "({} AND EXISTS(SELECT 1 FROM {} AS el WHERE {inner}))",
        column.is_array(),
        column.each()
    )
}

/// `@@` through the field's full-text index.
fn indexed_match(
    table: &TableRef,
    field: &str,
    value: &FilterValue,
    params: &mut Vec<SqlValue>,
) -> String {
    let text = match value {
        FilterValue::String(s) => s.clone(),
        other => match sql_value(other) {
            SqlValue::Text(t) => t,
            SqlValue::Integer(n) => n.to_string(),
            SqlValue::Real(x) => x.to_string(),
            _ => String::new(),
        },
    };
    let Some(query) = fulltext::fts_query(&text) else {
        return "0".into();
    };
    params.push(SqlValue::Text(query));
    let index = quoted(&fulltext::index_name(table, field));
    format!("rowid IN (SELECT rowid FROM {index} WHERE {index} MATCH ?)")
}

/// One operator on one column. Parameters are pushed in the order their `?` appear.
fn op_condition(
    column: &Column,
    op: Op,
    value: &FilterValue,
    params: &mut Vec<SqlValue>,
) -> String {
    let lhs = column.expr();
    match (op, value) {
        (Op::Eq, FilterValue::Null) => format!("{lhs} IS NULL"),
        (Op::Ne, FilterValue::Null) => format!("{lhs} IS NOT NULL"),
        (Op::Eq | Op::Ne, FilterValue::Bool(b)) => bool_condition(column, op, *b, params),
        (Op::In, FilterValue::List(items)) => {
            let (lhs, list) = in_list(column, items, params);
            format!("{lhs} IN ({list})")
        }
        (Op::Nin, FilterValue::List(items)) => {
            let (lhs, list) = in_list(column, items, params);
            format!("({lhs} IS NULL OR {lhs} NOT IN ({list}))")
        }
        (Op::Like, value) => like(column, value, params),
        (Op::NotLike, value) => not(&like(column, value, params)),
        (Op::AnyLike, value) => some(column, params, |p| like_element(value, p)),
        (Op::AllLike, value) => every(column, params, |p| like_element(value, p)),
        (Op::AnyEq, value) => some(column, params, |p| element_eq(value, p)),
        (Op::AllEq, value) => every(column, params, |p| element_eq(value, p)),
        (Op::Contains, value) => contains(column, value, params),
        (Op::ContainsNot, value) => not(&contains(column, value, params)),
        (Op::ContainsAll, FilterValue::List(items)) => each_item(column, items, " AND ", params),
        (Op::ContainsAny, FilterValue::List(items)) => contains_any(column, items, params),
        (Op::ContainsNone, FilterValue::List(items)) => not(&contains_any(column, items, params)),
        (Op::AnyInside, FilterValue::List(items)) => any_inside(column, items, params),
        (Op::AllInside, FilterValue::List(items)) => all_inside(column, items, params),
        (Op::NoneInside, FilterValue::List(items)) => not(&any_inside(column, items, params)),
        (Op::Match, value) => {
            params.push(sql_value(value));
            format!("svc_words_match({lhs}, ?)")
        }
        (Op::Eq | Op::Ne | Op::Gt | Op::Gte | Op::Lt | Op::Lte, value) => {
            let (lhs, rhs) = operands(column, value, params);
            format!("{lhs} {} {rhs}", comparison(op))
        }
        // The parser gives list operators a list; anything else matches nothing.
        _ => "0".into(),
    }
}

/// A negation under which a missing field (NULL) counts as "does not match".
fn not(condition: &str) -> String {
    format!("NOT coalesce({condition}, 0)")
}

fn comparison(op: Op) -> &'static str {
    match op {
        Op::Ne => "IS NOT", // null-safe, so records lacking the field match `ne`
        Op::Gt => ">",
        Op::Gte => ">=",
        Op::Lt => "<",
        Op::Lte => "<=",
        _ => "=",
    }
}

/// The left and right side of a comparison with one bound value.
fn operands(column: &Column, value: &FilterValue, params: &mut Vec<SqlValue>) -> (String, String) {
    match (column, value) {
        (Column::Json { .. }, FilterValue::Date(t)) => {
            params.push(SqlValue::Text(format_rfc3339(*t)));
            (
                format!("julianday({})", column.expr()),
                "julianday(?)".into(),
            )
        }
        _ => {
            params.push(sql_value(value));
            (column.expr(), "?".into())
        }
    }
}

fn in_list(column: &Column, items: &[FilterValue], params: &mut Vec<SqlValue>) -> (String, String) {
    let mut lhs = column.expr();
    let placeholders: Vec<String> = items
        .iter()
        .map(|item| {
            let (l, r) = operands(column, item, params);
            lhs = l;
            r
        })
        .collect();
    (lhs, placeholders.join(", "))
}

/// Bound placeholders for a list compared with array elements (`value IN (?, ?)`).
fn element_list(items: &[FilterValue], params: &mut Vec<SqlValue>) -> String {
    let placeholders: Vec<&str> = items
        .iter()
        .map(|item| {
            params.push(sql_value(item));
            "?"
        })
        .collect();
    placeholders.join(", ")
}

/// JSON `true`/`false` are extracted as 1/0, which a number could equal too, so booleans are
/// matched on the JSON type.
fn bool_condition(column: &Column, op: Op, wanted: bool, params: &mut Vec<SqlValue>) -> String {
    let cmp = if op == Op::Eq { "=" } else { "IS NOT" };
    match column {
        Column::Json { doc, path } => {
            format!("json_type({doc}, {path}) {cmp} '{wanted}'")
        }
        _ => {
            params.push(SqlValue::Integer(i64::from(wanted)));
            format!("{} {cmp} ?", column.expr())
        }
    }
}

/// `~`: case-insensitive substring of the string, or of some element of an array.
fn like(column: &Column, value: &FilterValue, params: &mut Vec<SqlValue>) -> String {
    let in_array = like_element(value, params);
    params.push(lowered(value));
    format!(
        "(CASE WHEN {} THEN EXISTS(SELECT 1 FROM {} WHERE {in_array}) \
         ELSE instr(lower({}), ?) > 0 END)",
        column.is_array(),
        column.each(),
        column.expr()
    )
}

/// `~` on one `json_each` element.
fn like_element(value: &FilterValue, params: &mut Vec<SqlValue>) -> String {
    params.push(lowered(value));
    "instr(lower(value), ?) > 0".into()
}

fn lowered(value: &FilterValue) -> SqlValue {
    match value {
        FilterValue::String(s) => SqlValue::Text(s.to_lowercase()),
        other => sql_value(other),
    }
}

/// Equality of one `json_each` element with the value (booleans and null by JSON type).
fn element_eq(value: &FilterValue, params: &mut Vec<SqlValue>) -> String {
    match value {
        FilterValue::Bool(b) => format!("type = '{b}'"),
        FilterValue::Null => "type = 'null'".into(),
        FilterValue::Date(t) => {
            params.push(SqlValue::Text(format_rfc3339(*t)));
            "julianday(value) = julianday(?)".into()
        }
        other => {
            params.push(sql_value(other));
            "value = ?".into()
        }
    }
}

/// Some element of the array satisfies the element condition.
fn some(
    column: &Column,
    params: &mut Vec<SqlValue>,
    element: impl FnOnce(&mut Vec<SqlValue>) -> String,
) -> String {
    format!(
        "({} AND EXISTS(SELECT 1 FROM {} WHERE {}))",
        column.is_array(),
        column.each(),
        element(params)
    )
}

/// Every element of the array satisfies the element condition (an empty array does).
fn every(
    column: &Column,
    params: &mut Vec<SqlValue>,
    element: impl FnOnce(&mut Vec<SqlValue>) -> String,
) -> String {
    format!(
        "({} AND NOT EXISTS(SELECT 1 FROM {} WHERE {}))",
        column.is_array(),
        column.each(),
        not(&element(params))
    )
}

/// `CONTAINS`: the array has an element equal to the value; a string has it as a substring.
fn contains(column: &Column, value: &FilterValue, params: &mut Vec<SqlValue>) -> String {
    let in_array = element_eq(value, params);
    params.push(sql_value(value));
    format!(
        "(CASE WHEN {} THEN EXISTS(SELECT 1 FROM {} WHERE {in_array}) \
         ELSE instr({}, ?) > 0 END)",
        column.is_array(),
        column.each(),
        column.expr()
    )
}

/// `CONTAINS` for each item, joined with AND / OR.
fn each_item(
    column: &Column,
    items: &[FilterValue],
    join: &str,
    params: &mut Vec<SqlValue>,
) -> String {
    let terms: Vec<String> = items.iter().map(|i| contains(column, i, params)).collect();
    format!("({})", terms.join(join))
}

/// `CONTAINSANY`: one pass over the array's elements (`IN` the items), or any item as a
/// substring of a string.
fn contains_any(column: &Column, items: &[FilterValue], params: &mut Vec<SqlValue>) -> String {
    let in_array = element_list(items, params);
    let substrings: Vec<String> = items
        .iter()
        .map(|item| {
            params.push(sql_value(item));
            format!("instr({}, ?) > 0", column.expr())
        })
        .collect();
    format!(
        "(CASE WHEN {} THEN EXISTS(SELECT 1 FROM {} WHERE value IN ({in_array})) \
         ELSE ({}) END)",
        column.is_array(),
        column.each(),
        substrings.join(" OR ")
    )
}

/// Some element of the array (or the scalar itself) is one of the items.
fn any_inside(column: &Column, items: &[FilterValue], params: &mut Vec<SqlValue>) -> String {
    let in_array = element_list(items, params);
    let scalar = element_list(items, params);
    format!(
        "(CASE WHEN {} THEN EXISTS(SELECT 1 FROM {} WHERE value IN ({in_array})) \
         ELSE {} IN ({scalar}) END)",
        column.is_array(),
        column.each(),
        column.expr()
    )
}

/// Every element of the array (or the scalar itself) is one of the items.
fn all_inside(column: &Column, items: &[FilterValue], params: &mut Vec<SqlValue>) -> String {
    let in_array = element_list(items, params);
    let scalar = element_list(items, params);
    format!(
        "(CASE WHEN {} THEN NOT EXISTS(SELECT 1 FROM {} WHERE value IS NULL OR value NOT IN ({in_array})) \
         ELSE {} IN ({scalar}) END)",
        column.is_array(),
        column.each(),
        column.expr()
    )
}

fn sql_value(value: &FilterValue) -> SqlValue {
    match value {
        FilterValue::String(s) => SqlValue::Text(s.clone()),
        FilterValue::Number(n) => number(*n),
        FilterValue::Bool(b) => SqlValue::Integer(i64::from(*b)),
        FilterValue::Date(t) => SqlValue::Text(format_rfc3339(*t)),
        FilterValue::Null | FilterValue::List(_) => SqlValue::Null,
        FilterValue::Object(json) => match json {
            serde_json::Value::Number(n) => n.as_f64().map_or(SqlValue::Null, number),
            serde_json::Value::String(s) => SqlValue::Text(s.clone()),
            serde_json::Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
            serde_json::Value::Null => SqlValue::Null,
            // json_extract returns objects and arrays as minified JSON text with the stored key
            // order, which serde_json also produces (sorted keys).
            other => SqlValue::Text(other.to_string()),
        },
    }
}

/// Integral values bind as integers so they compare exactly with stored integers.
fn number(n: f64) -> SqlValue {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        SqlValue::Integer(n as i64)
    } else {
        SqlValue::Real(n)
    }
}

/// The expression an index on `field` must use for filters to find it.
pub fn index_expr(field: &str) -> String {
    format!("json_extract(data, '$.{field}')")
}
