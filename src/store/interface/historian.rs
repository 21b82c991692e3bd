//! The historian's reads and retention. Reads are engine-neutral (`store::history`, given how
//! an engine opens one series' snapshot), so every engine that implements
//! [`SeriesReads`](crate::store::history::SeriesReads) has them.

use crate::store::types::{Aggregation, HistoryPoint};
use crate::store::StoreResult;

/// Reads of one series: raw windows, the newest values, buckets.
pub trait HistorianReads {
    /// Values with `start_ms <= ts < end_ms`, oldest first, at most `limit`.
    fn history_range(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> StoreResult<Vec<HistoryPoint>>;
    /// The newest `n` values, newest first.
    fn history_last(&self, domain: &str, topic: &str, n: u64) -> StoreResult<Vec<HistoryPoint>>;
    /// One point per non-empty bucket of `bucket_ms` aligned to `start_ms` (bucket k covers
    /// `[start + k*b, start + (k+1)*b)`), stamped with the bucket start. `mean sum min max
    /// median` run over the numeric readings, `count` counts every value, `first`/`last` are
    /// the stored values of the earliest/latest point; buckets without numeric readings give
    /// null for numeric aggregates.
    fn history_buckets(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        bucket_ms: i64,
        agg: Aggregation,
    ) -> StoreResult<Vec<HistoryPoint>>;
    /// One point per non-empty bucket between consecutive `edges` (ascending): bucket `i`
    /// covers `[edges[i], edges[i + 1])` cut to the window and is stamped `edges[i]`, even when
    /// the window starts later; for buckets of unequal length, such as local days across a DST
    /// change.
    fn history_buckets_between(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        edges: &[i64],
        agg: Aggregation,
    ) -> StoreResult<Vec<HistoryPoint>>;
}

/// Retention of historized values.
pub trait HistorianRetention {
    /// Deletes values older than `before_ms`, of one domain and/or topic or of all; how many
    /// were deleted. Series rows are kept so ids stay stable.
    fn history_delete_before(
        &self,
        domain: Option<&str>,
        topic: Option<&str>,
        before_ms: i64,
    ) -> StoreResult<u64>;
}

/// Calls only the unit tests make: writing values straight to the historian's tables (the
/// server goes through the journal) and listing the topics that hold values. Empty outside
/// tests, so no production code can reach them.
pub trait HistorianTestCalls {
    /// Writes a batch straight to the historian's tables; how many rows were written.
    #[cfg(test)]
    fn append_history(&self, batch: &[crate::store::types::HistoryWrite]) -> StoreResult<usize>;
    /// Topics of a domain with stored values, sorted.
    #[cfg(test)]
    fn history_topics(&self, domain: &str) -> StoreResult<Vec<String>>;
}
