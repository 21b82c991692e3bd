//! Historian storage: the hot tail, one row per recent value, clustered by (series, ts, seq);
//! older values live in compressed blocks (`hist_blocks.rs`), and reads merge both through the
//! engine-neutral `store::history`.
//!
//! Layout (and its PostgreSQL translation for the growth path):
//! - `hist_series(id, domain, topic)` names each (domain, topic) once; points refer to it by id.
//!   In PostgreSQL: `id bigint generated always as identity`, same unique key.
//! - `hist_points(series, ts, seq, num, value)`, `ts` in epoch milliseconds, `num` the numeric
//!   reading (or NULL) that aggregates run on, `value` the JSON of the value as received. In
//!   PostgreSQL: `ts timestamptz` (or `bigint`), `num double precision`, `value jsonb`,
//!   `PRIMARY KEY (series, ts, seq)` and `PARTITION BY RANGE (ts)`; the partition key is part of
//!   the primary key as PostgreSQL requires, and retention becomes dropping old partitions.
//!
//! `seq` disambiguates values of one series that share a timestamp: the first value at a
//! (series, ts) gets 0, each later one max(seq) + 1, decided inside the write transaction, so
//! equal timestamps keep their arrival order and no process state is involved.

use super::hist_blocks::Layout;
use super::{SqliteStore, StoreResult};
use crate::store::history::{BlockWrites, HistoryLayout};
use crate::store::interface::{HistorianRetention, HistorianTestCalls};
#[cfg(test)]
use crate::store::HistoryWrite;
use foldhash::HashMap;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

/// One value on its way into `hist_points`, borrowed from wherever it was queued.
pub(super) struct PointRef<'v> {
    pub domain: &'v str,
    pub topic: &'v str,
    pub ts_ms: i64,
    pub num: Option<f64>,
    pub text: &'v str,
    pub quality: u32,
}

/// The id of a series (created if it is new) and the newest time its blocks hold.
pub(super) fn series_for_writing(
    tx: &rusqlite::Transaction<'_>,
    domain: &str,
    topic: &str,
) -> StoreResult<(i64, Option<i64>)> {
    let known = tx
        .prepare_cached("SELECT id, sealed_upto FROM hist_series WHERE domain = ?1 AND topic = ?2")?
        .query_row(params![domain, topic], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    if let Some(known) = known {
        return Ok(known);
    }
    tx.prepare_cached("INSERT INTO hist_series (domain, topic) VALUES (?1, ?2)")?
        .execute(params![domain, topic])?;
    Ok((tx.last_insert_rowid(), None))
}

/// Inserts values into `hist_points` inside `tx`, in order (creating series as they appear);
/// values of one series at one timestamp keep their order through `seq`.
pub(super) fn insert_points<'v>(
    tx: &rusqlite::Transaction<'_>,
    points: impl IntoIterator<Item = PointRef<'v>>,
) -> StoreResult<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO hist_points (series, ts, seq, num, value, quality) \
         VALUES (?1, ?2, 0, ?3, ?4, ?5) ON CONFLICT (series, ts, seq) DO NOTHING",
    )?;
    // Two statements, not `INSERT … SELECT max(seq) + 1 FROM hist_points`: an insert that
    // reads its own table goes through a temporary table each time.
    let mut next_seq = tx.prepare_cached(
        "SELECT coalesce(max(seq) + 1, 0) FROM hist_points WHERE series = ?1 AND ts = ?2",
    )?;
    let mut insert_at = tx.prepare_cached(
        "INSERT INTO hist_points (series, ts, seq, num, value, quality) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut insert_next = tx.prepare_cached(
        "INSERT INTO hist_points (series, ts, seq, num, value, quality) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (series, ts, seq) DO NOTHING",
    )?;
    // Each series' id and the newest time its blocks hold; each point's series; the times of
    // late points (no newer than what their series' blocks hold), per series.
    let mut series_ids: HashMap<(&str, &str), (i64, Option<i64>)> = HashMap::default();
    let mut resolved = Vec::new();
    let mut late: std::collections::HashMap<i64, Vec<i64>> = std::collections::HashMap::new();
    for point in points {
        let key = (point.domain, point.topic);
        let (series, sealed_upto) = match series_ids.get(&key) {
            Some(known) => *known,
            None => {
                let known = series_for_writing(tx, key.0, key.1)?;
                series_ids.insert(key, known);
                known
            }
        };
        if sealed_upto.is_some_and(|upto| point.ts_ms <= upto) {
            late.entry(series).or_default().push(point.ts_ms);
        }
        resolved.push((series, point));
    }
    // A late point goes after the points the blocks already have at its time, so equal
    // timestamps keep their arrival order.
    let after_blocks = Layout(tx).block_seqs_after(late)?;
    // One series after the other (in arrival order within each): its rows share leaf pages,
    // which are then read and written once per fold rather than once per value.
    resolved.sort_by_key(|(series, _)| *series);
    // The series, time and seq of the point stored last: a burst of one series within one
    // millisecond (a fast tag, or many values in one batch) comes one point after the other
    // here, and each point after the first takes the next seq without asking the table for
    // its highest (three statements per point become one).
    let mut last: Option<(i64, i64, i64)> = None;
    for (series, point) in resolved {
        let after = after_blocks
            .get(&(series, point.ts_ms))
            .copied()
            .unwrap_or(0);
        let next = last
            .filter(|(s, ts, _)| *s == series && *ts == point.ts_ms)
            .map(|(.., seq)| seq + 1);
        let (ts, num, text, quality) = (point.ts_ms, point.num, point.text, point.quality);
        let seq = match next {
            Some(seq)
                if insert_next.execute(params![series, ts, seq, num, text, quality])? == 1 =>
            {
                seq
            }
            None if after == 0 && insert.execute(params![series, ts, num, text, quality])? == 1 => {
                0
            }
            _ => {
                let seq: i64 = next_seq.query_row(params![series, ts], |r| r.get(0))?;
                let seq = seq.max(after);
                insert_at.execute(params![series, ts, seq, num, text, quality])?;
                seq
            }
        };
        last = Some((series, point.ts_ms, seq));
    }
    Ok(())
}

