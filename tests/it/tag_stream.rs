//! The tag stream (issue 16): `GET /svc/tag/stream?topic=<filter>` as Server-Sent Events, read
//! here as `curl -N` would. It opens with the latest values of the caller's domain that match
//! the filter and `synced`, then carries values published with `mosquitto_pub` within a second;
//! another domain's tags never appear, whatever the filter; it needs a credential, `tags` read
//! access and a valid filter; a revoked API key ends it with an `error` event.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One Server-Sent Event: its `event:` name and its `data:` as JSON.
#[derive(Debug)]
struct Sse {
    event: String,
    data: Value,
}

/// The events of an open stream, read on a thread of their own.
struct Stream {
    events: mpsc::Receiver<Sse>,
}

impl Stream {
    fn open(request: reqwest::blocking::RequestBuilder) -> Stream {
        let resp = request.send().expect("GET /svc/tag/stream");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(header(&resp, "content-type"), "text/event-stream");
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            let mut event = String::new();
            for line in BufReader::new(resp).lines().map_while(Result::ok) {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = name.to_string();
                } else if let Some(data) = line.strip_prefix("data: ") {
                    let data = serde_json::from_str(data).unwrap_or(Value::String(data.into()));
                    let sse = Sse {
                        event: std::mem::take(&mut event),
                        data,
                    };
                    if tx.send(sse).is_err() {
                        return;
                    }
                }
            }
        });
        Stream { events }
    }

    fn next(&self, within: Duration) -> Sse {
        self.events
            .recv_timeout(within)
            .unwrap_or_else(|e| panic!("no event within {within:?}: {e}"))
    }

    /// Events up to and including `synced`.
    fn snapshot(&self) -> Vec<Sse> {
        let mut events = Vec::new();
        loop {
            let sse = self.next(Duration::from_secs(5));
            let done = sse.event == "synced";
            events.push(sse);
            if done {
                return events;
            }
        }
    }
}

fn stream_path(filter: &str) -> String {
    format!("/svc/tag/stream?topic={}", enc(filter))
}

fn publish(server: &Server, topic: &str, value: &str) {
    server.publish_as_admin(topic, value);
}

fn setup() -> Server {
    let server = Server::start();
    for domain in ["acme", "beta"] {
        server.create_domain(domain);
    }
    for tag in ["plant/line1/speed", "plant/line1/temp", "plant/line2/speed"] {
        server.create_tag("domains:acme", tag, false);
    }
    server.create_tag("domains:beta", "lab/oven/temp", false);
    server
}

#[test]
fn a_stream_opens_with_the_domains_latest_values_then_carries_new_ones_live() {
    let server = setup();
    publish(&server, "plant/line1/speed", "12.5");
    publish(&server, "plant/line2/speed", "7");
    publish(&server, "lab/oven/temp", "180");
    server.poll(Duration::from_secs(5), "the last values", || {
        let values = server.get_json("domains:acme", "/svc/tag/values");
        (values.as_array()?.len() == 2).then_some(())
    });

    let stream =
        Stream::open(server.admin_in("domains:acme", Method::GET, &stream_path("plant/+/speed")));
    let snapshot = stream.snapshot();
    let mut seen: Vec<(String, Value)> = snapshot
        .iter()
        .filter(|e| e.event == "value")
        .map(|e| {
            (
                e.data["topic"].as_str().unwrap_or("").to_string(),
                e.data["value"].clone(),
            )
        })
        .collect();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        seen,
        [
            ("plant/line1/speed".to_string(), json!(12.5)),
            ("plant/line2/speed".to_string(), json!(7))
        ],
        "{snapshot:?}"
    );
    assert_eq!(snapshot.last().map(|e| &e.data), Some(&json!({"count": 2})));
    assert!(snapshot
        .iter()
        .filter(|e| e.event == "value")
        .all(|e| e.data["timestamp"]
            .as_str()
            .is_some_and(is_rfc3339_millis_utc)));

    // Live: within a second, only matching tags of the domain.
    publish(&server, "lab/oven/temp", "181");
    publish(&server, "plant/line1/temp", "55");
    let started = Instant::now();
    publish(&server, "plant/line1/speed", "13");
    let live = stream.next(Duration::from_secs(1));
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(live.event, "value");
    assert_eq!(live.data["topic"], "plant/line1/speed", "{live:?}");
    assert_eq!(live.data["value"], json!(13));
}

