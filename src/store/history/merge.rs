//! Merging a day's blocks into blocks in pages (issue 33). The sealer closes a series' hot rows
//! into blocks of at most 4,096 points, which keeps ingest batched and the hot tail short, but a
//! block of 4,096 points pays pco's per-chunk cost and the database's per-row cost 21 times a
//! day at 1 Hz. So a day's consecutive blocks are rewritten as one block in pages
//! (`blocks::paged`) once together they fill one (a fast tag's day, as it goes), and all of them
//! once the day is closed for the series (no hot row of that day is left): the same points,
//! decoded and encoded again in the transaction that sealed the day's last block, so a crash
//! leaves either the small blocks or the merged ones. Late points for a merged day become a small
//! block there and are merged in the same way when the sealer closes them.
//!
//! A merge never holds more than the merged block it is writing and the blocks it is reading
//! (two merged blocks' worth, and the late blocks that overlap them): a day of a tag at 100 Hz
//! is 8.6 million points, and one at 20,000 values a second would not fit in memory at all.
//!
//! Blocks never cross a UTC midnight (the sealer cuts them there), so a day's blocks are exactly
//! those that start in it, and a merged block spans less than `blocks::MAX_SPAN_MS`.

use super::{BlockMeta, BlockWrites};
use crate::store::blocks::{self, BlockPoint};
use crate::store::StoreResult;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::iter::Peekable;
use std::ops::Range;
use std::vec::IntoIter;

/// A UTC day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

pub use blocks::MERGED_MAX_POINTS;

/// The (domain, topic, day) of every series' day that [`merge_day`] would rewrite, for both
/// engines (`?1` is [`MERGED_MAX_POINTS`]; PostgreSQL binds it as `$1`): a day with two
/// consecutive blocks (by their first point) that overlap, or that together hold at most a
/// merged block's worth. The planner's groups leave neither, so a merged day is not listed
/// again. Days are floored in SQL as [`day_of`] floors them (`%` truncates toward zero on both
/// engines).
pub const DAYS_TO_MERGE: &str = "\
    SELECT DISTINCT s.domain, s.topic, b.day FROM \
      (SELECT series, day, start_ts, first_seq, count, \
              LAG(end_ts) OVER w AS prev_end, LAG(last_seq) OVER w AS prev_last_seq, \
              LAG(count) OVER w AS prev_count \
       FROM (SELECT series, start_ts, end_ts, first_seq, last_seq, count, \
                    start_ts - ((start_ts % 86400000) + 86400000) % 86400000 AS day \
             FROM hist_blocks) d \
       WINDOW w AS (PARTITION BY series, day ORDER BY start_ts, first_seq)) b \
    JOIN hist_series s ON s.id = b.series \
    WHERE b.prev_count + b.count <= ?1 OR b.start_ts < b.prev_end \
       OR (b.start_ts = b.prev_end AND b.first_seq <= b.prev_last_seq) \
    ORDER BY s.domain, s.topic, b.day";

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

/// Which of a day's groups of blocks (`plan`) a merge rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Groups {
    /// All of them: the day is closed, or nothing more is expected soon.
    All,
    /// All but the newest unless it is full, for the day's next blocks may still join it.
    Complete,
}

/// After a block of `day` was sealed: merges the day's blocks, only its complete groups while
/// the day is still open. How many points it rewrote.
pub fn merge_if_closed<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    day: i64,
    hot_first: Option<i64>,
) -> StoreResult<u64> {
    let groups = if day_is_open(day, hot_first) {
        Groups::Complete
    } else {
        Groups::All
    };
    merge_day(layout, series, day, groups)
}

/// Rewrites `groups` of the blocks that lie within `day` (`merge_blocks`). How many points it
/// rewrote (0: nothing to merge).
pub fn merge_day<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    day: i64,
    groups: Groups,
) -> StoreResult<u64> {
    merge_between(layout, series, day, day.saturating_add(DAY_MS), groups)
}

/// Rewrites `groups` of the blocks that start in `[from_ms, end)` and end before `end` (`end`
/// at most the next UTC midnight after `from_ms`, so they are of one day). How many points it
/// rewrote (0: nothing to merge).
pub fn merge_between<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    from_ms: i64,
    end: i64,
    groups: Groups,
) -> StoreResult<u64> {
    let metas: Vec<BlockMeta> = layout
        .block_metas(series, from_ms, end)?
        .into_iter()
        .filter(|m| m.end_ms < end)
        .collect();
    merge_blocks(layout, series, &metas, groups)
}

/// Rewrites each of `groups` of the blocks `metas` (of one day) that holds more than one block
/// as the fewest blocks of at most [`MERGED_MAX_POINTS`]. How many points it rewrote (0:
/// nothing to merge).
pub fn merge_blocks<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    metas: &[BlockMeta],
    groups: Groups,
) -> StoreResult<u64> {
    let mut metas = metas.to_vec();
    metas.sort_by_key(|m| (m.start_ms, m.first_seq, m.id));
    let mut planned = plan(&metas);
    let points = |group: &Range<usize>| metas[group.clone()].iter().map(points_of).sum();
    if groups == Groups::Complete && planned.last().is_some_and(|g| !is_full(points(g))) {
        planned.pop();
    }
    let mut rewritten = 0;
    for group in planned.into_iter().filter(|g| g.len() > 1) {
        rewritten += rewrite(layout, series, &metas[group])?;
    }
    Ok(rewritten)
}

