//! Historian blocks (issue 33): points closed from rows into compressed blocks read back exactly
//! (every kind of JSON value, -0.0, integers near ±2^63, equal timestamps in arrival order,
//! out-of-order and late points, series straddling block boundaries) through the window,
//! last-N and CSV export routes; a data dir written before blocks existed is converted at start
//! and reads back every point; a day left in several blocks is merged after a restart; and a
//! point's quality comes back from every read route. Servers run with
//! `--historian-seal-idle 1s` so blocks close within the test (but one that must keep rows hot).

use crate::common::*;
use flate2::read::GzDecoder;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

const DOMAIN: &str = "domains:plant";
/// 2026-01-01T00:00:00Z in epoch milliseconds.
const T0: i64 = 1_767_225_600_000;
const SEAL_FAST: [&str; 2] = ["--historian-seal-idle", "1s"];

fn iso(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn window(server: &Server, topic: &str, start_ms: i64, end_ms: i64) -> Vec<Value> {
    let body = json!({"topic": topic, "start_time": iso(start_ms), "end_time": iso(end_ms),
                      "limit": 100_000});
    let resp = server
        .admin_in(DOMAIN, Method::PATCH, "/svc/historian")
        .json(&body)
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK).as_array().unwrap().clone()
}

fn last(server: &Server, topic: &str, limit: u64) -> Vec<Value> {
    let resp = server
        .admin_in(DOMAIN, Method::PATCH, "/svc/historian/last")
        .json(&json!({"topic": topic, "limit": limit}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK).as_array().unwrap().clone()
}

/// One scalar from the store's database (the server's engine).
fn store_count(server: &Server, sql: &str) -> i64 {
    server
        .store_sql(sql, sql)
        .map_or(0, |text| text.trim().parse().unwrap_or(0))
}

/// Waits until every hot row of the historian is closed into blocks, and at least `blocks`.
fn wait_for_blocks(server: &Server, blocks: i64) {
    server.poll(
        Duration::from_secs(60),
        "hot rows closed into blocks",
        || {
            let hot = store_count(server, "SELECT count(*) FROM hist_points");
            let closed = store_count(server, "SELECT count(*) FROM hist_blocks");
            (hot == 0 && closed >= blocks).then_some(())
        },
    );
}

/// A value and its exact text: serde_json's equality says 0.0 == -0.0, the text does not.
fn same(a: &Value, b: &Value) -> bool {
    format!("{a}") == format!("{b}")
}

fn assert_points(what: &str, got: &[Value], want: &[(i64, Value)]) {
    assert_eq!(got.len(), want.len(), "{what}: number of points");
    for (i, (point, (ts, value))) in got.iter().zip(want).enumerate() {
        assert_eq!(
            point["timestamp"],
            json!(iso(*ts)),
            "{what}: point {i} time"
        );
        assert!(
            same(&point["value"], value),
            "{what}: point {i} is {} where {value} was stored",
            point["value"]
        );
        assert!(
            point.get("quality").is_none(),
            "{what}: point {i} is good: {point}"
        );
    }
}

#[test]
fn a_data_dir_from_before_blocks_is_converted_and_reads_back_every_point() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/historian-before-blocks");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture.join("expected.json")).expect("expected.json"),
    )
    .expect("expected.json is JSON");
    let server = Server::start_from(Some(&fixture.join("data")), &SEAL_FAST);
    // 6,000 points of one tag make two blocks at least.
    wait_for_blocks(&server, 3);
    let (start, end) = (T0 - 86_400_000, T0 + 365 * 86_400_000);
    for (topic, points) in expected.as_object().unwrap() {
        let want: Vec<(i64, Value)> = points
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let ts = chrono::DateTime::parse_from_rfc3339(p["timestamp"].as_str().unwrap())
                    .unwrap()
                    .timestamp_millis();
                (ts, p["value"].clone())
            })
            .collect();
        assert_points(topic, &window(&server, topic, start, end), &want);
    }
}

/// A random value of any kind a payload can carry.
fn random_value(rng: &mut StdRng) -> Value {
    match rng.gen_range(0..12) {
        0 => json!(-0.0),
        1 => json!(rng.gen_range(-1e6..1e6_f64)),
        2 => json!(f64::from_bits(
            rng.gen::<u64>() & !(0x7FF << 52) | (rng.gen_range(1..2046_u64) << 52)
        )),
        3 => json!(i64::MAX - rng.gen_range(0..3)),
        4 => json!(i64::MIN + rng.gen_range(0..3)),
        5 => json!(u64::MAX - rng.gen_range(0..3)),
        6 => json!(rng.gen_range(-1000..1000)),
        7 => json!(rng.gen::<bool>()),
        8 => json!(format!("state-{} é ✓", rng.gen_range(0..5))),
        9 => json!({"a": [rng.gen_range(0..9), "x", null], "b": {"c": rng.gen::<bool>()}}),
        10 => Value::Null,
        _ => json!((rng.gen_range(2000..3000) as f64) / 100.0),
    }
}

