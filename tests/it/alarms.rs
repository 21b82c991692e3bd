//! Alarms (issue 37) driven by scripted value sequences over MQTT: every ISA-18.2 transition
//! with its journal entry and its `$SYS/svc/alarms/<domain>/<alarm>` event, the deadband,
//! on- and off-delays, latching, stale tags, rate of change, quality, shelving with expiry,
//! the enable condition, restarts in every state, values from REST writes, the event stream
//! and alarm health.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub(crate) const ACME: &str = "domains:acme";
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// A server with domain `acme` owning `acme/plant`.
pub(crate) fn setup() -> Server {
    let server = Server::start();
    server.create_domain("acme");
    server.create_record(
        ACME,
        "namespaces",
        &json!({"name": "plant", "path": "acme/plant"}),
    );
    server
}

pub(crate) fn alarm(server: &Server, body: Value) -> Value {
    server.create_record(ACME, "alarms", &body)
}

pub(crate) fn publisher(server: &Server, id: &str) -> Mqtt {
    server.mqtt_admin(Proto::V5, Via::Tcp, id)
}

pub(crate) fn put(mqtt: &mut Mqtt, topic: &str, value: Value) {
    mqtt.publish(topic, value.to_string(), 1, false);
}

/// The alarm's state as `GET /svc/alarms/active` lists it (`normal` when it is not listed).
pub(crate) fn state_of(server: &Server, domain: &str, name: &str) -> String {
    let active = server.get_json(domain, "/svc/alarms/active");
    active
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .map_or("normal".to_string(), |a| {
            a["state"].as_str().unwrap().to_string()
        })
}

pub(crate) fn wait_state(server: &Server, domain: &str, name: &str, wanted: &str) {
    server.poll(WAIT, &format!("{name} {wanted}"), || {
        (state_of(server, domain, name) == wanted).then_some(())
    });
}

pub(crate) fn act(server: &Server, action: &str, body: Value) -> reqwest::blocking::Response {
    server
        .admin_in(ACME, Method::POST, &format!("/svc/alarms/{action}"))
        .json(&body)
        .send()
        .unwrap()
}

