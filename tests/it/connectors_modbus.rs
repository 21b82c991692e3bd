//! Modbus TCP connectors end to end (issue 35), against pymodbus's server started by the test:
//! values the device holds reach their tags and the historian with the right signs and orders;
//! writes through `POST /svc/tag/write` and the MQTT write topic reach the device and answer
//! after it did (200, 422 with its refusal, 503 when it cannot be reached); an exception on one
//! point leaves the others going; the device killed and restarted, or down when the connector
//! starts, or frozen so requests time out: the tags turn `bad` once and values flow again
//! within the backoff.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const DOMAIN: &str = "domains:acme";

fn setup() -> Server {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    server.create_record(
        DOMAIN,
        "namespaces",
        &json!({"name": "plant", "path": "acme/plant"}),
    );
    server
}

/// A Modbus connector on `port` with `points`, reconnecting quickly.
fn connector(name: &str, port: u16, points: Value) -> Value {
    json!({
        "name": name,
        "kind": "modbus",
        "settings": {"host": "127.0.0.1", "port": port, "timeout": "500ms",
            "timeouts_before_reconnect": 2},
        "reconnect": {"initial": "200ms", "max": "1s", "jitter": 0.1},
        "points": points,
    })
}

fn holding(tag: &str, address: u16, kind: &str) -> Value {
    json!({"tag": tag, "address": {"function": "holding_register", "address": address,
        "type": kind, "poll_interval": "100ms"}})
}

fn create(server: &Server, body: &Value) -> Value {
    server.create_connector(DOMAIN, body)
}

#[test]
fn values_keep_their_signs_and_orders_and_reach_the_historian() {
    // 0xFFF4 is -12 as int16; -12 as int32 is FFFF FFF4, written here in all four orders.
    let peer = DevicePeer::python(
        "modbus_server.py",
        &[
            "--set",
            "hr:100=0xFFF4",
            "--set",
            "hr:110=0xFFFF,0xFFF4",
            "--set",
            "hr:120=0xFFF4,0xFFFF",
            "--set",
            "hr:130=0xFFFF,0xF4FF",
            "--set",
            "hr:140=0xF4FF,0xFFFF",
            "--set",
            "hr:150=0x41C8,0x0000",
            "--set",
            "hr:160=0xFFFF,0xFFFF,0xFFFF,0xFFFF",
            "--set",
            "hr:170=0x0005",
            "--set",
            "co:10=1",
        ],
    );
    let server = setup();
    let mut points = vec![
        json!({"tag": "acme/plant/i16", "historize": true, "unit": "degC",
            "address": {"function": "holding_register", "address": 100, "type": "int16",
                "poll_interval": "100ms"}}),
        holding("acme/plant/u16", 100, "uint16"),
        holding("acme/plant/f32", 150, "float32"),
        holding("acme/plant/u64", 160, "uint64"),
        holding("acme/plant/i64", 160, "int64"),
        json!({"tag": "acme/plant/scaled", "scale": 0.5, "offset": 10,
            "address": {"function": "holding_register", "address": 170, "type": "uint16",
                "poll_interval": "100ms"}}),
        json!({"tag": "acme/plant/coil", "address": {"function": "coil", "address": 10,
            "poll_interval": "100ms"}}),
    ];
    for (address, byte_order, word_order) in [
        (110, "big", "big"),
        (120, "big", "little"),
        (130, "little", "big"),
        (140, "little", "little"),
    ] {
        points.push(
            json!({"tag": format!("acme/plant/i32_{byte_order}_{word_order}"),
            "address": {"function": "holding_register", "address": address, "type": "int32",
                "byte_order": byte_order, "word_order": word_order, "poll_interval": "100ms"}}),
        );
    }
    let created = create(&server, &connector("press", peer.port, json!(points)));
    let id = created["id"].as_str().unwrap();
    server.wait_connector(DOMAIN, id, "connected");

    let expect = [
        ("acme/plant/i16", json!(-12)),
        ("acme/plant/u16", json!(65524)),
        ("acme/plant/f32", json!(25.0)),
        ("acme/plant/u64", json!(u64::MAX)),
        ("acme/plant/i64", json!(-1)),
        ("acme/plant/scaled", json!(12.5)),
        ("acme/plant/coil", json!(true)),
        ("acme/plant/i32_big_big", json!(-12)),
        ("acme/plant/i32_big_little", json!(-12)),
        ("acme/plant/i32_little_big", json!(-12)),
        ("acme/plant/i32_little_little", json!(-12)),
    ];
    for (topic, value) in &expect {
        let payload = server.wait_device_tag(DOMAIN, topic, |p| p.get("value").is_some());
        assert_eq!(&payload["value"], value, "{topic}: {payload}");
        assert_eq!(payload["quality"], "good", "{topic}: {payload}");
        assert!(
            is_rfc3339_millis_utc(payload["timestamp"].as_str().unwrap_or_default()),
            "{payload}"
        );
    }

    // The point's tag was created with its settings; the historian keeps the value.
    let tags = server.get_json(DOMAIN, "/svc/tags/all");
    let tag = tags
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == "acme/plant/i16")
        .expect("the point's tag");
    assert_eq!(
        (tag["historize"].clone(), tag["unit"].clone()),
        (json!(true), json!("degC"))
    );
    let history = server.history(DOMAIN, "acme/plant/i16", 1);
    assert_eq!(history[0]["value"], -12, "{history}");

    // The status counts values and lists every point with its quality.
    let status = server.connector_status(DOMAIN, id);
    assert!(
        status["values_in"].as_u64().unwrap() >= expect.len() as u64,
        "{status}"
    );
    assert_eq!(status["points"].as_array().unwrap().len(), expect.len());
    assert!(
        status["points"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["quality"] == "good"),
        "{status}"
    );
    assert_eq!(status["device"]["protocol"], "modbus", "{status}");
    // Unchanged values are not published again at every poll.
    let before = server.history(DOMAIN, "acme/plant/i16", 1);
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(server.history(DOMAIN, "acme/plant/i16", 1), before);
}

