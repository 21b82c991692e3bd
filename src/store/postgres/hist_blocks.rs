//! The historian's blocks on PostgreSQL: reads fetch blocks and hot rows inside one
//! REPEATABLE READ transaction (one snapshot, so a block closing meanwhile is seen either as
//! rows or as a block), closing a block locks its series' row so instances that share the
//! database never close the same rows twice, and `hist_blocks` is partitioned by the blocks'
//! start in periods of [`BLOCK_PERIOD_MS`].

use super::PgStore;
use crate::store::blocks::{BlockPoint, MERGED_MAX_POINTS};
use crate::store::history::bursts;
use crate::store::history::fetch::Fetch;
use crate::store::history::merge::{self, Groups, DAYS_TO_MERGE};
use crate::store::history::{
    block_summary, BlockKey, BlockMeta, BlockWrites, HistoryLayout, SeriesReads,
};
use crate::store::interface::HistorianBlocks;
use crate::store::types::{DayToMerge, HotTail, Sealed, StraightCompaction};
use crate::store::StoreResult;
use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// How long giving back closed rows' space waits for reads and writes in flight.
const COMPACT_LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// One partition of `hist_blocks`: 28 days, aligned to the epoch.
pub(super) const BLOCK_PERIOD_MS: i64 = 28 * 86_400_000;

/// The historian layout as one transaction sees it.
pub(super) struct Layout<'a> {
    pub store: &'a PgStore,
    pub tx: &'a Transaction<'a>,
}

impl Layout<'_> {
    pub(super) fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<Row>> {
        self.store.block(self.rows(sql, params))
    }

    fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<u64> {
        self.store.block(async {
            let statement = self.tx.prepare_cached(sql).await?;
            Ok(self.tx.execute(&statement, params).await?)
        })
    }
}

/// The synchronous layout blocks on the reads' futures (`hist_reads.rs`): one SQL text and one
/// decoding of each, whether the server awaits them or a blocking caller waits.
impl HistoryLayout for Layout<'_> {
    fn block_metas(&self, series: i64, from_ms: i64, to_ms: i64) -> StoreResult<Vec<BlockMeta>> {
        self.store
            .block(Fetch::block_metas(self, series, from_ms, to_ms))
    }

    fn newest_blocks(
        &self,
        series: i64,
        before_ms: i64,
        limit: u32,
    ) -> StoreResult<Vec<BlockMeta>> {
        self.store
            .block(Fetch::newest_blocks(self, series, before_ms, limit))
    }

    fn block_data(&self, series: i64, keys: &[BlockKey]) -> StoreResult<Vec<Vec<u8>>> {
        self.store.block(Fetch::block_data(self, series, keys))
    }

    fn hot_range(
        &self,
        series: i64,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> StoreResult<Vec<BlockPoint>> {
        self.store
            .block(Fetch::hot_range(self, series, start_ms, end_ms, limit))
    }

    fn hot_last(&self, series: i64, n: u64) -> StoreResult<Vec<BlockPoint>> {
        self.store.block(Fetch::hot_last(self, series, n))
    }
}