pub(crate) fn journal(server: &Server, query: &str) -> Vec<Value> {
    server
        .get_json(ACME, &format!("/svc/alarms/journal{query}"))
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn an_alarm_goes_through_every_annunciated_state_with_journal_and_events() {
    let server = setup();
    alarm(
        &server,
        json!({"name": "hot", "tag": "acme/plant/temp", "kind": "high",
        "setpoint": 80, "deadband": 2, "priority": "high",
        "message": "{tag} is {value} {unit}, above {setpoint}"}),
    );
    let mut events = server.mqtt_admin(Proto::V5, Via::Tcp, "watcher");
    events.subscribe("$SYS/svc/alarms/acme/#", 1);
    let mut plc = publisher(&server, "plc");
    put(&mut plc, "acme/plant/temp", json!(79));
    put(&mut plc, "acme/plant/temp", json!(81.5));
    let raised = events.expect_publish("$SYS/svc/alarms/acme/hot");
    let event: Value = serde_json::from_slice(&raised.payload).unwrap();
    assert_eq!(event["state"], "active_unacknowledged");
    assert_eq!(event["previous"], "normal");
    assert_eq!(event["value"], 81.5);
    assert_eq!(event["priority"], "high");
    assert_eq!(event["message"], "acme/plant/temp is 81.5 , above 80");
    assert_eq!(state_of(&server, ACME, "hot"), "active_unacknowledged");
    // Inside the deadband: still active.
    put(&mut plc, "acme/plant/temp", json!(79));
    // Acknowledged by an operator, with a comment.
    let acked = json_ok(
        act(
            &server,
            "acknowledge",
            json!({"alarm": "hot", "comment": "on it"}),
        ),
        StatusCode::OK,
    );
    assert_eq!(acked["state"], "active_acknowledged");
    put(&mut plc, "acme/plant/temp", json!(77));
    wait_state(&server, ACME, "hot", "normal");
    // Raised again, returned before anyone acknowledged, then acknowledged.
    put(&mut plc, "acme/plant/temp", json!(95));
    wait_state(&server, ACME, "hot", "active_unacknowledged");
    put(&mut plc, "acme/plant/temp", json!(20));
    wait_state(&server, ACME, "hot", "returned_unacknowledged");
    let done = json_ok(
        act(&server, "acknowledge", json!({"alarm": "hot"})),
        StatusCode::OK,
    );
    assert_eq!(done["state"], "normal");
    assert_error(
        act(&server, "acknowledge", json!({"alarm": "hot"})),
        StatusCode::CONFLICT,
        &["nothing to acknowledge"],
    );
    assert_error(
        act(&server, "acknowledge", json!({"alarm": "cold"})),
        StatusCode::NOT_FOUND,
        &["cold"],
    );
    // Every transition is in the journal, newest first, with the value and who acted.
    let entries = journal(&server, "?alarm=hot");
    let states: Vec<&str> = entries
        .iter()
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "normal",
            "returned_unacknowledged",
            "active_unacknowledged",
            "normal",
            "active_acknowledged",
            "active_unacknowledged"
        ]
    );
    assert_eq!(entries[4]["who"], "admin");
    assert_eq!(entries[4]["comment"], "on it");
    assert_eq!(entries[5]["value"], 81.5);
    assert!(is_rfc3339_millis_utc(entries[5]["at"].as_str().unwrap()));
    assert_eq!(journal(&server, "?state=active_unacknowledged").len(), 2);
    assert_eq!(journal(&server, "?who=admin").len(), 2);
    assert_eq!(journal(&server, "?limit=1").len(), 1);
    let older = journal(&server, &format!("?before={}", entries[0]["id"]));
    assert_eq!(older.len(), 5);
    // The retained event is cleared once normal: a new subscriber sees nothing.
    let mut late = server.mqtt_admin(Proto::V5, Via::Tcp, "late");
    late.subscribe("$SYS/svc/alarms/acme/#", 1);
    assert!(late.next_publish(Duration::from_millis(500)).is_none());
}

