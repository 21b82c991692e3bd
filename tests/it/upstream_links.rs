//! The supervised upstream connection (issue 14): every enabled upstream is connected and
//! stays so; an outage of the upstream (Mosquitto killed) shows as `backoff` with the cause and
//! the next retry, and the link comes back by itself when the upstream does; a wrong password
//! is an `error` naming `auth`; the connect/disconnect switch turns the link off and on.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

fn status(server: &Server, id: &str) -> Value {
    server.get_json(
        "domains:acme",
        &format!("/svc/upstreams/{}/status", enc(id)),
    )
}

fn wait_state(server: &Server, id: &str, state: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = status(server, id);
        if now["state"] == state {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the upstream did not become {state} within 20 s: {now}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Creates the upstream `corp` of `acme` on `peer` (user `edge`); returns its record id.
fn corp_upstream(server: &Server, peer: &PeerBroker) -> String {
    let created = server.create_record(
        "domains:acme",
        "upstreams",
        &json!({"name": "corp", "host": "127.0.0.1", "port": peer.port, "username": "edge",
            "password": "edge-pw-123"}),
    );
    created["id"].as_str().expect("id").to_string()
}

fn switch(server: &Server, id: &str, how: &str) -> Value {
    let resp = server
        .admin_in(
            "domains:acme",
            Method::POST,
            &format!("/svc/upstreams/{}/{how}", enc(id)),
        )
        .send()
        .expect("POST switch");
    json_ok(resp, StatusCode::OK)
}

#[test]
fn an_upstream_link_survives_an_outage_and_follows_its_switch() {
    let server = Server::start();
    server.create_domain("acme");
    let mut peer = PeerBroker::start("edge", "edge-pw-123");
    let created = server.create_record(
        "domains:acme",
        "upstreams",
        &json!({"name": "corp", "host": "127.0.0.1", "port": peer.port, "username": "edge",
            "password": "edge-pw-123", "reconnect": {"initial": "200ms", "max": "1s"}}),
    );
    let id = created["id"].as_str().expect("id").to_string();
    let connected = wait_state(&server, &id, "connected");
    assert_eq!(connected["name"], "corp");
    assert_eq!(connected["last_error"], Value::Null);
    let all = server.get_json("domains:acme", "/svc/upstreams/status");
    assert_eq!(all[0]["state"], "connected", "{all}");

    // The upstream goes away: backoff naming the cause and when it tries again.
    peer.kill();
    let down = wait_state(&server, &id, "backoff");
    assert_eq!(down["last_error"]["kind"], "tcp", "{down}");
    assert!(down["next_retry"].is_string(), "{down}");
    peer.restart();
    wait_state(&server, &id, "connected");

    // The switch: off (and stored as enabled false), on again.
    assert_eq!(switch(&server, &id, "disconnect")["state"], "disabled");
    let record = server.get_json("domains:acme", &rec_path(&id));
    assert_eq!(record["enabled"], false);
    switch(&server, &id, "connect");
    wait_state(&server, &id, "connected");

    // A wrong password is an error naming authentication; fixing it connects.
    let resp = server
        .admin_in("domains:acme", Method::PUT, &rec_path(&id))
        .json(&json!({"password": "wrong"}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    let refused = wait_state(&server, &id, "error");
    assert_eq!(refused["last_error"]["kind"], "auth", "{refused}");
    let resp = server
        .admin_in("domains:acme", Method::PUT, &rec_path(&id))
        .json(&json!({"password": "edge-pw-123"}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    wait_state(&server, &id, "connected");

    // Deleted: no status any more; another domain sees none.
    server.create_domain("beta");
    assert_eq!(
        server.get_json("domains:beta", "/svc/upstreams/status"),
        json!([])
    );
    let resp = server
        .admin_in("domains:acme", Method::DELETE, &rec_path(&id))
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let resp = server
        .admin_in(
            "domains:acme",
            Method::GET,
            &format!("/svc/upstreams/{}/status", enc(&id)),
        )
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &["upstream"]);
}

#[test]
fn enabled_upstreams_connect_when_the_server_starts() {
    let mut server = Server::start();
    server.create_domain("acme");
    let peer = PeerBroker::start("edge", "edge-pw-123");
    let id = corp_upstream(&server, &peer);
    wait_state(&server, &id, "connected");
    assert!(server.terminate().success());
    server.restart();
    wait_state(&server, &id, "connected");
}

#[test]
fn status_changes_are_published_retained_under_sys() {
    let server = Server::start();
    server.create_domain("acme");
    let peer = PeerBroker::start("edge", "edge-pw-123");
    let mut admin = server.mqtt_admin(Proto::V5, Via::Tcp, "status-watch");
    assert_eq!(admin.subscribe("$SYS/svc/upstreams/#", 1), Some(1));
    let id = corp_upstream(&server, &peer);
    let topic = "$SYS/svc/upstreams/acme/corp/state";
    let seen = admin.collect_until_match("the connected state", |m| {
        m.topic == topic && m.text().contains(r#""state":"connected""#)
    });
    assert!(
        seen.iter().all(|m| m.topic == topic),
        "other topics: {}",
        seen.len()
    );
    let states: Vec<String> = seen
        .iter()
        .filter_map(|m| serde_json::from_str::<Value>(&m.text()).ok())
        .filter_map(|v| v["state"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        states.last().map(String::as_str),
        Some("connected"),
        "{states:?}"
    );

    // A late subscriber gets the latest state, retained; `$` topics never become tags.
    let mut late = server.mqtt_admin(Proto::V3, Via::Tcp, "late-watch");
    assert_eq!(late.subscribe(topic, 1), Some(1));
    let retained = late.expect_publish(topic);
    assert!(
        retained.retain && retained.text().contains("connected"),
        "{}",
        retained.text()
    );
    let tags = server.string_list(None, "/svc/tag/list");
    assert!(!tags.iter().any(|t| t.starts_with('$')), "{tags:?}");

    // Deleted: the retained state is cleared.
    let resp = server
        .admin_in("domains:acme", Method::DELETE, &rec_path(&id))
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    admin.collect_until_match("the cleared state", |m| {
        m.topic == topic && m.payload.is_empty()
    });
}
