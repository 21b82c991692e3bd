//! The planning of block reads, on summaries alone.

use super::*;

fn ids(keys: Vec<BlockKey>) -> Vec<i64> {
    keys.into_iter().map(|k| k.id).collect()
}

/// A block's summary with no values summed and `seq`s of 0 (shared with `merge_tests.rs`).
pub(super) fn meta(id: i64, start_ms: i64, end_ms: i64, count: i64) -> BlockMeta {
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

mod readings {
    use super::super::Accumulator;
    use crate::store::Aggregation;
    use proptest::prelude::*;

    fn answer(acc: Accumulator) -> Vec<(i64, String)> {
        acc.finish()
            .unwrap()
            .into_iter()
            .map(|p| (p.ts_ms, p.value.to_string()))
            .collect()
    }

    proptest! {
        /// A block's readings added by runs give the very answer (sums bit for bit) of adding
        /// them one by one, whatever the window, the buckets and what came before.
        #[test]
        fn runs_add_up_as_one_by_one(
            steps in prop::collection::vec(0i64..2_000, 1..300),
            values in prop::collection::vec(-1e6f64..1e6, 300),
            earlier in prop::collection::vec((0i64..40_000, -1e3f64..1e3), 0..10),
            start_ms in -1_000i64..20_000,
            span in 1i64..60_000,
            bucket_ms in 1i64..10_000,
            agg in prop::sample::select(vec![Aggregation::Mean, Aggregation::Sum,
                Aggregation::Min, Aggregation::Max, Aggregation::Median]),
        ) {
            let ts: Vec<i64> = steps.iter().scan(0, |t, s| { *t += s; Some(*t) }).collect();
            let values = &values[..ts.len()];
            let end_ms = start_ms + span;
            let mut by_runs = Accumulator::new(start_ms, bucket_ms, agg);
            let mut one_by_one = Accumulator::new(start_ms, bucket_ms, agg);
            for &(t, x) in earlier.iter().filter(|(t, _)| (start_ms..end_ms).contains(t)) {
                by_runs.add_reading(t, x);
                one_by_one.add_reading(t, x);
            }
            by_runs.add_readings(&ts, values, start_ms, end_ms);
            for (&t, &x) in ts.iter().zip(values) {
                if (start_ms..end_ms).contains(&t) {
                    one_by_one.add_reading(t, x);
                }
            }
            prop_assert_eq!(answer(by_runs), answer(one_by_one));
        }
    }
}

#[test]
fn a_min_or_max_skips_an_edge_block_only_when_its_buckets_already_beat_it() {
    let summary = |id, start_ms, end_ms, min, max| BlockMeta {
        min: Some(min),
        max: Some(max),
        sum: Some(min + max),
        ..meta(id, start_ms, end_ms, 2)
    };
    // Buckets of 100 from 0: blocks 1 and 2 lie in buckets 0 and 1, block 3 straddles both.
    let inside = [summary(1, 0, 49, 5.0, 9.0), summary(2, 150, 199, 6.0, 8.0)];
    let edge = summary(3, 60, 140, 7.0, 8.5);
    let wider = summary(4, 60, 240, 7.0, 8.5); // also covers bucket 2, which is empty
    for (agg, skipped) in [
        (Aggregation::Min, true),  // 7 is above both buckets' min (5, 6)
        (Aggregation::Max, false), // 8.5 is above bucket 1's max (8)
        (Aggregation::Mean, false),
    ] {
        let mut acc = Accumulator::new(0, 100, agg);
        for m in &inside {
            assert!(acc.add_summary(m).unwrap());
        }
        assert_eq!(acc.block_cannot_change(&edge, 0, 1_000), skipped, "{agg}");
        assert!(!acc.block_cannot_change(&wider, 0, 1_000), "{agg}");
        // Cut by the window to the buckets that hold readings, the wider block is like the edge.
        assert_eq!(acc.block_cannot_change(&wider, 0, 200), skipped, "{agg}");
    }
    // Equal to a bucket's min is not enough (-0.0 and 0.0 tie).
    let mut acc = Accumulator::new(0, 100, Aggregation::Min);
    acc.add_summary(&inside[0]).unwrap();
    acc.add_summary(&inside[1]).unwrap();
    assert!(!acc.block_cannot_change(&summary(5, 60, 140, 6.0, 9.0), 0, 1_000));
}
