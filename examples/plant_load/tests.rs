//! Unit and property tests of the tool's own logic: how the points are cut over connections
//! and written for each system, the chart's bucket, the percentile, and the footprint of a
//! real SQLite database. (The systems themselves are exercised by bench/historian.sh.)

use crate::charts::bucket_ms;
use crate::flags::Flags;
use crate::footprint::Db;
use crate::references::influx_line;
use crate::svc_side::{messages, plan_shares, span};
use crate::{as_number, percentile, Points, DEFAULT_START_MS};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn points(args: &[&str]) -> Points {
    let flags = Flags::parse("test", "test", args.iter().map(|a| a.to_string()));
    Points::from_flags(&flags)
}

/// Every message of every connection, parsed: topic → [(timestamp, value)] in sending order
/// per connection, concatenated.
fn sent(
    points: &Points,
    publishers: usize,
    split: bool,
) -> BTreeMap<String, Vec<Vec<(i64, Value)>>> {
    let mut by_topic: BTreeMap<String, Vec<Vec<(i64, Value)>>> = BTreeMap::new();
    for share in plan_shares(&points.series, publishers, split) {
        let mut per_topic: BTreeMap<String, Vec<(i64, Value)>> = BTreeMap::new();
        for (topic, payload) in messages(points, share) {
            let payload: Value = serde_json::from_str(&payload).expect("JSON payload");
            let ts = payload["timestamp"].as_i64().expect("a timestamp in ms");
            per_topic
                .entry(topic)
                .or_default()
                .push((ts, payload["value"].clone()));
        }
        for (topic, list) in per_topic {
            by_topic.entry(topic).or_default().push(list);
        }
    }
    by_topic
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Whatever the connections and the split, every point of every series is published once,
    /// with its own value and timestamp, and each connection sends its part in time order.
    #[test]
    fn every_point_once_in_order(per_signal in 1u64..300, publishers in 1usize..9, split: bool,
                                 set in prop::sample::select(vec!["all", "numeric", "walk", "index"])) {
        let per = per_signal.to_string();
        let points = points(&["--set", set, "--per-signal", &per, "--walks", "2"]);
        let sent = sent(&points, publishers, split);
        prop_assert_eq!(sent.len(), points.series.len());
        for series in &points.series {
            let parts = &sent[&series.topic];
            for part in parts {
                prop_assert!(part.windows(2).all(|w| w[0].0 < w[1].0), "a connection's part is out of order");
            }
            let mut all: Vec<(i64, Value)> = parts.iter().flatten().cloned().collect();
            all.sort_by_key(|(ts, _)| *ts);
            let expected: Vec<(i64, Value)> = (0..per_signal)
                .zip(series.values())
                .map(|(n, v)| (points.ts(n), v))
                .collect();
            prop_assert_eq!(all, expected);
        }
    }
}

#[test]
fn a_split_series_spreads_over_the_connections() {
    let points = points(&["--set", "walk", "--per-signal", "100"]);
    let shares = plan_shares(&points.series, 4, true);
    assert!(
        shares.iter().all(|s| s.len() == 1),
        "one share per connection"
    );
    let unsplit = plan_shares(&points.series, 4, false);
    assert_eq!(unsplit.iter().filter(|s| !s.is_empty()).count(), 1);
}

#[test]
fn the_sets_and_their_names() {
    let all = points(&["--set", "all", "--prefix", "plant"]);
    assert_eq!(all.series.len(), 10);
    assert_eq!(all.series[0].topic, "plant/walk-0");
    assert_eq!(all.series[0].metric, "plant_walk_0");
    assert_eq!(points(&["--set", "numeric"]).series.len(), 9);
    let state = points(&["--set", "state"]);
    assert_eq!(state.series.len(), 1);
    assert!(!state.series[0].numeric());
    let index = points(&[
        "--set",
        "index",
        "--prefix",
        "bench_query",
        "--per-signal",
        "3",
    ]);
    assert_eq!(index.series[0].metric, "bench_query");
    assert_eq!(
        index.series[0].values().take(3).collect::<Vec<_>>(),
        [json!(0), json!(1), json!(2)]
    );
    assert_eq!(index.window(), (DEFAULT_START_MS, DEFAULT_START_MS + 3_000));
}

