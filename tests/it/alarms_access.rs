//! Alarms and tenancy (issue 37): another domain's alarms are invisible by every route (active
//! list, journal, health, stream, record routes, MQTT wildcards on `$SYS`), and acting on an
//! alarm needs the `alarms` feature's `ack` action or `read-write`: a reader is refused with
//! 401, an operator with `ack` may acknowledge, and the journal records who did.

use crate::alarms::{alarm, publisher, put, setup, state_of, wait_state, ACME};
use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const BETA: &str = "domains:beta";

fn as_user(
    server: &Server,
    token: &str,
    domain: &str,
    method: Method,
    path: &str,
) -> reqwest::blocking::RequestBuilder {
    server.with_token_in(token, domain, method, path)
}

#[test]
fn acting_needs_ack_or_read_write_and_the_journal_records_who() {
    let server = setup();
    alarm(
        &server,
        json!({"name": "hot", "tag": "acme/plant/temp", "kind": "high", "setpoint": 80}),
    );
    let reader = server.user_with_grants(ACME, "reader", &[("alarms", "read", "*")]);
    let operator = server.user_with_grants(
        ACME,
        "operator",
        &[("alarms", "read", "*"), ("alarms", "ack", "*")],
    );
    let engineer = server.user_with_grants(ACME, "engineer", &[("alarms", "read-write", "*")]);
    let nobody = server.user_with_grants(ACME, "nobody", &[("tags", "read", "*")]);
    let mut plc = publisher(&server, "plc");
    put(&mut plc, "acme/plant/temp", json!(90));
    wait_state(&server, ACME, "hot", "active_unacknowledged");
    let ack = |token: &str| {
        as_user(
            &server,
            token,
            ACME,
            Method::POST,
            "/svc/alarms/acknowledge",
        )
        .json(&json!({"alarm": "hot", "comment": "seen"}))
        .send()
        .unwrap()
    };
    assert_error(ack(&reader), StatusCode::UNAUTHORIZED, &["ack"]);
    let resp = as_user(&server, &nobody, ACME, Method::GET, "/svc/alarms/active")
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    // The reader sees it, cannot change it or its definition.
    let listed = json_ok(
        as_user(&server, &reader, ACME, Method::GET, "/svc/alarms/active")
            .send()
            .unwrap(),
        StatusCode::OK,
    );
    assert_eq!(listed[0]["name"], "hot");
    let shelve = as_user(&server, &reader, ACME, Method::POST, "/svc/alarms/shelve")
        .json(&json!({"alarm": "hot", "reason": "r", "duration": "1h"}))
        .send()
        .unwrap();
    assert_eq!(shelve.status(), StatusCode::UNAUTHORIZED);
    let create = as_user(&server, &operator, ACME, Method::POST, "/svc/alarms")
        .json(&json!({"name": "x", "tag": "acme/plant/x", "kind": "true"}))
        .send()
        .unwrap();
    assert_eq!(
        create.status(),
        StatusCode::UNAUTHORIZED,
        "ack is not read-write on definitions"
    );
    assert_eq!(
        json_ok(ack(&operator), StatusCode::OK)["state"],
        "active_acknowledged"
    );
    put(&mut plc, "acme/plant/temp", json!(0));
    put(&mut plc, "acme/plant/temp", json!(95));
    wait_state(&server, ACME, "hot", "active_unacknowledged");
    assert_eq!(
        json_ok(ack(&engineer), StatusCode::OK)["state"],
        "active_acknowledged"
    );
    let journal = server.get_json(ACME, "/svc/alarms/journal?state=active_acknowledged");
    let who: Vec<&str> = journal
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["who"].as_str().unwrap())
        .collect();
    assert_eq!(who, ["engineer", "operator"]);
    assert_eq!(journal[1]["comment"], "seen");
}

#[test]
fn another_domains_alarms_are_invisible_by_every_route() {
    let server = setup();
    server.create_domain("beta");
    server.create_record(BETA, "namespaces", &json!({"name": "b", "path": "beta"}));
    alarm(
        &server,
        json!({"name": "hot", "tag": "acme/plant/temp", "kind": "high", "setpoint": 80}),
    );
    server.create_record(
        BETA,
        "alarms",
        &json!({"name": "cold", "tag": "beta/temp", "kind": "low", "setpoint": 0}),
    );
    let acme_user = server.user_with_grants(ACME, "acme-op", &[("alarms", "read", "*")]);
    let acme_key = server.create_api_key(&acme_user, "acme-op-key").1;
    let beta_user = server.user_with_grants(
        BETA,
        "beta-op",
        &[("alarms", "read-write", "*"), ("tags", "read-write", "*")],
    );
    let beta_key = server.create_api_key(&beta_user, "beta-op-key").1;
    let mut beta_mqtt =
        server.mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "beta-watch").creds("beta-op", &beta_key));
    beta_mqtt.subscribe("$SYS/#", 1);
    beta_mqtt.subscribe("#", 1);
    let mut acme_mqtt =
        server.mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "acme-watch").creds("acme-op", &acme_key));
    acme_mqtt.subscribe("$SYS/svc/alarms/#", 1);
    let mut plc = publisher(&server, "plc");
    put(&mut plc, "acme/plant/temp", json!(90));
    wait_state(&server, ACME, "hot", "active_unacknowledged");
    // The acme reader gets acme's event on MQTT; beta gets nothing of acme's.
    let event = acme_mqtt.expect_publish("$SYS/svc/alarms/acme/hot");
    assert!(String::from_utf8_lossy(&event.payload).contains("active_unacknowledged"));
    while let Some(msg) = beta_mqtt.next_publish(Duration::from_millis(700)) {
        assert!(!msg.topic.contains("acme"), "beta received {}", msg.topic);
    }
    // REST: beta's routes list beta's alarms only.
    for path in [
        "/svc/alarms/active",
        "/svc/alarms/journal",
        "/svc/alarms/all",
    ] {
        let body: Value = json_ok(
            as_user(&server, &beta_user, BETA, Method::GET, path)
                .send()
                .unwrap(),
            StatusCode::OK,
        );
        assert!(!body.to_string().contains("acme"), "{path}: {body}");
    }
    let health = json_ok(
        as_user(&server, &beta_user, BETA, Method::GET, "/svc/alarms/health")
            .send()
            .unwrap(),
        StatusCode::OK,
    );
    assert_eq!(
        health["counts"]["total"], 1,
        "beta's own alarm only: {health}"
    );
    // Acting with Domain: beta on acme's alarm finds nothing.
    let resp = as_user(
        &server,
        &beta_user,
        BETA,
        Method::POST,
        "/svc/alarms/acknowledge",
    )
    .json(&json!({"alarm": "hot"}))
    .send()
    .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    // Asking for acme with beta's credential is refused.
    let resp = as_user(&server, &beta_user, ACME, Method::GET, "/svc/alarms/active")
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    // The stream's snapshot is beta's.
    let resp = as_user(&server, &beta_user, BETA, Method::GET, "/svc/alarms/stream")
        .timeout(Duration::from_secs(5))
        .send()
        .unwrap();
    let mut first = String::new();
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(resp);
    while !first.starts_with("data:") {
        first.clear();
        reader.read_line(&mut first).unwrap();
    }
    assert!(!first.contains("acme"), "{first}");
    assert_eq!(state_of(&server, ACME, "hot"), "active_unacknowledged");
}
