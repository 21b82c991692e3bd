//! Alarm definitions edited while an alarm stands: each record written or deleted is applied
//! on its own (not by reading the domain's 10,000 alarms again). A change that keeps the
//! alarm's name, tag and kind keeps its state; a rename or a deletion returns the old alarm to
//! normal (journaled as `removed`, its retained event cleared), and a deleted alarm stays gone
//! across a restart.

use crate::alarms::{alarm, journal_into, publisher, put, setup, state_of, wait_state, ACME};
use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

fn update(server: &Server, id: &str, body: Value) -> Value {
    let resp = server
        .admin_in(ACME, Method::PUT, &rec_path(id))
        .json(&body)
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK)
}

/// The retained events under `$SYS/svc/alarms/acme/#` a new subscriber is given.
fn retained(server: &Server, client: &str) -> Vec<String> {
    let mut late = server.mqtt_admin(Proto::V5, Via::Tcp, client);
    late.subscribe("$SYS/svc/alarms/acme/#", 1);
    let mut topics = Vec::new();
    while let Some(p) = late.next_publish(Duration::from_millis(500)) {
        topics.push(p.topic);
    }
    topics
}

#[test]
fn editing_renaming_and_deleting_a_standing_alarm() {
    let mut server = setup();
    let created = alarm(
        &server,
        json!({"name": "hot", "tag": "acme/plant/temp", "kind": "high", "setpoint": 80}),
    );
    let id = created["id"].as_str().unwrap().to_string();
    let mut plc = publisher(&server, "plc");
    put(&mut plc, "acme/plant/temp", json!(90));
    wait_state(&server, ACME, "hot", "active_unacknowledged");

    // A new setpoint: the same alarm, still standing, nothing journaled.
    update(
        &server,
        &id,
        json!({"setpoint": 85, "priority": "critical"}),
    );
    let active = server.get_json(ACME, "/svc/alarms/active");
    assert_eq!(active[0]["name"], "hot");
    assert_eq!(active[0]["state"], "active_unacknowledged");
    assert_eq!(active[0]["setpoint"], 85);
    assert_eq!(active[0]["priority"], "critical");
    assert_eq!(
        journal_into(&server, "hot", "active_unacknowledged").len(),
        1
    );
    assert_eq!(retained(&server, "late1"), ["$SYS/svc/alarms/acme/hot"]);

    // Renamed and moved to another tag: `hot` is removed, `warm` starts normal and raises on
    // its own tag's values.
    update(
        &server,
        &id,
        json!({"name": "warm", "tag": "acme/plant/flow"}),
    );
    let removed = journal_into(&server, "hot", "normal");
    assert_eq!(removed[0]["cause"], "removed");
    assert_eq!(state_of(&server, ACME, "hot"), "normal");
    assert_eq!(state_of(&server, ACME, "warm"), "normal");
    assert!(retained(&server, "late2").is_empty());
    put(&mut plc, "acme/plant/temp", json!(99));
    put(&mut plc, "acme/plant/flow", json!(86));
    wait_state(&server, ACME, "warm", "active_unacknowledged");
    assert_eq!(state_of(&server, ACME, "hot"), "normal");

    // Deleted while standing: removed, and not back after a restart.
    let deleted = server
        .admin_in(ACME, Method::DELETE, &rec_path(&id))
        .send()
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::OK);
    let gone = journal_into(&server, "warm", "normal");
    assert_eq!(gone[0]["cause"], "removed");
    assert!(retained(&server, "late3").is_empty());
    server.terminate();
    server.restart();
    let mut plc = publisher(&server, "plc2");
    put(&mut plc, "acme/plant/flow", json!(99));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(server.get_json(ACME, "/svc/alarms/active"), json!([]));
    assert!(retained(&server, "late4").is_empty());
}
