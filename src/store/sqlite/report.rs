//! Runs a checked report query (see [`crate::report_sql`]) over one domain's data. Each relation
//! it names becomes a CTE over that domain's rows only:
//! - `historian(topic, timestamp, value)`: timestamps RFC 3339 UTC with milliseconds, values as
//!   SQL values (numbers stay numbers, strings strings, objects and arrays JSON text), over a
//!   temporary table of the points the query can read (`report_historian.rs`);
//! - one relation per table of the domain: `id`, `created_dt`, `updated_dt` and a column per
//!   top-level field found in its records.
//!
//! The statement must be read-only to SQLite too, runs under a time limit (interrupted when it
//! passes) and may return at most a set number of rows. In PostgreSQL the same relations are
//! CTEs over such a temporary table and the `jsonb` tables, with `statement_timeout` as the time limit.

use super::{quoted, report_historian, SqliteStore, StoreError, StoreResult};
use crate::ids::{is_identifier, TableRef};
use crate::report_sql::CheckedQuery;
use crate::store::interface::Reports;
use crate::store::report_historian::{over_time, past_deadline};
use crate::store::types::*;
use rusqlite::types::ValueRef;
use serde_json::{Map, Value};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn json_of(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => Value::from(n),
        ValueRef::Real(x) => serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
    }
}

fn is_interrupt(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::OperationInterrupted)
}

/// An error SQLite found in the query itself (an unknown column, a type error): the caller's.
fn refused_by_sqlite(e: &rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(message))
        | rusqlite::Error::SqlInputError { msg: message, .. } => {
            StoreError::Invalid(format!("the query failed: {message}"))
        }
        other => StoreError::Internal(other.to_string()),
    }
}

/// Interrupts the connection's statement when the time limit passes; stops when dropped.
struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
}

impl Watchdog {
    fn start(handle: rusqlite::InterruptHandle, timeout: Duration) -> Watchdog {
        let (stop, stopped) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("svc-report-watchdog".into())
            .spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(timeout) {
                    handle.interrupt();
                }
            });
        Watchdog {
            stop: spawned.is_ok().then_some(stop),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Reports for SqliteStore {
    /// The domain's record tables (bare names).
    fn domain_tables(&self, domain: &str) -> StoreResult<Vec<String>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT substr(name, length(?1) + 2) FROM sqlite_master \
             WHERE type = 'table' AND substr(name, 1, length(?1) + 1) = ?1 || '.' ORDER BY name",
        )?;
        let names = stmt.query_map([domain], |r| r.get::<_, String>(0))?;
        let names: Vec<String> = names.collect::<Result<_, _>>()?;
        Ok(names.into_iter().filter(|n| is_identifier(n)).collect())
    }

    /// `SELECT id, created_dt, updated_dt, <field>… FROM <the table>`, a column per top-level
    /// field (with an identifier for a name) found in its records.
    fn table_definition(&self, table: &TableRef) -> StoreResult<String> {
        let physical = quoted(&table.qualified());
        let conn = self.conn()?;
        let mut stmt = conn.prepare(&format!(
            "SELECT DISTINCT j.key FROM {physical} t, json_each(t.data) j ORDER BY j.key"
        ))?;
        let fields: Vec<String> = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<_, _>>()?;
        let mut columns = vec![
            format!("'{}' || key AS id", table.record_id("")),
            "created_dt".to_string(),
            "updated_dt".to_string(),
        ];
        for field in fields.iter().filter(|f| {
            is_identifier(f) && !matches!(f.as_str(), "id" | "created_dt" | "updated_dt")
        }) {
            columns.push(format!(
                "json_extract(data, '$.{field}') AS {}",
                quoted(field)
            ));
        }
        Ok(format!("SELECT {} FROM {physical}", columns.join(", ")))
    }

    fn historian_definition(&self) -> String {
        report_historian::definition()
    }

    /// Runs the report over `domain`'s data, its relations resolved by
    /// [`SqliteStore::report_relations`]: rows as JSON objects keyed by column name.
    fn run_report(
        &self,
        domain: &str,
        query: CheckedQuery,
        relations: &[(String, ReportRelation)],
        limits: ReportLimits,
    ) -> StoreResult<Vec<Map<String, Value>>> {
        let deadline = Instant::now() + limits.timeout;
        let (sql, historian) = self.report_sql(query, relations)?;
        let conn = self.conn()?;
        let _watchdog = Watchdog::start(conn.get_interrupt_handle(), limits.timeout);
        // One snapshot for the historian's points and the query; the rollback at its end
        // drops the temporary table they were copied into.
        let tx = conn.unchecked_transaction()?;
        if let Some(scope) = &historian {
            report_historian::fill(&tx, domain, scope, limits, deadline)
                .map_err(|e| past_deadline(e, limits, deadline))?;
        }
        let mut stmt = tx.prepare(&sql).map_err(|e| refused_by_sqlite(&e))?;
        if !stmt.readonly() {
            return Err(StoreError::Invalid(
                "only a read-only SELECT is allowed".into(),
            ));
        }
        let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
        // The checker refuses parameters, and the relations take none.
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        loop {
            let row = match rows.next() {
                Ok(Some(row)) => row,
                Ok(None) => break,
                Err(e) if is_interrupt(&e) => return Err(over_time(limits)),
                Err(e) => return Err(refused_by_sqlite(&e)),
            };
            if out.len() == limits.max_rows {
                return Err(StoreError::Unprocessable(format!(
                    "the query returned more than {} rows; add a LIMIT or aggregate",
                    limits.max_rows
                )));
            }
            let mut object = Map::with_capacity(columns.len());
            for (i, name) in columns.iter().enumerate() {
                object.insert(name.clone(), json_of(row.get_ref(i)?));
            }
            out.push(object);
        }
        Ok(out)
    }
}
