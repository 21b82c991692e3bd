//! The historian's reads over its two layouts, the same on every engine. A series keeps its
//! recent points as rows (the hot tail, where ingest writes) and older ones in compressed
//! blocks (`store::blocks`) whose summaries sit in plain columns. An engine says how to fetch
//! block summaries, block data and hot rows ([`HistoryLayout`]); the provided methods decide
//! which blocks a read must decode, answer what they can from summaries, and merge the rest in
//! (ts, seq) order, so both engines read exactly alike.
//!
//! Invariants the engines keep: `seq` is unique per (series, ts) across blocks and hot rows
//! (a late point's `seq` is decided against the blocks that hold its timestamp), and no block
//! spans more than [`blocks::MAX_SPAN_MS`], so the blocks overlapping a window are found
//! through an index on their start.

mod buckets;
pub mod bursts;
pub mod fetch;
pub mod merge;
#[cfg(test)]
mod merge_tests;
mod pages;

use super::blocks::{self, BlockPoint};
use super::types::{buckets_between, HistoryPoint, Quality};
use super::{StoreError, StoreResult};
use crate::store::interface::HistorianReads;
use crate::store::Aggregation;

pub use buckets::Accumulator;
use fetch::Now;
use std::collections::HashMap;

/// A block's plain columns: where it lies and what it sums up to.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockMeta {
    pub id: i64,
    pub start_ms: i64,
    pub end_ms: i64,
    pub count: i64,
    pub num_count: i64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub sum: Option<f64>,
    pub first_seq: i64,
    pub last_seq: i64,
}

/// Where a block is: its id, and its start (which finds its partition where there are some).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockKey {
    pub id: i64,
    pub start_ms: i64,
}

impl BlockMeta {
    pub fn key(&self) -> BlockKey {
        BlockKey {
            id: self.id,
            start_ms: self.start_ms,
        }
    }
}

/// How an engine fetches a series' blocks and hot rows; every read is built on these.
pub trait HistoryLayout {
    /// Summaries of the series' blocks whose start lies in `[from_ms, to_ms)`, by start.
    fn block_metas(&self, series: i64, from_ms: i64, to_ms: i64) -> StoreResult<Vec<BlockMeta>>;

    /// The encoded data of blocks, in the order of `keys`.
    fn block_data(&self, series: i64, keys: &[BlockKey]) -> StoreResult<Vec<Vec<u8>>>;

