//! The `historian` relation of a report on PostgreSQL: the points the report's scope admits,
//! read from blocks and hot rows by [`crate::store::report_historian::read_scope`] inside the
//! report's own REPEATABLE READ transaction, copied (binary `COPY`, a page at a time) into a
//! temporary table created `ON COMMIT DROP` in that transaction, and the relation a CTE over
//! it. The transaction turns read-only right after creating the table (writing a temporary
//! table stays allowed), so the report itself can change nothing.

use super::hist_blocks::Layout;
use super::PgStore;
use crate::report_sql::scope::HistorianScope;
use crate::store::report_historian::{read_scope, TEMP_TABLE};
use crate::store::{ReportLimits, StoreResult};
use deadpool_postgres::Transaction;
use std::time::Instant;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::Type;

/// The relation over the temporary table [`fill`] wrote: `value` the numeric reading as an
/// exact `numeric`, `value_json` the value as stored, and `timestamp` text that compares byte
/// by byte (`"C"`), as it does on SQLite and as the report's scope assumes.
pub(super) fn definition() -> String {
    format!(
        "SELECT topic AS topic, \
         to_char(timezone('UTC', to_timestamp(ts / 1000.0)), 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') \
             COLLATE \"C\" AS timestamp, \
         public.svc_number(value) AS value, value AS value_json \
         FROM pg_temp.{TEMP_TABLE}"
    )
}

/// The statement that creates the temporary table; it must run before the transaction turns
/// read-only.
pub(super) fn create_table() -> String {
    format!("CREATE TEMP TABLE {TEMP_TABLE} (topic text, ts bigint, value jsonb) ON COMMIT DROP")
}

/// Writes into the temporary table the points of `domain` that `scope` admits.
pub(super) fn fill(
    store: &PgStore,
    tx: &Transaction<'_>,
    domain: &str,
    scope: &HistorianScope,
    limits: ReportLimits,
    deadline: Instant,
) -> StoreResult<()> {
    let layout = Layout { store, tx };
    let series: Vec<(i64, String)> = layout
        .query(
            "SELECT id, topic FROM hist_series WHERE domain = $1 ORDER BY id",
            &[&domain],
        )?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let copy = format!("COPY pg_temp.{TEMP_TABLE} (topic, ts, value) FROM STDIN (FORMAT binary)");
    read_scope(
        &layout,
        &series,
        scope,
        limits,
        deadline,
        |topic, points| {
            store.block(async {
                let sink = tx.copy_in(&copy).await?;
                let writer = BinaryCopyInWriter::new(sink, &[Type::TEXT, Type::INT8, Type::JSONB]);
                futures::pin_mut!(writer);
                for point in points {
                    writer
                        .as_mut()
                        .write(&[&topic, &point.ts_ms, &point.value])
                        .await?;
                }
                writer.finish().await?;
                Ok(())
            })
        },
    )?;
    Ok(())
}