/// Publishes `(ts, value)` points at QoS 1 with their timestamps.
fn publish(mqtt: &mut Mqtt, topic: &str, points: &[(i64, Value)]) {
    for (ts, value) in points {
        let payload = json!({"value": value, "timestamp": ts}).to_string();
        assert_eq!(mqtt.publish(topic, payload, 1, false), "Success");
    }
}

/// The CSV export of one topic over a window: (timestamp text, cell) rows.
fn export(server: &Server, topic: &str, start_ms: i64, end_ms: i64) -> Vec<(String, String)> {
    let resp = server
        .admin_in(DOMAIN, Method::POST, "/svc/historian/export")
        .json(&json!({"topics": [topic], "startDate": iso(start_ms), "endDate": iso(end_ms)}))
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut csv_text = String::new();
    GzDecoder::new(&resp.bytes().unwrap()[..])
        .read_to_string(&mut csv_text)
        .unwrap();
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[0].to_string(), r[1].to_string())
        })
        .collect()
}

/// A value as the CSV export writes it.
fn csv_cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(_) | Value::Bool(_) => value.to_string(),
        other => other.to_string(),
    }
}

#[test]
fn random_series_read_back_identical_from_blocks_and_hot_rows() {
    let server = Server::start_with(&SEAL_FAST);
    server.create_domain("plant");
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "blocks-feed");
    const START: i64 = T0 - 1_800_000;
    for case in 0..3u64 {
        let mut rng = StdRng::seed_from_u64(case);
        let topic = format!("plant/random/{case}");
        server.create_tag(DOMAIN, &topic, true);
        // Mostly one a second, some sharing a timestamp, some out of order; more than one
        // block's worth, from half an hour before a UTC midnight, so the series straddles
        // block boundaries and pages, and two days' blocks are each merged into one.
        let n = rng.gen_range(5_000..9_000);
        let mut points: Vec<(i64, Value)> = Vec::with_capacity(n);
        for i in 0..n as i64 {
            let ts = match rng.gen_range(0..20) {
                0 => points.last().map_or(START, |p| p.0), // equal to the previous one
                1 => START + (i - rng.gen_range(0..50)).max(0) * 1000, // out of order
                _ => START + i * 1000,
            };
            points.push((ts, random_value(&mut rng)));
        }
        publish(&mut mqtt, &topic, &points);
        wait_for_blocks(&server, 2);
        // Late points, older than the newest block, some at timestamps the blocks hold.
        let late: Vec<(i64, Value)> = (0..40)
            .map(|_| {
                let ts = points[rng.gen_range(0..points.len())].0 + rng.gen_range(0..2) * 500;
                (ts, random_value(&mut rng))
            })
            .collect();
        publish(&mut mqtt, &topic, &late);
        points.extend(late);
        // Time order, equal timestamps in arrival order (a stable sort).
        let mut want = points.clone();
        want.sort_by_key(|p| p.0);
        let end = want.last().unwrap().0 + 1;
        server.poll(Duration::from_secs(20), "late points readable", || {
            (window(&server, &topic, START, end).len() == want.len()).then_some(())
        });
        assert_points(&topic, &window(&server, &topic, START, end), &want);
        // A window inside the series, cutting blocks.
        let (a, b) = (T0 + 1_234_500, T0 + 4_321_000);
        let inside: Vec<(i64, Value)> = want
            .iter()
            .filter(|p| (a..b).contains(&p.0))
            .cloned()
            .collect();
        assert_points("inner window", &window(&server, &topic, a, b), &inside);
        // The newest 100, newest first.
        let mut newest: Vec<(i64, Value)> = want.iter().rev().take(100).cloned().collect();
        assert_points("last 100", &last(&server, &topic, 100), &newest);
        newest.clear();
        // The CSV export: one row per timestamp, the last value at that time.
        let mut by_time: Vec<(String, String)> = Vec::new();
        for (ts, value) in &want {
            let row = (iso(*ts), csv_cell(value));
            match by_time.last_mut() {
                Some(prev) if prev.0 == row.0 => *prev = row,
                _ => by_time.push(row),
            }
        }
        assert_eq!(
            export(&server, &topic, START, end),
            by_time,
            "{topic}: CSV export"
        );
        // After everything closed into blocks once more, the same.
        wait_for_blocks(&server, 2);
        assert_points(
            "after closing again",
            &window(&server, &topic, START, end),
            &want,
        );
        // Each of the two days is one block once closed, late points merged in.
        let blocks = format!(
            "SELECT count(*) FROM hist_blocks b JOIN hist_series s ON s.id = b.series \
             WHERE s.topic = '{topic}'"
        );
        server.poll(Duration::from_secs(20), "each day merged", || {
            (store_count(&server, &blocks) == 2).then_some(())
        });
    }
}

