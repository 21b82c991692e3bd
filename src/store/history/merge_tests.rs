//! Merging a day's blocks (`merge.rs`) over an in-memory layout that counts the points a merge
//! holds at once: decoded, not yet written back.

use super::merge::{self, Groups, DAY_MS, MERGED_MAX_POINTS};
use super::tests::meta;
use super::*;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

const SERIES: i64 = 1;

#[derive(Default)]
struct Memory {
    blocks: RefCell<BTreeMap<i64, (BlockMeta, Vec<u8>)>>,
    next_id: Cell<i64>,
    held: Cell<i64>,
    most_held: Cell<i64>,
}

impl Memory {
    fn metas(&self) -> Vec<BlockMeta> {
        self.block_metas(SERIES, i64::MIN, i64::MAX).unwrap()
    }

    fn counts(&self) -> Vec<i64> {
        self.metas().iter().map(|m| m.count).collect()
    }

    /// Every point, in the blocks' order, and whether that order is (ts, seq).
    fn points(&self) -> Vec<(i64, i64)> {
        let keys: Vec<BlockKey> = self.metas().iter().map(BlockMeta::key).collect();
        let points: Vec<(i64, i64)> = self
            .decode_blocks(SERIES, &keys)
            .unwrap()
            .into_iter()
            .flatten()
            .map(|p| (p.ts_ms, p.seq))
            .collect();
        self.held.set(0);
        points
    }
}

impl HistoryLayout for Memory {
    fn block_metas(&self, _: i64, from_ms: i64, to_ms: i64) -> StoreResult<Vec<BlockMeta>> {
        let mut metas: Vec<BlockMeta> = self
            .blocks
            .borrow()
            .values()
            .map(|(m, _)| m.clone())
            .filter(|m| (from_ms..to_ms).contains(&m.start_ms))
            .collect();
        metas.sort_by_key(|m| (m.start_ms, m.id));
        Ok(metas)
    }

    fn block_data(&self, _: i64, keys: &[BlockKey]) -> StoreResult<Vec<Vec<u8>>> {
        let blocks = self.blocks.borrow();
        let mut data = Vec::new();
        for key in keys {
            let (meta, bytes) = &blocks[&key.id];
            self.held.set(self.held.get() + meta.count);
            self.most_held
                .set(self.most_held.get().max(self.held.get()));
            data.push(bytes.clone());
        }
        Ok(data)
    }

    fn newest_blocks(
        &self,
        series: i64,
        before_ms: i64,
        limit: u32,
    ) -> StoreResult<Vec<BlockMeta>> {
        let mut metas = self.block_metas(series, i64::MIN, before_ms)?;
        metas.reverse();
        metas.truncate(limit as usize);
        Ok(metas)
    }

    fn hot_range(&self, _: i64, _: i64, _: i64, _: Option<u64>) -> StoreResult<Vec<BlockPoint>> {
        Ok(Vec::new())
    }

    fn hot_last(&self, _: i64, _: u64) -> StoreResult<Vec<BlockPoint>> {
        Ok(Vec::new())
    }
}

impl BlockWrites for Memory {
    fn insert_encoded(&self, _: i64, points: &[BlockPoint], data: &[u8]) -> StoreResult<()> {
        let summary = block_summary(points)?;
        let id = self.next_id.get() + 1;
        self.next_id.set(id);
        let meta = BlockMeta {
            id,
            start_ms: summary.start_ms,
            end_ms: summary.end_ms,
            count: summary.count,
            num_count: summary.num_count,
            min: summary.min,
            max: summary.max,
            sum: summary.sum,
            first_seq: summary.first.seq,
            last_seq: summary.last.seq,
        };
        self.blocks.borrow_mut().insert(id, (meta, data.to_vec()));
        self.held.set(self.held.get() - points.len() as i64);
        Ok(())
    }

    fn delete_block(&self, _: i64, key: BlockKey) -> StoreResult<()> {
        self.blocks.borrow_mut().remove(&key.id);
        Ok(())
    }

    fn delete_blocks_ending_before(&self, _: i64, before_ms: i64) -> StoreResult<u64> {
        let mut blocks = self.blocks.borrow_mut();
        let before = blocks.values().map(|(m, _)| m.count as u64).sum::<u64>();
        blocks.retain(|_, (m, _)| m.end_ms >= before_ms);
        Ok(before - blocks.values().map(|(m, _)| m.count as u64).sum::<u64>())
    }

    fn delete_hot_through(&self, _: i64, _: i64, _: i64) -> StoreResult<()> {
        Ok(())
    }
}

/// Writes one block of `n` points from `start_ms`, `step_ms` apart, with seqs from `seq`.
fn block(layout: &Memory, start_ms: i64, step_ms: i64, n: usize, seq: i64) {
    let points: Vec<BlockPoint> = (0..n as i64)
        .map(|i| BlockPoint {
            ts_ms: start_ms + i * step_ms,
            seq: seq + i,
            value: json!(i as f64 / 4.0),
            quality: 0,
        })
        .collect();
    layout.insert_block(SERIES, &points).unwrap();
}

fn sorted(points: &[(i64, i64)]) -> bool {
    points.windows(2).all(|w| w[0] < w[1])
}

