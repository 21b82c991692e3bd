//! The historian's blocks on a temporary SQLite file, through the store's public API: every
//! aggregation answers the same over blocks (from their summaries or decoded) as over rows,
//! last-N and windows agree, a late point at a time the blocks hold goes after their points,
//! and retention drops whole blocks and trims the one the cut falls in.

use super::*;
use crate::store::blocks::MAX_POINTS;
use crate::store::HistoryWrite;
use crate::store::{HistoryPoint, Quality};
use serde_json::{json, Value};

const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db")).unwrap();
    (dir, store)
}

fn w(ts_ms: i64, value: Value) -> HistoryWrite {
    HistoryWrite {
        domain: "d".into(),
        topic: "t".into(),
        ts_ms,
        value,
        quality: Quality::GOOD,
    }
}

/// Closes every hot row into blocks.
fn seal_all(store: &Store) {
    while store.seal_history("d", "t", MAX_POINTS).unwrap().points > 0 {}
}

/// A series of 20,000 points over 1.9 hours: numbers, some strings and bools, equal times.
fn series() -> Vec<HistoryWrite> {
    (0..20_000i64)
        .map(|i| {
            let value = match i % 97 {
                0 => json!("text"),
                1 => json!(i % 2 == 0),
                _ => json!((i * 7919 % 1000) as f64 / 10.0 - 50.0),
            };
            w(T0 + i - i % 3 + i * 1000 / 3, value)
        })
        .collect()
}

/// Each answer read over blocks is the one read over rows: the same times, values within
/// float rounding (sums over summaries add in another order).
fn assert_same_answers(as_rows: &[Vec<HistoryPoint>], as_blocks: &[Vec<HistoryPoint>]) {
    assert_eq!(as_rows.len(), as_blocks.len());
    for (i, (rows, blocks)) in as_rows.iter().zip(as_blocks).enumerate() {
        assert_eq!(rows.len(), blocks.len(), "answer {i}: points");
        for (a, b) in rows.iter().zip(blocks) {
            assert_eq!(a.ts_ms, b.ts_ms, "answer {i}");
            assert!(
                close(&a.value, &b.value),
                "answer {i}: {} vs {}",
                a.value,
                b.value
            );
        }
    }
}

fn close(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => a == b,
    }
}

#[test]
fn every_aggregation_and_read_agrees_between_rows_and_blocks() {
    let (_dir, store) = store();
    store.append_history(&series()).unwrap();
    let windows = [
        (T0, T0 + 7 * 3_600_000, 600_000),
        (T0 + 1_234_567, T0 + 4_321_000, 61_000),
        (T0 - 5_000, T0 + 20_000_000, 3_600_000),
        (T0 + 100_000, T0 + 100_500, 7),
    ];
    let read = |store: &Store| {
        let mut answers = Vec::new();
        for (start, end, bucket) in windows {
            for agg in Aggregation::ALL {
                answers.push(
                    store
                        .history_buckets("d", "t", start, end, bucket, agg)
                        .unwrap(),
                );
            }
            answers.push(store.history_range("d", "t", start, end, None).unwrap());
            answers.push(
                store
                    .history_range("d", "t", start, end, Some(777))
                    .unwrap(),
            );
        }
        answers.push(store.history_last("d", "t", 100).unwrap());
        answers
    };
    let as_rows = read(&store);
    seal_all(&store);
    let blocks = store.history_tails().unwrap();
    assert!(
        blocks.is_empty(),
        "every row closed into blocks: {blocks:?}"
    );
    let as_blocks = read(&store);
    assert_same_answers(&as_rows, &as_blocks);
}

#[test]
fn a_late_point_goes_after_the_points_the_blocks_hold_at_its_time() {
    let (_dir, store) = store();
    store
        .append_history(&[w(T0, json!(1)), w(T0, json!(2)), w(T0 + 1000, json!(3))])
        .unwrap();
    seal_all(&store);
    store
        .append_history(&[w(T0, json!(4)), w(T0 + 500, json!(5)), w(T0, json!(6))])
        .unwrap();
    let values: Vec<Value> = store
        .history_range("d", "t", T0, T0 + 2000, None)
        .unwrap()
        .into_iter()
        .map(|p| p.value)
        .collect();
    assert_eq!(values, [1, 2, 4, 6, 5, 3].map(|n| json!(n)));
    seal_all(&store);
    let again: Vec<Value> = store
        .history_range("d", "t", T0, T0 + 2000, None)
        .unwrap()
        .into_iter()
        .map(|p| p.value)
        .collect();
    assert_eq!(
        again, values,
        "the same once the late points are in a block too"
    );
    assert_eq!(
        store
            .history_buckets("d", "t", T0, T0 + 1000, 1000, Aggregation::Last)
            .unwrap()[0]
            .value,
        json!(5)
    );
}