#[test]
fn another_domains_tags_never_reach_a_stream_whatever_its_filter() {
    let server = setup();
    publish(&server, "lab/oven/temp", "180");
    let stream = Stream::open(server.admin_in("domains:acme", Method::GET, &stream_path("#")));
    let snapshot = stream.snapshot();
    assert!(
        snapshot.iter().all(|e| e.data["topic"] != "lab/oven/temp"),
        "{snapshot:?}"
    );
    for value in ["181", "182"] {
        publish(&server, "lab/oven/temp", value);
    }
    publish(&server, "plant/line2/speed", "1");
    let next = stream.next(Duration::from_secs(2));
    assert_eq!(next.data["topic"], "plant/line2/speed", "{next:?}");
    // Beta's own stream does see it.
    let beta = Stream::open(server.admin_in("domains:beta", Method::GET, &stream_path("#")));
    let snapshot = beta.snapshot();
    assert_eq!(snapshot[0].data["topic"], "lab/oven/temp", "{snapshot:?}");
    assert_eq!(snapshot[0].data["value"], json!(182));
}

#[test]
fn the_stream_needs_a_credential_tags_read_access_and_a_valid_filter() {
    let server = setup();
    let resp = server
        .req(Method::GET, &stream_path("#"))
        .header("Domain", "domains:acme")
        .send()
        .expect("no credential");
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let outsider = server.user_with_grants("domains:acme", "outsider", &[]);
    let resp = server
        .with_token_in(&outsider, "domains:acme", Method::GET, &stream_path("#"))
        .send()
        .expect("no grant");
    assert_error(resp, StatusCode::UNAUTHORIZED, &["tags"]);
    for bad in ["plant/#/speed", "plant/sp+eed", ""] {
        let resp = server
            .admin_in("domains:acme", Method::GET, &stream_path(bad))
            .send()
            .expect("bad filter");
        assert_error(resp, StatusCode::BAD_REQUEST, &["topic"]);
    }
}

#[test]
fn a_revoked_api_key_ends_its_stream() {
    let server = setup();
    let reader = server.user_with_grants("domains:acme", "reader", &[("tags", "read", "*")]);
    let (key_id, key) = server.create_api_key(&reader, "console");
    let stream = Stream::open(
        server
            .req(Method::GET, &stream_path("plant/#"))
            .header("X-Svc-Api-Key", &key)
            .header("Domain", "domains:acme"),
    );
    stream.snapshot();
    publish(&server, "plant/line1/temp", "20");
    assert_eq!(stream.next(Duration::from_secs(2)).data["value"], json!(20));
    server.revoke_api_key(&reader, &key_id);
    publish(&server, "plant/line1/temp", "21");
    let end = stream.next(Duration::from_secs(2));
    assert_eq!(end.event, "error", "{end:?}");
    assert!(
        stream
            .events
            .recv_timeout(Duration::from_millis(500))
            .is_err(),
        "nothing after the error"
    );
}

