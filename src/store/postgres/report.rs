//! Runs a checked report query (see [`crate::report_sql`]) over one domain's data on
//! PostgreSQL. As on SQLite, each relation the query names becomes a CTE over that domain's
//! rows only (the historian's over a temporary table of its points, `report_historian.rs`);
//! here the query also runs in a `READ ONLY` transaction whose `search_path` is the domain's
//! schema alone, under `statement_timeout`. Rows come back as `to_jsonb` of each row,
//! so every PostgreSQL type reaches the API as JSON.
//!
//! Relations: `historian(topic, timestamp, value)` with `value` the numeric reading as an exact
//! `numeric` (999 stays 999, 20.0 keeps its fraction, booleans are 1 and 0, as SQLite's
//! `json_extract` gives them) and `value_json` the value as stored; one relation per table with
//! `id`, `created_dt`, `updated_dt` and a column per top-level field, typed by what its records
//! hold (numbers and booleans as `numeric`, anything else as its text). Definitions use function syntax only, since they
//! pass through the report checker's parser.

use super::{names, report_historian, PgStore};
use crate::ids::{is_identifier, TableRef};
use crate::report_sql::CheckedQuery;
use crate::store::interface::Reports;
use crate::store::report_historian::{over_time, past_deadline};
use crate::store::types::*;
use crate::store::{StoreError, StoreResult};
use serde_json::{Map, Value};
use std::time::Instant;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;

/// The caller's own mistake in a query PostgreSQL refused (unknown column, type error…).
fn refused(err: tokio_postgres::Error, limits: ReportLimits) -> StoreError {
    match err.as_db_error() {
        Some(db) if *db.code() == SqlState::QUERY_CANCELED => over_time(limits),
        Some(db) => StoreError::Invalid(format!("the query failed: {}", db.message())),
        None => err.into(),
    }
}

/// One result row as a JSON object keyed by column name.
fn row_object(row: &tokio_postgres::Row) -> Map<String, Value> {
    let mut object = match row.get::<_, Value>(0) {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    for (i, column) in row.columns().iter().enumerate().skip(1) {
        let float = match *column.type_() {
            Type::FLOAT8 => row.get::<_, Option<f64>>(i),
            Type::FLOAT4 => row.get::<_, Option<f32>>(i).map(f64::from),
            _ => continue,
        };
        if let Some(number) = float.and_then(serde_json::Number::from_f64) {
            object.insert(column.name().to_string(), Value::Number(number));
        }
    }
    object
}

impl Reports for PgStore {
    /// The domain's record tables (bare names).
    fn domain_tables(&self, domain: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .query(
                "SELECT table_name::text FROM information_schema.tables \
                 WHERE table_schema = $1 ORDER BY 1",
                &[&names::schema_name(domain)],
            )?
            .iter()
            .map(|row| row.get::<_, String>(0))
            .filter(|name| is_identifier(name))
            .collect())
    }

    /// A relation over one record table, a column per top-level field its records hold.
    fn table_definition(&self, table: &TableRef) -> StoreResult<String> {
        let physical = names::table(table);
        let fields = self.query(
            &format!(
                "SELECT f.key, array_agg(DISTINCT jsonb_typeof(f.value)) \
                 FROM {physical} t, jsonb_each(t.data) f GROUP BY f.key ORDER BY f.key"
            ),
            &[],
        )?;
        let mut columns = vec![
            format!("concat('{}', key) AS id", table.record_id("")),
            "created_dt".to_string(),
            "updated_dt".to_string(),
        ];
        for row in &fields {
            let field: String = row.get(0);
            if !is_identifier(&field)
                || matches!(field.as_str(), "id" | "created_dt" | "updated_dt")
            {
                continue;
            }
            let kinds: Vec<String> = row.get(1);
            let member = format!("jsonb_extract_path(data, '{field}')");
            let typed = if kinds
                .iter()
                .all(|k| matches!(k.as_str(), "number" | "boolean" | "null"))
            {
                format!("public.svc_number({member})")
            } else {
                format!("public.svc_text({member})")
            };
            columns.push(format!("{typed} AS {}", names::quoted(&field)));
        }
        Ok(format!("SELECT {} FROM {physical}", columns.join(", ")))
    }

    fn historian_definition(&self) -> String {
        report_historian::definition()
    }

    /// Runs the report over `domain`'s data: rows as JSON objects keyed by column name.
    fn run_report(
        &self,
        domain: &str,
        query: CheckedQuery,
        relations: &[(String, ReportRelation)],
        limits: ReportLimits,
    ) -> StoreResult<Vec<Map<String, Value>>> {
        let deadline = Instant::now() + limits.timeout;
        let (sql, historian) = self.report_sql(query, relations)?;
        // Each row as JSON (every type has a JSON form), and its columns as they are: a
        // `double precision` column keeps its fraction (20.0, as SQLite returns a REAL), which
        // `to_jsonb` would drop.
        let wrapped = format!(
            "SELECT to_jsonb(r) AS svc_row, r.* FROM ({sql}) AS r LIMIT {}",
            limits.max_rows + 1
        );
        // One snapshot for the historian's points and the query; the temporary table they are
        // copied into is created before the transaction turns read-only, and goes with it.
        let mut client = self.block(self.client())?;
        let tx = self.block(async {
            let builder = client.build_transaction();
            Ok(builder
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .start()
                .await?)
        })?;
        let create = match historian {
            Some(_) => format!("{};", report_historian::create_table()),
            None => String::new(),
        };
        self.block(async {
            let timeout_ms = limits.timeout.as_millis().max(1);
            Ok(tx
                .batch_execute(&format!(
                    "{create} SET TRANSACTION READ ONLY; \
                     SET LOCAL statement_timeout = {timeout_ms}"
                ))
                .await?)
        })?;
        if let Some(scope) = &historian {
            report_historian::fill(self, &tx, domain, scope, limits, deadline)
                .map_err(|e| past_deadline(e, limits, deadline))?;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(over_time(limits));
        }
        let rows = self.block(async {
            tx.batch_execute(&format!(
                "SET LOCAL statement_timeout = {}; SET LOCAL search_path = {}, pg_catalog",
                left.as_millis().max(1),
                names::schema(domain)
            ))
            .await?;
            let rows = tx
                .query(&wrapped, &[])
                .await
                .map_err(|e| refused(e, limits))?;
            tx.rollback().await?;
            Ok(rows)
        })?;
        if rows.len() > limits.max_rows {
            return Err(StoreError::Unprocessable(format!(
                "the query returned more than {} rows; add a LIMIT or aggregate",
                limits.max_rows
            )));
        }
        Ok(rows.iter().map(row_object).collect())
    }
}
