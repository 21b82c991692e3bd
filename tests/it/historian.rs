//! Historian (SPEC 7): values published over MQTT on a historized tag come back from
//! `PATCH /svc/historian` in time order with their timestamps (payload `timestamp` as RFC 3339 or
//! epoch ms, else the receive time); bad windows are 400 text; buckets with every aggregation
//! match values computed here; `PATCH /svc/historian/last` is newest first; a tag that is not
//! historized has an empty history; `GET /svc/historian/list`; and QoS 1 values acknowledged
//! just before SIGTERM survive a restart (the server exits 0). The CSV exports are tested in
//! `historian_export.rs`.

use crate::common::*;
use chrono::{DateTime, SecondsFormat, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const DOMAIN: &str = "domains:plant";
const TEMP: &str = "plant/line1/temp";
const SPEED: &str = "plant/line1/speed";
/// 2026-01-01T00:00:00Z in epoch milliseconds.
const T0: i64 = 1_767_225_600_000;

fn iso(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The `plant` domain with historized `TEMP` and `SPEED` and a non-historized `plant/state`.
fn plant(server: &Server) {
    server.create_domain("plant");
    server.create_tag(DOMAIN, TEMP, true);
    server.create_tag(DOMAIN, SPEED, true);
    server.create_tag(DOMAIN, "plant/state", false);
}

fn patch(server: &Server, path: &str, body: &Value) -> reqwest::blocking::Response {
    server
        .admin_in(DOMAIN, Method::PATCH, path)
        .json(body)
        .send()
        .unwrap()
}

fn query(server: &Server, body: &Value) -> Value {
    json_ok(patch(server, "/svc/historian", body), StatusCode::OK)
}

/// Polls the window query until it returns `n` points (ingest is batched).
fn query_n(server: &Server, body: &Value, n: usize) -> Value {
    server.poll(
        Duration::from_secs(10),
        &format!("{n} points for {body}"),
        || {
            let points = query(server, body);
            (points.as_array().map_or(0, Vec::len) == n).then_some(points)
        },
    )
}

/// Publishes `(offset ms from T0, value)` pairs with explicit epoch-ms timestamps (QoS 1).
fn publish_points(mqtt: &mut Mqtt, topic: &str, points: &[(i64, f64)]) {
    for (offset, value) in points {
        let payload = json!({"value": value, "timestamp": T0 + offset}).to_string();
        assert_eq!(mqtt.publish(topic, payload, 1, false), "Success");
    }
}

#[test]
fn window_query_returns_points_in_order_with_their_timestamps() {
    let server = Server::start();
    plant(&server);
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "historian-feed");
    // Published out of order; timestamps in every accepted form.
    for payload in [
        r#"{"value":3,"timestamp":"2026-01-01T01:00:02.250+01:00"}"#,
        r#"{"value":1.5,"timestamp":"2026-01-01T00:00:00.000Z"}"#,
        r#"{"value":"text","timestamp":1767225603000}"#,
        r#"{"value":2.5,"timestamp":1767225601000}"#,
        r#"{"value":{"a":[1,2]},"timestamp":"2026-01-01T00:00:04Z"}"#,
    ] {
        mqtt.publish(TEMP, payload, 1, false);
    }
    let all = json!({"topic": TEMP, "start_time": "2026-01-01T00:00:00Z", "range": "1m"});
    let points = query_n(&server, &all, 5);
    assert_eq!(
        points,
        json!([
            {"timestamp": "2026-01-01T00:00:00.000Z", "value": 1.5},
            {"timestamp": "2026-01-01T00:00:01.000Z", "value": 2.5},
            {"timestamp": "2026-01-01T00:00:02.250Z", "value": 3},
            {"timestamp": "2026-01-01T00:00:03.000Z", "value": "text"},
            {"timestamp": "2026-01-01T00:00:04.000Z", "value": {"a": [1, 2]}},
        ])
    );
    // Half-open window [start, start + range).
    let w = query(
        &server,
        &json!({"topic": TEMP, "start_time": "2026-01-01T00:00:01Z", "range": "1250ms"}),
    );
    assert_eq!(
        w,
        json!([{"timestamp": "2026-01-01T00:00:01.000Z", "value": 2.5}])
    );
    // end_time, compound ranges and limit.
    let w = query(
        &server,
        &json!({"topic": TEMP, "start_time": "2026-01-01T00:00:01Z",
                "end_time": "2026-01-01T00:00:03Z"}),
    );
    assert_eq!(w.as_array().unwrap().len(), 2, "{w}");
    let w = query(
        &server,
        &json!({"topic": TEMP, "start_time": "2025-12-31T23:00:00Z", "range": "1h30m",
                "limit": 2}),
    );
    assert_eq!(w, Value::Array(points.as_array().unwrap()[..2].to_vec()));
    // A window with nothing in it.
    let w = query(
        &server,
        &json!({"topic": TEMP, "start_time": "2025-12-01T00:00:00Z", "range": "24h"}),
    );
    assert_eq!(w, json!([]));

    // Without a payload timestamp, the receive time.
    let before = Utc::now().timestamp_millis();
    mqtt.publish(SPEED, "7.5", 1, false);
    mqtt.publish(SPEED, r#"{"value": 8}"#, 1, false);
    let after = Utc::now().timestamp_millis();
    let w = json!({"topic": SPEED, "start_time": iso(before - 60_000)});
    let points = query_n(&server, &w, 2);
    let values: Vec<&Value> = points
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["value"])
        .collect();
    assert_eq!(values, [&json!(7.5), &json!(8)], "{points}");
    for p in points.as_array().unwrap() {
        let ts = p["timestamp"].as_str().unwrap();
        assert!(is_rfc3339_millis_utc(ts), "{ts}");
        let ms = DateTime::parse_from_rfc3339(ts).unwrap().timestamp_millis();
        assert!(
            (before - 5..=after + 5).contains(&ms),
            "receive time {ts} outside [{}, {}]",
            iso(before),
            iso(after)
        );
    }
}

#[test]
fn bad_windows_are_400_and_unknown_topics_404() {
    let server = Server::start();
    plant(&server);
    let start = "2026-01-01T00:00:00Z";
    let bad: Vec<(Value, &str)> = vec![
        (
            json!({"topic": TEMP, "start_time": start, "range": "10x"}),
            "range",
        ),
        (
            json!({"topic": TEMP, "start_time": start, "range": "abc"}),
            "range",
        ),
        (
            json!({"topic": TEMP, "start_time": start, "range": "-5m"}),
            "range",
        ),
        (
            json!({"topic": TEMP, "start_time": start, "range": "0s"}),
            "range",
        ),
        (
            json!({"topic": TEMP, "start_time": "yesterday", "range": "1h"}),
            "start_time",
        ),
        (
            json!({"topic": TEMP, "start_time": "2026-13-01T00:00:00Z"}),
            "start_time",
        ),
        (
            json!({"topic": TEMP, "start_time": "2026-01-01"}),
            "start_time",
        ),
        (json!({"topic": TEMP}), "start_time"),
        (
            json!({"topic": TEMP, "start_time": start, "end_time": "2025-01-01T00:00:00Z"}),
            "end_time",
        ),
        (
            json!({"topic": TEMP, "start_time": start, "bucket": "1m"}),
            "aggregation",
        ),
        (
            json!({"topic": TEMP, "start_time": start, "range": "1h", "bucket": "1m",
                   "aggregation": "avg"}),
            "aggregation",
        ),
        (
            json!({"topic": TEMP, "start_time": start, "range": "1h", "bucket": "soon",
                   "aggregation": "mean"}),
            "bucket",
        ),
    ];
    for (body, needle) in bad {
        let resp = patch(&server, "/svc/historian", &body);
        let status = resp.status();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_error(resp, StatusCode::BAD_REQUEST, &[needle]);
    }
    let resp = server
        .admin_in(DOMAIN, Method::PATCH, "/svc/historian")
        .header("Content-Type", "application/json")
        .body("{not json")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &[]);
    for limit in [0, 101] {
        let resp = patch(
            &server,
            "/svc/historian/last",
            &json!({"topic": TEMP, "limit": limit}),
        );
        assert_error(resp, StatusCode::BAD_REQUEST, &["limit"]);
    }
    let resp = patch(
        &server,
        "/svc/historian",
        &json!({"topic": "plant/nope", "start_time": start, "range": "1h"}),
    );
    assert_error(resp, StatusCode::NOT_FOUND, &["plant/nope"]);
    // A tag that is not historized has an empty history, not a 404.
    let w = query(
        &server,
        &json!({"topic": "plant/state", "start_time": start, "range": "1h"}),
    );
    assert_eq!(w, json!([]));
}