#[test]
fn late_points_of_one_fold_across_several_blocks_follow_what_each_block_holds() {
    let (_dir, store) = store();
    // Two blocks, each holding two points at one time (seq 0 and 1).
    store
        .append_history(&[w(T0, json!(1)), w(T0, json!(2))])
        .unwrap();
    seal_all(&store);
    let later = T0 + 60_000;
    store
        .append_history(&[
            w(later, json!(3)),
            w(later, json!(4)),
            w(later + 1, json!(5)),
        ])
        .unwrap();
    seal_all(&store);
    // One fold: late points at both blocks' times (twice at one), at a time no block holds,
    // and a new point.
    store
        .append_history(&[
            w(later, json!(6)),
            w(T0, json!(7)),
            w(T0 + 30_000, json!(8)),
            w(later, json!(9)),
            w(later + 2, json!(10)),
        ])
        .unwrap();
    let read = |store: &Store| -> Vec<(i64, Value)> {
        store
            .history_range("d", "t", T0, later + 10, None)
            .unwrap()
            .into_iter()
            .map(|p| (p.ts_ms, p.value))
            .collect()
    };
    let expected: Vec<(i64, Value)> = [
        (T0, 1),
        (T0, 2),
        (T0, 7),
        (T0 + 30_000, 8),
        (later, 3),
        (later, 4),
        (later, 6),
        (later, 9),
        (later + 1, 5),
        (later + 2, 10),
    ]
    .into_iter()
    .map(|(ts, n)| (ts, json!(n)))
    .collect();
    assert_eq!(read(&store), expected);
    seal_all(&store);
    assert_eq!(
        read(&store),
        expected,
        "the same once they are in blocks too"
    );
}

#[test]
fn retention_drops_whole_blocks_and_trims_the_one_the_cut_falls_in() {
    let (_dir, store) = store();
    let points = series();
    store.append_history(&points).unwrap();
    seal_all(&store);
    let cut = T0 + 3_600_000 + 1_234;
    let before = points.iter().filter(|p| p.ts_ms < cut).count() as u64;
    assert_eq!(
        store
            .history_delete_before(Some("d"), Some("t"), cut)
            .unwrap(),
        before
    );
    let left = store
        .history_range("d", "t", T0 - 1, T0 + 100_000_000, None)
        .unwrap();
    assert!(before > 0 && left.len() > 1000);
    assert_eq!(left.len(), points.len() - before as usize);
    assert!(left.iter().all(|p| p.ts_ms >= cut));
    assert_eq!(
        left[0].ts_ms,
        points
            .iter()
            .map(|p| p.ts_ms)
            .filter(|t| *t >= cut)
            .min()
            .unwrap()
    );
}

/// Blocks per UTC day of the series `topic`, oldest day first.
/// Every point of `t` reads back as `writes` wrote it, in order.
fn assert_reads_back(store: &Store, writes: &[HistoryWrite]) {
    let back = store.history_range("d", "t", T0, i64::MAX, None).unwrap();
    assert_eq!(back.len(), writes.len());
    assert!(back
        .iter()
        .zip(writes)
        .all(|(p, w)| p.ts_ms == w.ts_ms && p.value == w.value));
}