// Tests: `src/historian/store_tests.rs` (through the public API).
impl HistorianRetention for SqliteStore {
    /// Retention: deletes values older than `before_ms`, of one domain and/or topic or of all;
    /// returns how many were deleted. Series rows are kept so ids stay stable.
    fn history_delete_before(
        &self,
        domain: Option<&str>,
        topic: Option<&str>,
        before_ms: i64,
    ) -> StoreResult<u64> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let series: Vec<i64> = tx
            .prepare(
                "SELECT id FROM hist_series WHERE (?1 IS NULL OR domain = ?1) \
                 AND (?2 IS NULL OR topic = ?2)",
            )?
            .query_map(params![domain, topic], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let mut deleted = 0u64;
        let mut hot = tx.prepare_cached("DELETE FROM hist_points WHERE series = ?1 AND ts < ?2")?;
        for id in series {
            deleted += Layout(&tx).trim_blocks_before(id, before_ms)?;
            deleted += hot.execute(params![id, before_ms])? as u64;
        }
        drop(hot);
        tx.commit()?;
        Ok(deleted)
    }
}

impl HistorianTestCalls for SqliteStore {
    /// Writes a batch of values as rows in one transaction (a burst too, so tests can compare
    /// rows with blocks); returns how many rows were written. The server writes through the
    /// historian's journal ([`SqliteStore::fold_history`]); tests use this.
    #[cfg(test)]
    fn append_history(&self, batch: &[HistoryWrite]) -> StoreResult<usize> {
        if batch.is_empty() {
            return Ok(0);
        }
        self.fold(batch, None, super::hist_journal::Bursts::AsRows)?;
        Ok(batch.len())
    }

    /// Topics of a domain that have at least one stored value, sorted.
    #[cfg(test)]
    fn history_topics(&self, domain: &str) -> StoreResult<Vec<String>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT topic FROM hist_series s WHERE domain = ?1 \
             AND (EXISTS (SELECT 1 FROM hist_points p WHERE p.series = s.id) \
                  OR EXISTS (SELECT 1 FROM hist_blocks b WHERE b.series = s.id)) ORDER BY topic",
        )?;
        let rows = stmt.query_map(params![domain], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
