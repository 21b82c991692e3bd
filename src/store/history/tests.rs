//! The planning of block reads, on summaries alone.

use super::*;

fn ids(keys: Vec<BlockKey>) -> Vec<i64> {
    keys.into_iter().map(|k| k.id).collect()
}

fn meta(id: i64, start_ms: i64, end_ms: i64, count: i64) -> BlockMeta {
    BlockMeta {
        id,
        start_ms,
        end_ms,
        count,
        num_count: count,
        min: None,
        max: None,
        sum: None,
        first_seq: 0,
        last_seq: 0,
    }
}

#[test]
fn a_limited_range_decodes_only_the_blocks_that_can_hold_its_first_points() {
    let metas = [
        meta(1, 0, 99, 100),
        meta(2, 100, 199, 100),
        meta(3, 200, 299, 100),
        meta(4, 300, 399, 100),
    ];
    assert_eq!(ids(blocks_for_range(&metas, 0, 1_000, Some(150))), [1, 2]);
    assert_eq!(ids(blocks_for_range(&metas, 0, 1_000, None)), [1, 2, 3, 4]);
    // The first block straddles the window start: its points are not counted as inside.
    assert_eq!(ids(blocks_for_range(&metas, 50, 1_000, Some(100))), [1, 2]);
    assert_eq!(
        ids(blocks_for_range(&metas, 50, 1_000, Some(101))),
        [1, 2, 3]
    );
}

#[test]
fn a_late_block_overlapping_the_chosen_ones_is_decoded_too() {
    // Block 5 holds late points from inside block 2's span.
    let metas = [
        meta(1, 0, 99, 100),
        meta(2, 100, 199, 100),
        meta(5, 150, 160, 3),
        meta(3, 200, 299, 100),
    ];
    assert_eq!(
        ids(blocks_for_range(&metas, 0, 1_000, Some(150))),
        [1, 2, 5]
    );
}
