//! Historian CSV exports, end to end: `POST /svc/historian/export` (UTC, any duration as the
//! sample rate) and the SDK's `POST /svc/historian/export/aggregated` (a time zone, `<n>_<unit>`
//! rates, `none`). Values go in through `POST /svc/tag/write` with a payload timestamp (QoS 1:
//! answered once stored); each export is gunzipped and its CSV rows compared exactly: raw and
//! bucketed in UTC, day buckets in Europe/Berlin across the 2026-03-29 DST change (a 23-hour
//! day), an empty column for a tag that no longer historizes, and every 400/404/401 case.

use crate::common::*;
use reqwest::blocking::Response;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::io::Read;

const DOMAIN: &str = "domains:plant";
const TEMP: &str = "plant/line1/temp";
const SPEED: &str = "plant/line1/speed";
const EXPORT: &str = "/svc/historian/export";
const AGGREGATED: &str = "/svc/historian/export/aggregated";

/// The `plant` domain with historized `TEMP` and `SPEED`.
fn plant(server: &Server) {
    server.create_domain("plant");
    server.create_tag(DOMAIN, TEMP, true);
    server.create_tag(DOMAIN, SPEED, true);
}

/// Stores `value` at `timestamp` (RFC 3339) on `topic`; the write answers once it is stored.
fn record(server: &Server, topic: &str, timestamp: &str, value: Value) {
    let resp = server
        .admin_in(DOMAIN, Method::POST, "/svc/tag/write")
        .json(&json!({"topic": topic, "value": {"value": value, "timestamp": timestamp}}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
}

fn post(server: &Server, path: &str, body: &Value) -> Response {
    server
        .admin_in(DOMAIN, Method::POST, path)
        .json(body)
        .send()
        .unwrap()
}

/// The export's CSV rows, header first; the response must be a 200 gzip.
fn export(server: &Server, path: &str, body: &Value) -> Vec<Vec<String>> {
    let resp = post(server, path, body);
    let status = resp.status();
    let ctype = header(&resp, "content-type");
    let bytes = resp.bytes().unwrap();
    assert_eq!(
        status,
        StatusCode::OK,
        "export {body} failed: {}",
        String::from_utf8_lossy(&bytes)
    );
    assert_eq!(ctype, "application/gzip");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .expect("export is gzip");
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| {
            r.expect("CSV row")
                .iter()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Rows as written in the tests.
fn rows(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

#[test]
fn export_is_a_gzipped_csv() {
    let server = Server::start();
    plant(&server);
    record(&server, TEMP, "2026-01-01T00:00:00Z", json!(1.5));
    record(&server, TEMP, "2026-01-01T00:00:01Z", json!(2));
    record(&server, TEMP, "2026-01-01T00:00:03Z", json!(4));
    record(&server, SPEED, "2026-01-01T00:00:01Z", json!(100));
    record(&server, SPEED, "2026-01-01T00:00:02Z", json!(120));
    let window = json!({"startDate": "2026-01-01T00:00:00Z", "endDate": "2026-01-01T00:01:00Z"});
    let with = |extra: Value| {
        let mut body = window.clone();
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };

    let got = export(&server, EXPORT, &with(json!({"topics": [TEMP]})));
    let want = rows(&[
        &["Timestamp", TEMP],
        &["2026-01-01T00:00:00.000Z", "1.5"],
        &["2026-01-01T00:00:01.000Z", "2"],
        &["2026-01-01T00:00:03.000Z", "4"],
    ]);
    assert_eq!(got, want);

    // Two topics, one renamed, merged on time with empty cells.
    let got = export(
        &server,
        EXPORT,
        &with(json!({"topics": [TEMP, SPEED], "mapping": {SPEED: "Speed"}})),
    );
    let want = rows(&[
        &["Timestamp", TEMP, "Speed"],
        &["2026-01-01T00:00:00.000Z", "1.5", ""],
        &["2026-01-01T00:00:01.000Z", "2", "100"],
        &["2026-01-01T00:00:02.000Z", "", "120"],
        &["2026-01-01T00:00:03.000Z", "4", ""],
    ]);
    assert_eq!(got, want);

    // Resampled: 2 s buckets, max.
    let got = export(
        &server,
        EXPORT,
        &json!({"topics": [TEMP], "startDate": "2026-01-01T00:00:00Z",
                "endDate": "2026-01-01T00:00:04Z", "sampleRate": "2s", "aggregation": "max"}),
    );
    let want = rows(&[
        &["Timestamp", TEMP],
        &["2026-01-01T00:00:00.000Z", "2"],
        &["2026-01-01T00:00:02.000Z", "4"],
    ]);
    assert_eq!(got, want);
}

#[test]
fn aggregated_export_in_utc() {
    let server = Server::start();
    plant(&server);
    for (ts, v) in [
        ("2026-01-01T00:00:00Z", json!(1.5)),
        ("2026-01-01T00:00:01.250Z", json!(2)),
        ("2026-01-01T00:30:00Z", json!(4)),
        ("2026-01-01T01:15:00Z", json!(8)),
        ("2026-01-01T12:00:00Z", json!(32)),
        ("2026-01-02T03:00:00Z", json!(16)),
    ] {
        record(&server, TEMP, ts, v);
    }
    record(&server, SPEED, "2026-01-01T00:00:01.250Z", json!(100));
    record(&server, SPEED, "2026-01-01T01:00:00Z", json!(120));
    let day = json!({"topics": [TEMP, SPEED], "startDate": "2026-01-01T00:00:00Z",
                     "endDate": "2026-01-02T00:00:00Z", "mapping": {SPEED: "Speed"}});
    let with = |extra: Value| {
        let mut body = day.clone();
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let raw = rows(&[
        &["Timestamp", TEMP, "Speed"],
        &["2026-01-01T00:00:00.000Z", "1.5", ""],
        &["2026-01-01T00:00:01.250Z", "2", "100"],
        &["2026-01-01T00:30:00.000Z", "4", ""],
        &["2026-01-01T01:00:00.000Z", "", "120"],
        &["2026-01-01T01:15:00.000Z", "8", ""],
        &["2026-01-01T12:00:00.000Z", "32", ""],
    ]);
    // Raw: no rate, or `none` (the rate is then not applied), with or without an explicit UTC.
    assert_eq!(export(&server, AGGREGATED, &day), raw);
    let none = with(json!({"timezone": "UTC", "sampleRate": "1_h", "aggregation": "none"}));
    assert_eq!(export(&server, AGGREGATED, &none), raw);
    let empty = with(json!({"timezone": "", "sampleRate": "", "aggregation": ""}));
    assert_eq!(export(&server, AGGREGATED, &empty), raw);

    // Hourly maxima from startDate.
    let hourly = with(json!({"sampleRate": "1_h", "aggregation": "max"}));
    let want = rows(&[
        &["Timestamp", TEMP, "Speed"],
        &["2026-01-01T00:00:00.000Z", "4", "100"],
        &["2026-01-01T01:00:00.000Z", "8", "120"],
        &["2026-01-01T12:00:00.000Z", "32", ""],
    ]);
    assert_eq!(export(&server, AGGREGATED, &hourly), want);
    // 30-minute means, the unit spelled out.
    let halves = with(json!({"topics": [TEMP], "sampleRate": "30_minutes",
                             "aggregation": "mean"}));
    let want = rows(&[
        &["Timestamp", TEMP],
        &["2026-01-01T00:00:00.000Z", "1.75"],
        &["2026-01-01T00:30:00.000Z", "4"],
        &["2026-01-01T01:00:00.000Z", "8"],
        &["2026-01-01T12:00:00.000Z", "32"],
    ]);
    assert_eq!(export(&server, AGGREGATED, &halves), want);

    // Day buckets start at midnight even when startDate is later that day; only values from
    // startDate on count.
    let days = json!({"topics": [TEMP], "startDate": "2026-01-01T06:00:00Z",
                      "endDate": "2026-01-03T00:00:00Z", "sampleRate": "1_d",
                      "aggregation": "count"});
    let want = rows(&[
        &["Timestamp", TEMP],
        &["2026-01-01T00:00:00.000Z", "1"],
        &["2026-01-02T00:00:00.000Z", "1"],
    ]);
    assert_eq!(export(&server, AGGREGATED, &days), want);
}

#[test]
fn aggregated_export_in_berlin_across_the_dst_change() {
    let server = Server::start();
    plant(&server);
    // Berlin springs forward on 2026-03-29 at 02:00 (+01:00 → +02:00): that day has 23 hours.
    for (ts, v) in [
        ("2026-03-27T22:59:59Z", 256), // 23:59:59 on the 27th: before startDate
        ("2026-03-28T10:00:00Z", 1),
        ("2026-03-28T22:30:00Z", 2),      // 23:30 on the 28th
        ("2026-03-28T23:30:00Z", 4),      // 00:30 on the 29th
        ("2026-03-29T01:30:00Z", 8),      // 03:30, after the jump
        ("2026-03-29T21:30:00Z", 16),     // 23:30 on the 29th
        ("2026-03-29T22:30:00Z", 32),     // 00:30 on the 30th, 23.5 h after the 29th began
        ("2026-03-30T21:59:59.999Z", 64), // the last instant before endDate
        ("2026-03-30T22:00:00Z", 128),    // endDate itself: outside
    ] {
        record(&server, TEMP, ts, json!(v));
    }
    let body = |rate: &str, agg: &str| {
        json!({"topics": [TEMP], "startDate": "2026-03-28T00:00:00+01:00",
               "endDate": "2026-03-31T00:00:00+02:00", "timezone": "Europe/Berlin",
               "sampleRate": rate, "aggregation": agg, "mapping": {TEMP: "Temperature"}})
    };
    let got = export(&server, AGGREGATED, &body("1_d", "sum"));
    let want = rows(&[
        &["Timestamp", "Temperature"],
        &["2026-03-28T00:00:00.000+01:00", "3"],
        &["2026-03-29T00:00:00.000+01:00", "28"],
        &["2026-03-30T00:00:00.000+02:00", "96"],
    ]);
    assert_eq!(got, want);
    let got = export(&server, AGGREGATED, &body("1_day", "count"));
    let counts: Vec<&str> = got[1..].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(counts, ["2", "3", "2"]);

    // Raw values carry the offset in force at their instant.
    let got = export(&server, AGGREGATED, &body("", "none"));
    let want = rows(&[
        &["Timestamp", "Temperature"],
        &["2026-03-28T11:00:00.000+01:00", "1"],
        &["2026-03-28T23:30:00.000+01:00", "2"],
        &["2026-03-29T00:30:00.000+01:00", "4"],
        &["2026-03-29T03:30:00.000+02:00", "8"],
        &["2026-03-29T23:30:00.000+02:00", "16"],
        &["2026-03-30T00:30:00.000+02:00", "32"],
        &["2026-03-30T23:59:59.999+02:00", "64"],
    ]);
    assert_eq!(got, want);

    // Two-day buckets from the first local midnight: 47 hours, then the rest of the window.
    let got = export(&server, AGGREGATED, &body("2_d", "max"));
    let want = rows(&[
        &["Timestamp", "Temperature"],
        &["2026-03-28T00:00:00.000+01:00", "16"],
        &["2026-03-30T00:00:00.000+02:00", "64"],
    ]);
    assert_eq!(got, want);
}

#[test]
fn aggregated_export_refuses_bad_requests() {
    let server = Server::start();
    plant(&server);
    let flow = "plant/line1/flow";
    let tag = server.create_tag(DOMAIN, flow, true);
    record(&server, flow, "2026-01-01T00:00:00Z", json!(5));
    record(&server, TEMP, "2026-01-01T00:00:00Z", json!(7));
    let base = json!({"topics": [TEMP], "startDate": "2026-01-01T00:00:00Z",
                      "endDate": "2026-01-02T00:00:00Z"});
    let with = |extra: Value| {
        let mut body = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let bad = [
        (json!({"timezone": "Mars/Olympus_Mons"}), "timezone"),
        (json!({"timezone": "+02:00"}), "timezone"),
        (
            json!({"sampleRate": "5x", "aggregation": "mean"}),
            "sampleRate",
        ),
        (
            json!({"sampleRate": "1h30m", "aggregation": "mean"}),
            "sampleRate",
        ),
        (
            json!({"sampleRate": "0_m", "aggregation": "mean"}),
            "sampleRate",
        ),
        (
            json!({"sampleRate": "1_month", "aggregation": "none"}),
            "sampleRate",
        ),
        (
            json!({"sampleRate": "1_ms", "aggregation": "mean"}),
            "sampleRate",
        ),
        (
            json!({"sampleRate": "1_h", "aggregation": "avg"}),
            "aggregation",
        ),
        (json!({"aggregation": "mean"}), "sampleRate"),
        (json!({"endDate": "2025-12-31T00:00:00Z"}), "endDate"),
        (json!({"endDate": "2026-01-01T00:00:00Z"}), "endDate"),
        (json!({"startDate": "yesterday"}), "startDate"),
        (json!({"topics": []}), "topics"),
    ];
    for (extra, field) in bad {
        let body = with(extra);
        let resp = post(&server, AGGREGATED, &body);
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        assert_error(resp, StatusCode::BAD_REQUEST, &[field]);
    }

    // Not a tag of the domain (absent, or another domain's): 404 on both exports.
    server.create_domain("other");
    server.create_tag("domains:other", "other/line/temp", true);
    for topic in ["plant/none", "other/line/temp"] {
        for path in [EXPORT, AGGREGATED] {
            let body = with(json!({"topics": [TEMP, topic], "timezone": "Europe/Berlin"}));
            assert_error(post(&server, path, &body), StatusCode::NOT_FOUND, &[topic]);
        }
    }

    // Historian read is needed: none → 401; a reader gets the CSV.
    let nobody = server.user_with_grants(DOMAIN, "nobody", &[("tags", "read", "*")]);
    let reader = server.user_with_grants(DOMAIN, "reader", &[("historian", "read", "*")]);
    let resp = server
        .with_token_in(&nobody, DOMAIN, Method::POST, AGGREGATED)
        .json(&base)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = server
        .with_token_in(&reader, DOMAIN, Method::POST, AGGREGATED)
        .json(&base)
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "content-type"), "application/gzip");

    // A tag that no longer historizes exports an empty column on both routes.
    let both = with(json!({"topics": [flow, TEMP]}));
    let stored = rows(&[
        &["Timestamp", flow, TEMP],
        &["2026-01-01T00:00:00.000Z", "5", "7"],
    ]);
    assert_eq!(export(&server, AGGREGATED, &both), stored);
    let resp = server
        .admin_in(DOMAIN, Method::PUT, &rec_path(tag["id"].as_str().unwrap()))
        .json(&json!({"historize": false}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    let emptied = rows(&[
        &["Timestamp", flow, TEMP],
        &["2026-01-01T00:00:00.000Z", "", "7"],
    ]);
    assert_eq!(export(&server, AGGREGATED, &both), emptied);
    assert_eq!(export(&server, EXPORT, &both), emptied);
}
