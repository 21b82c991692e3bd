//! The historian on PostgreSQL: `hist_points` partitioned by time, one partition per UTC day
//! (`hist_points_pYYYYMMDD`), created ahead of the values that land in it and dropped whole by
//! retention; values go in through one multi-row `INSERT … SELECT FROM unnest(…)` per batch, in
//! the transaction that raises this instance's journal mark. Aggregates run in SQL, median
//! included (`percentile_cont`).

use super::hist_blocks::{Layout, BLOCK_PERIOD_MS};
use super::PgStore;
use crate::store::history::{BlockWrites, HistoryLayout};
use crate::store::interface::{HistorianRetention, HistorianTestCalls};
use crate::store::{StoreError, StoreResult};
use std::collections::HashMap;
use tokio_postgres::error::SqlState;

/// The rows of one batch of points, column by column (as `unnest` takes them).
pub(super) struct PointColumns {
    pub(super) series: Vec<i64>,
    pub(super) ts: Vec<i64>,
    pub(super) ord: Vec<i32>,
    pub(super) num: Vec<Option<f64>>,
    pub(super) text: Vec<String>,
    pub(super) quality: Vec<i64>,
}

/// Why an insert of points failed.
pub(super) enum InsertError {
    /// A value's time has no partition (PostgreSQL's check violation on routing).
    NoPartition,
    Store(StoreError),
}

impl From<InsertError> for StoreError {
    fn from(err: InsertError) -> StoreError {
        match err {
            InsertError::NoPartition => {
                StoreError::Internal("no historian partition holds the values' times".into())
            }
            InsertError::Store(e) => e,
        }
    }
}

/// The marker of [`InsertError::NoPartition`] on its way out of the async block.
const NO_PARTITION: &str = "no historian partition for a value";

/// One partition's span of hot rows: a UTC day, in milliseconds.
const PARTITION_MS: i64 = 86_400_000;

/// The historian's partitioned tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Partitioned {
    /// `hist_points`, by the point's time, one UTC day each.
    Points,
    /// `hist_blocks`, by the block's start, [`BLOCK_PERIOD_MS`] each.
    Blocks,
}

impl Partitioned {
    fn table(self) -> &'static str {
        match self {
            Partitioned::Points => "hist_points",
            Partitioned::Blocks => "hist_blocks",
        }
    }

    fn period_ms(self) -> i64 {
        match self {
            Partitioned::Points => PARTITION_MS,
            Partitioned::Blocks => BLOCK_PERIOD_MS,
        }
    }

    /// The start of the partition holding `ts_ms`.
    fn start_of(self, ts_ms: i64) -> i64 {
        ts_ms.div_euclid(self.period_ms()) * self.period_ms()
    }

    /// Storage parameters of a new partition. A block's row stays in its heap page up to 8,160
    /// bytes (`toast_tuple_target`'s most) instead of being moved to TOAST chunks above 2 KB, so
    /// blocks close at `blocks::MAX_POINTS` as on SQLite (a 4,096-point walk is about 1.9 KB,
    /// the four-decimal analog 5.7 KB) with no fit to the TOAST threshold.
    fn with(self) -> &'static str {
        match self {
            Partitioned::Points => "",
            Partitioned::Blocks => " WITH (toast_tuple_target = 8160)",
        }
    }

    /// The partition's table name: `hist_points_p20260101` (or `…_m…` before 1970).
    fn name(self, start_ms: i64) -> String {
        let day = chrono::DateTime::from_timestamp_millis(start_ms)
            .map(|t| t.format("%Y%m%d").to_string())
            .unwrap_or_else(|| format!("x{}", start_ms.unsigned_abs()));
        let sign = if start_ms < 0 { "m" } else { "p" };
        format!("{}_{sign}{day}", self.table())
    }
}

impl PgStore {
    /// Forgets a partition this instance created or saw (it was dropped).
    pub(super) fn forget_partition(&self, table: Partitioned, start_ms: i64) {
        if let Ok(mut known) = self.known_partitions.lock() {
            known.remove(&(table, start_ms));
        }
    }