#[test]
fn a_hundred_streams_at_a_thousand_updates_a_second_all_end_on_the_latest_values() {
    const STREAMS: usize = 100;
    const TAGS: usize = 10;
    const UPDATES: usize = 2000;
    let server = Server::start();
    server.create_domain("acme");
    for t in 0..TAGS {
        server.create_tag("domains:acme", &format!("fan/t{t}"), false);
    }
    let streams: Vec<Stream> = (0..STREAMS)
        .map(|_| {
            let stream =
                Stream::open(server.admin_in("domains:acme", Method::GET, &stream_path("fan/#")));
            stream.snapshot();
            stream
        })
        .collect();

    let mut device = server.mqtt_admin(Proto::V5, Via::Tcp, "fan-publisher");
    let started = Instant::now();
    for i in 0..UPDATES {
        device.publish(&format!("fan/t{}", i % TAGS), i.to_string(), 0, false);
        // Paced at 1,000 updates per second.
        let due = started + Duration::from_micros(1000 * (i as u64 + 1));
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
    }
    let rate = UPDATES as f64 / started.elapsed().as_secs_f64();
    assert!(rate > 800.0, "published at {rate:.0}/s");

    let last: Vec<Value> = (0..TAGS).map(|t| json!(UPDATES - TAGS + t)).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    for (n, stream) in streams.iter().enumerate() {
        let mut latest = vec![Value::Null; TAGS];
        while latest != last {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = stream
                .events
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("stream {n}: latest {latest:?} ({e})"));
            if event.event != "value" {
                continue;
            }
            let topic = event.data["topic"].as_str().unwrap_or("");
            if let Some(t) = topic
                .strip_prefix("fan/t")
                .and_then(|t| t.parse::<usize>().ok())
            {
                latest[t] = event.data["value"].clone();
            }
        }
    }
    // The server still answers.
    assert_eq!(
        server
            .get_json("domains:acme", "/svc/tag/values")
            .as_array()
            .map(Vec::len),
        Some(TAGS)
    );
}

/// `payload=raw` adds the published bytes: text as `payload`, anything else as
/// `payload_base64`; without it the events hold only the value.
#[test]
fn the_raw_payload_comes_with_each_value_when_asked() {
    let server = setup();
    publish(
        &server,
        "plant/line1/speed",
        r#"{"rpm": 1450,   "unit": "1/min"}"#,
    );
    let binary = [0x00u8, 0xff, 0x10, 0x80, b'A'];
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("frame.bin");
    std::fs::write(&file, binary).expect("write the frame");
    let file = file.display().to_string();
    let (ok, err) = server.mosquitto_pub(
        false,
        &[
            "-u",
            "admin",
            "-P",
            ADMIN_PASSWORD,
            "-t",
            "plant/line1/temp",
            "-f",
            &file,
            "-q",
            "1",
        ],
    );
    assert!(ok, "{err}");
    server.poll(Duration::from_secs(5), "the last values", || {
        let values = server.get_json("domains:acme", "/svc/tag/values");
        (values.as_array()?.len() == 2).then_some(())
    });
    let path = format!("{}&payload=raw", stream_path("plant/line1/+"));
    let stream = Stream::open(server.admin_in("domains:acme", Method::GET, &path));
    let mut events: Vec<Value> = stream
        .snapshot()
        .into_iter()
        .filter(|e| e.event == "value")
        .map(|e| e.data)
        .collect();
    events.sort_by_key(|e| e["topic"].as_str().unwrap_or("").to_string());
    assert_eq!(
        events[0]["payload"],
        json!(r#"{"rpm": 1450,   "unit": "1/min"}"#)
    );
    assert_eq!(events[0]["value"], json!({"rpm": 1450, "unit": "1/min"}));
    assert_eq!(
        events[1]["payload_base64"],
        json!("AP8QgEE="),
        "{:?}",
        events[1]
    );
    assert!(events[1].get("payload").is_none());

    // Live values carry it too; a stream that did not ask gets none.
    let plain =
        Stream::open(server.admin_in("domains:acme", Method::GET, &stream_path("plant/line1/+")));
    let first = plain.snapshot();
    assert!(
        first.iter().all(|e| e.data.get("payload").is_none()),
        "{first:?}"
    );
    publish(&server, "plant/line1/speed", "13.0");
    let live = stream.next(Duration::from_secs(2));
    assert_eq!(live.data["payload"], json!("13.0"));
    assert!(plain
        .next(Duration::from_secs(2))
        .data
        .get("payload")
        .is_none());

    let resp = server
        .admin_in(
            "domains:acme",
            Method::GET,
            &format!("{}&payload=bytes", stream_path("#")),
        )
        .send()
        .expect("bad payload mode");
    assert_error(resp, StatusCode::BAD_REQUEST, &["payload"]);
}