    /// Hot rows with `start_ms <= ts < end_ms` in (ts, seq) order, at most `limit`.
    fn hot_range(
        &self,
        series: i64,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> StoreResult<Vec<BlockPoint>>;

    /// The newest `n` hot rows, newest first.
    fn hot_last(&self, series: i64, n: u64) -> StoreResult<Vec<BlockPoint>>;

    /// Summaries of the blocks overlapping `[start_ms, end_ms)`, by start.
    fn blocks_overlapping(
        &self,
        series: i64,
        start_ms: i64,
        end_ms: i64,
    ) -> StoreResult<Vec<BlockMeta>> {
        fetch::now(fetch::blocks_overlapping(
            &Now(self),
            series,
            start_ms,
            end_ms,
        ))
    }

    /// For late points, their times per series (any order, repeats allowed): the `seq` a new
    /// point at each (series, time) must take to follow every point the blocks hold there, for
    /// the times the blocks hold points at. One fold's late points cost one summary read per
    /// series and one decode of each block they fall in, however many of them there are: a
    /// fold of thousands of stragglers behind a block just closed would otherwise decode that
    /// block once per point.
    fn block_seqs_after(
        &self,
        late: HashMap<i64, Vec<i64>>,
    ) -> StoreResult<HashMap<(i64, i64), i64>> {
        let mut after = HashMap::new();
        for (series, mut times) in late {
            times.sort_unstable();
            times.dedup();
            let (Some(&first), Some(&last)) = (times.first(), times.last()) else {
                continue;
            };
            let holds_one = |m: &BlockMeta| {
                let at = times.partition_point(|&t| t < m.start_ms);
                times.get(at).is_some_and(|&t| t <= m.end_ms)
            };
            let keys: Vec<BlockKey> = self
                .blocks_overlapping(series, first, last.saturating_add(1))?
                .iter()
                .filter(|m| holds_one(m))
                .map(BlockMeta::key)
                .collect();
            for block in self.decode_blocks(series, &keys)? {
                for point in block {
                    if times.binary_search(&point.ts_ms).is_ok() {
                        let next = after.entry((series, point.ts_ms)).or_insert(0);
                        *next = (*next).max(point.seq + 1);
                    }
                }
            }
        }
        Ok(after)
    }

    /// The points of the blocks `keys`, decoded.
    fn decode_blocks(&self, series: i64, keys: &[BlockKey]) -> StoreResult<Vec<Vec<BlockPoint>>> {
        fetch::now(fetch::decode_blocks(&Now(self), series, keys))
    }

    /// Points with `start_ms <= ts < end_ms` in (ts, seq) order, at most `limit`
    /// ([`fetch::read_range`]).
    fn read_range(
        &self,
        series: i64,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> StoreResult<Vec<BlockPoint>> {
        fetch::now(fetch::read_range(
            &Now(self),
            series,
            start_ms,
            end_ms,
            limit,
        ))
    }

    /// The newest `n` points, newest first ([`fetch::read_last`]).
    fn read_last(&self, series: i64, n: u64) -> StoreResult<Vec<BlockPoint>> {
        fetch::now(fetch::read_last(&Now(self), series, n))
    }

    /// Summaries of up to `limit` blocks starting before `before_ms`, newest start first.
    fn newest_blocks(&self, series: i64, before_ms: i64, limit: u32)
        -> StoreResult<Vec<BlockMeta>>;

    /// One point per non-empty bucket of `bucket_ms` aligned to `start_ms`, stamped with the
    /// bucket start. Blocks wholly inside one bucket are counted from their summaries (except
    /// for the median, which needs every reading); the others are decoded.
    fn read_buckets(
        &self,
        series: i64,
        start_ms: i64,
        end_ms: i64,
        bucket_ms: i64,
        agg: Aggregation,
    ) -> StoreResult<Vec<HistoryPoint>> {
        check_bucket(bucket_ms)?;
        if start_ms >= end_ms {
            return Ok(Vec::new());
        }
        let mut acc = Accumulator::new(start_ms, bucket_ms, agg);
        let metas = self.blocks_overlapping(series, start_ms, end_ms)?;
        let mut straddling = Vec::new();
        for meta in &metas {
            let inside = meta.start_ms >= start_ms && meta.end_ms < end_ms;
            if inside && acc.add_summary(meta)? {
                continue;
            }
            straddling.push(meta);
        }
        // Every summary is in: a min or max may now do without some of the other blocks.
        let decode: Vec<BlockKey> = straddling
            .into_iter()
            .filter(|meta| !acc.block_cannot_change(meta, start_ms, end_ms))
            .map(BlockMeta::key)
            .collect();
        let data = self.block_data(series, &decode)?;
        pages::add_blocks(&mut acc, &decode, &data, start_ms, end_ms)?;
        for point in self.hot_range(series, start_ms, end_ms, None)? {
            acc.add_point(&point);
        }
        acc.finish()
    }
}

/// What closing a series' oldest hot rows did: the points moved into a block, and the points a
/// merge of the day rewrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Closed {
    pub points: u64,
    pub merged: u64,
}

/// How an engine changes a series' blocks (inside the caller's transaction); closing blocks
/// and retention are built on these.
pub trait BlockWrites: HistoryLayout {
    /// Writes one block of `points` (sorted by (ts, seq), not empty) and raises the series'
    /// `sealed_upto` to its newest time.
    fn insert_block(&self, series: i64, points: &[BlockPoint]) -> StoreResult<()> {
        let data = encode(points)?;
        self.insert_encoded(series, points, &data)
    }

    /// [`BlockWrites::insert_block`] with the points' encoding already made.
    fn insert_encoded(&self, series: i64, points: &[BlockPoint], data: &[u8]) -> StoreResult<()>;

    /// Removes one block.
    fn delete_block(&self, series: i64, key: BlockKey) -> StoreResult<()>;

