//! Historian storage on a temporary SQLite file, through the store's public API: ordering,
//! limits and half-open windows, equal timestamps, domain separation, every aggregation against
//! values computed here, last-N, retention, topic listing and the CSV export end to end.

use super::export::Buckets;
use super::*;
use crate::store::HistoryWrite;
use serde_json::{json, Value};

const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    // Opening an existing database again applies its schema again: that must be idempotent.
    drop(Store::open(&dir.path().join("t.db")).unwrap());
    let store = Store::open(&dir.path().join("t.db")).unwrap();
    (dir, store)
}

fn w(domain: &str, topic: &str, ts_ms: i64, value: Value) -> HistoryWrite {
    HistoryWrite {
        domain: domain.into(),
        topic: topic.into(),
        ts_ms,
        value,
        quality: crate::store::Quality::GOOD,
    }
}

fn p(ts_ms: i64, value: Value) -> HistoryPoint {
    HistoryPoint::good(ts_ms, value)
}

#[test]
fn range_is_ordered_limited_and_half_open() {
    let (_dir, store) = store();
    // Written out of order and over two batches.
    let batch: Vec<_> = [3, 0, 2, 4, 1]
        .iter()
        .map(|&i| w("d", "t", T0 + i * 1000, json!(i)))
        .collect();
    assert_eq!(store.append_history(&batch[..2]).unwrap(), 2);
    assert_eq!(store.append_history(&batch[2..]).unwrap(), 3);
    assert_eq!(store.append_history(&[]).unwrap(), 0);

    let all = store.history_range("d", "t", T0, T0 + 5000, None).unwrap();
    let expected: Vec<_> = (0..5).map(|i| p(T0 + i * 1000, json!(i))).collect();
    assert_eq!(all, expected);
    // start inclusive, end exclusive
    let mid = store
        .history_range("d", "t", T0 + 1000, T0 + 3000, None)
        .unwrap();
    assert_eq!(mid, expected[1..3]);
    let limited = store
        .history_range("d", "t", T0, T0 + 5000, Some(2))
        .unwrap();
    assert_eq!(limited, expected[..2]);
    assert!(store
        .history_range("d", "t", T0 + 5000, T0 + 9000, None)
        .unwrap()
        .is_empty());
    assert!(store
        .history_range("d", "nope", T0, T0 + 5000, None)
        .unwrap()
        .is_empty());
}

#[test]
fn values_keep_their_json() {
    let (_dir, store) = store();
    let values = [
        json!(1),
        json!(2.5),
        json!("text"),
        json!(true),
        json!({"a": [1, null]}),
        Value::Null,
    ];
    let batch: Vec<_> = values
        .iter()
        .enumerate()
        .map(|(i, v)| w("d", "t", T0 + i as i64, v.clone()))
        .collect();
    store.append_history(&batch).unwrap();
    let got: Vec<_> = store
        .history_range("d", "t", T0, T0 + 10, None)
        .unwrap()
        .into_iter()
        .map(|p| p.value)
        .collect();
    assert_eq!(got, values);
}

#[test]
fn equal_timestamps_are_all_kept_in_arrival_order() {
    let (_dir, store) = store();
    store
        .append_history(&[w("d", "t", T0, json!("a")), w("d", "t", T0, json!("b"))])
        .unwrap();
    store
        .append_history(&[w("d", "t", T0, json!("c")), w("d", "t", T0 + 1, json!("d"))])
        .unwrap();
    let got = store.history_range("d", "t", T0, T0 + 2, None).unwrap();
    assert_eq!(
        got,
        vec![
            p(T0, json!("a")),
            p(T0, json!("b")),
            p(T0, json!("c")),
            p(T0 + 1, json!("d"))
        ]
    );
    let last = store.history_last("d", "t", 3).unwrap();
    assert_eq!(
        last,
        vec![p(T0 + 1, json!("d")), p(T0, json!("c")), p(T0, json!("b"))]
    );
}

