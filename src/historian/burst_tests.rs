//! Bursts straight into blocks (`store::history::bursts`) on a temporary SQLite file: a long
//! in-order run of a fold reads exactly as the same values folded into rows would, keeps equal
//! times in arrival order, is cut at midnight, never lands among or behind what the series
//! holds, and the writer compacts a series' run of fold-sized blocks into one.

use super::writer::HistorianWriter;
use crate::store::blocks::{MAX_POINTS, MERGED_MAX_POINTS};
use crate::store::STRAIGHT_MIN_POINTS;
use crate::store::{Aggregation, HistoryPoint, HistoryWrite, Quality, Store, StraightCompaction};
use serde_json::{json, Value};
use std::time::Duration;

const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const DAY: i64 = 86_400_000;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db")).unwrap();
    (dir, store)
}

fn w(topic: &str, ts_ms: i64, value: Value) -> HistoryWrite {
    HistoryWrite {
        domain: "d".into(),
        topic: topic.into(),
        ts_ms,
        value,
        quality: if ts_ms % 11 == 0 {
            Quality(0x8000_0000)
        } else {
            Quality::GOOD
        },
    }
}

/// `n` values of `topic` from `from`, three to a millisecond, numbers with some text and
/// bools among them.
fn burst(topic: &str, from: i64, n: i64) -> Vec<HistoryWrite> {
    (0..n)
        .map(|i| {
            let value = match i % 53 {
                0 => json!(format!("s{i}")),
                1 => json!(i % 2 == 0),
                _ => json!(i as f64 / 4.0),
            };
            w(topic, from + i / 3, value)
        })
        .collect()
}