#[test]
fn writes_answer_after_the_device_and_the_tag_follows_it() {
    let peer = DevicePeer::python("modbus_server.py", &["--set", "hr:200=7"]);
    let server = setup();
    let points = json!([
        {"tag": "acme/plant/setpoint", "writable": true, "scale": 0.1,
            "address": {"function": "holding_register", "address": 200, "type": "int16",
                "poll_interval": "100ms"}},
        {"tag": "acme/plant/pump", "writable": true,
            "address": {"function": "coil", "address": 3, "poll_interval": "100ms"}},
        {"tag": "acme/plant/missing", "writable": true,
            "address": {"function": "holding_register", "address": 20000, "type": "uint16",
                "poll_interval": "100ms"}},
        {"tag": "acme/plant/readonly",
            "address": {"function": "holding_register", "address": 201, "type": "uint16",
                "poll_interval": "100ms"}},
    ]);
    let created = create(&server, &connector("mixer", peer.port, points));
    let id = created["id"].as_str().unwrap().to_string();
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/plant/setpoint", |p| p["value"] == 0.7);

    // Scaled back to the device's units (-4.2 / 0.1 = -42), then the tag follows the device.
    server.write_and_read_back(DOMAIN, "acme/plant/setpoint", json!(-4.2));
    server.write_and_read_back(DOMAIN, "acme/plant/pump", json!(true));

    // The device refuses an address it does not have: 422 with its reason; the point reads
    // bad while the others go on.
    assert_error(
        server.write_tag(DOMAIN, "acme/plant/missing", json!(1)),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["exception"],
    );
    server.wait_device_tag(DOMAIN, "acme/plant/missing", |p| p["quality"] == "bad");
    let missing = server.point_status(DOMAIN, &id, "acme/plant/missing");
    assert!(
        missing["error"]
            .as_str()
            .unwrap_or_default()
            .contains("exception"),
        "{missing}"
    );
    assert_eq!(server.connector_status(DOMAIN, &id)["state"], "connected");
    // A value that does not fit the type, and a point that is not writable: 400.
    assert_error(
        server.write_tag(DOMAIN, "acme/plant/setpoint", json!(99999)),
        StatusCode::BAD_REQUEST,
        &[],
    );
    assert_error(
        server.write_tag(DOMAIN, "acme/plant/readonly", json!(1)),
        StatusCode::BAD_REQUEST,
        &["not writable"],
    );

    // An MQTT 5 publish on the write topic with a response topic gets the device's answer.
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "writer");
    mqtt.subscribe("acme/plant/answers", 1);
    assert_eq!(
        mqtt.publish_request(
            "acme/plant/setpoint/set",
            "12.3",
            "acme/plant/answers",
            b"c-1"
        ),
        "Success"
    );
    let answer = mqtt.expect_publish("acme/plant/answers");
    assert_eq!(answer.correlation.as_deref(), Some(&b"c-1"[..]));
    let answer: Value = serde_json::from_slice(&answer.payload).unwrap();
    assert_eq!(answer["ok"], true, "{answer}");
    server.wait_device_tag(DOMAIN, "acme/plant/setpoint", |p| p["value"] == 12.3);
    // The write topic is not taken for a tag.
    let tags = server.string_list(Some(DOMAIN), "/svc/tag/list");
    assert!(!tags.iter().any(|t| t.ends_with("/set")), "{tags:?}");

    // The device gone: 503, and the MQTT answer says so too.
    drop(peer);
    server.wait_connector(DOMAIN, &id, "backoff");
    assert_error(
        server.write_tag(DOMAIN, "acme/plant/setpoint", json!(1)),
        StatusCode::SERVICE_UNAVAILABLE,
        &["not connected"],
    );
    mqtt.publish_request(
        "acme/plant/setpoint/set",
        "{\"value\": 1}",
        "acme/plant/answers",
        b"c-2",
    );
    let answer: Value =
        serde_json::from_slice(&mqtt.expect_publish("acme/plant/answers").payload).unwrap();
    assert_eq!(
        (answer["ok"].clone(), answer["status"].clone()),
        (json!(false), json!(503))
    );
}

