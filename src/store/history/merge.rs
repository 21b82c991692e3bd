//! Merging a closed day's blocks into blocks in pages (issue 33). The sealer closes a series'
//! hot rows into blocks of at most 4,096 points, which keeps ingest batched and the hot tail
//! short, but a block of 4,096 points pays pco's per-chunk cost and the database's per-row cost
//! 21 times a day at 1 Hz. Once a day is closed for a series (no hot row of that day is left),
//! its blocks are rewritten as one block in pages (`blocks::paged`): the same points, decoded
//! and encoded again in the transaction that sealed the day's last block, so a crash leaves
//! either the small blocks or the merged one. Late points for a merged day become a small
//! block there and are merged in the same way when the sealer closes them.
//!
//! Blocks never cross a UTC midnight (the sealer cuts them there), so a day's blocks are exactly
//! those that start in it, and a merged block spans less than `blocks::MAX_SPAN_MS`.

use super::{BlockKey, BlockMeta, BlockWrites};
use crate::store::blocks::{self, BlockPoint};
use crate::store::StoreResult;

/// A UTC day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

pub use blocks::MERGED_MAX_POINTS;

/// The (domain, topic, day) of every series' day whose blocks merging would make fewer, for
/// both engines (`?1` is [`MERGED_MAX_POINTS`]; PostgreSQL binds it as `$1`). Days are floored
/// in SQL as [`day_of`] floors them (`%` truncates toward zero on both engines).
pub const DAYS_TO_MERGE: &str = "\
    SELECT s.domain, s.topic, d.day FROM \
      (SELECT series, start_ts - ((start_ts % 86400000) + 86400000) % 86400000 AS day, \
              count(*) AS n, CAST(sum(count) AS BIGINT) AS points \
       FROM hist_blocks GROUP BY 1, 2) d \
    JOIN hist_series s ON s.id = d.series \
    WHERE d.n > 1 AND d.n > (d.points + ?1 - 1) / ?1 \
    ORDER BY s.domain, s.topic, d.day";

/// The start of the UTC day `ts_ms` lies in.
pub fn day_of(ts_ms: i64) -> i64 {
    ts_ms.div_euclid(DAY_MS).saturating_mul(DAY_MS)
}

/// The first instant of the next UTC day after `ts_ms`.
pub fn next_day(ts_ms: i64) -> i64 {
    day_of(ts_ms).saturating_add(DAY_MS)
}

/// Whether `day` is still open for a series whose oldest hot row is at `hot_first`: that row
/// lies in the day (or before it), so more of the day is still to be closed.
pub fn day_is_open(day: i64, hot_first: Option<i64>) -> bool {
    hot_first.is_some_and(|first| day_of(first) <= day)
}

/// After a block of `day` was sealed: merges the day's blocks unless the day is still open.
/// How many points it rewrote.
pub fn merge_if_closed<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    day: i64,
    hot_first: Option<i64>,
) -> StoreResult<u64> {
    if day_is_open(day, hot_first) {
        return Ok(0);
    }
    merge_day(layout, series, day)
}

/// Rewrites the blocks that lie within `day` as the fewest blocks of at most
/// [`MERGED_MAX_POINTS`], when that is fewer blocks than there are. How many points it
/// rewrote (0: nothing to merge).
pub fn merge_day<W: BlockWrites + ?Sized>(layout: &W, series: i64, day: i64) -> StoreResult<u64> {
    merge_between(layout, series, day, day.saturating_add(DAY_MS))
}

/// Rewrites the blocks that start in `[from_ms, end)` and end before `end` (`end` at most the
/// next UTC midnight after `from_ms`, so they are of one day) as the fewest blocks of at most
/// [`MERGED_MAX_POINTS`], when that is fewer blocks than there are. How many points it
/// rewrote (0: nothing to merge).
pub fn merge_between<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    from_ms: i64,
    end: i64,
) -> StoreResult<u64> {
    let metas: Vec<BlockMeta> = layout
        .block_metas(series, from_ms, end)?
        .into_iter()
        .filter(|m| m.end_ms < end)
        .collect();
    merge_blocks(layout, series, &metas)
}

/// Rewrites the blocks `metas` (of one day) as the fewest blocks of at most
/// [`MERGED_MAX_POINTS`], when that is fewer blocks than there are. How many points it
/// rewrote (0: nothing to merge).
pub fn merge_blocks<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    metas: &[BlockMeta],
) -> StoreResult<u64> {
    let total: usize = metas.iter().map(|m| m.count.max(0) as usize).sum();
    let merged = total.div_ceil(MERGED_MAX_POINTS).max(1);
    if merged >= metas.len() {
        return Ok(0);
    }
    let keys: Vec<BlockKey> = metas.iter().map(BlockMeta::key).collect();
    let mut points: Vec<BlockPoint> = layout
        .decode_blocks(series, &keys)?
        .into_iter()
        .flatten()
        .collect();
    // Late blocks overlap the others in time; a stable sort keeps runs already in order cheap.
    points.sort_by_key(|p| (p.ts_ms, p.seq));
    for key in keys {
        layout.delete_block(series, key)?;
    }
    for part in points.chunks(points.len().div_ceil(merged).max(1)) {
        layout.insert_block(series, part)?;
    }
    Ok(points.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc_and_never_overflow() {
        assert_eq!(day_of(0), 0);
        assert_eq!(day_of(DAY_MS - 1), 0);
        assert_eq!(day_of(-1), -DAY_MS);
        assert_eq!(next_day(DAY_MS - 1), DAY_MS);
        assert_eq!(next_day(DAY_MS), 2 * DAY_MS);
        assert!(day_of(i64::MIN) <= i64::MIN / 2);
        assert_eq!(next_day(i64::MAX), i64::MAX);
    }
}
