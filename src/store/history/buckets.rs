//! Bucketed aggregates over points and block summaries: each bucket keeps what every
//! aggregation needs (count, numeric count, sum, min, max, the first and last point in
//! (ts, seq) order, and for the median its readings), so a block wholly inside one bucket adds
//! its summary in one step and a straddling block or a hot row adds its points one by one.

use super::BlockMeta;
use crate::store::blocks::BlockPoint;
use crate::store::types::{number_json, numeric, HistoryPoint};
use crate::store::Aggregation;
use crate::store::StoreResult;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct Bucket {
    count: i64,
    num_count: i64,
    sum: f64,
    min: f64,
    max: f64,
    /// The first and last point in (ts, seq) order: key and value.
    first: Option<((i64, i64), Value)>,
    last: Option<((i64, i64), Value)>,
    readings: Vec<f64>,
}

impl Bucket {
    fn new() -> Bucket {
        Bucket {
            count: 0,
            num_count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            first: None,
            last: None,
            readings: Vec::new(),
        }
    }

    fn add_number(&mut self, x: f64, agg: Aggregation) {
        self.num_count += 1;
        self.sum += x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        if agg == Aggregation::Median {
            self.readings.push(x);
        }
    }

    fn offer_first(&mut self, key: (i64, i64), chosen: impl FnOnce() -> Value) {
        if self.first.as_ref().is_none_or(|(k, _)| key < *k) {
            self.first = Some((key, chosen()));
        }
    }

    fn offer_last(&mut self, key: (i64, i64), chosen: impl FnOnce() -> Value) {
        if self.last.as_ref().is_none_or(|(k, _)| key > *k) {
            self.last = Some((key, chosen()));
        }
    }
}

/// Buckets of `bucket_ms` aligned to a window start, filled in any order.
pub struct Accumulator {
    start_ms: i64,
    bucket_ms: i64,
    agg: Aggregation,
    buckets: BTreeMap<i64, Bucket>,
}

impl Accumulator {
    pub fn new(start_ms: i64, bucket_ms: i64, agg: Aggregation) -> Accumulator {
        Accumulator {
            start_ms,
            bucket_ms,
            agg,
            buckets: BTreeMap::new(),
        }
    }

    fn index(&self, ts_ms: i64) -> i64 {
        (ts_ms - self.start_ms).div_euclid(self.bucket_ms)
    }

    /// Adds a block (or a page of one) from its summary when it lies wholly in one bucket;
    /// false (nothing added) when it straddles buckets, or the aggregation answers a stored
    /// value (`first`, `last`, whose values the summaries the reads fetch leave out) or needs
    /// every reading (the median), and it must be decoded.
    pub fn add_summary(&mut self, meta: &BlockMeta) -> StoreResult<bool> {
        let k = self.index(meta.start_ms);
        if k != self.index(meta.end_ms)
            || matches!(
                self.agg,
                Aggregation::First | Aggregation::Last | Aggregation::Median
            )
        {
            return Ok(false);
        }
        let bucket = self.buckets.entry(k).or_insert_with(Bucket::new);
        bucket.count += meta.count;
        bucket.num_count += meta.num_count;
        bucket.sum += meta.sum.unwrap_or(0.0);
        if let Some(min) = meta.min {
            bucket.min = bucket.min.min(min);
        }
        if let Some(max) = meta.max {
            bucket.max = bucket.max.max(max);
        }
        Ok(true)
    }

    /// Whether a block's readings in `start_ms..end_ms` cannot change the answer, so it need
    /// not be decoded: for `min` (`max`), every bucket it overlaps there already holds a
    /// reading strictly below (above) the block's smallest (largest), so none of its readings
    /// can become the bucket's; a block without numeric readings adds nothing to either. A
    /// bucket's min only falls as readings come, so this stays true whatever is added later.
    /// Only checked for blocks over a few buckets; longer ones are decoded.
    pub fn block_cannot_change(&self, meta: &BlockMeta, start_ms: i64, end_ms: i64) -> bool {
        const MAX_BUCKETS_CHECKED: i64 = 16;
        let bound = match self.agg {
            Aggregation::Min => meta.min,
            Aggregation::Max => meta.max,
            _ => return false,
        };
        if meta.num_count == 0 {
            return true;
        }
        let Some(bound) = bound else {
            return false;
        };
        let (lo, hi) = (meta.start_ms.max(start_ms), meta.end_ms.min(end_ms - 1));
        if lo > hi {
            return true;
        }
        let (first, last) = (self.index(lo), self.index(hi));
        if last - first >= MAX_BUCKETS_CHECKED {
            return false;
        }
        (first..=last).all(|k| {
            self.buckets.get(&k).is_some_and(|b| {
                b.num_count > 0
                    && if self.agg == Aggregation::Min {
                        b.min < bound
                    } else {
                        b.max > bound
                    }
            })
        })
    }