#[test]
fn delays_latching_rate_quality_and_stale() {
    let server = setup();
    alarm(
        &server,
        json!({"name": "delayed", "tag": "acme/plant/a", "kind": "high", "setpoint": 10,
        "on_delay": "1s", "off_delay": "1s"}),
    );
    alarm(
        &server,
        json!({"name": "latch", "tag": "acme/plant/b", "kind": "low", "setpoint": 5, "latching": true}),
    );
    alarm(
        &server,
        json!({"name": "fast", "tag": "acme/plant/c", "kind": "rate_of_change", "setpoint": 10}),
    );
    alarm(
        &server,
        json!({"name": "bad", "tag": "acme/plant/d", "kind": "bad"}),
    );
    alarm(
        &server,
        json!({"name": "quiet", "tag": "acme/plant/e", "kind": "stale", "setpoint": 1}),
    );
    alarm(
        &server,
        json!({"name": "trip", "tag": "acme/plant/f", "kind": "true", "priority": "critical"}),
    );
    let mut plc = publisher(&server, "plc");
    // On-delay: a blip shorter than the delay raises nothing; a lasting excursion does.
    put(&mut plc, "acme/plant/a", json!(11));
    std::thread::sleep(Duration::from_millis(300));
    put(&mut plc, "acme/plant/a", json!(9));
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(state_of(&server, ACME, "delayed"), "normal");
    let started = Instant::now();
    put(&mut plc, "acme/plant/a", json!(12));
    wait_state(&server, ACME, "delayed", "active_unacknowledged");
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "raised after {:?}",
        started.elapsed()
    );
    put(&mut plc, "acme/plant/a", json!(1));
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        state_of(&server, ACME, "delayed"),
        "active_unacknowledged",
        "the off-delay holds it"
    );
    wait_state(&server, ACME, "delayed", "returned_unacknowledged");
    // Latching: stays latched after returning, until acknowledged.
    put(&mut plc, "acme/plant/b", json!(4));
    wait_state(&server, ACME, "latch", "active_unacknowledged");
    json_ok(
        act(&server, "acknowledge", json!({"alarm": "latch"})),
        StatusCode::OK,
    );
    put(&mut plc, "acme/plant/b", json!(50));
    wait_state(&server, ACME, "latch", "latched");
    assert_eq!(
        json_ok(
            act(&server, "acknowledge", json!({"alarm": "latch"})),
            StatusCode::OK
        )["state"],
        "normal"
    );
    // Rate of change, by the values' own timestamps: 30 units in one second.
    put(
        &mut plc,
        "acme/plant/c",
        json!({"value": 0, "timestamp": "2026-01-01T00:00:00Z"}),
    );
    put(
        &mut plc,
        "acme/plant/c",
        json!({"value": 5, "timestamp": "2026-01-01T00:00:01Z"}),
    );
    put(
        &mut plc,
        "acme/plant/c",
        json!({"value": 35, "timestamp": "2026-01-01T00:00:02Z"}),
    );
    wait_state(&server, ACME, "fast", "active_unacknowledged");
    let raised = journal(&server, "?alarm=fast");
    assert_eq!(raised[0]["value"], 35);
    // Quality.
    put(
        &mut plc,
        "acme/plant/d",
        json!({"value": 1, "quality": "bad"}),
    );
    wait_state(&server, ACME, "bad", "active_unacknowledged");
    put(
        &mut plc,
        "acme/plant/d",
        json!({"value": 1, "quality": "good"}),
    );
    wait_state(&server, ACME, "bad", "returned_unacknowledged");
    // Stale: no value for a second.
    put(&mut plc, "acme/plant/e", json!(1));
    wait_state(&server, ACME, "quiet", "active_unacknowledged");
    put(&mut plc, "acme/plant/e", json!(2));
    wait_state(&server, ACME, "quiet", "returned_unacknowledged");
    // A boolean trip, and the summary's order: critical first.
    put(&mut plc, "acme/plant/f", json!(true));
    wait_state(&server, ACME, "trip", "active_unacknowledged");
    let active = server.get_json(ACME, "/svc/alarms/active");
    assert_eq!(active[0]["name"], "trip");
    let critical = server.get_json(ACME, "/svc/alarms/active?priority=critical");
    assert_eq!(critical.as_array().unwrap().len(), 1);
}

