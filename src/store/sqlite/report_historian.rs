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
use crate::report_sql::scope::HistorianScope;
use crate::store::blocks::BlockPoint;
use crate::store::report_historian::{read_scope, TEMP_TABLE};
use crate::store::ReportLimits;
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::{params_from_iter, Connection};
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
    let insert = |rows: usize| {
        let values = vec!["(?, ?, ?)"; rows].join(", ");
        tx.prepare(&format!(
            "INSERT INTO temp.{TEMP_TABLE} (topic, ts, value) VALUES {values}"
        ))
    };
    let (mut many, mut one) = (insert(ROWS_PER_INSERT)?, insert(1)?);
    read_scope(
        &Layout(tx),
        &series,
        scope,
        limits,
        deadline,
        |topic, points| {
            let mut chunks = points.chunks_exact(ROWS_PER_INSERT);
            for chunk in chunks.by_ref() {
                many.execute(params_from_iter(chunk.iter().flat_map(|p| row(topic, p))))?;
            }
            for point in chunks.remainder() {
                one.execute(params_from_iter(row(topic, point)))?;
            }
            Ok(())
        },
    )?;
    Ok(())
}

/// Rows written by one `INSERT` (SQLite binds at most 32,766 parameters).
const ROWS_PER_INSERT: usize = 256;

/// One point's parameters.
fn row<'p>(topic: &'p str, point: &'p BlockPoint) -> [ToSqlOutput<'p>; 3] {
    [
        ToSqlOutput::Borrowed(ValueRef::Text(topic.as_bytes())),
        ToSqlOutput::Owned(SqlValue::Integer(point.ts_ms)),
        sql_value(&point.value),
    ]
}

