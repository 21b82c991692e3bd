//! Historian storage: one row per historized value, clustered by (series, ts, seq) so a range
//! query on one tag is a single sequential scan of the primary key.
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

use super::{SqliteStore, StoreError, StoreResult};
use crate::historian::Aggregation;
use crate::store::types::*;
use rusqlite::{params, OptionalExtension};
use serde_json::Value;
use std::collections::HashMap;

fn parse_value(text: &str) -> StoreResult<Value> {
    Ok(serde_json::from_str(text)?)
}

/// The JSON text of a `value` column, borrowed from the row.
fn value_text<'r>(row: &'r rusqlite::Row<'_>, idx: usize) -> StoreResult<&'r str> {
    row.get_ref(idx)?
        .as_str()
        .map_err(|e| StoreError::Internal(format!("stored history value is unreadable: {e}")))
}

fn read_value(row: &rusqlite::Row<'_>, idx: usize) -> StoreResult<Value> {
    parse_value(value_text(row, idx)?)
}

/// Reads `(ts, value)` rows into points.
fn read_points(mut rows: rusqlite::Rows<'_>) -> StoreResult<Vec<HistoryPoint>> {
    let mut points = Vec::new();
    while let Some(row) = rows.next()? {
        points.push(HistoryPoint {
            ts_ms: row.get(0)?,
            value: read_value(row, 1)?,
        });
    }
    Ok(points)
}

/// SQLite's LIMIT for an optional limit (-1 = none).
fn sql_limit(limit: Option<u64>) -> i64 {
    limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX))
}

/// One value on its way into `hist_points`, borrowed from wherever it was queued.
pub(super) struct PointRef<'v> {
    pub domain: &'v str,
    pub topic: &'v str,
    pub ts_ms: i64,
    pub num: Option<f64>,
    pub text: &'v str,
}

/// Inserts values into `hist_points` inside `tx`, in order (creating series as they appear);
/// values of one series at one timestamp keep their order through `seq`.
pub(super) fn insert_points<'v>(
    tx: &rusqlite::Transaction<'_>,
    points: impl IntoIterator<Item = PointRef<'v>>,
) -> StoreResult<()> {
    let mut find_series =
        tx.prepare_cached("SELECT id FROM hist_series WHERE domain = ?1 AND topic = ?2")?;
    let mut add_series =
        tx.prepare_cached("INSERT INTO hist_series (domain, topic) VALUES (?1, ?2)")?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO hist_points (series, ts, seq, num, value) VALUES (?1, ?2, 0, ?3, ?4) \
         ON CONFLICT (series, ts, seq) DO NOTHING",
    )?;
    let mut insert_after = tx.prepare_cached(
        "INSERT INTO hist_points (series, ts, seq, num, value) \
         SELECT ?1, ?2, max(seq) + 1, ?3, ?4 FROM hist_points WHERE series = ?1 AND ts = ?2",
    )?;
    let mut series_ids: HashMap<(&str, &str), i64> = HashMap::new();
    for point in points {
        let key = (point.domain, point.topic);
        let series = match series_ids.get(&key) {
            Some(id) => *id,
            None => {
                let id = match find_series
                    .query_row(params![key.0, key.1], |r| r.get(0))
                    .optional()?
                {
                    Some(id) => id,
                    None => {
                        add_series.execute(params![key.0, key.1])?;
                        tx.last_insert_rowid()
                    }
                };
                series_ids.insert(key, id);
                id
            }
        };
        let row = params![series, point.ts_ms, point.num, point.text];
        if insert.execute(row)? == 0 {
            insert_after.execute(row)?;
        }
    }
    Ok(())
}

// wired into the server by the broker step
#[allow(dead_code)]
impl SqliteStore {
    /// Creates the historian tables if they are missing.
    /// Writes a batch of values in one transaction; returns how many rows were written. The
    /// server writes through the historian's journal ([`SqliteStore::fold_history`]); tests use this.
    #[cfg(test)]
    pub fn append_history(&self, batch: &[HistoryWrite]) -> StoreResult<usize> {
        if batch.is_empty() {
            return Ok(0);
        }
        self.fold_history(batch, None)?;
        Ok(batch.len())
    }