    /// Whether the aggregation looks at numeric readings only (not `count`, which counts every
    /// value, nor `first`/`last`, which answer a value).
    pub fn needs_only_readings(&self) -> bool {
        matches!(
            self.agg,
            Aggregation::Mean
                | Aggregation::Sum
                | Aggregation::Min
                | Aggregation::Max
                | Aggregation::Median
        )
    }

    /// Adds one numeric reading (the caller keeps it inside the window); only for
    /// aggregations that [`Accumulator::needs_only_readings`]. The tests hold
    /// [`Accumulator::add_readings`] to it.
    #[cfg(test)]
    pub fn add_reading(&mut self, ts_ms: i64, x: f64) {
        let k = self.index(ts_ms);
        let agg = self.agg;
        let bucket = self.buckets.entry(k).or_insert_with(Bucket::new);
        bucket.count += 1;
        bucket.add_number(x, agg);
    }

    /// Adds a block's numeric readings (timestamps ascending, as a block keeps them) that lie
    /// in `start_ms..end_ms`; only for aggregations that [`Accumulator::needs_only_readings`].
    /// Each bucket's run of readings is found by a binary search and added in one loop, in the
    /// readings' order, so sums come out bit for bit as [`Accumulator::add_reading`] one by one
    /// would make them.
    pub fn add_readings(&mut self, ts: &[i64], values: &[f64], start_ms: i64, end_ms: i64) {
        let n = ts.len().min(values.len());
        let (ts, values) = (&ts[..n], &values[..n]);
        let mut i = ts.partition_point(|&t| t < start_ms);
        let end = ts.partition_point(|&t| t < end_ms);
        let agg = self.agg;
        while i < end {
            let k = self.index(ts[i]);
            let next_edge = self
                .start_ms
                .saturating_add((k + 1).saturating_mul(self.bucket_ms));
            let run_end = i + ts[i..end].partition_point(|&t| t < next_edge);
            let bucket = self.buckets.entry(k).or_insert_with(Bucket::new);
            bucket.count += (run_end - i) as i64;
            for &x in &values[i..run_end] {
                bucket.add_number(x, agg);
            }
            i = run_end;
        }
    }

    /// Adds one point (the caller keeps it inside the window).
    pub fn add_point(&mut self, point: &BlockPoint) {
        let k = self.index(point.ts_ms);
        let agg = self.agg;
        let bucket = self.buckets.entry(k).or_insert_with(Bucket::new);
        bucket.count += 1;
        if let Some(x) = numeric(&point.value) {
            bucket.add_number(x, agg);
        }
        let key = (point.ts_ms, point.seq);
        if agg == Aggregation::First {
            bucket.offer_first(key, || point.value.clone());
        }
        if agg == Aggregation::Last {
            bucket.offer_last(key, || point.value.clone());
        }
    }

    /// One point per non-empty bucket, oldest first; numeric aggregates of a bucket without
    /// numeric readings are null.
    pub fn finish(self) -> StoreResult<Vec<HistoryPoint>> {
        let mut points = Vec::with_capacity(self.buckets.len());
        for (k, mut bucket) in self.buckets {
            let has_numbers = bucket.num_count > 0;
            let value = match self.agg {
                Aggregation::Count => Value::from(bucket.count),
                Aggregation::Sum => number_json(has_numbers.then_some(bucket.sum)),
                Aggregation::Mean => {
                    number_json(has_numbers.then(|| bucket.sum / bucket.num_count as f64))
                }
                Aggregation::Min => number_json(has_numbers.then_some(bucket.min)),
                Aggregation::Max => number_json(has_numbers.then_some(bucket.max)),
                Aggregation::Median => number_json(median(&mut bucket.readings)),
                Aggregation::First => bucket.first.map_or(Value::Null, |(_, v)| v),
                Aggregation::Last => bucket.last.map_or(Value::Null, |(_, v)| v),
            };
            points.push(HistoryPoint::good(
                self.start_ms + k * self.bucket_ms,
                value,
            ));
        }
        Ok(points)
    }
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