#[test]
fn numeric_only_systems_get_booleans_as_0_and_1() {
    assert_eq!(as_number(&json!(true)), Some(1.0));
    assert_eq!(as_number(&json!(false)), Some(0.0));
    assert_eq!(as_number(&json!(21.37)), Some(21.37));
    assert_eq!(as_number(&json!(12)), Some(12.0));
    assert_eq!(as_number(&json!("running")), None);
}

#[test]
fn influx_lines_keep_the_published_type() {
    let series = &points(&["--set", "walk"]).series[0];
    let line = |v: Value| influx_line(series, &v, 1_000);
    assert_eq!(line(json!(21.37)), "plant_walk_0 value=21.37 1000\n");
    assert_eq!(line(json!(12)), "plant_walk_0 value=12i 1000\n");
    assert_eq!(line(json!(true)), "plant_walk_0 value=true 1000\n");
    assert_eq!(
        line(json!("say \"hi\"")),
        "plant_walk_0 value=\"say \\\"hi\\\"\" 1000\n"
    );
}

#[test]
fn a_year_in_500_buckets_of_whole_seconds() {
    let year = points(&["--set", "walk", "--per-signal", "31536000"]);
    assert_eq!(bucket_ms(&year, 500), 63_072_000);
    let odd = points(&["--set", "walk", "--per-signal", "1001"]);
    assert_eq!(
        bucket_ms(&odd, 500),
        3_000,
        "2.002 s rounds up to whole seconds"
    );
}

#[test]
fn percentile_by_nearest_rank() {
    let samples: Vec<f64> = (1..=30).rev().map(f64::from).collect();
    assert_eq!(percentile(&samples, 50.0), 15.0);
    assert_eq!(
        percentile(&samples, 99.0),
        30.0,
        "below 100 samples p99 is the slowest"
    );
    let many: Vec<f64> = (1..=200).map(f64::from).collect();
    assert_eq!(percentile(&many, 99.0), 198.0);
    assert_eq!(percentile(&[7.0], 50.0), 7.0);
}

#[test]
fn a_signal_span_is_its_range_over_the_run() {
    let walk = &points(&["--set", "walk"]).series[0];
    let s = span(walk, 5_000);
    assert!(s > 0.0 && s <= 10.0, "a walk stays within 20–30: {s}");
    let state = &points(&["--set", "state"]).series[0];
    assert_eq!(span(state, 100), 0.0, "text has no span");
}

#[test]
fn the_footprint_counts_every_hist_table_and_its_indexes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("svc.db");
    let conn = rusqlite::Connection::open(&path).expect("create");
    conn.execute_batch(
        "CREATE TABLE hist_series (id INTEGER PRIMARY KEY, domain TEXT, topic TEXT, UNIQUE (domain, topic));
         CREATE TABLE hist_points (series INTEGER, ts INTEGER, seq INTEGER, num REAL, value TEXT,
                                   PRIMARY KEY (series, ts, seq)) WITHOUT ROWID;
         CREATE TABLE other (x BLOB);
         INSERT INTO other VALUES (zeroblob(100000));
         INSERT INTO hist_series VALUES (1, 'd', 't');
         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
         INSERT INTO hist_points SELECT 1, i * 1000, 0, i, i FROM n;",
    )
    .expect("fill");
    let look = Db::open(path.to_str().unwrap())
        .expect("open")
        .look()
        .expect("look");
    assert_eq!(look.hot_rows, 10_000);
    assert_eq!(
        look.tables.keys().collect::<Vec<_>>(),
        ["hist_points", "hist_series"],
        "only hist_* tables, indexes counted in their table"
    );
    let page: u64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    let pages: u64 = conn
        .query_row(
            "SELECT count(*) FROM dbstat WHERE name IN ('hist_points', 'hist_series') \
             OR name LIKE 'sqlite\\_autoindex\\_hist\\_%' ESCAPE '\\'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(look.bytes(), pages * page);
    assert!(
        look.tables["hist_series"] >= 2 * page,
        "the table and its unique index"
    );
}
