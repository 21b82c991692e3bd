//! Bursts straight into blocks (issue 40). A fold's values normally become hot rows, which the
//! sealer later reads back, encodes into a block and deletes: at a fast tag's rates (a bench's
//! fan-in, a gateway replaying its store-and-forward buffer, one tag at 20,000 values a second)
//! those three passes over the rows were most of the historian's work and a third of the
//! server's CPU. A series' run of one fold that is long, already in time order, and no older
//! than everything the series holds (rows and blocks) cannot interleave with anything stored,
//! so it is written as blocks at once, with the `seq`s the rows would have got. Anything else
//! (a slow tag's few values, a run out of order, stragglers behind what is stored) still goes
//! through the rows, where `KEEP_HOT` keeps room for it.
//!
//! A fold's blocks are small (a fold's worth of one series), so the writer compacts each
//! series' run of them once it holds a block's worth, or once the tag falls idle
//! ([`BlockWrites::compact_from`]): the same blocks, and the same day merges, that the rows
//! would have become.

use super::merge::{self, Groups};
use super::BlockWrites;
use crate::store::blocks::{self, BlockPoint};
use crate::store::types::{HistoryWrite, StraightCompaction, StraightToBlocks};
use crate::store::StoreResult;
use foldhash::HashMap;

/// The fewest values of one series in one fold that go straight into blocks. A slow tag's
/// values (a gateway's 12,000 tags at 1 Hz give 4 a fold) stay rows; a tag faster than about
/// 5,000 values a second (QoS 0, folded every 50 ms) or 64 (journaled, every 4 s) fills this.
pub const STRAIGHT_MIN_POINTS: usize = 256;

/// One series' values in one fold that may go straight into blocks: at least
/// [`STRAIGHT_MIN_POINTS`], and in time order as they arrived.
pub struct Burst<'v> {
    pub domain: &'v str,
    pub topic: &'v str,
    /// Their positions in the fold's values, in arrival order.
    pub positions: Vec<usize>,
}

/// The fold's bursts: per series, its values when there are enough of them in time order.
pub fn bursts(values: &[HistoryWrite]) -> Vec<Burst<'_>> {
    let mut by_series: HashMap<(&str, &str), Vec<usize>> = HashMap::default();
    for (at, value) in values.iter().enumerate() {
        by_series
            .entry((value.domain.as_str(), value.topic.as_str()))
            .or_default()
            .push(at);
    }
    by_series
        .into_iter()
        .filter(|(_, positions)| {
            positions.len() >= STRAIGHT_MIN_POINTS
                && positions
                    .windows(2)
                    .all(|pair| values[pair[0]].ts_ms <= values[pair[1]].ts_ms)
        })
        .map(|((domain, topic), positions)| Burst {
            domain,
            topic,
            positions,
        })
        .collect()
}

/// Writes `burst` as blocks of series `series` when its first value is no older than everything
/// the series holds (its blocks, `sealed_upto` their newest time, and its hot rows), after
/// what is stored at that millisecond. What went straight in, or `None` (the values are left
/// for the rows). Blocks are cut at [`blocks::MAX_POINTS`] and at UTC midnight, as the sealer
/// cuts them.
pub fn write_burst<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    sealed_upto: Option<i64>,
    values: &[HistoryWrite],
    burst: &Burst<'_>,
) -> StoreResult<Option<StraightToBlocks>> {
    let Some(&first) = burst.positions.first() else {
        return Ok(None);
    };
    let first_ms = values[first].ts_ms;
    let Some(first_seq) = seq_after_stored(layout, series, sealed_upto, first_ms)? else {
        return Ok(None);
    };
    let mut block: Vec<BlockPoint> =
        Vec::with_capacity(burst.positions.len().min(blocks::MAX_POINTS));
    // The last point's time and seq, across a cut between blocks (and after what is stored
    // at the first value's time).
    let mut last: Option<(i64, i64)> = (first_seq > 0).then_some((first_ms, first_seq - 1));
    for &at in &burst.positions {
        let value = &values[at];
        let full = block.len() >= blocks::MAX_POINTS;
        let new_day = block
            .first()
            .is_some_and(|p| merge::day_of(p.ts_ms) != merge::day_of(value.ts_ms));
        if full || new_day {
            layout.insert_block(series, &block)?;
            block.clear();
        }
        // Values at one time keep their arrival order, as rows do: the first gets 0.
        let seq = match last {
            Some((ts_ms, seq)) if ts_ms == value.ts_ms => seq + 1,
            _ => 0,
        };
        last = Some((value.ts_ms, seq));
        block.push(BlockPoint {
            ts_ms: value.ts_ms,
            seq,
            value: value.value.clone(),
            quality: value.quality.0,
        });
    }
    if !block.is_empty() {
        layout.insert_block(series, &block)?;
    }
    Ok(Some(StraightToBlocks {
        domain: burst.domain.to_owned(),
        topic: burst.topic.to_owned(),
        points: burst.positions.len() as u64,
        first_ms,
    }))
}