#[test]
fn a_device_lost_and_back_turns_bad_once_then_flows_again() {
    let mut peer = DevicePeer::python("modbus_server.py", &["--set", "hr:1=42"]);
    let server = setup();
    let points = json!([{"tag": "acme/plant/level", "historize": true,
        "address": {"function": "holding_register", "address": 1, "poll_interval": "100ms"}}]);
    let created = create(&server, &connector("tank", peer.port, points));
    let id = created["id"].as_str().unwrap().to_string();
    server.wait_device_tag(DOMAIN, "acme/plant/level", |p| p["value"] == 42);

    peer.kill();
    let status = server.wait_connector(DOMAIN, &id, "backoff");
    assert!(
        ["tcp", "timeout"].contains(&status["last_error"]["kind"].as_str().unwrap_or_default()),
        "{status}"
    );
    let bad = server.wait_device_tag(DOMAIN, "acme/plant/level", |p| p["quality"] == "bad");
    assert_eq!(bad["value"], 42, "the last value, marked bad: {bad}");
    // Bad once, however many attempts fail meanwhile.
    std::thread::sleep(Duration::from_millis(2500));
    let history = server.history(DOMAIN, "acme/plant/level", 2);
    assert_eq!(history[0]["quality"], "bad", "{history}");
    assert!(
        server.connector_status(DOMAIN, &id)["attempts"]
            .as_u64()
            .unwrap()
            >= 2
    );

    peer.restart();
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/plant/level", |p| p["quality"] == "good");
    let history = server.history(DOMAIN, "acme/plant/level", 3);
    assert!(history[0].get("quality").is_none(), "good again: {history}");
}

#[test]
fn a_device_down_at_start_is_reached_once_it_comes_up() {
    let port = free_port();
    let server = setup();
    let points = json!([{"tag": "acme/plant/late", "address": {"function": "input_register",
        "address": 5, "poll_interval": "100ms"}}]);
    let created = create(&server, &connector("late", port, points));
    let id = created["id"].as_str().unwrap().to_string();
    let status = server.wait_connector(DOMAIN, &id, "backoff");
    assert_eq!(status["last_error"]["kind"], "tcp", "{status}");
    assert!(status["next_retry"].is_string(), "{status}");

    let _peer = DevicePeer::python_at(port, "modbus_server.py", &["--set", "ir:5=9"]);
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/plant/late", |p| p["value"] == 9);
}

#[test]
fn a_frozen_device_is_caught_by_the_watchdog() {
    let peer = DevicePeer::python("modbus_server.py", &["--set", "hr:1=1"]);
    let server = setup();
    let points = json!([{"tag": "acme/plant/frozen", "address": {"function": "holding_register",
        "address": 1, "poll_interval": "100ms"}}]);
    let created = create(&server, &connector("frozen", peer.port, points));
    let id = created["id"].as_str().unwrap().to_string();
    server.wait_device_tag(DOMAIN, "acme/plant/frozen", |p| p["value"] == 1);

    // The connection stays open and nothing answers: requests time out until the watchdog
    // ends the link.
    peer.freeze();
    let status = server.wait_connector(DOMAIN, &id, "backoff");
    assert_eq!(status["last_error"]["kind"], "timeout", "{status}");
    server.wait_device_tag(DOMAIN, "acme/plant/frozen", |p| p["quality"] == "bad");
    peer.thaw();
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/plant/frozen", |p| p["quality"] == "good");
}