/// (start, end, count) of every block of `topic`, by start.
fn blocks(dir: &tempfile::TempDir, topic: &str) -> Vec<(i64, i64, i64)> {
    let conn = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT b.start_ts, b.end_ts, b.count FROM hist_blocks b \
             JOIN hist_series s ON s.id = b.series WHERE s.topic = ?1 ORDER BY 1",
        )
        .unwrap();
    let rows = stmt
        .query_map([topic], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Hot rows of `topic`.
fn rows(store: &Store, topic: &str) -> u64 {
    let tails = store.history_tails().unwrap();
    tails
        .iter()
        .filter(|t| t.topic == topic)
        .map(|t| t.count)
        .sum()
}

/// Two answers are the same; a failure names the first point that differs.
fn assert_same(a: &[HistoryPoint], b: &[HistoryPoint], what: &str) {
    if let Some(at) = a.iter().zip(b).position(|(x, y)| x != y) {
        panic!("{what}: point {at} differs: {:?} vs {:?}", a[at], b[at]);
    }
    assert_eq!(a.len(), b.len(), "{what}: points");
}

/// Every read of `topic` over `[from, to)` answers the same on both stores.
fn assert_reads_alike(a: &Store, b: &Store, topic: &str, from: i64, to: i64) {
    let range = |s: &Store, from, limit| s.history_range("d", topic, from, to, limit).unwrap();
    assert_same(&range(a, from, None), &range(b, from, None), "range");
    assert_same(
        &range(a, from + 7, Some(100)),
        &range(b, from + 7, Some(100)),
        "limited",
    );
    let last = |s: &Store| s.history_last("d", topic, 500).unwrap();
    assert_same(&last(a), &last(b), "last");
    for agg in [Aggregation::Count, Aggregation::Max, Aggregation::Last] {
        let buckets = |s: &Store| s.history_buckets("d", topic, from, to, 250, agg).unwrap();
        assert_same(&buckets(a), &buckets(b), "buckets");
    }
}

#[test]
fn a_burst_goes_straight_into_blocks_and_reads_as_its_rows_would() {
    let (dir, straight) = store();
    let (_rows_dir, as_rows) = store();
    let values = burst("t", T0, 10_000);
    let written = straight.fold_history(&values, None).unwrap();
    as_rows.append_history(&values).unwrap();

    assert_eq!(written.len(), 1);
    assert_eq!((written[0].points, written[0].first_ms), (10_000, T0));
    assert_eq!(rows(&straight, "t"), 0, "no value went through the rows");
    let counts: Vec<i64> = blocks(&dir, "t").iter().map(|b| b.2).collect();
    assert_eq!(
        counts,
        [
            MAX_POINTS as i64,
            MAX_POINTS as i64,
            10_000 - 2 * MAX_POINTS as i64
        ]
    );
    assert_reads_alike(&straight, &as_rows, "t", T0 - 10, T0 + 10_000);
}

#[test]
fn a_value_at_the_time_a_burst_ended_reads_after_the_burst() {
    let (_dir, store) = store();
    let values = burst("t", T0, 600); // the last three at T0 + 199
    assert_eq!(store.fold_history(&values, None).unwrap().len(), 1);
    store
        .fold_history(&[w("t", T0 + 199, json!("after"))], None)
        .unwrap();
    let last: Vec<Value> = store
        .history_last("d", "t", 4)
        .unwrap()
        .into_iter()
        .map(|p| p.value)
        .collect();
    assert_eq!(
        last,
        [
            json!("after"),
            json!(599.0 / 4.0),
            json!(598.0 / 4.0),
            json!(597.0 / 4.0)
        ]
    );
}

#[test]
fn folds_sharing_a_millisecond_go_straight_in_arrival_order() {
    let (_dir, straight) = store();
    let (_rows_dir, as_rows) = store();
    // A fast tag: each fold ends and the next begins within one millisecond, after a block
    // (the first two) and after rows (a short fold, then a burst).
    let first = burst("t", T0, 601); // the last at T0 + 200, the first of three there
    let second: Vec<HistoryWrite> = burst("t", T0 + 200, 600);
    let short = burst("t", T0 + 399, 10); // rows, from T0 + 399 (the second's last time)
    let fourth = burst("t", T0 + 402, 600); // after the short fold's last, T0 + 402
    let mut all = Vec::new();
    for fold in [&first, &second, &short, &fourth] {
        straight.fold_history(fold, None).unwrap();
        all.extend(fold.iter().cloned());
    }
    as_rows.append_history(&all).unwrap();
    assert_eq!(rows(&straight, "t"), 10, "only the short fold is rows");
    assert_reads_alike(&straight, &as_rows, "t", T0, T0 + 1_000);
}

#[test]
fn a_burst_across_midnight_is_cut_there() {
    let (dir, store) = store();
    let values = burst("t", T0 + DAY - 100, 900);
    store.fold_history(&values, None).unwrap();
    let blocks = blocks(&dir, "t");
    assert_eq!(blocks.len(), 2);
    for (start, end, _) in blocks {
        assert_eq!(
            start.div_euclid(DAY),
            end.div_euclid(DAY),
            "a block crosses midnight"
        );
    }
    assert_eq!(
        store
            .history_range("d", "t", T0, T0 + 2 * DAY, None)
            .unwrap()
            .len(),
        900
    );
}

#[test]
fn a_run_out_of_order_or_behind_what_the_series_holds_goes_to_the_rows() {
    let (_dir, store) = store();
    // Short: rows.
    let short = burst("t", T0, STRAIGHT_MIN_POINTS as i64 - 1);
    assert!(store.fold_history(&short, None).unwrap().is_empty());
    // Long and in order, but starting before the newest row: rows.
    let behind = burst("t", T0 + 10, 900);
    assert!(store.fold_history(&behind, None).unwrap().is_empty());
    // Long, newer than everything, but out of order: rows.
    let mut shuffled = burst("u", T0, 900);
    shuffled.swap(100, 200);
    assert!(store.fold_history(&shuffled, None).unwrap().is_empty());
    assert_eq!(rows(&store, "t"), STRAIGHT_MIN_POINTS as u64 - 1 + 900);
    assert_eq!(rows(&store, "u"), 900);
    // Newer than the rows: straight, and every value reads in (ts, seq) order.
    let ahead = burst("t", T0 + 1_000, 900);
    assert_eq!(store.fold_history(&ahead, None).unwrap().len(), 1);
    let read = store.history_range("d", "t", T0, T0 + 2_000, None).unwrap();
    assert_eq!(read.len(), STRAIGHT_MIN_POINTS - 1 + 900 + 900);
    assert!(read.windows(2).all(|p| p[0].ts_ms <= p[1].ts_ms));
}

#[test]
fn compacting_a_run_of_fold_sized_blocks_leaves_one_and_reads_the_same() {
    let (dir, straight) = store();
    let (_rows_dir, as_rows) = store();
    let mut all = Vec::new();
    for fold in 0..10 {
        let values = burst("t", T0 + fold * 1_000, 300);
        assert_eq!(straight.fold_history(&values, None).unwrap().len(), 1);
        all.extend(values);
    }
    as_rows.append_history(&all).unwrap();
    assert_eq!(blocks(&dir, "t").len(), 10);
    let rewritten = straight
        .compact_straight("d", "t", T0, StraightCompaction::Run)
        .unwrap();
    assert_eq!(rewritten, 3_000);
    assert_eq!(blocks(&dir, "t").len(), 1);
    assert_reads_alike(&straight, &as_rows, "t", T0, T0 + 20_000);
}

#[test]
fn a_long_run_is_compacted_a_merged_block_at_a_time() {
    let (dir, store) = store();
    for fold in 0..8 {
        store
            .fold_history(&burst("t", T0 + fold * 10_000, 20_000), None)
            .unwrap();
    }
    assert_eq!(blocks(&dir, "t").len(), 40);
    assert_eq!(
        store
            .compact_straight("d", "t", T0, StraightCompaction::Run)
            .unwrap(),
        160_000
    );
    let counts: Vec<i64> = blocks(&dir, "t").iter().map(|b| b.2).collect();
    assert_eq!(counts.len(), 2);
    assert!(
        counts.iter().all(|&n| n <= MERGED_MAX_POINTS as i64),
        "{counts:?}"
    );
    assert_eq!(counts.iter().sum::<i64>(), 160_000);
    let read = store.history_range("d", "t", T0, T0 + DAY, None).unwrap();
    assert_eq!(read.len(), 160_000);
    assert!(read.windows(2).all(|p| p[0].ts_ms <= p[1].ts_ms));
}

#[test]
fn an_idle_run_across_midnight_leaves_one_block_a_day() {
    let (dir, store) = store();
    for fold in 0..6 {
        let values = burst("t", T0 + DAY - 3_000 + fold * 1_000, 300);
        store.fold_history(&values, None).unwrap();
    }
    assert_eq!(blocks(&dir, "t").len(), 6);
    store
        .compact_straight("d", "t", T0 + DAY - 3_000, StraightCompaction::Idle)
        .unwrap();
    let days: Vec<i64> = blocks(&dir, "t")
        .iter()
        .map(|b| b.0.div_euclid(DAY))
        .collect();
    assert_eq!(days, [T0 / DAY, T0 / DAY + 1]);
    assert_eq!(
        store
            .history_range("d", "t", T0, T0 + 2 * DAY, None)
            .unwrap()
            .len(),
        1_800
    );
}

#[tokio::test]
async fn the_writer_compacts_a_series_run_once_it_falls_idle() {
    let (dir, store) = store();
    let writer = HistorianWriter::start(store.clone(), Duration::from_millis(300)).unwrap();
    for fold in 0..5 {
        for value in burst("t", T0 + fold * 1_000, 400) {
            writer.record(value).await;
        }
        writer.settle().await.unwrap();
    }
    assert_eq!(rows(&store, "t"), 0);
    // Each fold left a block of its 400 values: one block of all 2,000 is the compaction's.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while blocks(&dir, "t").iter().map(|b| b.2).collect::<Vec<_>>() != [2_000] {
        assert!(
            std::time::Instant::now() < deadline,
            "the run was not compacted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        store
            .history_range("d", "t", T0, T0 + 10_000, None)
            .unwrap()
            .len(),
        2_000
    );
    writer.shutdown().await;
}

#[test]
fn a_fast_runs_day_is_merged_a_merged_block_at_a_time_as_it_goes() {
    let (dir, store) = store();
    let mut runs = super::straight_runs::StraightRuns::new(Duration::from_secs(3600));
    for fold in 0..40 {
        let values = burst("t", T0 + fold * 10_000, MAX_POINTS as i64);
        runs.note(&store.fold_history(&values, None).unwrap());
        runs.compact_some(&store, usize::MAX).unwrap();
    }
    let counts: Vec<i64> = blocks(&dir, "t").iter().map(|b| b.2).collect();
    assert_eq!(counts.len(), 9, "{counts:?}");
    assert_eq!(counts[0], MERGED_MAX_POINTS as i64);
    let read = store.history_range("d", "t", T0, T0 + DAY, None).unwrap();
    assert_eq!(read.len(), 40 * MAX_POINTS);
}