    /// Removes the blocks that end before `before_ms`; how many points they held.
    fn delete_blocks_ending_before(&self, series: i64, before_ms: i64) -> StoreResult<u64>;

    /// Removes the hot rows up to and including (ts, seq).
    fn delete_hot_through(&self, series: i64, ts_ms: i64, seq: i64) -> StoreResult<()>;

    /// Closes the oldest hot rows into one block (at most `max_points`, within one UTC day) and
    /// removes them; how many points moved. The sealer asks for `blocks::MAX_POINTS` while a
    /// tag is receiving and for a merged block's worth once it is idle, so a quiet tail closes
    /// straight into a block in pages. When this closes the block's day for the series, the
    /// day's blocks are merged into one (`merge.rs`). No cut to a byte
    /// size: with decimal floats (block format 2), cutting blocks to 1,850 bytes (two rows to a
    /// 4 KiB SQLite page, PostgreSQL rows under the TOAST threshold) cost more in the smaller
    /// blocks of a four-decimal analog than it saved in pages (docs/decisions/historian-blocks.md,
    /// "Historian bytes").
    fn seal_oldest(&self, series: i64, max_points: usize) -> StoreResult<Closed> {
        let limit = Some(max_points.clamp(1, merge::MERGED_MAX_POINTS) as u64);
        let mut oldest = self.hot_range(series, i64::MIN, i64::MAX, limit)?;
        let Some(first) = oldest.first() else {
            return Ok(Closed::default());
        };
        let day = merge::day_of(first.ts_ms);
        let cut = first
            .ts_ms
            .saturating_add(blocks::MAX_SPAN_MS)
            .min(merge::next_day(first.ts_ms));
        oldest.retain(|p| p.ts_ms < cut);
        let Some(last) = oldest.last() else {
            return Ok(Closed::default());
        };
        let data = encode(&oldest)?;
        self.insert_encoded(series, &oldest, &data)?;
        self.delete_hot_through(series, last.ts_ms, last.seq)?;
        let hot_first = self.hot_range(series, i64::MIN, i64::MAX, Some(1))?;
        let merged = merge::merge_if_closed(self, series, day, hot_first.first().map(|p| p.ts_ms))?;
        Ok(Closed {
            points: oldest.len() as u64,
            merged,
        })
    }