#[test]
fn a_burst_within_one_millisecond_keeps_every_value_of_each_series_in_order() {
    let (_dir, store) = store();
    // Two series interleaved, and one going back to an earlier millisecond within the batch.
    store
        .append_history(&[
            w("d", "a", T0, json!("a1")),
            w("d", "b", T0, json!("b1")),
            w("d", "a", T0, json!("a2")),
            w("d", "a", T0 + 1, json!("a3")),
            w("d", "b", T0, json!("b2")),
            w("d", "a", T0, json!("a4")),
            w("d", "a", T0, json!("a5")),
        ])
        .unwrap();
    store
        .append_history(&[w("d", "a", T0, json!("a6")), w("d", "a", T0, json!("a7"))])
        .unwrap();
    let values = |topic| -> Vec<_> {
        store
            .history_range("d", topic, T0, T0 + 2, None)
            .unwrap()
            .into_iter()
            .map(|p| (p.ts_ms - T0, p.value))
            .collect()
    };
    let at = |ms, v: &str| (ms, json!(v));
    assert_eq!(
        values("a"),
        vec![
            at(0, "a1"),
            at(0, "a2"),
            at(0, "a4"),
            at(0, "a5"),
            at(0, "a6"),
            at(0, "a7"),
            at(1, "a3")
        ]
    );
    assert_eq!(values("b"), vec![at(0, "b1"), at(0, "b2")]);
}

#[test]
fn domains_with_the_same_topic_are_apart() {
    let (_dir, store) = store();
    store
        .append_history(&[
            w("plant_a", "line/temp", T0, json!(1)),
            w("plant_b", "line/temp", T0, json!(2)),
            w("plant_a", "line/other", T0, json!(3)),
        ])
        .unwrap();
    let a = store
        .history_range("plant_a", "line/temp", T0, T0 + 1, None)
        .unwrap();
    let b = store
        .history_range("plant_b", "line/temp", T0, T0 + 1, None)
        .unwrap();
    assert_eq!((a, b), (vec![p(T0, json!(1))], vec![p(T0, json!(2))]));
    assert_eq!(
        store.history_topics("plant_a").unwrap(),
        vec!["line/other", "line/temp"]
    );
    assert_eq!(store.history_topics("plant_b").unwrap(), vec!["line/temp"]);
    assert!(store.history_topics("plant_c").unwrap().is_empty());
}

#[test]
fn last_n_newest_first() {
    let (_dir, store) = store();
    let batch: Vec<_> = (0..10).map(|i| w("d", "t", T0 + i, json!(i))).collect();
    store.append_history(&batch).unwrap();
    let last = store.history_last("d", "t", 3).unwrap();
    assert_eq!(
        last,
        vec![
            p(T0 + 9, json!(9)),
            p(T0 + 8, json!(8)),
            p(T0 + 7, json!(7))
        ]
    );
    assert_eq!(store.history_last("d", "t", 100).unwrap().len(), 10);
    assert!(store.history_last("d", "missing", 3).unwrap().is_empty());
}

#[test]
fn delete_before_by_domain_topic_or_all() {
    let (_dir, store) = store();
    let mut batch = Vec::new();
    for (domain, topic) in [("a", "x"), ("a", "y"), ("b", "x")] {
        batch.extend((0..4).map(|i| w(domain, topic, T0 + i * 10, json!(i))));
    }
    store.append_history(&batch).unwrap();
    let count = |d: &str, t: &str| store.history_range(d, t, 0, i64::MAX, None).unwrap().len();

    assert_eq!(
        store
            .history_delete_before(Some("a"), Some("x"), T0 + 10)
            .unwrap(),
        1
    );
    assert_eq!(
        (count("a", "x"), count("a", "y"), count("b", "x")),
        (3, 4, 4)
    );
    assert_eq!(
        store
            .history_delete_before(Some("a"), None, T0 + 20)
            .unwrap(),
        3
    );
    assert_eq!(
        (count("a", "x"), count("a", "y"), count("b", "x")),
        (2, 2, 4)
    );
    assert_eq!(
        store
            .history_delete_before(None, Some("x"), T0 + 30)
            .unwrap(),
        4
    );
    assert_eq!(
        (count("a", "x"), count("a", "y"), count("b", "x")),
        (1, 2, 1)
    );
    assert_eq!(
        store.history_delete_before(None, None, T0 + 100).unwrap(),
        4
    );
    assert!(store.history_topics("a").unwrap().is_empty());
    // A series emptied by retention comes back on the next write.
    store.append_history(&[w("a", "x", T0, json!(9))]).unwrap();
    assert_eq!(store.history_topics("a").unwrap(), vec!["x"]);
}