/// The dataset of the aggregation tests: (offset ms, value), deliberately unordered.
const SERIES: [(i64, f64); 9] = [
    (12_000, 5.0),
    (0, 1.0),
    (2_000, 4.0),
    (47_000, 6.0),
    (4_000, 2.0),
    (6_000, 8.5),
    (18_000, 10.0),
    (15_000, 3.0),
    (25_000, 7.25),
];

fn aggregate(values: &[(i64, f64)], agg: &str) -> f64 {
    let mut sorted: Vec<(i64, f64)> = values.to_vec();
    sorted.sort_by_key(|p| p.0);
    let nums: Vec<f64> = sorted.iter().map(|p| p.1).collect();
    let n = nums.len() as f64;
    match agg {
        "mean" => nums.iter().sum::<f64>() / n,
        "sum" => nums.iter().sum(),
        "min" => nums.iter().cloned().fold(f64::INFINITY, f64::min),
        "max" => nums.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        "count" => n,
        "first" => nums[0],
        "last" => nums[nums.len() - 1],
        "median" => {
            let mut s = nums.clone();
            s.sort_by(f64::total_cmp);
            let mid = s.len() / 2;
            if s.len() % 2 == 1 {
                s[mid]
            } else {
                (s[mid - 1] + s[mid]) / 2.0
            }
        }
        other => panic!("unknown aggregation {other}"),
    }
}