    /// Values with `start_ms <= ts < end_ms`, oldest first, at most `limit`.
    pub fn history_range(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> StoreResult<Vec<HistoryPoint>> {
        let conn = self.conn()?;
        let Some(series) = series_id(&conn, domain, topic)? else {
            return Ok(Vec::new());
        };
        let mut stmt = conn.prepare_cached(
            "SELECT ts, value FROM hist_points WHERE series = ?1 AND ts >= ?2 AND ts < ?3 \
             ORDER BY ts, seq LIMIT ?4",
        )?;
        let rows = stmt.query(params![series, start_ms, end_ms, sql_limit(limit)])?;
        read_points(rows)
    }

    /// The newest `n` values, newest first.
    pub fn history_last(
        &self,
        domain: &str,
        topic: &str,
        n: u64,
    ) -> StoreResult<Vec<HistoryPoint>> {
        let conn = self.conn()?;
        let Some(series) = series_id(&conn, domain, topic)? else {
            return Ok(Vec::new());
        };
        let mut stmt = conn.prepare_cached(
            "SELECT ts, value FROM hist_points WHERE series = ?1 ORDER BY ts DESC, seq DESC LIMIT ?2",
        )?;
        let rows = stmt.query(params![series, sql_limit(Some(n))])?;
        read_points(rows)
    }

    /// One point per non-empty bucket of `bucket_ms` aligned to `start_ms` (bucket k covers
    /// `[start + k*b, start + (k+1)*b)`), stamped with the bucket start. `mean sum min max count`
    /// run in SQL over the numeric readings (`count` counts every value); `first`/`last` are the
    /// stored values of the earliest/latest point and `median` is computed while streaming the
    /// bucket's readings. Buckets without numeric readings give null for numeric aggregates.
    pub fn history_buckets(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        bucket_ms: i64,
        agg: Aggregation,
    ) -> StoreResult<Vec<HistoryPoint>> {
        if bucket_ms < 1 {
            return Err(StoreError::Invalid("bucket must be at least 1 ms".into()));
        }
        let conn = self.conn()?;
        let Some(series) = series_id(&conn, domain, topic)? else {
            return Ok(Vec::new());
        };
        fixed_buckets(&conn, series, start_ms, end_ms, bucket_ms, agg)
    }

    /// One point per non-empty bucket between consecutive `edges` (ascending): bucket `i`
    /// covers `[edges[i], edges[i + 1])` cut to the window `start_ms..end_ms` and is stamped
    /// `edges[i]`, even when the window starts later. For buckets of unequal length, such as
    /// local days across a DST change. Aggregates as in [`SqliteStore::history_buckets`].
    pub fn history_buckets_between(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        edges: &[i64],
        agg: Aggregation,
    ) -> StoreResult<Vec<HistoryPoint>> {
        let conn = self.conn()?;
        let Some(series) = series_id(&conn, domain, topic)? else {
            return Ok(Vec::new());
        };
        buckets_between(start_ms, end_ms, edges, |lo, hi| {
            fixed_buckets(&conn, series, lo, hi, hi - lo, agg)
        })
    }

    /// Topics of a domain that have at least one stored value, sorted.
    pub fn history_topics(&self, domain: &str) -> StoreResult<Vec<String>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT topic FROM hist_series s WHERE domain = ?1 \
             AND EXISTS (SELECT 1 FROM hist_points p WHERE p.series = s.id) ORDER BY topic",
        )?;
        let rows = stmt.query_map(params![domain], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Retention: deletes values older than `before_ms`, of one domain and/or topic or of all;
    /// returns how many were deleted. Series rows are kept so ids stay stable.
    pub fn history_delete_before(
        &self,
        domain: Option<&str>,
        topic: Option<&str>,
        before_ms: i64,
    ) -> StoreResult<u64> {
        let conn = self.conn()?;
        let deleted = conn.execute(
            "DELETE FROM hist_points WHERE ts < ?3 AND series IN \
             (SELECT id FROM hist_series WHERE (?1 IS NULL OR domain = ?1) \
              AND (?2 IS NULL OR topic = ?2))",
            params![domain, topic, before_ms],
        )?;
        Ok(deleted as u64)
    }
}

/// The series id of a (domain, topic), if it was ever written.
fn series_id(conn: &rusqlite::Connection, domain: &str, topic: &str) -> StoreResult<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT id FROM hist_series WHERE domain = ?1 AND topic = ?2")?
        .query_row(params![domain, topic], |r| r.get(0))
        .optional()?)
}