#[test]
fn shelving_expires_and_the_enable_condition_suppresses() {
    let server = setup();
    alarm(
        &server,
        json!({"name": "hot", "tag": "acme/plant/temp", "kind": "high", "setpoint": 80}),
    );
    alarm(
        &server,
        json!({"name": "flow", "tag": "acme/plant/flow", "kind": "low", "setpoint": 5,
        "enable_tag": "acme/plant/pump", "enable_value": "running"}),
    );
    let mut plc = publisher(&server, "plc");
    put(&mut plc, "acme/plant/temp", json!(90));
    wait_state(&server, ACME, "hot", "active_unacknowledged");
    assert_error(
        act(&server, "shelve", json!({"alarm": "hot", "duration": "1s"})),
        StatusCode::BAD_REQUEST,
        &["reason"],
    );
    assert_error(
        act(
            &server,
            "shelve",
            json!({"alarm": "hot", "reason": "x", "duration": "soon"}),
        ),
        StatusCode::BAD_REQUEST,
        &["duration"],
    );
    assert_error(
        act(
            &server,
            "shelve",
            json!({"alarm": "hot", "reason": "x", "duration": "40d"}),
        ),
        StatusCode::BAD_REQUEST,
        &["30 days"],
    );
    let shelved = json_ok(
        act(
            &server,
            "shelve",
            json!({"alarm": "hot", "reason": "sensor swap", "duration": "2s"}),
        ),
        StatusCode::OK,
    );
    assert_eq!(shelved["state"], "shelved");
    assert_eq!(shelved["shelved"]["reason"], "sensor swap");
    assert_eq!(shelved["shelved"]["by"], "admin");
    put(&mut plc, "acme/plant/temp", json!(95));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(state_of(&server, ACME, "hot"), "shelved");
    // The shelve expires: the condition still holds, so it is raised again.
    wait_state(&server, ACME, "hot", "active_unacknowledged");
    let expiry = &journal(&server, "?alarm=hot")[0];
    assert_eq!(expiry["cause"], "shelve-expired");
    // Unshelving by hand, and out of service.
    assert_error(
        act(
            &server,
            "shelve",
            json!({"alarm": "hot", "reason": "again", "until": "2099-01-01T00:00:00Z"}),
        ),
        StatusCode::BAD_REQUEST,
        &["30 days"],
    );
    json_ok(
        act(
            &server,
            "shelve",
            json!({"alarm": "hot", "reason": "again", "duration": "1h"}),
        ),
        StatusCode::OK,
    );
    assert_eq!(
        json_ok(
            act(&server, "unshelve", json!({"alarm": "hot"})),
            StatusCode::OK
        )["state"],
        "active_unacknowledged"
    );
    assert_eq!(
        json_ok(
            act(
                &server,
                "out-of-service",
                json!({"alarm": "hot", "comment": "calibration"})
            ),
            StatusCode::OK
        )["state"],
        "out_of_service"
    );
    assert_error(
        act(&server, "out-of-service", json!({"alarm": "hot"})),
        StatusCode::CONFLICT,
        &["already"],
    );
    assert_eq!(
        json_ok(
            act(&server, "in-service", json!({"alarm": "hot"})),
            StatusCode::OK
        )["state"],
        "active_unacknowledged"
    );
    // Enable condition: the flow alarm only counts while the pump runs.
    wait_state(&server, ACME, "flow", "suppressed");
    put(&mut plc, "acme/plant/flow", json!(1));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(state_of(&server, ACME, "flow"), "suppressed");
    put(&mut plc, "acme/plant/pump", json!("running"));
    wait_state(&server, ACME, "flow", "active_unacknowledged");
    put(&mut plc, "acme/plant/pump", json!("stopped"));
    wait_state(&server, ACME, "flow", "suppressed");
}

/// Puts one alarm in each state, restarts svc, and finds every state as it was.
#[test]
fn every_state_survives_a_restart() {
    let mut server = setup();
    let states = [
        ("unack", "active_unacknowledged"),
        ("acked", "active_acknowledged"),
        ("returned", "returned_unacknowledged"),
        ("latched", "latched"),
        ("shelved", "shelved"),
        ("suppressed", "suppressed"),
        ("oos", "out_of_service"),
    ];
    for (name, _) in states {
        let mut body = json!({"name": name, "tag": format!("acme/plant/{name}"), "kind": "high", "setpoint": 10, "latching": name == "latched"});
        if name == "suppressed" {
            body["enable_tag"] = json!("acme/plant/enable");
        }
        alarm(&server, body);
    }
    let mut plc = publisher(&server, "plc");
    for (name, _) in states {
        put(&mut plc, &format!("acme/plant/{name}"), json!(20));
    }
    wait_state(&server, ACME, "unack", "active_unacknowledged");
    json_ok(
        act(&server, "acknowledge", json!({"alarm": "acked"})),
        StatusCode::OK,
    );
    json_ok(
        act(&server, "acknowledge", json!({"alarm": "latched"})),
        StatusCode::OK,
    );
    put(&mut plc, "acme/plant/returned", json!(0));
    put(&mut plc, "acme/plant/latched", json!(0));
    json_ok(
        act(
            &server,
            "shelve",
            json!({"alarm": "shelved", "reason": "r", "duration": "1h"}),
        ),
        StatusCode::OK,
    );
    json_ok(
        act(&server, "out-of-service", json!({"alarm": "oos"})),
        StatusCode::OK,
    );
    for (name, state) in states {
        wait_state(&server, ACME, name, state);
    }
    let journal_before = journal(&server, "").len();
    server.terminate();
    server.restart();
    for (name, state) in states {
        assert_eq!(
            state_of(&server, ACME, name),
            state,
            "{name} after the restart"
        );
    }
    assert_eq!(
        journal(&server, "").len(),
        journal_before,
        "a restart changes no state"
    );
    // And they carry on from there.
    let mut plc = publisher(&server, "plc2");
    put(&mut plc, "acme/plant/acked", json!(0));
    wait_state(&server, ACME, "acked", "normal");
}