impl BlockWrites for Layout<'_> {
    fn insert_encoded(&self, series: i64, points: &[BlockPoint], data: &[u8]) -> StoreResult<()> {
        let summary = block_summary(points)?;
        self.store.ensure_block_partition(summary.start_ms)?;
        let (first_value, last_value) = (
            summary.first.value.to_string(),
            summary.last.value.to_string(),
        );
        self.execute(
            "INSERT INTO hist_blocks (series, start_ts, end_ts, count, num_count, min, max, sum, \
             first_seq, first_value, last_seq, last_value, data) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            &[
                &series,
                &summary.start_ms,
                &summary.end_ms,
                &summary.count,
                &summary.num_count,
                &summary.min,
                &summary.max,
                &summary.sum,
                &summary.first.seq,
                &first_value,
                &summary.last.seq,
                &last_value,
                &data,
            ],
        )?;
        self.execute(
            "UPDATE hist_series SET sealed_upto = greatest(coalesce(sealed_upto, $2), $2) \
             WHERE id = $1",
            &[&series, &summary.end_ms],
        )?;
        Ok(())
    }

    fn delete_block(&self, series: i64, key: BlockKey) -> StoreResult<()> {
        self.execute(
            "DELETE FROM hist_blocks WHERE series = $1 AND start_ts = $2 AND id = $3",
            &[&series, &key.start_ms, &key.id],
        )?;
        Ok(())
    }

    fn delete_blocks_ending_before(&self, series: i64, before_ms: i64) -> StoreResult<u64> {
        let rows = self.query(
            "WITH gone AS (DELETE FROM hist_blocks WHERE series = $1 AND end_ts < $2 \
             RETURNING count) SELECT coalesce(sum(count), 0)::bigint FROM gone",
            &[&series, &before_ms],
        )?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64))
    }

    fn delete_hot_through(&self, series: i64, ts_ms: i64, seq: i64) -> StoreResult<()> {
        let seq = i32::try_from(seq).unwrap_or(i32::MAX);
        self.execute(
            "DELETE FROM hist_points WHERE series = $1 AND (ts, seq) <= ($2, $3)",
            &[&series, &ts_ms, &seq],
        )?;
        Ok(())
    }
}

impl SeriesReads for PgStore {
    /// A REPEATABLE READ, read-only transaction: one snapshot of blocks and hot rows.
    fn read_series<T: Default>(
        &self,
        domain: &str,
        topic: &str,
        read: impl FnOnce(&dyn HistoryLayout, i64) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let Some(series) = self.series_id(domain, topic)? else {
            return Ok(T::default());
        };
        self.with_layout(series, false, |layout| read(layout, series))
    }
}

impl PgStore {
    /// Runs `work` on one series' layout inside one transaction: REPEATABLE READ and read-only
    /// for reads, and for writes (`lock`) with the series' row locked so no other instance
    /// closes or trims its blocks meanwhile.
    pub(super) fn with_layout<T>(
        &self,
        series: i64,
        lock: bool,
        work: impl FnOnce(&Layout<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let mut client = self.block(self.client())?;
        let tx = self.block(async {
            Ok(if lock {
                client.build_transaction().start().await?
            } else {
                super::hist_reads::read_snapshot(&mut client).await?
            })
        })?;
        if lock {
            self.block(async {
                tx.execute(
                    "SELECT 1 FROM hist_series WHERE id = $1 FOR UPDATE",
                    &[&series],
                )
                .await?;
                Ok(())
            })?;
        }
        let answer = work(&Layout {
            store: self,
            tx: &tx,
        })?;
        self.block(async { Ok(tx.commit().await?) })?;
        Ok(answer)
    }

    /// Creates the `hist_blocks` partition holding blocks that start at `start_ms`.
    pub(super) fn ensure_block_partition(&self, start_ms: i64) -> StoreResult<()> {
        self.ensure_partitions_of(
            super::historian::Partitioned::Blocks,
            [start_ms].into_iter(),
        )
    }
}

impl HistorianBlocks for PgStore {
    /// Every series' hot tail: how many rows it holds and their time bounds.
    fn history_tails(&self) -> StoreResult<Vec<HotTail>> {
        let rows = self.query(
            "SELECT s.domain, s.topic, t.n, t.lo, t.hi FROM \
             (SELECT series, count(*) AS n, min(ts) AS lo, max(ts) AS hi \
              FROM hist_points GROUP BY series) t JOIN hist_series s ON s.id = t.series",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| HotTail {
                domain: r.get(0),
                topic: r.get(1),
                count: r.get::<_, i64>(2).max(0) as u64,
                first_ms: r.get(3),
                last_ms: r.get(4),
            })
            .collect())
    }