/// Buckets of `bucket_ms` aligned to `start_ms` over one series (see
/// [`SqliteStore::history_buckets`]).
fn fixed_buckets(
    conn: &rusqlite::Connection,
    series: i64,
    start_ms: i64,
    end_ms: i64,
    bucket_ms: i64,
    agg: Aggregation,
) -> StoreResult<Vec<HistoryPoint>> {
    let sql_agg = match agg {
        Aggregation::Mean => "avg(num)",
        Aggregation::Sum => "sum(num)",
        Aggregation::Min => "min(num)",
        Aggregation::Max => "max(num)",
        Aggregation::Count => "count(*)",
        Aggregation::Median | Aggregation::First | Aggregation::Last => {
            return stream_buckets(conn, series, start_ms, end_ms, bucket_ms, agg);
        }
    };
    let sql = format!(
        "SELECT (ts - ?2) / ?4 AS k, {sql_agg} FROM hist_points \
         WHERE series = ?1 AND ts >= ?2 AND ts < ?3 GROUP BY k ORDER BY k"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params![series, start_ms, end_ms, bucket_ms])?;
    let mut points = Vec::new();
    while let Some(row) = rows.next()? {
        let k: i64 = row.get(0)?;
        let value = match agg {
            Aggregation::Count => Value::from(row.get::<_, i64>(1)?),
            _ => number_json(row.get::<_, Option<f64>>(1)?),
        };
        points.push(HistoryPoint {
            ts_ms: start_ms + k * bucket_ms,
            value,
        });
    }
    Ok(points)
}

/// Median, first and last: one ordered pass over the window, finishing a bucket when the next
/// one starts.
fn stream_buckets(
    conn: &rusqlite::Connection,
    series: i64,
    start_ms: i64,
    end_ms: i64,
    bucket_ms: i64,
    agg: Aggregation,
) -> StoreResult<Vec<HistoryPoint>> {
    let mut stmt = conn.prepare_cached(
        "SELECT (ts - ?2) / ?4, num, value FROM hist_points \
         WHERE series = ?1 AND ts >= ?2 AND ts < ?3 ORDER BY ts, seq",
    )?;
    let mut rows = stmt.query(params![series, start_ms, end_ms, bucket_ms])?;
    let mut points = Vec::new();
    // The open bucket: its index, the readings (median) or the chosen value's text (first/last).
    let mut open: Option<i64> = None;
    let mut nums: Vec<f64> = Vec::new();
    let mut chosen = String::new();
    let finish = |k: i64, nums: &mut Vec<f64>, chosen: &str| -> StoreResult<HistoryPoint> {
        let value = match agg {
            Aggregation::Median => number_json(median(nums)),
            _ => parse_value(chosen)?,
        };
        nums.clear();
        Ok(HistoryPoint {
            ts_ms: start_ms + k * bucket_ms,
            value,
        })
    };
    while let Some(row) = rows.next()? {
        let k: i64 = row.get(0)?;
        let new_bucket = open != Some(k);
        if new_bucket {
            if let Some(prev) = open {
                points.push(finish(prev, &mut nums, &chosen)?);
            }
            open = Some(k);
        }
        match agg {
            Aggregation::Median => {
                if let Some(x) = row.get::<_, Option<f64>>(1)? {
                    nums.push(x);
                }
            }
            Aggregation::First if !new_bucket => {}
            _ => {
                chosen.clear();
                chosen.push_str(value_text(row, 2)?);
            }
        }
    }
    if let Some(prev) = open {
        points.push(finish(prev, &mut nums, &chosen)?);
    }
    Ok(points)
}

/// The median of the readings (mean of the two middle ones for an even count), None if empty.
fn median(nums: &mut [f64]) -> Option<f64> {
    if nums.is_empty() {
        return None;
    }
    nums.sort_unstable_by(f64::total_cmp);
    let mid = nums.len() / 2;
    Some(if nums.len() % 2 == 1 {
        nums[mid]
    } else {
        (nums[mid - 1] + nums[mid]) / 2.0
    })
}
// Tests: `src/historian/store_tests.rs` (through the public API).