/// The groups `metas` (of one day, by first point) merge in, as ranges of it: blocks that
/// overlap (in (ts, seq)) stay in one group, so the merged blocks no longer do, and the next
/// blocks join a group as long as it still makes as many merged blocks of at most
/// [`MERGED_MAX_POINTS`] (one, unless overlapping blocks hold more than that). So no two
/// consecutive blocks of a merged day overlap or fit in one block together: the day is not
/// listed again (`DAYS_TO_MERGE`), and merging it again rewrites nothing.
pub fn plan(metas: &[BlockMeta]) -> Vec<Range<usize>> {
    let mut groups: Vec<Range<usize>> = Vec::new();
    let mut group = 0..0;
    let mut group_points = 0usize;
    let mut at = 0;
    while at < metas.len() {
        // The run of blocks from `at` that overlap one another.
        let mut reach = (metas[at].end_ms, metas[at].last_seq);
        let mut points = points_of(&metas[at]);
        let mut next = at + 1;
        while let Some(m) = metas
            .get(next)
            .filter(|m| (m.start_ms, m.first_seq) <= reach)
        {
            reach = reach.max((m.end_ms, m.last_seq));
            points += points_of(m);
            next += 1;
        }
        if !group.is_empty() && merged_blocks(group_points + points) > merged_blocks(group_points) {
            groups.push(group);
            group = at..at;
            group_points = 0;
        }
        group.end = next;
        group_points += points;
        at = next;
    }
    if !group.is_empty() {
        groups.push(group);
    }
    groups
}

/// Whether a group of `points` is complete: one more point would make another merged block.
fn is_full(points: usize) -> bool {
    points > 0 && points.is_multiple_of(MERGED_MAX_POINTS)
}

/// How many blocks a merge writes for `points`.
fn merged_blocks(points: usize) -> usize {
    points.div_ceil(MERGED_MAX_POINTS).max(1)
}

fn points_of(meta: &BlockMeta) -> usize {
    meta.count.max(0) as usize
}

/// Rewrites `group` (sorted by first point) as the fewest blocks of at most
/// [`MERGED_MAX_POINTS`], of equal size; how many points it rewrote. The blocks are merged in
/// (ts, seq) order, each decoded (and deleted) only when the merge reaches its first point, so
/// the points held at once are the block being written and the blocks it is reading: two
/// merged blocks' worth, and the late blocks that overlap them, however long the group.
fn rewrite<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    group: &[BlockMeta],
) -> StoreResult<u64> {
    let total: usize = group.iter().map(points_of).sum();
    let part_len = total.div_ceil(merged_blocks(total)).max(1);
    // Each open block's points not yet merged, and a heap of their next (ts, seq) that pops the
    // smallest first.
    let mut open: Vec<Peekable<IntoIter<BlockPoint>>> = Vec::with_capacity(group.len());
    let mut heads: BinaryHeap<Reverse<(i64, i64, usize)>> = BinaryHeap::new();
    let next_of = |points: &mut Peekable<IntoIter<BlockPoint>>, block| {
        points.peek().map(|p| Reverse((p.ts_ms, p.seq, block)))
    };
    let mut out: Vec<BlockPoint> = Vec::with_capacity(part_len.min(total));
    let mut written = 0u64;
    loop {
        while let Some(meta) = group.get(open.len()).filter(|m| {
            heads
                .peek()
                .is_none_or(|Reverse((ts, seq, _))| (m.start_ms, m.first_seq) <= (*ts, *seq))
        }) {
            let mut points: Vec<BlockPoint> = layout
                .decode_blocks(series, &[meta.key()])?
                .into_iter()
                .flatten()
                .collect();
            layout.delete_block(series, meta.key())?;
            // Written sorted; sorting a sorted run again is one pass, and guards the merge.
            points.sort_by_key(|p| (p.ts_ms, p.seq));
            let mut points = points.into_iter().peekable();
            heads.extend(next_of(&mut points, open.len()));
            open.push(points);
        }
        let Some(Reverse((_, _, block))) = heads.pop() else {
            break;
        };
        out.extend(open[block].next());
        match next_of(&mut open[block], block) {
            Some(next) => heads.push(next),
            // Its buffer goes now, not when the whole group is merged.
            None => open[block] = Vec::new().into_iter().peekable(),
        }
        if out.len() == part_len {
            layout.insert_block(series, &out)?;
            written += out.len() as u64;
            out.clear();
        }
    }
    if !out.is_empty() {
        layout.insert_block(series, &out)?;
        written += out.len() as u64;
    }
    Ok(written)
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