/// Expected buckets of `SERIES` for a window starting at `start` (offset ms) of `len` ms.
fn expected_buckets(start: i64, len: i64, bucket: i64, agg: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut k = 0;
    while start + k * bucket < start + len {
        let lo = start + k * bucket;
        let hi = (lo + bucket).min(start + len);
        let members: Vec<(i64, f64)> = SERIES
            .iter()
            .copied()
            .filter(|(t, _)| (lo..hi).contains(t))
            .collect();
        if !members.is_empty() {
            out.push((iso(T0 + lo), aggregate(&members, agg)));
        }
        k += 1;
    }
    out
}

fn as_pairs(points: &Value) -> Vec<(String, f64)> {
    points
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {points}"))
        .iter()
        .map(|p| {
            let v = p["value"]
                .as_f64()
                .unwrap_or_else(|| panic!("non-numeric bucket value in {points}"));
            (p["timestamp"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

#[test]
fn buckets_with_every_aggregation() {
    let server = Server::start();
    plant(&server);
    let mut mqtt = server.mqtt_admin(Proto::V3, Via::Tcp, "agg-feed");
    publish_points(&mut mqtt, TEMP, &SERIES);
    query_n(
        &server,
        &json!({"topic": TEMP, "start_time": iso(T0), "range": "1m"}),
        SERIES.len(),
    );
    for (start, bucket_text, bucket_ms) in [(0, "10s", 10_000), (5_000, "10_second", 10_000)] {
        for agg in [
            "mean", "min", "max", "sum", "count", "first", "last", "median",
        ] {
            let body = json!({"topic": TEMP, "start_time": iso(T0 + start), "range": "1m",
                              "bucket": bucket_text, "aggregation": agg});
            let got = as_pairs(&query(&server, &body));
            let want = expected_buckets(start, 60_000, bucket_ms, agg);
            assert_eq!(
                got.len(),
                want.len(),
                "{agg} from +{start}ms: got {got:?}, want {want:?}"
            );
            for ((gt, gv), (wt, wv)) in got.iter().zip(&want) {
                assert_eq!(gt, wt, "{agg} from +{start}ms: bucket times");
                assert!(
                    (gv - wv).abs() < 1e-9,
                    "{agg} from +{start}ms, bucket {gt}: got {gv}, want {wv}"
                );
            }
        }
    }
    // `limit` caps the number of buckets.
    let body = json!({"topic": TEMP, "start_time": iso(T0), "range": "1m",
                      "bucket": "10s", "aggregation": "count", "limit": 2});
    assert_eq!(
        as_pairs(&query(&server, &body)),
        [(iso(T0), 4.0), (iso(T0 + 10_000), 3.0)]
    );
}

#[test]
fn last_is_newest_first() {
    let server = Server::start();
    plant(&server);
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Ws("/"), "last-feed");
    publish_points(&mut mqtt, TEMP, &SERIES);
    query_n(
        &server,
        &json!({"topic": TEMP, "start_time": iso(T0), "range": "1m"}),
        SERIES.len(),
    );
    let last = json_ok(
        patch(
            &server,
            "/svc/historian/last",
            &json!({"topic": TEMP, "limit": 3}),
        ),
        StatusCode::OK,
    );
    assert_eq!(
        last,
        json!([
            {"timestamp": iso(T0 + 47_000), "value": 6.0},
            {"timestamp": iso(T0 + 25_000), "value": 7.25},
            {"timestamp": iso(T0 + 18_000), "value": 10.0},
        ])
    );
    let one = json_ok(
        patch(&server, "/svc/historian/last", &json!({"topic": TEMP})),
        StatusCode::OK,
    );
    assert_eq!(one, json!([{"timestamp": iso(T0 + 47_000), "value": 6.0}]));
    let all = json_ok(
        patch(
            &server,
            "/svc/historian/last",
            &json!({"topic": TEMP, "limit": 100}),
        ),
        StatusCode::OK,
    );
    assert_eq!(all.as_array().unwrap().len(), SERIES.len());
    let resp = patch(
        &server,
        "/svc/historian/last",
        &json!({"topic": "plant/none", "limit": 1}),
    );
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
}

/// Sets `historize` of the tag record `id` (as admin in the plant domain).
fn set_historize(server: &Server, id: &str, historize: bool) {
    let resp = server
        .admin_in(DOMAIN, Method::PUT, &rec_path(id))
        .json(&json!({ "historize": historize }))
        .send()
        .unwrap();
    let tag = json_ok(resp, StatusCode::OK);
    assert_eq!(tag["historize"], json!(historize), "{tag}");
}

#[test]
fn a_tag_that_is_not_historized_has_no_history() {
    let server = Server::start();
    plant(&server);
    let flow = "plant/line1/flow";
    let tag = server.create_tag(DOMAIN, flow, true);
    let id = tag["id"].as_str().unwrap();
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "unhistorized-feed");
    publish_points(&mut mqtt, flow, &[(0, 1.0), (1_000, 2.0)]);
    let window = json!({"topic": flow, "start_time": iso(T0), "range": "1m"});
    query_n(&server, &window, 2);
    let last = json!({"topic": flow, "limit": 10});
    let newest = json_ok(patch(&server, "/svc/historian/last", &last), StatusCode::OK);
    assert_eq!(newest.as_array().map(Vec::len), Some(2), "{newest}");

    // Historize switched off: the stored values are no longer this tag's history.
    set_historize(&server, id, false);
    assert_eq!(query(&server, &window), json!([]));
    let bucketed = json!({"topic": flow, "start_time": iso(T0), "range": "1m",
                          "bucket": "10s", "aggregation": "count"});
    assert_eq!(query(&server, &bucketed), json!([]));
    assert_eq!(
        json_ok(patch(&server, "/svc/historian/last", &last), StatusCode::OK),
        json!([])
    );
    // The request is still checked.
    let bad = json!({"topic": flow, "start_time": iso(T0), "range": "10x"});
    assert_error(
        patch(&server, "/svc/historian", &bad),
        StatusCode::BAD_REQUEST,
        &["range"],
    );
    // A topic that is not a tag of the domain stays 404, even one another domain owns.
    server.create_domain("other");
    server.create_tag("domains:other", "other/line/flow", true);
    for topic in ["plant/none", "other/line/flow"] {
        let body = json!({"topic": topic, "start_time": iso(T0), "range": "1m"});
        assert_error(
            patch(&server, "/svc/historian", &body),
            StatusCode::NOT_FOUND,
            &[topic],
        );
        assert_error(
            patch(&server, "/svc/historian/last", &json!({ "topic": topic })),
            StatusCode::NOT_FOUND,
            &[topic],
        );
    }

    // Switched back on, the kept values are its history again.
    set_historize(&server, id, true);
    query_n(&server, &window, 2);
}

#[test]
fn historian_list_holds_the_historized_tags() {
    let server = Server::start();
    plant(&server);
    let mut list = server.string_list(Some(DOMAIN), "/svc/historian/list");
    list.sort();
    assert_eq!(list, [SPEED, TEMP]);
    server.create_domain("other");
    assert!(server
        .string_list(Some("domains:other"), "/svc/historian/list")
        .is_empty());
}

#[test]
fn acknowledged_values_survive_sigterm_and_restart() {
    let mut server = Server::start();
    plant(&server);
    let mut mqtt = server.mqtt_admin(Proto::V3, Via::Tcp, "durable-feed");
    let points: Vec<(i64, f64)> = (0..300).map(|i| (i * 100, i as f64)).collect();
    publish_points(&mut mqtt, TEMP, &points);
    let mut v5 = server.mqtt_admin(Proto::V5, Via::Tcp, "durable-feed-5");
    let more: Vec<(i64, f64)> = (300..400).map(|i| (i * 100, i as f64)).collect();
    publish_points(&mut v5, TEMP, &more);
    // Every PUBACK is in: stop right away.
    let status = server.terminate();
    assert!(
        status.success(),
        "svc serve exited with {status} on SIGTERM; logs:\n{}",
        server.logs()
    );
    drop(mqtt);
    drop(v5);

    server.restart();
    let body = json!({"topic": TEMP, "start_time": iso(T0), "range": "1h", "limit": 1000});
    let got = query(&server, &body);
    let got = got.as_array().unwrap();
    assert_eq!(
        got.len(),
        400,
        "acknowledged QoS 1 values lost across SIGTERM: {} of 400 kept",
        got.len()
    );
    for (i, p) in got.iter().enumerate() {
        assert_eq!(p["timestamp"], json!(iso(T0 + i as i64 * 100)));
        assert_eq!(p["value"].as_f64(), Some(i as f64), "{p}");
    }
    // The restarted server still ingests.
    let mut mqtt = server.mqtt_admin(Proto::V3, Via::Tcp, "after-restart");
    publish_points(&mut mqtt, TEMP, &[(400 * 100, 400.0)]);
    query_n(&server, &body, 401);
}

#[test]
fn a_large_window_reads_the_same_bytes_as_its_halves() {
    let server = Server::start();
    plant(&server);
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "large-feed");
    // A window of thousands of points, in two decimals.
    let n = 5_000usize;
    let points: Vec<(i64, f64)> = (0..n as i64)
        .map(|i| (i * 1000, (2_000 + i * 37 % 1_000) as f64 / 100.0))
        .collect();
    publish_points(&mut mqtt, TEMP, &points);
    let window = json!({"topic": TEMP, "start_time": iso(T0), "range": "2h"});
    let all = query_n(&server, &window, n);
    let expected: Vec<Value> = points
        .iter()
        .map(|(offset, value)| json!({"timestamp": iso(T0 + offset), "value": value}))
        .collect();
    assert_eq!(all, Value::Array(expected));
    // The same bytes as the two halves, each answered with its length.
    let resp = patch(&server, "/svc/historian", &window);
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let whole = resp.text().unwrap();
    let half = |start: i64| {
        let body = json!({"topic": TEMP, "start_time": iso(T0 + start),
                          "end_time": iso(T0 + start + 2_500_000)});
        let resp = patch(&server, "/svc/historian", &body);
        assert!(
            resp.content_length().is_some(),
            "a small answer has a length"
        );
        let text = resp.text().unwrap();
        text[1..text.len() - 1].to_string()
    };
    assert_eq!(whole, format!("[{},{}]", half(0), half(2_500_000)));
}