#[test]
fn health_reports_chattering_rate_and_counts() {
    let server = setup();
    alarm(
        &server,
        json!({"name": "chatty", "tag": "acme/plant/x", "kind": "high", "setpoint": 1}),
    );
    let mut plc = publisher(&server, "plc");
    for _ in 0..3 {
        put(&mut plc, "acme/plant/x", json!(2));
        put(&mut plc, "acme/plant/x", json!(0));
    }
    put(&mut plc, "acme/plant/x", json!(2));
    wait_state(&server, ACME, "chatty", "active_unacknowledged");
    let health = server.get_json(ACME, "/svc/alarms/health");
    assert_eq!(health["rate_10min"], 4, "{health}");
    assert_eq!(health["chattering"], json!(["chatty"]));
    assert_eq!(health["flood"], false);
    assert_eq!(health["counts"]["unacknowledged"], 1);
    let metrics = server.scrape();
    assert_eq!(
        sample(&metrics, "svc_alarm_rate_10min{domain=\"acme\"}"),
        4.0
    );
    assert_eq!(
        sample(&metrics, "svc_alarms_chattering{domain=\"acme\"}"),
        1.0
    );
}

#[test]
fn malformed_definitions_and_requests_are_refused_with_a_sentence() {
    let server = setup();
    server.create_domain("beta");
    server.create_record(
        "domains:beta",
        "namespaces",
        &json!({"name": "b", "path": "beta"}),
    );
    let create = |body: Value| {
        server
            .admin_in(ACME, Method::POST, "/svc/alarms")
            .json(&body)
            .send()
            .unwrap()
    };
    assert_error(
        create(json!({"name": "x", "tag": "acme/plant/t", "kind": "hot", "setpoint": 1})),
        StatusCode::BAD_REQUEST,
        &["kind"],
    );
    assert_error(
        create(json!({"name": "x", "tag": "acme/plant/t", "kind": "high"})),
        StatusCode::BAD_REQUEST,
        &["setpoint"],
    );
    assert_error(
        create(json!({"name": "x", "tag": "beta/t", "kind": "high", "setpoint": 1})),
        StatusCode::BAD_REQUEST,
        &["namespace"],
    );
    assert_error(
        create(
            json!({"name": "x", "tag": "acme/plant/t", "kind": "high", "setpoint": 1, "enable_tag": "beta/run"}),
        ),
        StatusCode::BAD_REQUEST,
        &["enable_tag"],
    );
    assert_error(
        create(
            json!({"name": "x", "tag": "acme/plant/t", "kind": "high", "setpoint": 1, "on_delay": "later"}),
        ),
        StatusCode::BAD_REQUEST,
        &["on_delay"],
    );
    for query in [
        "?state=burning",
        "?priority=urgent",
        "?from=yesterday",
        "?limit=0",
    ] {
        let resp = server
            .admin_in(ACME, Method::GET, &format!("/svc/alarms/journal{query}"))
            .send()
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{query}");
    }
    let bad_body = server
        .admin_in(ACME, Method::POST, "/svc/alarms/acknowledge")
        .body("{")
        .header("content-type", "application/json")
        .send()
        .unwrap();
    assert_eq!(bad_body.status(), StatusCode::BAD_REQUEST);
    assert_error(
        act(&server, "acknowledge", json!({"alarm": ""})),
        StatusCode::BAD_REQUEST,
        &["alarm"],
    );
    assert_eq!(server.count(ACME, "alarms"), 0, "nothing was stored");
}