/// The `seq` a value at `ts_ms` takes after everything series `series` holds, when nothing it
/// holds is newer: 0 when all is older, else one past the last value stored at that very
/// millisecond (consecutive folds of a fast tag often share one). `None` when the series holds
/// something newer. Read from the newest row and the summaries of the blocks ending there:
/// no block holds a later time (`sealed_upto` is their newest), so each one's `last_seq` is its
/// highest at `ts_ms`.
fn seq_after_stored<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    sealed_upto: Option<i64>,
    ts_ms: i64,
) -> StoreResult<Option<i64>> {
    let newest_row = layout
        .hot_last(series, 1)?
        .first()
        .map(|p| (p.ts_ms, p.seq));
    let newest = sealed_upto.max(newest_row.map(|(ts, _)| ts));
    let Some(newest) = newest.filter(|&newest| newest >= ts_ms) else {
        return Ok(Some(0));
    };
    if newest > ts_ms {
        return Ok(None);
    }
    let mut after = newest_row
        .filter(|&(ts, _)| ts == ts_ms)
        .map_or(0, |(_, seq)| seq + 1);
    if sealed_upto == Some(ts_ms) {
        for meta in layout.blocks_overlapping(series, ts_ms, ts_ms.saturating_add(1))? {
            if meta.end_ms == ts_ms {
                after = after.max(meta.last_seq + 1);
            }
        }
    }
    Ok(Some(after))
}

/// Compacts the blocks starting at or after `from_ms` (a run of blocks folds wrote straight),
/// each day's into the fewest blocks of at most [`merge::MERGED_MAX_POINTS`], holding no more
/// than two such blocks' worth at once however long the run (`merge::rewrite`). A day the run has left, and with
/// [`StraightCompaction::Idle`] its last day too, is then merged whole once no hot row is left
/// in it, as sealing a day's last rows merges it; with [`StraightCompaction::Day`] the last
/// day's complete groups are merged, so a fast tag's day never waits for midnight to be merged
/// all at once. How many points were rewritten.
pub fn compact_from<W: BlockWrites + ?Sized>(
    layout: &W,
    series: i64,
    from_ms: i64,
    compaction: StraightCompaction,
) -> StoreResult<u64> {
    let metas = layout.block_metas(series, from_ms, i64::MAX)?;
    let Some(last_day) = metas.last().map(|m| merge::day_of(m.start_ms)) else {
        return Ok(0);
    };
    let hot_first = layout.hot_range(series, i64::MIN, i64::MAX, Some(1))?;
    let hot_first = hot_first.first().map(|p| p.ts_ms);
    let mut rewritten = 0;
    for run in metas.chunk_by(|a, b| merge::day_of(a.start_ms) == merge::day_of(b.start_ms)) {
        rewritten += merge::merge_blocks(layout, series, run, Groups::All)?;
        let day = merge::day_of(run[0].start_ms);
        if day < last_day || compaction == StraightCompaction::Idle {
            rewritten += merge::merge_if_closed(layout, series, day, hot_first)?;
        } else if compaction == StraightCompaction::Day {
            rewritten += merge::merge_day(layout, series, day, Groups::Complete)?;
        }
    }
    Ok(rewritten)
}