fn blocks_by_day(dir: &tempfile::TempDir, topic: &str) -> Vec<(i64, i64)> {
    let conn = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT b.start_ts / 86400000, count(*) FROM hist_blocks b \
             JOIN hist_series s ON s.id = b.series WHERE s.topic = ?1 GROUP BY 1 ORDER BY 1",
        )
        .unwrap();
    let rows = stmt
        .query_map([topic], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn closed_days_merge_into_one_block_and_read_the_same() {
    const DAY: i64 = 86_400_000;
    let (dir, store) = store();
    // Three days at a point every 8 s (10,800 a day: three blocks' worth), then a little of a
    // fourth day; a string now and then, so pages hold text and numbers.
    let writes: Vec<HistoryWrite> = (0..3 * 10_800 + 100i64)
        .map(|i| {
            let value = if i % 1001 == 0 {
                json!("text")
            } else {
                json!((i * 7919 % 1000) as f64 / 10.0)
            };
            w(T0 + i * 8_000, value)
        })
        .collect();
    store.append_history(&writes).unwrap();
    let end = T0 + 4 * DAY;
    let read = |store: &Store| {
        let mut answers = vec![store.history_range("d", "t", T0, end, None).unwrap()];
        for (start, stop, bucket) in [
            (T0, end, 3_600_000),
            (T0 + 1_234_567, T0 + 2 * DAY + 7, 7_777_777),
            (T0 - 5, end, DAY),
        ] {
            for agg in Aggregation::ALL {
                answers.push(
                    store
                        .history_buckets("d", "t", start, stop, bucket, agg)
                        .unwrap(),
                );
            }
        }
        answers.push(
            store
                .history_range("d", "t", T0 + DAY + 5_000, T0 + DAY + 9_000_000, Some(500))
                .unwrap(),
        );
        answers.push(store.history_last("d", "t", 50).unwrap());
        answers
    };
    let as_rows = read(&store);
    seal_all(&store);
    let day0 = T0 / DAY;
    assert_eq!(
        blocks_by_day(&dir, "t"),
        [(day0, 1), (day0 + 1, 1), (day0 + 2, 1), (day0 + 3, 1)],
        "each closed day is one block"
    );
    let as_blocks = read(&store);
    assert_same_answers(&as_rows, &as_blocks);
    // A late point into a merged day, at a time it holds: after its points there, merged in.
    let at = T0 + DAY + 8_000;
    store.append_history(&[w(at, json!(-1.5))]).unwrap();
    seal_all(&store);
    assert_eq!(blocks_by_day(&dir, "t")[1], (day0 + 1, 1));
    let there: Vec<Value> = store
        .history_range("d", "t", at, at + 1, None)
        .unwrap()
        .into_iter()
        .map(|p| p.value)
        .collect();
    assert_eq!(there.len(), 2);
    assert_eq!(there[1], json!(-1.5));
    assert_eq!(
        store.history_range("d", "t", T0, end, None).unwrap().len(),
        writes.len() + 1
    );
}

#[test]
fn a_day_with_hot_rows_left_is_not_merged_until_they_close() {
    let (dir, store) = store();
    let writes: Vec<HistoryWrite> = (0..10_000i64)
        .map(|i| w(T0 + i * 1000, json!(i as f64 / 4.0)))
        .collect();
    store.append_history(&writes).unwrap();
    store.seal_history("d", "t", MAX_POINTS).unwrap();
    store.seal_history("d", "t", MAX_POINTS).unwrap();
    let day0 = T0 / 86_400_000;
    assert_eq!(
        blocks_by_day(&dir, "t"),
        [(day0, 2)],
        "hot rows left that day"
    );
    seal_all(&store);
    assert_eq!(blocks_by_day(&dir, "t"), [(day0, 1)]);
    assert_reads_back(&store, &writes);
}

/// A fast tag's day is merged a merged block's worth at a time while it is still open, not all
/// at its end; a merged day is listed for merging again only when two consecutive blocks
/// overlap or fit in one together.
#[test]
fn a_fast_tags_day_merges_as_it_is_sealed_and_is_listed_again_only_when_mergeable() {
    let (dir, store) = store();
    let writes: Vec<HistoryWrite> = (0..140_000i64)
        .map(|i| w(T0 + i * 10, json!(i as f64 / 4.0)))
        .collect();
    store.append_history(&writes).unwrap();
    for _ in 0..33 {
        store.seal_history("d", "t", MAX_POINTS).unwrap();
    }
    let day0 = T0 / 86_400_000;
    assert_eq!(
        blocks_by_day(&dir, "t"),
        [(day0, 2)],
        "32 blocks merged into one, the 33rd left for the next"
    );
    seal_all(&store);
    assert_eq!(blocks_by_day(&dir, "t"), [(day0, 2)]);
    assert_reads_back(&store, &writes);
    assert!(store.history_days_to_merge().unwrap().is_empty());

    // Moving the second block's first point (its summary only) against the first's last.
    let conn = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
    let (end, last_seq): (i64, i64) = conn
        .query_row(
            "SELECT end_ts, last_seq FROM hist_blocks ORDER BY start_ts LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let listed_with_second_at = |start_ts: i64, first_seq: i64| {
        conn.execute(
            "UPDATE hist_blocks SET start_ts = ?1, first_seq = ?2 \
             WHERE start_ts = (SELECT max(start_ts) FROM hist_blocks)",
            [start_ts, first_seq],
        )
        .unwrap();
        store.history_days_to_merge().unwrap().len()
    };
    assert_eq!(listed_with_second_at(end, last_seq + 1), 0, "just after");
    assert_eq!(listed_with_second_at(end, last_seq), 1, "at its last point");
    assert_eq!(listed_with_second_at(end - 1, last_seq + 1), 1, "before it");
}

/// Days left with several blocks (by a version before merging, or a crash between sealing and
/// merging) are listed at start and merged by the sealer in the background.
#[test]
fn days_left_unmerged_are_merged_after_a_start() {
    let (dir, store) = store();
    let writes: Vec<HistoryWrite> = (0..10_000i64)
        .map(|i| w(T0 + i * 1000, json!(i as f64 / 8.0)))
        .collect();
    store.append_history(&writes).unwrap();
    store.seal_history("d", "t", MAX_POINTS).unwrap();
    store.seal_history("d", "t", MAX_POINTS).unwrap();
    // The rest of the day's rows gone, as if the day had ended there: two blocks, not merged.
    let conn = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
    conn.execute("DELETE FROM hist_points", []).unwrap();
    let day0 = T0 / 86_400_000;
    assert_eq!(blocks_by_day(&dir, "t"), [(day0, 2)]);
    let listed = store.history_days_to_merge().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].topic.as_str(), listed[0].day_ms), ("t", T0));

    let mut sealer = super::sealer::Sealer::new(std::time::Duration::from_secs(3600));
    sealer.load(&store);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while blocks_by_day(&dir, "t") != [(day0, 1)] {
        assert!(
            std::time::Instant::now() < deadline,
            "the day was not merged"
        );
        sealer.seal_some(&store, 8).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(store.history_days_to_merge().unwrap().is_empty());
    assert_reads_back(&store, &writes[..2 * MAX_POINTS]);
}