#[test]
fn quality_reads_back_from_every_route_before_and_after_blocks() {
    let server = Server::start_with(&SEAL_FAST);
    server.create_domain("plant");
    let topic = "plant/line1/quality";
    server.create_tag(DOMAIN, topic, true);
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "quality-feed");
    let payloads = [
        json!({"value": 1.5, "timestamp": T0, "quality": "bad"}),
        json!({"value": 2.5, "timestamp": T0 + 1000, "quality": "uncertain"}),
        json!({"value": 3.5, "timestamp": T0 + 2000, "quality": 2_150_891_520_u32}),
        json!({"value": 4.5, "timestamp": T0 + 3000}),
        json!({"value": 5.5, "timestamp": T0 + 4000, "quality": "good"}),
    ];
    for payload in &payloads {
        assert_eq!(
            mqtt.publish(topic, payload.to_string(), 1, false),
            "Success"
        );
    }
    let want = json!([
        {"timestamp": iso(T0), "value": 1.5, "quality": "bad"},
        {"timestamp": iso(T0 + 1000), "value": 2.5, "quality": "uncertain"},
        {"timestamp": iso(T0 + 2000), "value": 3.5, "quality": "bad", "status": 2_150_891_520_u32},
        {"timestamp": iso(T0 + 3000), "value": 4.5},
        {"timestamp": iso(T0 + 4000), "value": 5.5},
    ]);
    let check = |when: &str| {
        let got = Value::Array(window(&server, topic, T0, T0 + 10_000));
        assert_eq!(got, want, "window {when}");
        let mut newest_first = want.as_array().unwrap().clone();
        newest_first.reverse();
        assert_eq!(
            Value::Array(last(&server, topic, 5)),
            json!(newest_first),
            "last {when}"
        );
    };
    server.poll(Duration::from_secs(10), "five points", || {
        (window(&server, topic, T0, T0 + 10_000).len() == 5).then_some(())
    });
    check("as rows");
    wait_for_blocks(&server, 1);
    check("in a block");
}

/// A day left in several blocks (as a version before merging left closed days, or a crash
/// between closing and merging) is found at the next start and merged, reading back the same.
#[test]
fn a_day_left_in_several_blocks_is_merged_after_a_restart() {
    let mut server = Server::start();
    server.create_domain("plant");
    let topic = "plant/unmerged";
    server.create_tag(DOMAIN, topic, true);
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "unmerged-feed");
    let points: Vec<(i64, Value)> = (0..10_000i64)
        .map(|i| (T0 + i * 1000, json!(20.0 + (i % 300) as f64 / 100.0)))
        .collect();
    // Each pair sent newer first: a run out of time order goes through the rows (an in-order
    // run of one fold would go straight into blocks), so the day closes from rows.
    let swapped: Vec<(i64, Value)> = points
        .chunks(2)
        .flat_map(|pair| pair.iter().rev().cloned())
        .collect();
    publish(&mut mqtt, topic, &swapped);
    // A receiving tag closes 4,096 points at a time and keeps its newest rows hot: two blocks,
    // and the day is not closed while rows of it are hot.
    // Every value stored (acknowledged means journaled; the rows come with the next fold).
    let blocks = || store_count(&server, "SELECT count(*) FROM hist_blocks");
    let stored = || {
        store_count(&server, "SELECT count(*) FROM hist_points")
            + store_count(&server, "SELECT coalesce(sum(count), 0) FROM hist_blocks")
    };
    server.poll(Duration::from_secs(30), "two blocks closed", || {
        (stored() == 10_000 && blocks() == 2).then_some(())
    });
    // The day's hot rows gone, as if it had ended there: two blocks of a closed day.
    server.store_sql("DELETE FROM hist_points", "DELETE FROM hist_points");
    assert_eq!(store_count(&server, "SELECT count(*) FROM hist_points"), 0);
    assert!(server.terminate().success());
    server.restart();
    server.poll(Duration::from_secs(30), "the day merged", || {
        (store_count(&server, "SELECT count(*) FROM hist_blocks") == 1).then_some(())
    });
    let kept = &points[..8_192];
    assert_points(
        "after merging",
        &window(&server, topic, T0, T0 + 86_400_000),
        kept,
    );
}