#[test]
fn consecutive_blocks_are_packed_up_to_a_merged_block_and_overlapping_ones_kept_together() {
    let quarter = (MERGED_MAX_POINTS / 4) as i64;
    let metas = [
        meta(1, 0, 99, quarter),
        meta(2, 100, 199, quarter),
        meta(3, 200, 299, quarter),
        meta(4, 300, 399, quarter),
        meta(5, 400, 499, quarter),
        // A late block reaching back into block 5.
        meta(6, 450, 460, 10),
        meta(7, 500, 599, 3 * quarter),
        meta(8, 600, 699, 1),
    ];
    assert_eq!(merge::plan(&metas), [0..4, 4..6, 6..8]);
    // Equal times are ordered by seq: a block starting where another ends, after it, does not
    // overlap it; one starting there before its last point does.
    let mut touching = [meta(1, 0, 100, 3 * quarter), meta(2, 100, 200, 3 * quarter)];
    touching[0].last_seq = 3;
    touching[1].first_seq = 4;
    assert_eq!(merge::plan(&touching), [0..1, 1..2]);
    touching[1].first_seq = 2;
    assert_eq!(merge::plan(&touching), vec![0..2]);
    // Overlapping blocks of more than a merged block make several; the next blocks join them
    // while they fit in those.
    let overlapping = [
        meta(1, 0, 100, 3 * quarter),
        meta(2, 50, 200, 3 * quarter),
        meta(3, 300, 400, quarter),
        meta(4, 500, 600, quarter),
        meta(5, 700, 800, 1),
    ];
    assert_eq!(merge::plan(&overlapping), [0..4, 4..5]);
    assert!(merge::plan(&[]).is_empty());
}

#[test]
fn a_fast_tags_day_is_merged_holding_no_more_than_a_merged_block() {
    let layout = Memory::default();
    // 100 blocks of 4,096 points: a tag at 100 Hz for over an hour.
    for b in 0..100 {
        block(&layout, b * 50_000, 10, 4_096, 0);
    }
    let rewritten = merge::merge_day(&layout, SERIES, 0, Groups::All).unwrap();
    assert_eq!(rewritten, 409_600);
    assert_eq!(
        layout.counts(),
        [131_072, 131_072, 131_072, 16_384],
        "packed in 32s"
    );
    assert!(
        layout.most_held.get() <= MERGED_MAX_POINTS as i64 + 4_096,
        "held {} points at once",
        layout.most_held.get()
    );
    let points = layout.points();
    assert_eq!(points.len(), 409_600);
    assert!(sorted(&points));
    // Merged: nothing more to do.
    assert_eq!(
        merge::merge_day(&layout, SERIES, 0, Groups::All).unwrap(),
        0
    );
}

#[test]
fn while_the_day_is_open_only_its_complete_groups_are_merged() {
    let layout = Memory::default();
    for b in 0..40 {
        block(&layout, b * 50_000, 10, 4_096, 0);
    }
    let rewritten = merge::merge_day(&layout, SERIES, 0, Groups::Complete).unwrap();
    assert_eq!(rewritten, 131_072);
    let counts = layout.counts();
    assert_eq!(counts.len(), 9);
    assert_eq!(counts[0], 131_072);
    // The newest group is left for the blocks still to come; a merge of complete groups of
    // what is already merged rewrites nothing.
    assert_eq!(
        merge::merge_day(&layout, SERIES, 0, Groups::Complete).unwrap(),
        0
    );
    assert_eq!(
        merge::merge_if_closed(&layout, SERIES, 0, None).unwrap(),
        32_768
    );
    assert_eq!(layout.counts(), [131_072, 32_768]);
    // A hot row in the day keeps it open.
    block(&layout, 40 * 50_000, 10, 4_096, 0);
    assert_eq!(
        merge::merge_if_closed(&layout, SERIES, 0, Some(DAY_MS - 1)).unwrap(),
        0
    );
    assert_eq!(layout.counts().len(), 3);
}

#[test]
fn late_blocks_across_the_day_are_merged_in_order_without_holding_the_day() {
    let layout = Memory::default();
    for b in 0..128 {
        block(&layout, b * 50_000, 10, 4_096, 0);
    }
    merge::merge_day(&layout, SERIES, 0, Groups::All).unwrap();
    assert_eq!(layout.counts(), [131_072; 4]);
    // Late points every 200 s across the whole span, at times stored points hold too.
    block(&layout, 0, 200_000, 32, 1);
    // And a late point at the last stored time, after it.
    let last = layout.metas()[3].clone();
    block(&layout, last.end_ms, 1, 1, last.last_seq + 1);
    layout.most_held.set(0);
    let rewritten = merge::merge_day(&layout, SERIES, 0, Groups::All).unwrap();
    assert_eq!(rewritten, 524_288 + 33);
    let counts = layout.counts();
    assert_eq!(counts.len(), 5, "{counts:?}");
    assert!(counts.iter().all(|&n| n <= MERGED_MAX_POINTS as i64));
    // The late block spans the day, so the merge holds it throughout, beside the block it
    // writes and the one it reads: not the day.
    assert!(
        layout.most_held.get() <= 2 * MERGED_MAX_POINTS as i64 + 33,
        "held {} points at once",
        layout.most_held.get()
    );
    let metas = layout.metas();
    assert!(
        metas
            .windows(2)
            .all(|w| (w[0].end_ms, w[0].last_seq) < (w[1].start_ms, w[1].first_seq)),
        "merged blocks do not overlap"
    );
    let points = layout.points();
    assert_eq!(points.len(), 524_288 + 33);
    assert!(sorted(&points));
    assert_eq!(
        merge::merge_day(&layout, SERIES, 0, Groups::All).unwrap(),
        0
    );
}