    /// Retention over blocks: drops the blocks that end before `before_ms` and rewrites the
    /// ones the cut falls in without their older points; how many points went.
    fn trim_blocks_before(&self, series: i64, before_ms: i64) -> StoreResult<u64> {
        let cut = self.blocks_overlapping(series, before_ms, before_ms.saturating_add(1))?;
        let mut deleted = 0u64;
        for meta in cut.iter().filter(|m| m.start_ms < before_ms) {
            let kept: Vec<BlockPoint> = self
                .decode_blocks(series, &[meta.key()])?
                .into_iter()
                .flatten()
                .filter(|p| p.ts_ms >= before_ms)
                .collect();
            deleted += (meta.count as u64).saturating_sub(kept.len() as u64);
            self.delete_block(series, meta.key())?;
            if !kept.is_empty() {
                self.insert_block(series, &kept)?;
            }
        }
        Ok(deleted + self.delete_blocks_ending_before(series, before_ms)?)
    }
}

/// Refuses a bucket width below 1 ms.
fn check_bucket(bucket_ms: i64) -> StoreResult<()> {
    if bucket_ms < 1 {
        return Err(StoreError::Invalid("bucket must be at least 1 ms".into()));
    }
    Ok(())
}

/// The encoding of a block's points.
fn encode(points: &[BlockPoint]) -> StoreResult<Vec<u8>> {
    blocks::encode(points).map_err(internal)
}

/// A block that cannot be encoded or decoded, as the store reports it.
fn internal(e: blocks::BlockError) -> StoreError {
    StoreError::Internal(e.to_string())
}

/// A block's plain columns for its points.
pub fn block_summary(points: &[BlockPoint]) -> StoreResult<blocks::BlockSummary> {
    blocks::summarize(points)
        .ok_or_else(|| StoreError::Internal("an empty block cannot be written".into()))
}

/// The historian's reads on an engine, given how it opens one series' snapshot.
pub trait SeriesReads {
    /// Runs `read` on one series in one snapshot; a series never written reads as empty.
    fn read_series<T: Default>(
        &self,
        domain: &str,
        topic: &str,
        read: impl FnOnce(&dyn HistoryLayout, i64) -> StoreResult<T>,
    ) -> StoreResult<T>;
}

/// Every engine that opens series snapshots has the historian's reads, the same on each.
impl<E: SeriesReads> HistorianReads for E {
    fn history_range(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> StoreResult<Vec<HistoryPoint>> {
        self.read_series(domain, topic, |layout, series| {
            let points = layout.read_range(series, start_ms, end_ms, limit)?;
            Ok(points.into_iter().map(history_point).collect())
        })
    }

    fn history_last(&self, domain: &str, topic: &str, n: u64) -> StoreResult<Vec<HistoryPoint>> {
        self.read_series(domain, topic, |layout, series| {
            let points = layout.read_last(series, n)?;
            Ok(points.into_iter().map(history_point).collect())
        })
    }

    fn history_buckets(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        bucket_ms: i64,
        agg: Aggregation,
    ) -> StoreResult<Vec<HistoryPoint>> {
        check_bucket(bucket_ms)?;
        self.read_series(domain, topic, |layout, series| {
            layout.read_buckets(series, start_ms, end_ms, bucket_ms, agg)
        })
    }

    fn history_buckets_between(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        edges: &[i64],
        agg: Aggregation,
    ) -> StoreResult<Vec<HistoryPoint>> {
        self.read_series(domain, topic, |layout, series| {
            buckets_between(start_ms, end_ms, edges, |lo, hi| {
                layout.read_buckets(series, lo, hi, hi - lo, agg)
            })
        })
    }
}

/// The blocks a read of the first `limit` points of `[start_ms, end_ms)` must decode: blocks in
/// start order until those wholly inside the window hold `limit` points, then every block that
/// starts no later than the newest of them ends (it may hold earlier points).
pub fn blocks_for_range(
    metas: &[BlockMeta],
    start_ms: i64,
    end_ms: i64,
    limit: Option<u64>,
) -> Vec<BlockKey> {
    let mut sorted: Vec<&BlockMeta> = metas.iter().collect();
    sorted.sort_by_key(|m| m.start_ms);
    let Some(limit) = limit else {
        return sorted.iter().map(|m| m.key()).collect();
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut inside = 0i64;
    let mut newest_end = i64::MIN;
    let mut horizon = None;
    let mut chosen = Vec::new();
    for meta in sorted {
        if horizon.is_some_and(|h| meta.start_ms > h) {
            break;
        }
        chosen.push(meta.key());
        newest_end = newest_end.max(meta.end_ms);
        if meta.start_ms >= start_ms && meta.end_ms < end_ms {
            inside = inside.saturating_add(meta.count);
        }
        if horizon.is_none() && inside >= limit {
            horizon = Some(newest_end);
        }
    }
    chosen
}

/// The timestamp of the `n`-th newest point, if there are that many.
fn nth_newest(points: &[BlockPoint], n: usize) -> Option<i64> {
    if points.len() < n {
        return None;
    }
    let mut ts: Vec<i64> = points.iter().map(|p| p.ts_ms).collect();
    let (_, nth, _) = ts.select_nth_unstable_by(n - 1, |a, b| b.cmp(a));
    Some(*nth)
}

/// Points sorted by (ts, seq) (a stable sort: runs already in order cost one pass), cut to
/// `limit`.
fn in_order(mut points: Vec<BlockPoint>, limit: Option<u64>) -> Vec<BlockPoint> {
    if !points.is_sorted_by_key(|p| (p.ts_ms, p.seq)) {
        points.sort_by_key(|p| (p.ts_ms, p.seq));
    }
    if let Some(limit) = limit {
        points.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    points
}

/// A stored point as the read routes answer it.
pub fn history_point(point: BlockPoint) -> HistoryPoint {
    HistoryPoint {
        ts_ms: point.ts_ms,
        value: point.value,
        quality: Quality(point.quality),
    }
}

#[cfg(test)]
mod tests;