/// The domain's series (id, topic), by id (the order `hist_points` keeps them in).
fn domain_series(conn: &Connection, domain: &str) -> StoreResult<Vec<(i64, String)>> {
    let mut stmt =
        conn.prepare_cached("SELECT id, topic FROM hist_series WHERE domain = ?1 ORDER BY id")?;
    let rows = stmt.query_map([domain], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A stored value as `json_extract(value, '$')` returns it.
fn sql_value(value: &Value) -> ToSqlOutput<'_> {
    ToSqlOutput::Owned(match value {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => n.as_f64().map_or(SqlValue::Null, SqlValue::Real),
        },
        Value::String(text) => return ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
        other => SqlValue::Text(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report_sql::check;
    use crate::store::history::HistoryLayout;
    use crate::store::interface::*;
    use crate::store::report_historian::read_pages;
    use crate::store::sqlite::SqliteStore;
    use crate::store::types::*;
    use crate::store::StoreError;
    use rusqlite::params;
    use serde_json::json;
    use std::time::Duration;

    const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

    fn write(store: &SqliteStore, topic: &str, points: impl IntoIterator<Item = (i64, Value)>) {
        let batch: Vec<HistoryWrite> = points
            .into_iter()
            .map(|(ts_ms, value)| HistoryWrite {
                domain: "d".into(),
                topic: topic.into(),
                ts_ms,
                value,
                quality: Quality::GOOD,
            })
            .collect();
        store.append_history(&batch).unwrap();
    }

    /// Series `a`: two blocks, then hot rows (late ones among them), with a run of points at
    /// one millisecond in each; 60 points in all.
    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        for round in 0..3i64 {
            let start = T0 + round * 60_000;
            write(
                &store,
                "a",
                (0..12).map(|i| (start + i * 1000, json!(round * 100 + i))),
            );
            write(
                &store,
                "a",
                (0..8).map(|i| (start + 5000, json!(format!("same {i}")))),
            );
            if round < 2 {
                assert_eq!(
                    store
                        .seal_history("d", "a", crate::store::blocks::MAX_POINTS)
                        .unwrap()
                        .points,
                    20
                );
            }
        }
        write(&store, "a", [(T0 + 500, json!({"late": true}))]);
        (dir, store)
    }

    fn limits(max_points: u64) -> ReportLimits {
        ReportLimits {
            timeout: Duration::from_secs(5),
            max_rows: 1000,
            max_points,
        }
    }

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

    /// Pages that stop inside a run of equal timestamps, or hold one point, lose and repeat
    /// nothing: the points come out as one read of the whole range gives them.
    #[test]
    fn pages_hand_over_every_point_once_in_order() {
        let (_dir, store) = store();
        let conn = store.conn().unwrap();
        let tx = conn.unchecked_transaction().unwrap();
        let series = domain_series(&tx, "d").unwrap();
        let id = series[0].0;
        let layout = Layout(&tx);
        for (start_ms, end_ms) in [(i64::MIN, i64::MAX), (T0 + 2000, T0 + 65_000)] {
            let whole = layout.read_range(id, start_ms, end_ms, None).unwrap();
            // All of them; or 10 + 8 of the first block and 5 of the second.
            let expected = if start_ms == i64::MIN { 61 } else { 23 };
            assert_eq!(whole.len(), expected);
            let scope = HistorianScope {
                start_ms,
                end_ms,
                topics: None,
            };
            for page in [1, 3, 5, 8, 9, 1000] {
                let mut seen = Vec::new();
                let bounds = (limits(1000), Instant::now() + Duration::from_secs(5));
                read_pages(&layout, &series, &scope, bounds, page, |topic, points| {
                    assert_eq!(topic, "a");
                    seen.extend_from_slice(points);
                    Ok(())
                })
                .unwrap();
                assert_eq!(seen, whole, "pages of {page}");
            }
        }
    }

    /// A report filling its temporary table holds no write lock: the historian's writer
    /// commits meanwhile, and the report keeps its snapshot.
    #[test]
    fn the_temporary_table_leaves_the_database_to_its_writers() {
        let (_dir, store) = store();
        let reader = store.conn().unwrap();
        let tx = reader.unchecked_transaction().unwrap();
        let scope = HistorianScope::everything();
        fill(
            &tx,
            "d",
            &scope,
            limits(1000),
            Instant::now() + Duration::from_secs(5),
        )
        .unwrap();
        let writer = store.conn().unwrap();
        writer.busy_timeout(Duration::ZERO).unwrap();
        writer
            .execute_batch("BEGIN IMMEDIATE; COMMIT")
            .expect("the write lock is free");
        write(&store, "a", [(T0 + 999_000, json!(1))]);
        let count =
            |c: &Connection, sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(
            count(&tx, "SELECT count(*) FROM temp.svc_report_historian"),
            61
        );
        assert_eq!(
            count(&tx, "SELECT count(*) FROM hist_points"),
            21,
            "the snapshot holds"
        );
        drop(tx);
        assert_eq!(count(&writer, "SELECT count(*) FROM hist_points"), 22);
        assert_eq!(
            count(
                &reader,
                "SELECT count(*) FROM sqlite_temp_master WHERE name = 'svc_report_historian'"
            ),
            0,
            "gone with the rollback"
        );
    }

    #[test]
    fn more_points_than_the_cap_is_422_asking_for_a_narrower_time_range() {
        let (_dir, store) = store();
        let run = |sql: &str, max_points| {
            let query = check(sql).unwrap();
            let relations = store.report_relations("d", &query).unwrap();
            store.run_report("d", query, &relations, limits(max_points))
        };
        let all = "SELECT count(*) AS n FROM historian";
        assert_eq!(run(all, 61).unwrap()[0]["n"], json!(61));
        match run(all, 60) {
            Err(StoreError::Unprocessable(m)) => {
                assert!(
                    m.contains("more than 60 historian points") && m.contains("timestamp"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
        let narrow = "SELECT count(*) AS n FROM historian WHERE timestamp < '2026-01-01T00:01'";
        assert_eq!(run(narrow, 60).unwrap()[0]["n"], json!(21));
        // Out of time while reading points: the same advice.
        let query = check(all).unwrap();
        let relations = store.report_relations("d", &query).unwrap();
        let no_time = ReportLimits {
            timeout: Duration::ZERO,
            ..limits(100)
        };
        match store.run_report("d", query, &relations, no_time) {
            Err(StoreError::Unprocessable(m)) => {
                assert!(m.contains("time limit") && m.contains("`timestamp`"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }
}