    /// Creates the `hist_points` partitions the timestamps need.
    pub(super) fn ensure_partitions(
        &self,
        timestamps: impl Iterator<Item = i64>,
    ) -> StoreResult<()> {
        self.ensure_partitions_of(Partitioned::Points, timestamps)
    }

    /// Creates the partitions of `table` the timestamps need that this instance has not seen,
    /// each under an advisory lock on its name (another instance may be creating it too).
    pub(super) fn ensure_partitions_of(
        &self,
        table: Partitioned,
        timestamps: impl Iterator<Item = i64>,
    ) -> StoreResult<()> {
        let mut needed: Vec<(Partitioned, i64)> =
            timestamps.map(|ts| (table, table.start_of(ts))).collect();
        needed.sort_unstable_by_key(|(_, start)| *start);
        needed.dedup();
        let missing: Vec<(Partitioned, i64)> = match self.known_partitions.lock() {
            Ok(known) => needed.into_iter().filter(|p| !known.contains(p)).collect(),
            Err(_) => needed,
        };
        if missing.is_empty() {
            return Ok(());
        }
        self.block(async {
            let mut client = self.client().await?;
            for (table, start) in &missing {
                let name = table.name(*start);
                let tx = client.transaction().await?;
                tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&name])
                    .await?;
                tx.batch_execute(&format!(
                    "CREATE TABLE IF NOT EXISTS \"{name}\" PARTITION OF {parent} \
                     FOR VALUES FROM ({start}) TO ({end}){with}",
                    parent = table.table(),
                    with = table.with(),
                    end = start.saturating_add(table.period_ms())
                ))
                .await?;
                tx.commit().await?;
            }
            Ok(())
        })?;
        if let Ok(mut known) = self.known_partitions.lock() {
            known.extend(missing);
        }
        Ok(())
    }

    /// Ids of the series of `keys`, creating those that do not exist (series are never
    /// deleted, so ids once seen are kept in memory).
    pub(super) fn series_ids(
        &self,
        keys: &[(&str, &str)],
    ) -> StoreResult<HashMap<(String, String), i64>> {
        let mut ids = HashMap::new();
        let mut unknown: Vec<(String, String)> = Vec::new();
        if let Ok(cache) = self.series.lock() {
            for (domain, topic) in keys {
                let key = (domain.to_string(), topic.to_string());
                match cache.get(&key) {
                    Some(id) => {
                        ids.insert(key, *id);
                    }
                    None => unknown.push(key),
                }
            }
        }
        unknown.sort();
        unknown.dedup();
        if unknown.is_empty() {
            return Ok(ids);
        }
        let (domains, topics): (Vec<String>, Vec<String>) = unknown.into_iter().unzip();
        let rows = self.block(async {
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO hist_series (domain, topic) \
                     SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING",
                    &[&domains, &topics],
                )
                .await?;
            Ok(client
                .query(
                    "SELECT s.id, s.domain, s.topic FROM hist_series s \
                     JOIN unnest($1::text[], $2::text[]) AS k(domain, topic) \
                     ON s.domain = k.domain AND s.topic = k.topic",
                    &[&domains, &topics],
                )
                .await?)
        })?;
        let mut cache = self.series.lock().ok();
        for row in rows {
            let key: (String, String) = (row.get(1), row.get(2));
            let id: i64 = row.get(0);
            if let Some(cache) = cache.as_mut() {
                cache.insert(key.clone(), id);
            }
            ids.insert(key, id);
        }
        Ok(ids)
    }

    pub(super) fn series_id(&self, domain: &str, topic: &str) -> StoreResult<Option<i64>> {
        // Known series answer without entering the engine's runtime.
        match self.known_series_id(domain, topic) {
            Some(id) => Ok(Some(id)),
            None => self.block(self.series_id_async(domain, topic)),
        }
    }

    /// The id of a series this instance has seen, from memory.
    fn known_series_id(&self, domain: &str, topic: &str) -> Option<i64> {
        let key = (domain.to_string(), topic.to_string());
        self.series.lock().ok().and_then(|c| c.get(&key).copied())
    }

    /// The id of a series, if it was ever written: from memory once seen.
    pub(super) async fn series_id_async(
        &self,
        domain: &str,
        topic: &str,
    ) -> StoreResult<Option<i64>> {
        if let Some(id) = self.known_series_id(domain, topic) {
            return Ok(Some(id));
        }
        Ok(self
            .query_opt_async(
                "SELECT id FROM hist_series WHERE domain = $1 AND topic = $2",
                &[&domain, &topic],
            )
            .await?
            .map(|row| row.get(0)))
    }

    /// One attempt at the insert and the mark, in one transaction. The series' rows are locked
    /// shared, so no instance closes a block of them meanwhile (closing locks them exclusively):
    /// a late point (no newer than the series' blocks) is then ordered after the points the
    /// blocks hold at its time.
    pub(super) fn insert_points(
        &self,
        c: &PointColumns,
        upto: Option<i64>,
    ) -> Result<(), InsertError> {
        let mut client = self.block(self.client()).map_err(InsertError::Store)?;
        let tx = self
            .block(async { Ok(client.transaction().await?) })
            .map_err(InsertError::Store)?;
        let layout = Layout {
            store: self,
            tx: &tx,
        };
        let mut ids = c.series.clone();
        ids.sort_unstable();
        ids.dedup();
        let sealed: HashMap<i64, Option<i64>> = layout
            .query(
                "SELECT id, sealed_upto FROM hist_series WHERE id = ANY($1) ORDER BY id FOR SHARE",
                &[&ids],
            )
            .map_err(InsertError::Store)?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let is_late = |i: usize| {
            sealed
                .get(&c.series[i])
                .is_some_and(|upto| upto.is_some_and(|upto| c.ts[i] <= upto))
        };
        let mut late: HashMap<i64, Vec<i64>> = HashMap::new();
        for i in (0..c.ts.len()).filter(|&i| is_late(i)) {
            late.entry(c.series[i]).or_default().push(c.ts[i]);
        }
        let after_blocks = layout.block_seqs_after(late).map_err(InsertError::Store)?;
        let after: Vec<i64> = (0..c.ts.len())
            .map(|i| {
                after_blocks
                    .get(&(c.series[i], c.ts[i]))
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        let attempt = self.block(async {
            tx.execute(
                "INSERT INTO hist_points (series, ts, seq, num, value, quality) \
                 SELECT u.series, u.ts, u.ord + greatest(u.after, coalesce((SELECT max(p.seq) + 1 \
                     FROM hist_points p WHERE p.series = u.series AND p.ts = u.ts), 0)), \
                     u.num, u.value, u.quality \
                 FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::float8[], $5::text[], \
                     $6::bigint[], $7::bigint[]) AS u(series, ts, ord, num, value, quality, after)",
                &[
                    &c.series, &c.ts, &c.ord, &c.num, &c.text, &c.quality, &after,
                ],
            )
            .await
            .map_err(|e| {
                if e.code() == Some(&SqlState::CHECK_VIOLATION) {
                    StoreError::Invalid(NO_PARTITION.into())
                } else {
                    e.into()
                }
            })?;
            if let Some(upto) = upto {
                tx.execute(
                    "INSERT INTO hist_journal (instance, folded) VALUES ($1, $2) \
                     ON CONFLICT (instance) DO UPDATE \
                     SET folded = greatest(hist_journal.folded, excluded.folded)",
                    &[&self.instance, &upto],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(())
        });
        match attempt {
            Err(StoreError::Invalid(m)) if m == NO_PARTITION => Err(InsertError::NoPartition),
            Err(e) => Err(InsertError::Store(e)),
            Ok(()) => Ok(()),
        }
    }

    /// Drops the partitions of `table` that end at or before `before_ms`; the points they
    /// held (`points` is the aggregate that counts them).
    fn drop_partitions_before(
        &self,
        table: Partitioned,
        before_ms: i64,
        points: &str,
    ) -> StoreResult<u64> {
        let mut deleted = 0u64;
        let parts = self.query(
            "SELECT c.relname, \
                 (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''?(-?\\d+)'))[1]::bigint \
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
             WHERE i.inhparent = $1::text::regclass",
            &[&table.table()],
        )?;
        for row in parts {
            let (name, end): (String, Option<i64>) = (row.get(0), row.get(1));
            let Some(end) = end.filter(|end| *end <= before_ms) else {
                continue;
            };
            let counted = self.query_one(
                &format!("SELECT coalesce({points}, 0)::bigint FROM \"{name}\""),
                &[],
            )?;
            deleted += counted.get::<_, i64>(0).max(0) as u64;
            self.execute(&format!("DROP TABLE IF EXISTS \"{name}\""), &[])?;
            self.forget_partition(table, end - table.period_ms());
        }
        Ok(deleted)
    }
}

impl HistorianRetention for PgStore {
    /// Retention: deletes values older than `before_ms`, of one domain and/or topic or of all.
    /// For all, whole partitions older than the cut are dropped (no row-by-row delete) and
    /// only the partition the cut falls in is deleted from.
    fn history_delete_before(
        &self,
        domain: Option<&str>,
        topic: Option<&str>,
        before_ms: i64,
    ) -> StoreResult<u64> {
        let mut deleted = 0u64;
        if domain.is_none() && topic.is_none() {
            deleted += self.drop_partitions_before(Partitioned::Points, before_ms, "count(*)")?;
            // A block may end up to a span after its partition does.
            let blocks_before = before_ms.saturating_sub(crate::store::blocks::MAX_SPAN_MS);
            deleted +=
                self.drop_partitions_before(Partitioned::Blocks, blocks_before, "sum(count)")?;
        }
        let series: Vec<i64> = self
            .query(
                "SELECT id FROM hist_series WHERE ($1::text IS NULL OR domain = $1) \
                 AND ($2::text IS NULL OR topic = $2) \
                 AND EXISTS (SELECT 1 FROM hist_blocks b WHERE b.series = id AND b.start_ts < $3)",
                &[&domain, &topic, &before_ms],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        for id in series {
            deleted +=
                self.with_layout(id, true, |layout| layout.trim_blocks_before(id, before_ms))?;
        }
        deleted += self.execute(
            "DELETE FROM hist_points WHERE ts < $3 AND series IN \
             (SELECT id FROM hist_series WHERE ($1::text IS NULL OR domain = $1) \
              AND ($2::text IS NULL OR topic = $2))",
            &[&domain, &topic, &before_ms],
        )?;
        Ok(deleted)
    }
}

impl HistorianTestCalls for PgStore {
    #[cfg(test)]
    fn append_history(&self, batch: &[crate::store::types::HistoryWrite]) -> StoreResult<usize> {
        use crate::store::interface::HistorianJournal;
        self.fold_history(batch, None)?;
        Ok(batch.len())
    }

    #[cfg(test)]
    fn history_topics(&self, domain: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .query(
                "SELECT topic FROM hist_series s WHERE domain = $1 \
                 AND (EXISTS (SELECT 1 FROM hist_points p WHERE p.series = s.id) \
                      OR EXISTS (SELECT 1 FROM hist_blocks b WHERE b.series = s.id)) \
                 ORDER BY topic",
                &[&domain],
            )?
            .iter()
            .map(|row| row.get(0))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_utc_days_named_by_their_date() {
        let t = 1_767_225_600_000; // 2026-01-01T00:00:00Z
        let points = Partitioned::Points;
        assert_eq!(points.start_of(t + 5), t);
        assert_eq!(points.start_of(t - 1), t - PARTITION_MS);
        assert_eq!(points.name(t), "hist_points_p20260101");
        assert_eq!(points.start_of(-1), -PARTITION_MS);
        assert_eq!(points.name(-PARTITION_MS), "hist_points_m19691231");
        let blocks = Partitioned::Blocks;
        assert_eq!(blocks.start_of(t) % BLOCK_PERIOD_MS, 0);
        assert!(blocks
            .name(blocks.start_of(t))
            .starts_with("hist_blocks_p2025"));
    }
}
