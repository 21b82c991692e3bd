//! A block's summary: what the store keeps in plain columns beside the compressed bytes, so
//! bucketed aggregates over whole blocks never decode them.

use super::{BlockPoint, BlockSummary};
use crate::store::types::numeric;

/// The summary of `points`; `None` when there are none. First and last are by (ts, seq), so the
/// summary is right even for points not yet sorted.
pub fn summarize(points: &[BlockPoint]) -> Option<BlockSummary> {
    let first = points.iter().min_by_key(|p| (p.ts_ms, p.seq))?;
    let last = points.iter().max_by_key(|p| (p.ts_ms, p.seq))?;
    let mut num_count = 0i64;
    let (mut min, mut max, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
    for x in points.iter().filter_map(|p| numeric(&p.value)) {
        num_count += 1;
        min = min.min(x);
        max = max.max(x);
        sum += x;
    }
    let over_numbers = |x: f64| (num_count > 0).then_some(x);
    Some(BlockSummary {
        start_ms: first.ts_ms,
        end_ms: last.ts_ms,
        count: points.len() as i64,
        num_count,
        min: over_numbers(min),
        max: over_numbers(max),
        sum: over_numbers(sum),
        first: first.clone(),
        last: last.clone(),
    })
}
