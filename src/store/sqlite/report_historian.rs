//! The `historian` relation of a report on SQLite: the points the report's scope admits,
//! read from blocks and hot rows by [`crate::store::report_historian::read_scope`] inside the
//! report's own read transaction, copied into a temporary table of that transaction (it
//! lives in the connection's `temp` database and goes with the rollback that ends the
//! report; the main database is only read), and the relation a CTE over it.
//!
//! Values are the SQL values `json_extract` gave when the relation read `hist_points`:
//! numbers stay numbers (integers as INTEGER, others as REAL), strings are TEXT, booleans 1
//! and 0, objects and arrays their JSON text, null NULL.

use super::hist_blocks::Layout;
use super::StoreResult;
use crate::report_scope::HistorianScope;
use crate::store::report_historian::{read_scope, TEMP_TABLE};
use crate::store::ReportLimits;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection};
use serde_json::Value;
use std::time::Instant;

/// The relation over the temporary table [`fill`] wrote. The value column is declared with no
/// type, so it compares as `json_extract`'s result did (no affinity); the topic keeps TEXT.
pub(super) fn definition() -> String {
    format!(
        "SELECT topic AS topic, \
         strftime('%Y-%m-%dT%H:%M:%fZ', ts / 1000.0, 'unixepoch') AS timestamp, \
         value AS value FROM temp.{TEMP_TABLE}"
    )
}

/// Creates the temporary table inside `tx` (a transaction of the report's connection) and
/// writes into it the points of `domain` that `scope` admits.
pub(super) fn fill(
    tx: &Connection,
    domain: &str,
    scope: &HistorianScope,
    limits: ReportLimits,
    deadline: Instant,
) -> StoreResult<()> {
    tx.execute_batch(&format!(
        "CREATE TEMP TABLE {TEMP_TABLE} (topic TEXT, ts INTEGER, value)"
    ))?;
    let series = domain_series(tx, domain)?;
    // Not cached: the table is gone once the report ends.
    let mut insert = tx.prepare(&format!(
        "INSERT INTO temp.{TEMP_TABLE} (topic, ts, value) VALUES (?1, ?2, ?3)"
    ))?;
    read_scope(
        &Layout(tx),
        &series,
        scope,
        limits,
        deadline,
        |topic, points| {
            for point in points {
                insert.execute(params![topic, point.ts_ms, sql_value(&point.value)])?;
            }
            Ok(())
        },
    )?;
    Ok(())
}

/// The domain's series (id, topic), by id (the order `hist_points` keeps them in).
fn domain_series(conn: &Connection, domain: &str) -> StoreResult<Vec<(i64, String)>> {
    let mut stmt =
        conn.prepare_cached("SELECT id, topic FROM hist_series WHERE domain = ?1 ORDER BY id")?;
    let rows = stmt.query_map([domain], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A stored value as `json_extract(value, '$')` returns it.
fn sql_value(value: &Value) -> SqlValue {
    match value {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => n.as_f64().map_or(SqlValue::Null, SqlValue::Real),
        },
        Value::String(text) => SqlValue::Text(text.clone()),
        other => SqlValue::Text(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every kind of value comes out as `json_extract` gives it from the same JSON text.
    #[test]
    fn values_are_what_json_extract_gives() {
        let db = Connection::open_in_memory().unwrap();
        for value in [
            json!(null),
            json!(true),
            json!(false),
            json!(42),
            json!(-7),
            json!(i64::MAX),
            json!(u64::MAX),
            json!(20.0),
            json!(-0.0),
            json!(0.1),
            json!(1.5e300),
            json!("text"),
            json!(""),
            json!([1, "a", {"b": null}]),
            json!({"a": 1, "b": [true, 2.5]}),
        ] {
            let (extracted, ours): (SqlValue, SqlValue) = db
                .query_row(
                    "SELECT json_extract(?1, '$'), ?2",
                    params![value.to_string(), sql_value(&value)],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!(ours, extracted, "{value}");
        }
    }
}
