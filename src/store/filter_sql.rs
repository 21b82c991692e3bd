//! Translates a parsed list query into SQL over a record table. Field paths reach SQL only as
//! validated identifiers (so expression indexes on `json_extract(data,'$.path')` match);
//! every value is a bound parameter.

use crate::ids::TableRef;
use crate::query::{FieldPath, Filter, FilterValue, Op, SortKey};
use crate::time::format_rfc3339;
use rusqlite::types::Value as SqlValue;

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
    /// A member of the JSON document: (`json_extract(...)` expression, `'$.path'` literal).
    Json(String, String),
}

impl Column {
    fn of(table: &TableRef, field: &FieldPath) -> Column {
        match field.as_dotted().as_str() {
            "created_dt" => Column::Time("created_dt"),
            "updated_dt" => Column::Time("updated_dt"),
            "id" => Column::Id(format!("('{}' || key)", table.record_id(""))),
            dotted => {
                let path = format!("'$.{dotted}'");
                Column::Json(format!("json_extract(data, {path})"), path)
            }
        }
    }

    fn expr(&self) -> &str {
        match self {
            Column::Time(name) => name,
            Column::Id(expr) | Column::Json(expr, _) => expr,
        }
    }
}

/// Builds the WHERE clause: every filter ANDed, the OR group ANDed as one term.
pub fn build_where(table: &TableRef, filters: &[Filter], or_filters: &[Filter]) -> Where {
    let mut params = Vec::new();
    let mut terms: Vec<String> = filters
        .iter()
        .map(|f| condition(table, f, &mut params))
        .collect();
    if !or_filters.is_empty() {
        let alternatives: Vec<String> = or_filters
            .iter()
            .map(|f| condition(table, f, &mut params))
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

fn condition(table: &TableRef, filter: &Filter, params: &mut Vec<SqlValue>) -> String {
    let column = Column::of(table, &filter.field);
    let lhs = column.expr().to_string();
    match (&filter.op, &filter.value) {
        (Op::Eq, FilterValue::Null) => format!("{lhs} IS NULL"),
        (Op::Ne, FilterValue::Null) => format!("{lhs} IS NOT NULL"),
        (op @ (Op::Eq | Op::Ne), FilterValue::Bool(b)) => bool_condition(&column, *op, *b, params),
        (Op::Contains, value) => contains(&column, value, params),
        (Op::In, FilterValue::List(items)) => {
            let (lhs, list) = in_list(&column, items, params);
            format!("{lhs} IN ({list})")
        }
        (Op::Nin, FilterValue::List(items)) => {
            let (lhs, list) = in_list(&column, items, params);
            format!("({lhs} IS NULL OR {lhs} NOT IN ({list}))")
        }
        (op, value) => {
            let (lhs, rhs) = operands(&column, value, params);
            format!("{lhs} {} {rhs}", comparison(*op))
        }
    }
}

fn comparison(op: Op) -> &'static str {
    match op {
        Op::Eq => "=",
        // Null-safe, so records lacking the field match `ne`.
        Op::Ne => "IS NOT",
        Op::Gt => ">",
        Op::Gte => ">=",
        Op::Lt => "<",
        Op::Lte => "<=",
        // In, Nin and Contains are handled before; equality is the safe fallback.
        Op::Contains | Op::In | Op::Nin => "=",
    }
}

/// The left and right side of a comparison with one bound value.
fn operands(column: &Column, value: &FilterValue, params: &mut Vec<SqlValue>) -> (String, String) {
    match (column, value) {
        (Column::Json(expr, _), FilterValue::Date(t)) => {
            params.push(SqlValue::Text(format_rfc3339(*t)));
            (format!("julianday({expr})"), "julianday(?)".into())
        }
        _ => {
            params.push(sql_value(value));
            (column.expr().to_string(), "?".into())
        }
    }
}

fn in_list(column: &Column, items: &[FilterValue], params: &mut Vec<SqlValue>) -> (String, String) {
    let mut lhs = column.expr().to_string();
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

/// JSON `true`/`false` are extracted as 1/0, which a number could equal too, so booleans are
/// matched on the JSON type.
fn bool_condition(column: &Column, op: Op, wanted: bool, params: &mut Vec<SqlValue>) -> String {
    match column {
        Column::Json(_, path) => {
            let json_type = if wanted { "'true'" } else { "'false'" };
            let cmp = if op == Op::Eq { "=" } else { "IS NOT" };
            format!("json_type(data, {path}) {cmp} {json_type}")
        }
        _ => {
            params.push(SqlValue::Integer(i64::from(wanted)));
            format!("{} {} ?", column.expr(), comparison(op))
        }
    }
}

fn contains(column: &Column, value: &FilterValue, params: &mut Vec<SqlValue>) -> String {
    let bound = sql_value(value);
    match column {
        Column::Json(expr, path) => {
            params.push(bound.clone());
            params.push(bound);
            format!(
                "(CASE json_type(data, {path}) WHEN 'array' THEN \
                 EXISTS(SELECT 1 FROM json_each(data, {path}) WHERE value = ?) \
                 ELSE instr({expr}, ?) > 0 END)"
            )
        }
        _ => {
            params.push(bound);
            format!("instr({}, ?) > 0", column.expr())
        }
    }
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