    /// Closes the oldest hot rows of a series into one block, removing them in the same
    /// transaction.
    fn seal_history(&self, domain: &str, topic: &str, max_points: usize) -> StoreResult<Sealed> {
        let Some(series) = self.series_id(domain, topic)? else {
            return Ok(Sealed::default());
        };
        self.with_layout(series, true, |layout| {
            let closed = layout.seal_oldest(series, max_points)?;
            let rows = layout.query(
                "SELECT min(ts) FROM hist_points WHERE series = $1",
                &[&series],
            )?;
            Ok(Sealed {
                points: closed.points,
                merged: closed.merged,
                next_first_ms: rows.first().and_then(|r| r.get(0)),
            })
        })
    }

    /// Every series' day a merge would rewrite.
    fn history_days_to_merge(&self) -> StoreResult<Vec<DayToMerge>> {
        let sql = DAYS_TO_MERGE.replace("?1", "$1::bigint");
        let rows = self.query(&sql, &[&(MERGED_MAX_POINTS as i64)])?;
        Ok(rows
            .iter()
            .map(|r| DayToMerge {
                domain: r.get(0),
                topic: r.get(1),
                day_ms: r.get(2),
            })
            .collect())
    }

    /// Merges one day's blocks of a series, in one transaction under the series lock.
    fn merge_history_day(&self, domain: &str, topic: &str, day_ms: i64) -> StoreResult<u64> {
        let Some(series) = self.series_id(domain, topic)? else {
            return Ok(0);
        };
        self.with_layout(series, true, |layout| {
            merge::merge_day(layout, series, day_ms, Groups::All)
        })
    }

    /// Compacts a series' run of blocks written straight from bursts, in one transaction
    /// (PostgreSQL folds write none yet, see `fold_history`).
    fn compact_straight(
        &self,
        domain: &str,
        topic: &str,
        from_ms: i64,
        compaction: StraightCompaction,
    ) -> StoreResult<u64> {
        let Some(series) = self.series_id(domain, topic)? else {
            return Ok(0);
        };
        self.with_layout(series, true, |layout| {
            bursts::compact_from(layout, series, from_ms, compaction)
        })
    }

    /// Drops the past days' `hist_points` partitions that closing blocks emptied: PostgreSQL
    /// keeps a table's pages after its rows are deleted, so each day would otherwise keep the
    /// size of everything it once held. Dropping a partition locks `hist_points` itself, so
    /// the lock is taken on it first (as every read and write takes it), waiting at most
    /// [`COMPACT_LOCK_WAIT`] for the statements in flight; if they do not finish by then the
    /// partitions wait for the next time. A late point for a dropped day creates it again.
    fn history_compact(&self) -> StoreResult<bool> {
        let today = merge::day_of(chrono::Utc::now().timestamp_millis());
        let past: Vec<(String, i64)> = self
            .query(
                "SELECT c.relname, \
                     (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''?(-?\\d+)'))[1]::bigint \
                 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
                 WHERE i.inhparent = 'hist_points'::regclass",
                &[],
            )?
            .iter()
            .filter_map(|row| {
                let start: Option<i64> = row.get(1);
                start.filter(|s| *s < today).map(|s| (row.get(0), s))
            })
            .collect();
        if past.is_empty() {
            return Ok(true);
        }
        let dropped = self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            tx.batch_execute(&format!(
                "SET LOCAL lock_timeout = '{}ms'",
                COMPACT_LOCK_WAIT.as_millis()
            ))
            .await?;
            if tx
                .batch_execute("LOCK TABLE hist_points IN ACCESS EXCLUSIVE MODE")
                .await
                .is_err()
            {
                return Ok(None); // busy: ask again soon
            }
            let mut dropped = Vec::new();
            for (name, start) in &past {
                let empty: bool = tx
                    .query_one(
                        &format!("SELECT NOT EXISTS (SELECT 1 FROM \"{name}\")"),
                        &[],
                    )
                    .await?
                    .get(0);
                if empty {
                    tx.batch_execute(&format!("DROP TABLE \"{name}\"")).await?;
                    dropped.push(*start);
                }
            }
            tx.commit().await?;
            Ok(Some(dropped))
        })?;
        let Some(dropped) = dropped else {
            return Ok(false);
        };
        for start in dropped {
            self.forget_partition(super::historian::Partitioned::Points, start);
        }
        Ok(true)
    }
}