#[test]
fn the_test_route_reaches_a_device_or_names_the_cause() {
    let peer = DevicePeer::python("modbus_server.py", &[]);
    let server = setup();
    let body = connector(
        "probe",
        peer.port,
        json!([holding("acme/plant/x", 0, "uint16")]),
    );
    let resp = server
        .admin_in(DOMAIN, Method::POST, "/svc/connectors/test")
        .json(&body)
        .send()
        .unwrap();
    let answer = json_ok(resp, StatusCode::OK);
    assert_eq!(answer["device"]["protocol"], "modbus", "{answer}");
    let started = std::time::Instant::now();
    let closed = connector("probe", free_port(), json!([]));
    let resp = server
        .admin_in(DOMAIN, Method::POST, "/svc/connectors/test")
        .json(&closed)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::SERVICE_UNAVAILABLE, &["tcp"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    // Nothing was stored.
    assert_eq!(server.count(DOMAIN, "connectors"), 0);
}

#[test]
fn records_are_checked_and_other_domains_see_nothing() {
    let peer = DevicePeer::python("modbus_server.py", &[]);
    let server = setup();
    let created = create(
        &server,
        &connector(
            "line",
            peer.port,
            json!([holding("acme/plant/a", 0, "uint16")]),
        ),
    );
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["enabled"], true);
    assert_eq!(created["settings"]["unit_id"], 1, "{created}");
    assert_eq!(created["points"][0]["scale"], 1.0, "{created}");

    let post = |domain: &str, body: Value| {
        server
            .admin_in(domain, Method::POST, "/svc/connectors")
            .json(&body)
            .send()
            .unwrap()
    };
    // Same name: 409. A tag outside the domain's namespaces: 400 naming the field. A bad
    // address or kind: 400 naming it.
    assert_error(
        post(DOMAIN, connector("line", peer.port, json!([]))),
        StatusCode::CONFLICT,
        &[],
    );
    assert_error(
        post(
            DOMAIN,
            connector(
                "x",
                peer.port,
                json!([holding("beta/plant/a", 0, "uint16")]),
            ),
        ),
        StatusCode::BAD_REQUEST,
        &["points[0].tag"],
    );
    assert_error(
        post(
            DOMAIN,
            connector(
                "x",
                peer.port,
                json!([holding("acme/plant/a", 0, "int128")]),
            ),
        ),
        StatusCode::BAD_REQUEST,
        &["points[0].address.type"],
    );
    let mut wrong_kind = connector("x", peer.port, json!([]));
    wrong_kind["kind"] = json!("s7");
    assert_error(post(DOMAIN, wrong_kind), StatusCode::BAD_REQUEST, &["kind"]);
    assert_error(
        post(
            DOMAIN,
            json!({"name": "x", "kind": "modbus", "settings": {}}),
        ),
        StatusCode::BAD_REQUEST,
        &["settings.host"],
    );
    assert_error(
        post(
            DOMAIN,
            connector(
                "x",
                peer.port,
                json!([{"tag": "acme/plant/in", "writable": true,
            "address": {"function": "input_register", "address": 1}}]),
            ),
        ),
        StatusCode::BAD_REQUEST,
        &["points[0]"],
    );

    // Another domain sees none of it: not in its list, its status, or by id.
    server.create_record(
        "domains:beta",
        "namespaces",
        &json!({"name": "plant", "path": "beta/plant"}),
    );
    let listed = server.get_json("domains:beta", "/svc/connectors/status");
    assert_eq!(listed, json!([]));
    let resp = server
        .admin_in(
            "domains:beta",
            Method::GET,
            &format!("/svc/connectors/{}/status", enc(&id)),
        )
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    assert_eq!(server.count("domains:beta", "connectors"), 0);
    // Nor can it write acme's device tags.
    let resp = server
        .admin_in("domains:beta", Method::POST, "/svc/tag/write")
        .json(&json!({"topic": "acme/plant/a", "value": 1}))
        .send()
        .unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());

    // Counted by state in the metrics.
    let scraped = server.scrape();
    assert!(
        scraped.contains("svc_connectors{state=\"connected\"} 1")
            || scraped.contains("svc_connectors{state=\"connecting\"} 1"),
        "{scraped}"
    );
    // The state is published retained for administrators on $SYS.
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "sys-watch");
    mqtt.subscribe("$SYS/svc/connectors/acme/line/state", 1);
    let state = mqtt.expect_publish("$SYS/svc/connectors/acme/line/state");
    let state: Value = serde_json::from_slice(&state.payload).unwrap();
    assert_eq!(state["name"], "line", "{state}");

    // Deleting the connector stops it: its status is gone.
    let resp = server
        .admin_in(DOMAIN, Method::DELETE, &rec_path(&id))
        .send()
        .unwrap();
    assert!(resp.status().is_success());
    assert_eq!(server.get_json(DOMAIN, "/svc/connectors/status"), json!([]));
}
