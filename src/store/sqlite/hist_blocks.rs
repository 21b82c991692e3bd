//! The historian's blocks on SQLite: how reads fetch blocks and hot rows inside one read
//! transaction (so a block closing meanwhile is seen either as rows or as a block, never both
//! or neither), how a series' oldest hot rows are closed into a block, and how retention
//! drops whole blocks and trims the one the cut falls in.

use super::{SqliteStore, StoreError, StoreResult};
use crate::store::blocks::{BlockPoint, MERGED_MAX_POINTS};
use crate::store::history::bursts;
use crate::store::history::merge::{self, Groups, DAYS_TO_MERGE};
use crate::store::history::{
    block_summary, BlockKey, BlockMeta, BlockWrites, HistoryLayout, SeriesReads,
};
use crate::store::interface::HistorianBlocks;
use crate::store::types::{DayToMerge, HotTail, Sealed, StraightCompaction};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

/// The historian layout as one connection (inside one transaction) sees it.
pub(super) struct Layout<'c>(pub &'c Connection);

/// Every column of the covering index `hist_blocks_summaries`: reading summaries reads no
/// block data.
const META_COLUMNS: &str = "id, start_ts, end_ts, count, num_count, min, max, sum, \
     first_seq, last_seq";

fn meta_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<BlockMeta> {
    Ok(BlockMeta {
        id: row.get(0)?,
        start_ms: row.get(1)?,
        end_ms: row.get(2)?,
        count: row.get(3)?,
        num_count: row.get(4)?,
        min: row.get(5)?,
        max: row.get(6)?,
        sum: row.get(7)?,
        first_seq: row.get(8)?,
        last_seq: row.get(9)?,
    })
}

/// Reads `(ts, seq, value, quality)` rows into points.
fn hot_points(mut rows: rusqlite::Rows<'_>) -> StoreResult<Vec<BlockPoint>> {
    let mut points = Vec::new();
    while let Some(row) = rows.next()? {
        let text = row.get_ref(2)?.as_str().map_err(|e| {
            StoreError::Internal(format!("stored history value is unreadable: {e}"))
        })?;
        points.push(BlockPoint {
            ts_ms: row.get(0)?,
            seq: row.get(1)?,
            value: serde_json::from_str(text)?,
            quality: row.get(3)?,
        });
    }
    Ok(points)
}

/// SQLite's LIMIT for an optional limit (-1 = none).
fn sql_limit(limit: Option<u64>) -> i64 {
    limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX))
}

impl HistoryLayout for Layout<'_> {
    fn block_metas(&self, series: i64, from_ms: i64, to_ms: i64) -> StoreResult<Vec<BlockMeta>> {
        let mut stmt = self.0.prepare_cached(&format!(
            "SELECT {META_COLUMNS} FROM hist_blocks \
             WHERE series = ?1 AND start_ts >= ?2 AND start_ts < ?3 ORDER BY start_ts"
        ))?;
        let metas = stmt.query_map(params![series, from_ms, to_ms], meta_of)?;
        Ok(metas.collect::<Result<_, _>>()?)
    }

    fn newest_blocks(
        &self,
        series: i64,
        before_ms: i64,
        limit: u32,
    ) -> StoreResult<Vec<BlockMeta>> {
        let mut stmt = self.0.prepare_cached(&format!(
            "SELECT {META_COLUMNS} FROM hist_blocks \
             WHERE series = ?1 AND start_ts < ?2 ORDER BY start_ts DESC LIMIT ?3"
        ))?;
        let metas = stmt.query_map(params![series, before_ms, limit], meta_of)?;
        Ok(metas.collect::<Result<_, _>>()?)
    }

    fn block_data(&self, _series: i64, keys: &[BlockKey]) -> StoreResult<Vec<Vec<u8>>> {
        let mut stmt = self
            .0
            .prepare_cached("SELECT data FROM hist_blocks WHERE id = ?1")?;
        keys.iter()
            .map(|key| Ok(stmt.query_row([key.id], |r| r.get(0))?))
            .collect()
    }

    fn hot_range(
        &self,
        series: i64,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> StoreResult<Vec<BlockPoint>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT ts, seq, value, quality FROM hist_points \
             WHERE series = ?1 AND ts >= ?2 AND ts < ?3 ORDER BY ts, seq LIMIT ?4",
        )?;
        let rows = stmt.query(params![series, start_ms, end_ms, sql_limit(limit)])?;
        hot_points(rows)
    }

    fn hot_last(&self, series: i64, n: u64) -> StoreResult<Vec<BlockPoint>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT ts, seq, value, quality FROM hist_points \
             WHERE series = ?1 ORDER BY ts DESC, seq DESC LIMIT ?2",
        )?;
        let rows = stmt.query(params![series, sql_limit(Some(n))])?;
        hot_points(rows)
    }
}

