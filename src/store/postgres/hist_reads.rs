//! The historian's reads on PostgreSQL as futures: how one REPEATABLE READ snapshot fetches
//! block summaries, block data and hot rows ([`Fetch`] on the transaction's [`Layout`]), and
//! the raw range and last-N reads of a series awaited on the server's workers
//! ([`AsyncReads`](crate::store::interface::AsyncReads)). The synchronous layout
//! (`hist_blocks.rs`) blocks on these same futures, and the reads' logic is the engine-neutral
//! `store::history::fetch`, so both ways read exactly alike.

use super::hist_blocks::Layout;
use super::PgStore;
use crate::store::blocks::BlockPoint;
use crate::store::history::fetch::{self, Fetch};
use crate::store::history::{history_point, BlockKey, BlockMeta};
use crate::store::types::HistoryPoint;
use crate::store::{StoreError, StoreResult};
use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// Every column of the covering index `hist_blocks_summaries`: reading summaries reads no
/// block data.
const META_COLUMNS: &str = "id, start_ts, end_ts, count, num_count, min, max, sum, \
     first_seq, last_seq";

fn meta_of(row: &Row) -> BlockMeta {
    BlockMeta {
        id: row.get(0),
        start_ms: row.get(1),
        end_ms: row.get(2),
        count: row.get(3),
        num_count: row.get(4),
        min: row.get(5),
        max: row.get(6),
        sum: row.get(7),
        first_seq: row.get(8),
        last_seq: row.get(9),
    }
}

fn hot_points(rows: &[Row]) -> StoreResult<Vec<BlockPoint>> {
    rows.iter()
        .map(|row| {
            Ok(BlockPoint {
                ts_ms: row.get(0),
                seq: i64::from(row.get::<_, i32>(1)),
                value: serde_json::from_str(row.get(2))?,
                quality: u32::try_from(row.get::<_, i64>(3)).unwrap_or(0),
            })
        })
        .collect()
}

/// A read-only REPEATABLE READ transaction: one snapshot of a series' blocks and hot rows, so
/// a block closing meanwhile is seen either as rows or as a block.
pub(super) async fn read_snapshot(
    client: &mut deadpool_postgres::Client,
) -> Result<Transaction<'_>, tokio_postgres::Error> {
    client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
}

/// Which raw read of one series to make.
enum SeriesRead {
    /// Points with `start_ms <= ts < end_ms`, oldest first, at most `limit`.
    Range {
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    },
    /// The newest `n` points, newest first.
    Last(u64),
}

impl Layout<'_> {
    /// Every row of one statement in the layout's transaction.
    pub(super) async fn rows(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<Row>> {
        let statement = self.tx.prepare_cached(sql).await?;
        Ok(self.tx.query(&statement, params).await?)
    }
}

impl Fetch for Layout<'_> {
    async fn block_metas(
        &self,
        series: i64,
        from_ms: i64,
        to_ms: i64,
    ) -> StoreResult<Vec<BlockMeta>> {
        let rows = self
            .rows(
                &format!(
                    "SELECT {META_COLUMNS} FROM hist_blocks \
                     WHERE series = $1 AND start_ts >= $2 AND start_ts < $3 ORDER BY start_ts"
                ),
                &[&series, &from_ms, &to_ms],
            )
            .await?;
        Ok(rows.iter().map(meta_of).collect())
    }

    async fn newest_blocks(
        &self,
        series: i64,
        before_ms: i64,
        limit: u32,
    ) -> StoreResult<Vec<BlockMeta>> {
        let rows = self
            .rows(
                &format!(
                    "SELECT {META_COLUMNS} FROM hist_blocks \
                     WHERE series = $1 AND start_ts < $2 ORDER BY start_ts DESC LIMIT $3"
                ),
                &[&series, &before_ms, &i64::from(limit)],
            )
            .await?;
        Ok(rows.iter().map(meta_of).collect())
    }

    async fn block_data(&self, series: i64, keys: &[BlockKey]) -> StoreResult<Vec<Vec<u8>>> {
        let ids: Vec<i64> = keys.iter().map(|k| k.id).collect();
        let starts: Vec<i64> = keys.iter().map(|k| k.start_ms).collect();
        let rows = self
            .rows(
                "SELECT b.id, b.data FROM hist_blocks b \
                 WHERE b.series = $1 AND b.start_ts = ANY($2) AND b.id = ANY($3)",
                &[&series, &starts, &ids],
            )
            .await?;
        let mut by_id: std::collections::HashMap<i64, Vec<u8>> =
            rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        keys.iter()
            .map(|k| {
                by_id.remove(&k.id).ok_or_else(|| {
                    StoreError::Internal(format!("historian block {} is missing", k.id))
                })
            })
            .collect()
    }

    async fn hot_range(
        &self,
        series: i64,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> StoreResult<Vec<BlockPoint>> {
        let limit = limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        hot_points(
            &self
                .rows(
                    "SELECT ts, seq, value, quality FROM hist_points \
                     WHERE series = $1 AND ts >= $2 AND ts < $3 ORDER BY ts, seq LIMIT $4",
                    &[&series, &start_ms, &end_ms, &limit],
                )
                .await?,
        )
    }

    async fn hot_last(&self, series: i64, n: u64) -> StoreResult<Vec<BlockPoint>> {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        hot_points(
            &self
                .rows(
                    "SELECT ts, seq, value, quality FROM hist_points \
                     WHERE series = $1 ORDER BY ts DESC, seq DESC LIMIT $2",
                    &[&series, &n],
                )
                .await?,
        )
    }
}

impl PgStore {
    /// As [`HistorianReads::history_range`](crate::store::interface::HistorianReads), awaited
    /// on the caller's runtime.
    pub(super) async fn history_range_async(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> StoreResult<Vec<HistoryPoint>> {
        let read = SeriesRead::Range {
            start_ms,
            end_ms,
            limit,
        };
        self.read_series_async(domain, topic, read).await
    }

    /// As [`HistorianReads::history_last`](crate::store::interface::HistorianReads), awaited
    /// on the caller's runtime.
    pub(super) async fn history_last_async(
        &self,
        domain: &str,
        topic: &str,
        n: u64,
    ) -> StoreResult<Vec<HistoryPoint>> {
        self.read_series_async(domain, topic, SeriesRead::Last(n))
            .await
    }

    /// One raw read of a series in one snapshot; a series never written reads as empty.
    async fn read_series_async(
        &self,
        domain: &str,
        topic: &str,
        read: SeriesRead,
    ) -> StoreResult<Vec<HistoryPoint>> {
        let Some(series) = self.series_id_async(domain, topic).await? else {
            return Ok(Vec::new());
        };
        let mut client = self.client().await?;
        let tx = read_snapshot(&mut client).await?;
        let layout = Layout {
            store: self,
            tx: &tx,
        };
        let points = match read {
            SeriesRead::Range {
                start_ms,
                end_ms,
                limit,
            } => fetch::read_range(&layout, series, start_ms, end_ms, limit).await?,
            SeriesRead::Last(n) => fetch::read_last(&layout, series, n).await?,
        };
        tx.commit().await?;
        Ok(points.into_iter().map(history_point).collect())
    }
}
