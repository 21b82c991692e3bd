//! Alarms see every source of values (issue 37): REST writes, processes and flows raise them
//! like MQTT publishes do, and the event stream opens with the standing alarms, then changes.

use crate::alarms::{alarm, journal, publisher, put, setup, wait_state, ACME, WAIT};
use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

#[test]
fn rest_writes_raise_alarms_and_the_stream_shows_snapshot_then_changes() {
    let server = setup();
    alarm(
        &server,
        json!({"name": "hot", "tag": "acme/plant/temp", "kind": "high", "setpoint": 80}),
    );
    alarm(
        &server,
        json!({"name": "door", "tag": "acme/plant/door", "kind": "equal", "setpoint": "open"}),
    );
    let mut plc = publisher(&server, "plc");
    put(&mut plc, "acme/plant/door", json!("open"));
    wait_state(&server, ACME, "door", "active_unacknowledged");
    let resp = server
        .admin_in(ACME, Method::GET, "/svc/alarms/stream")
        .timeout(Duration::from_secs(30))
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let reader = BufReader::new(resp);
        let mut event = String::new();
        for line in reader.lines().map_while(Result::ok) {
            if let Some(name) = line.strip_prefix("event: ") {
                event = name.to_string();
            } else if let Some(data) = line.strip_prefix("data: ") {
                if tx.send((event.clone(), data.to_string())).is_err() {
                    return;
                }
            }
        }
    });
    let (kind, data) = rx.recv_timeout(WAIT).unwrap();
    assert_eq!(kind, "snapshot");
    let snapshot: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(snapshot[0]["name"], "door");
    let write = server
        .admin_in(ACME, Method::POST, "/svc/tag/write")
        .json(&json!({"topic": "acme/plant/temp", "value": 99}))
        .send()
        .unwrap();
    assert!(write.status().is_success(), "{}", write.text().unwrap());
    // The first change heard is for `hot`; `door`'s own raise may still be on its way (the
    // summary lists an alarm as soon as it is raised, its event follows the journal).
    let deadline = Instant::now() + WAIT;
    let change: Value = loop {
        let (kind, data) = rx.recv_timeout(deadline - Instant::now()).unwrap();
        assert_eq!(kind, "change");
        let change: Value = serde_json::from_str(&data).unwrap();
        if change["alarm"] != "door" {
            break change;
        }
    };
    assert_eq!(
        (
            change["alarm"].as_str(),
            change["state"].as_str(),
            change["value"].as_i64()
        ),
        (Some("hot"), Some("active_unacknowledged"), Some(99))
    );
}

/// Values a process and a flow write are evaluated like any publish.
#[test]
fn values_written_by_processes_and_flows_raise_alarms() {
    let server = setup();
    alarm(
        &server,
        json!({"name": "by-process", "tag": "acme/plant/f", "kind": "high", "setpoint": 100}),
    );
    alarm(
        &server,
        json!({"name": "by-flow", "tag": "acme/plant/flagged", "kind": "true"}),
    );
    // Declared first: a domain's automation sees a topic's values once it is the domain's tag.
    for tag in ["acme/plant/c", "acme/plant/f", "acme/plant/flagged"] {
        server.create_tag(ACME, tag, false);
    }
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/processes")
        .json(&json!({"name": "c-to-f",
            "code": "function main(v) { svc.tag.write('acme/plant/f', v * 9 / 5 + 32); }",
            "triggers": [{"type": "tag_change", "config": {"tag": "acme/plant/c"}}]}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/flows")
        .json(&json!({"name": "flag", "running": true, "nodes": [
            {"id": "in", "type": "tag-in", "config": {"topic": "acme/plant/f"}, "wires": ["hot"]},
            {"id": "hot", "type": "function", "config": {"code": "function main(msg) { return msg.payload > 200; }"}, "wires": ["out"]},
            {"id": "out", "type": "svc.tag.write", "config": {"topic": "acme/plant/flagged"}}
        ]}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);
    let mut plc = publisher(&server, "plc");
    put(&mut plc, "acme/plant/c", json!(50));
    wait_state(&server, ACME, "by-process", "active_unacknowledged");
    assert_eq!(journal(&server, "?alarm=by-process")[0]["value"], 122);
    put(&mut plc, "acme/plant/c", json!(100));
    wait_state(&server, ACME, "by-flow", "active_unacknowledged");
}