impl BlockWrites for Layout<'_> {
    fn insert_encoded(&self, series: i64, points: &[BlockPoint], data: &[u8]) -> StoreResult<()> {
        let summary = block_summary(points)?;
        self.0
            .prepare_cached(
                "INSERT INTO hist_blocks (series, start_ts, end_ts, count, num_count, min, max, \
                 sum, first_seq, first_value, last_seq, last_value, data) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?
            .execute(params![
                series,
                summary.start_ms,
                summary.end_ms,
                summary.count,
                summary.num_count,
                summary.min,
                summary.max,
                summary.sum,
                summary.first.seq,
                summary.first.value.to_string(),
                summary.last.seq,
                summary.last.value.to_string(),
                data,
            ])?;
        self.0
            .prepare_cached(
                "UPDATE hist_series SET sealed_upto = max(coalesce(sealed_upto, ?2), ?2) \
                 WHERE id = ?1",
            )?
            .execute(params![series, summary.end_ms])?;
        Ok(())
    }

    fn delete_block(&self, _series: i64, key: BlockKey) -> StoreResult<()> {
        self.0
            .prepare_cached("DELETE FROM hist_blocks WHERE id = ?1")?
            .execute([key.id])?;
        Ok(())
    }

    fn delete_blocks_ending_before(&self, series: i64, before_ms: i64) -> StoreResult<u64> {
        let points: i64 = self.0.query_row(
            "SELECT coalesce(sum(count), 0) FROM hist_blocks WHERE series = ?1 AND end_ts < ?2",
            params![series, before_ms],
            |r| r.get(0),
        )?;
        self.0.execute(
            "DELETE FROM hist_blocks WHERE series = ?1 AND end_ts < ?2",
            params![series, before_ms],
        )?;
        Ok(points.max(0) as u64)
    }

    fn delete_hot_through(&self, series: i64, ts_ms: i64, seq: i64) -> StoreResult<()> {
        self.0
            .prepare_cached("DELETE FROM hist_points WHERE series = ?1 AND (ts, seq) <= (?2, ?3)")?
            .execute(params![series, ts_ms, seq])?;
        Ok(())
    }
}

impl SeriesReads for SqliteStore {
    /// One read transaction: one snapshot of blocks and hot rows.
    fn read_series<T: Default>(
        &self,
        domain: &str,
        topic: &str,
        read: impl FnOnce(&dyn HistoryLayout, i64) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let conn = self.conn()?;
        let tx = conn.unchecked_transaction()?;
        let Some(series) = series_id(&tx, domain, topic)? else {
            return Ok(T::default());
        };
        let answer = read(&Layout(&tx), series)?;
        tx.finish()?;
        Ok(answer)
    }
}

/// The series id of a (domain, topic), if it was ever written.
pub(super) fn series_id(conn: &Connection, domain: &str, topic: &str) -> StoreResult<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT id FROM hist_series WHERE domain = ?1 AND topic = ?2")?
        .query_row(params![domain, topic], |r| r.get(0))
        .optional()?)
}

impl HistorianBlocks for SqliteStore {
    /// Every series' hot tail: how many rows it holds and their time bounds.
    fn history_tails(&self) -> StoreResult<Vec<HotTail>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(
            "SELECT s.domain, s.topic, t.n, t.lo, t.hi FROM \
             (SELECT series, count(*) AS n, min(ts) AS lo, max(ts) AS hi \
              FROM hist_points GROUP BY series) t JOIN hist_series s ON s.id = t.series",
        )?;
        let tails = stmt.query_map([], |r| {
            Ok(HotTail {
                domain: r.get(0)?,
                topic: r.get(1)?,
                count: r.get::<_, i64>(2)?.max(0) as u64,
                first_ms: r.get(3)?,
                last_ms: r.get(4)?,
            })
        })?;
        Ok(tails.collect::<Result<_, _>>()?)
    }

    /// Closes the oldest hot rows of a series into one block (at most `max_points`, within one
    /// UTC day), removing them in the same transaction.
    fn seal_history(&self, domain: &str, topic: &str, max_points: usize) -> StoreResult<Sealed> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(series) = series_id(&tx, domain, topic)? else {
            return Ok(Sealed::default());
        };
        let closed = Layout(&tx).seal_oldest(series, max_points)?;
        let next_first: Option<i64> = tx
            .prepare_cached("SELECT min(ts) FROM hist_points WHERE series = ?1")?
            .query_row([series], |r| r.get(0))?;
        tx.commit()?;
        Ok(Sealed {
            points: closed.points,
            merged: closed.merged,
            next_first_ms: next_first,
        })
    }

    /// Every series' day a merge would rewrite.
    fn history_days_to_merge(&self) -> StoreResult<Vec<DayToMerge>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(DAYS_TO_MERGE)?;
        let days = stmt.query_map([MERGED_MAX_POINTS as i64], |r| {
            Ok(DayToMerge {
                domain: r.get(0)?,
                topic: r.get(1)?,
                day_ms: r.get(2)?,
            })
        })?;
        Ok(days.collect::<Result<_, _>>()?)
    }

    /// Merges one day's blocks of a series, in one transaction.
    fn merge_history_day(&self, domain: &str, topic: &str, day_ms: i64) -> StoreResult<u64> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(series) = series_id(&tx, domain, topic)? else {
            return Ok(0);
        };
        let merged = merge::merge_day(&Layout(&tx), series, day_ms, Groups::All)?;
        tx.commit()?;
        Ok(merged)
    }

    /// Compacts a series' run of blocks written straight from bursts, in one transaction.
    fn compact_straight(
        &self,
        domain: &str,
        topic: &str,
        from_ms: i64,
        compaction: StraightCompaction,
    ) -> StoreResult<u64> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(series) = series_id(&tx, domain, topic)? else {
            return Ok(0);
        };
        let rewritten = bursts::compact_from(&Layout(&tx), series, from_ms, compaction)?;
        tx.commit()?;
        Ok(rewritten)
    }

    /// Nothing to do: pages freed by closed rows go to SQLite's free list and are reused.
    fn history_compact(&self) -> StoreResult<bool> {
        Ok(true)
    }
}