/// The value written at step `i` of the aggregation fixture: mostly numbers, some bools,
/// strings and objects; the bucket starting at `T0 + 7 + 3*5000` holds only strings.
fn fixture_value(i: i64) -> Value {
    let ts = T0 + 7 + i * 700;
    if (15_000..20_000).contains(&(ts - T0 - 7)) {
        return json!(format!("s{i}"));
    }
    match i % 7 {
        3 => json!(i % 2 == 0),
        5 => json!({"n": i}),
        _ => json!((i * 37 % 11) as f64 * 1.5 - 4.0),
    }
}

fn numeric(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// What a bucket should hold, computed naively from the fixture.
fn expected_bucket(values: &[Value], agg: Aggregation) -> Value {
    let mut nums: Vec<f64> = values.iter().filter_map(numeric).collect();
    let num = |x: Option<f64>| x.map_or(Value::Null, |x| json!(x));
    match agg {
        Aggregation::Count => json!(values.len()),
        Aggregation::First => values[0].clone(),
        Aggregation::Last => values[values.len() - 1].clone(),
        Aggregation::Sum => num((!nums.is_empty()).then(|| nums.iter().sum())),
        Aggregation::Mean => {
            num((!nums.is_empty()).then(|| nums.iter().sum::<f64>() / nums.len() as f64))
        }
        Aggregation::Min => num(nums.iter().copied().reduce(f64::min)),
        Aggregation::Max => num(nums.iter().copied().reduce(f64::max)),
        Aggregation::Median => {
            nums.sort_by(f64::total_cmp);
            let n = nums.len();
            num((n > 0).then(|| {
                if n % 2 == 1 {
                    nums[n / 2]
                } else {
                    (nums[n / 2 - 1] + nums[n / 2]) / 2.0
                }
            }))
        }
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() < 1e-9,
        _ => a == b,
    }
}

#[test]
fn buckets_for_every_aggregation() {
    let (_dir, store) = store();
    // 60 points every 700 ms from T0+7; a gap (no points) in [T0+7+25000, T0+7+30000).
    let start = T0 + 7;
    let bucket = 5_000;
    let points: Vec<(i64, Value)> = (0..60)
        .map(|i| (start + i * 700, fixture_value(i)))
        .filter(|(ts, _)| !(25_000..30_000).contains(&(ts - start)))
        .collect();
    let mut batch: Vec<_> = points
        .iter()
        .map(|(ts, v)| w("d", "t", *ts, v.clone()))
        .collect();
    batch.push(w("d", "t", start - 1, json!(1000))); // before the window
    batch.push(w("d", "t", start + 40_000, json!(1000))); // at the (exclusive) end
    batch.push(w("d", "other", start, json!(1000))); // another series
    store.append_history(&batch).unwrap();

    let mut by_bucket: Vec<(i64, Vec<Value>)> = Vec::new();
    for (ts, v) in &points {
        let bucket_start = start + (ts - start) / bucket * bucket;
        if *ts >= start + 40_000 {
            continue;
        }
        match by_bucket.last_mut() {
            Some((b, values)) if *b == bucket_start => values.push(v.clone()),
            _ => by_bucket.push((bucket_start, vec![v.clone()])),
        }
    }
    assert_eq!(by_bucket.len(), 7, "the gap bucket is skipped");

    for agg in Aggregation::ALL {
        let got = store
            .history_buckets("d", "t", start, start + 40_000, bucket, agg)
            .unwrap();
        let want: Vec<_> = by_bucket
            .iter()
            .map(|(b, vs)| p(*b, expected_bucket(vs, agg)))
            .collect();
        assert_eq!(got.len(), want.len(), "{agg}");
        for (g, e) in got.iter().zip(&want) {
            assert_eq!(g.ts_ms, e.ts_ms, "{agg}");
            assert!(
                same(&g.value, &e.value),
                "{agg} at {}: got {} want {}",
                g.ts_ms,
                g.value,
                e.value
            );
        }
        if !matches!(
            agg,
            Aggregation::Count | Aggregation::First | Aggregation::Last
        ) {
            assert_eq!(got[3].value, Value::Null, "{agg}: string-only bucket");
        }
    }
    assert!(store
        .history_buckets(
            "d",
            "missing",
            start,
            start + 40_000,
            bucket,
            Aggregation::Mean
        )
        .unwrap()
        .is_empty());
    assert!(store
        .history_buckets("d", "t", start, start + 1, 0, Aggregation::Mean)
        .is_err());
}

#[test]
fn bucket_values_of_whole_numbers_are_integers() {
    let (_dir, store) = store();
    store
        .append_history(&[
            w("d", "t", T0, json!(2)),
            w("d", "t", T0 + 1, json!(4)),
            w("d", "t", T0 + 2, json!(true)),
        ])
        .unwrap();
    let sum = store
        .history_buckets("d", "t", T0, T0 + 10, 10, Aggregation::Sum)
        .unwrap();
    assert_eq!(sum, vec![p(T0, json!(7))]);
    let mean = store
        .history_buckets("d", "t", T0, T0 + 10, 10, Aggregation::Mean)
        .unwrap();
    assert_eq!(mean, vec![p(T0, json!(7.0 / 3.0))]);
    let median = store
        .history_buckets("d", "t", T0, T0 + 10, 10, Aggregation::Median)
        .unwrap();
    assert_eq!(median, vec![p(T0, json!(2))]);
}

#[test]
fn run_query_dispatches_and_limits_buckets() {
    let (_dir, store) = store();
    let batch: Vec<_> = (0..100)
        .map(|i| w("d", "t", T0 + i * 100, json!(i)))
        .collect();
    store.append_history(&batch).unwrap();
    let raw = Window {
        start_ms: T0,
        end_ms: T0 + 10_000,
        limit: Some(5),
        bucket: None,
    };
    assert_eq!(run_query(&store, "d", "t", &raw).unwrap().len(), 5);
    let bucketed = Window {
        bucket: Some((1_000, Aggregation::Count)),
        ..raw
    };
    assert_eq!(
        run_query(&store, "d", "t", &bucketed).unwrap(),
        (0..5)
            .map(|k| p(T0 + k * 1000, json!(10)))
            .collect::<Vec<_>>()
    );
}

fn read_gz_csv(bytes: &[u8]) -> Vec<Vec<String>> {
    let text = std::io::read_to_string(flate2::read::GzDecoder::new(bytes)).unwrap();
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

#[test]
fn export_from_the_store() {
    let (_dir, store) = store();
    store
        .append_history(&[
            w("d", "a/temp", T0, json!(10)),
            w("d", "a/temp", T0 + 30_000, json!(20)),
            w("d", "a/temp", T0 + 60_000, json!(40)),
            w("d", "a/state", T0 + 30_000, json!("run")),
            w("d", "a/state", T0 + 120_000, json!("stop")), // outside the window
            w("other", "a/temp", T0, json!(99)),
        ])
        .unwrap();
    let req: ExportRequest = serde_json::from_value(json!({
        "topics": ["a/temp", "a/state"],
        "startDate": "2026-01-01T00:00:00Z",
        "endDate": "2026-01-01T00:02:00Z",
        "mapping": {"a/temp": "Temperature"},
    }))
    .unwrap();
    let plan = resolve_export(&req).unwrap();
    let rows = read_gz_csv(&export_csv_gz(&store, "d", &plan).unwrap());
    assert_eq!(
        rows,
        vec![
            vec!["Timestamp", "Temperature", "a/state"],
            vec!["2026-01-01T00:00:00.000Z", "10", ""],
            vec!["2026-01-01T00:00:30.000Z", "20", "run"],
            vec!["2026-01-01T00:01:00.000Z", "40", ""],
        ]
    );

    let sampled = ExportPlan {
        bucket: Some((Buckets::Every(60_000), Aggregation::Mean)),
        ..plan.clone()
    };
    let rows = read_gz_csv(&export_csv_gz(&store, "d", &sampled).unwrap());
    assert_eq!(
        rows,
        vec![
            vec!["Timestamp", "Temperature", "a/state"],
            vec!["2026-01-01T00:00:00.000Z", "15", ""],
            vec!["2026-01-01T00:01:00.000Z", "40", ""],
        ]
    );
    let last = ExportPlan {
        bucket: Some((Buckets::Every(60_000), Aggregation::Last)),
        ..plan
    };
    let rows = read_gz_csv(&export_csv_gz(&store, "d", &last).unwrap());
    assert_eq!(rows[1], vec!["2026-01-01T00:00:00.000Z", "20", "run"]);
}

#[test]
fn buckets_between_edges_of_unequal_length() {
    let (_dir, store) = store();
    let hour = 3_600_000;
    store
        .append_history(&[
            w("d", "t", T0 - 1, json!(1000)), // before the window
            w("d", "t", T0 + hour, json!(1)),
            w("d", "t", T0 + 23 * hour - 1, json!(2)),
            w("d", "t", T0 + 23 * hour, json!(4)),
            w("d", "t", T0 + 30 * hour, json!(8)),
            w("d", "t", T0 + 48 * hour, json!(16)), // at the window end
        ])
        .unwrap();
    // A 23-hour bucket, a 25-hour one, and one the window does not reach.
    let edges = [T0 - hour, T0 + 23 * hour, T0 + 48 * hour, T0 + 72 * hour];
    let between = |agg| {
        store
            .history_buckets_between("d", "t", T0, T0 + 48 * hour, &edges, agg)
            .unwrap()
    };
    // Stamped with the edge even though the window starts an hour later.
    assert_eq!(
        between(Aggregation::Sum),
        [p(T0 - hour, json!(3)), p(T0 + 23 * hour, json!(12))]
    );
    assert_eq!(
        between(Aggregation::First),
        [p(T0 - hour, json!(1)), p(T0 + 23 * hour, json!(4))]
    );
    assert_eq!(
        between(Aggregation::Median),
        [p(T0 - hour, json!(1.5)), p(T0 + 23 * hour, json!(6))]
    );
    let none = store
        .history_buckets_between("d", "nope", T0, T0 + hour, &edges, Aggregation::Count)
        .unwrap();
    assert!(none.is_empty());
}

#[test]
fn export_in_a_time_zone() {
    let (_dir, store) = store();
    // 2026-03-28T23:30:00Z is 00:30 in Berlin on the 29th, the day that has 23 hours.
    let t = 1_774_740_600_000;
    store
        .append_history(&[
            w("d", "a/temp", t, json!(4)),
            w("d", "a/temp", t + 2 * 3_600_000, json!(8)),
        ])
        .unwrap();
    let req: AggregatedExportRequest = serde_json::from_value(json!({
        "topics": ["a/temp"],
        "startDate": "2026-03-29T00:00:00+01:00",
        "endDate": "2026-03-30T00:00:00+02:00",
        "timezone": "Europe/Berlin",
        "mapping": {"a/temp": "Temperature"},
    }))
    .unwrap();
    let plan = resolve_aggregated_export(&req).unwrap();
    let rows = read_gz_csv(&export_csv_gz(&store, "d", &plan).unwrap());
    assert_eq!(
        rows,
        vec![
            vec!["Timestamp", "Temperature"],
            vec!["2026-03-29T00:30:00.000+01:00", "4"],
            vec!["2026-03-29T03:30:00.000+02:00", "8"],
        ]
    );
}
