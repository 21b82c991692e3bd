//! Flows (issue 6): graphs stored in the `flows` table and run by the server. A threshold
//! alarm flow from tag-in through switch and function to `svc.tag.write` and record-write
//! produces exactly the expected tags and records for a scripted sequence of inputs; invalid
//! graphs are refused naming the node and change nothing; start and stop; inject timers;
//! manual execution through `POST /svc/flows/execute`; delay and rate-limit nodes.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ADMIN: &str = "domains:svc_admin";

fn create_flow(server: &Server, body: &Value) -> Value {
    let resp = server
        .admin(Method::POST, "/svc/flows")
        .json(body)
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED)
}

fn execute(server: &Server, body: &Value) -> reqwest::blocking::Response {
    server
        .admin(Method::POST, "/svc/flows/execute")
        .json(body)
        .send()
        .unwrap()
}

fn post(server: &Server, path: &str) -> reqwest::blocking::Response {
    server.admin(Method::POST, path).send().unwrap()
}

/// Alarm records by ascending temperature.
fn alarm_records(server: &Server) -> Vec<Value> {
    let mut records = server
        .get_json(ADMIN, "/svc/alarm_log/all")
        .as_array()
        .cloned()
        .unwrap_or_default();
    records.sort_by(|a, b| a["temp"].as_f64().partial_cmp(&b["temp"].as_f64()).unwrap());
    records
}

fn alarm_flow(running: bool) -> Value {
    json!({
        "name": "boiler-alarm",
        "description": "alarm tag and record when a boiler runs hot",
        "running": running,
        "nodes": [
            {"id": "temps", "type": "tag-in", "config": {"topic": "plant/+/temp"}, "wires": ["hot?"]},
            {"id": "hot?", "type": "switch",
             "config": {"property": "payload", "rules": [{"op": "gt", "value": 80}, {"op": "else"}]},
             "wires": [["describe"], ["normal"]]},
            {"id": "describe", "type": "function", "config": {"code":
                "function main(msg) {\n  const unit = msg.topic.split('/')[1];\n  return {topic: 'plant/' + unit + '/alarm', payload: {unit, temp: msg.payload, severity: msg.payload > 100 ? 'high' : 'warn'}};\n}"},
             "wires": ["alarm-tag", "stamp"]},
            {"id": "alarm-tag", "type": "svc.tag.write", "config": {"qos": 1}},
            {"id": "stamp", "type": "change", "config": {"rules": [
                {"action": "set", "property": "payload.reading", "from": "payload.temp"}
             ]}, "wires": ["alarm-record"]},
            {"id": "alarm-record", "type": "record-write", "config": {"table": "alarm_log"}},
            {"id": "normal", "type": "change", "config": {"rules": [
                {"action": "set", "property": "topic", "value": "plant/status"},
                {"action": "set", "property": "payload", "value": "normal"}
             ]}, "wires": ["status-tag"]},
            {"id": "status-tag", "type": "svc.tag.write", "config": {"qos": 1}}
        ]
    })
}

#[test]
fn alarm_flow_turns_a_scripted_sequence_into_exactly_the_expected_tags_and_records() {
    let server = Server::start();
    let stored = create_flow(&server, &alarm_flow(true));
    assert_eq!(stored["running"], json!(true));
    assert_eq!(
        stored["nodes"][0]["wires"],
        json!([["hot?"]]),
        "wires are stored per port"
    );

    let mut watcher = server.mqtt_admin(Proto::V5, Via::Tcp, "alarm-panel");
    watcher.subscribe("plant/+/alarm", 1);
    watcher.subscribe("plant/status", 1);
    let mut device = server.mqtt_admin(Proto::V3, Via::Tcp, "boilers");
    let inputs = [
        ("plant/b1/temp", "70"),
        ("plant/b1/temp", "85"),
        ("plant/b2/temp", "120"),
        ("plant/b1/temp", "60"),
        ("plant/b2/temp", "81.5"),
        ("plant/b2/pressure", "500"),
    ];
    for (topic, value) in inputs {
        assert_eq!(device.publish(topic, value, 1, false), "Success");
    }
    let got = watcher.collect_until_match("the last alarm", |m| m.text().contains("81.5"));
    let seen: Vec<(String, Value)> = got
        .iter()
        .map(|m| (m.topic.clone(), serde_json::from_str(&m.text()).unwrap()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("plant/status".to_string(), json!("normal")),
            (
                "plant/b1/alarm".into(),
                json!({"unit": "b1", "temp": 85, "severity": "warn"})
            ),
            (
                "plant/b2/alarm".into(),
                json!({"unit": "b2", "temp": 120, "severity": "high"})
            ),
            ("plant/status".into(), json!("normal")),
            (
                "plant/b2/alarm".into(),
                json!({"unit": "b2", "temp": 81.5, "severity": "warn"})
            ),
        ]
    );
    let records = server.poll(Duration::from_secs(5), "three alarm records", || {
        let records = alarm_records(&server);
        (records.len() >= 3).then_some(records)
    });
    let summary: Vec<Value> = records
        .iter()
        .map(|r| json!([r["unit"], r["temp"], r["severity"], r["reading"]]))
        .collect();
    assert_eq!(
        summary,
        [
            json!(["b2", 81.5, "warn", 81.5]),
            json!(["b1", 85, "warn", 85]),
            json!(["b2", 120, "high", 120]),
        ]
    );
    // Nothing more arrives: not from the pressure tag, not from the flow's own writes.
    assert!(watcher.next_publish(Duration::from_millis(700)).is_none());
    assert_eq!(alarm_records(&server).len(), 3);
    let tags = server.string_list(Some(ADMIN), "/svc/tag/list");
    assert!(tags.contains(&"plant/b2/alarm".to_string()), "{tags:?}");
}

#[test]
fn invalid_graphs_are_refused_naming_the_node_and_change_nothing() {
    let server = Server::start();
    let debug = json!({"id": "out", "type": "debug"});
    let cases = [
        (
            json!([{"id": "in", "type": "tag-in", "config": {"topic": "a/b"}, "wires": ["plc"]},
                   {"id": "plc", "type": "modbus-read"}]),
            vec!["node `plc`", "unknown node type `modbus-read`"],
        ),
        (
            json!([{"id": "in", "type": "tag-in", "config": {"topic": "a/b"}, "wires": ["nowhere"]}]),
            vec!["node `in`", "missing node `nowhere`"],
        ),
        (
            json!([{"id": "in", "type": "tag-in", "config": {"topic": "a/b"}, "wires": ["a"]},
                   {"id": "a", "type": "change", "config": {"rules": [{"action": "delete", "property": "x"}]}, "wires": ["b"]},
                   {"id": "b", "type": "change", "config": {"rules": [{"action": "delete", "property": "y"}]}, "wires": ["a", "out"]},
                   debug]),
            vec!["node `a`", "cycle without a delay"],
        ),
        (
            json!([{"id": "calc", "type": "function", "config": {"code": "function ( {"}}]),
            vec!["node `calc`", "does not compile"],
        ),
        (
            json!([{"id": "in", "type": "tag-in", "config": {"topic": "a/#/b"}}]),
            vec!["node `in`"],
        ),
        (json!("nodes"), vec!["not a flow"]),
    ];
    for (nodes, needles) in cases {
        let resp = server
            .admin(Method::POST, "/svc/flows")
            .json(&json!({"name": "broken", "nodes": nodes}))
            .send()
            .unwrap();
        assert_error(resp, StatusCode::BAD_REQUEST, &needles);
    }
    assert_eq!(server.get_json(ADMIN, "/svc/flows/all"), json!([]));

    // A bad update keeps the stored flow (and it keeps running).
    let stored = create_flow(
        &server,
        &json!({"name": "ok", "running": true, "nodes": [
            {"id": "in", "type": "inject", "config": {"payload": 1}, "wires": ["out"]}, debug]}),
    );
    let resp = server
        .admin(Method::PUT, &rec_path(stored["id"].as_str().unwrap()))
        .json(&json!({"nodes": [{"id": "in", "type": "inject", "wires": ["ghost"]}]}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["node `in`", "ghost"]);
    let out = json_ok(
        execute(&server, &json!({"name": "ok", "input": 7})),
        StatusCode::OK,
    );
    assert_eq!(out["debug"][0]["node"], "out");
    assert_eq!(out["debug"][0]["msg"]["payload"], json!(7));

    assert_error(
        execute(&server, &json!({"name": "missing"})),
        StatusCode::NOT_FOUND,
        &["missing"],
    );
    assert_error(
        execute(&server, &json!({"name": "ok", "node": "nope"})),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["no node `nope`"],
    );
    assert_error(
        execute(&server, &json!({"name": "ok", "extra": 1})),
        StatusCode::BAD_REQUEST,
        &["extra"],
    );
    assert_error(
        post(&server, "/svc/flows/missing/start"),
        StatusCode::NOT_FOUND,
        &["missing"],
    );
}

#[test]
fn manual_execution_reports_debug_output_and_node_failures() {
    let server = Server::start();
    create_flow(
        &server,
        &json!({"name": "calc", "nodes": [
            {"id": "in", "type": "inject", "wires": ["split"]},
            {"id": "split", "type": "function", "config": {"outputs": 2, "code":
                "function main(msg) { if (msg.payload.fail) throw new Error('bad batch'); return [{payload: msg.payload.a * 2}, {payload: msg.payload.a + 1}]; }"},
             "wires": [["doubled"], ["wait"]]},
            {"id": "wait", "type": "delay", "config": {"ms": 300}, "wires": ["plus-one"]},
            {"id": "doubled", "type": "debug", "config": {"label": "doubled"}},
            {"id": "plus-one", "type": "debug"}
        ]}),
    );
    let started = Instant::now();
    let out = json_ok(
        execute(&server, &json!({"name": "calc", "input": {"a": 20}})),
        StatusCode::OK,
    );
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "waits for the delay"
    );
    assert_eq!(out["success"], json!(true));
    let debug: Vec<(Value, Value)> = out["debug"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["node"].clone(), d["msg"]["payload"].clone()))
        .collect();
    assert_eq!(
        debug,
        [
            (json!("doubled"), json!(40)),
            (json!("plus-one"), json!(21))
        ]
    );
    assert!(out["duration_ms"].as_u64().unwrap() >= 300, "{out}");

    assert_error(
        execute(&server, &json!({"name": "calc", "input": {"fail": true}})),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["node `split`", "bad batch"],
    );
    let runs = server.get_json(ADMIN, "/svc/flows/calc/runs");
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["success"], json!(false));
    assert!(runs[0]["error"].as_str().unwrap().contains("bad batch"));
    assert_eq!(runs[1]["success"], json!(true));
    assert_eq!(runs[1]["trigger"], "manual");
}

#[test]
fn start_stop_inject_timers_and_rate_limits() {
    let server = Server::start();
    create_flow(
        &server,
        &json!({"name": "ticker", "nodes": [
            {"id": "tick", "type": "inject", "config": {"interval": {"value": 200, "unit": "ms"}, "payload": "tick", "topic": "flows/tick"},
             "wires": ["write"]},
            {"id": "write", "type": "svc.tag.write"}
        ]}),
    );
    create_flow(
        &server,
        &json!({"name": "limited", "running": true, "nodes": [
            {"id": "in", "type": "tag-in", "config": {"topic": "burst/in"}, "wires": ["gate"]},
            {"id": "gate", "type": "delay", "config": {"mode": "rate", "count": 2, "per": "1m", "drop": true}, "wires": ["out"]},
            {"id": "out", "type": "svc.tag.write", "config": {"topic": "burst/out"}}
        ]}),
    );
    let mut watcher = server.mqtt_admin(Proto::V5, Via::Tcp, "tick-watcher");
    watcher.subscribe("flows/tick", 0);
    watcher.subscribe("burst/out", 1);
    assert!(
        watcher.next_publish(Duration::from_millis(600)).is_none(),
        "a stopped flow's timer does not fire"
    );
    let started = json_ok(post(&server, "/svc/flows/ticker/start"), StatusCode::OK);
    assert_eq!(started["running"], json!(true));
    let ticks = watcher.collect_until_match("three ticks", {
        let count = std::cell::Cell::new(0);
        move |m| {
            count.set(count.get() + usize::from(m.topic == "flows/tick"));
            count.get() == 3
        }
    });
    assert!(
        ticks.iter().all(|m| m.text() == "\"tick\""),
        "{:?}",
        ticks[0].text()
    );
    let stopped = json_ok(post(&server, "/svc/flows/ticker/stop"), StatusCode::OK);
    assert_eq!(stopped["running"], json!(false));
    while watcher.next_publish(Duration::from_millis(300)).is_some() {}
    assert!(
        watcher.next_publish(Duration::from_millis(700)).is_none(),
        "no ticks after stop"
    );

    let mut device = server.mqtt_admin(Proto::V3, Via::Tcp, "burst");
    for i in 0..5 {
        device.publish("burst/in", i.to_string(), 1, false);
    }
    let passed: Vec<String> = (0..2)
        .map(|_| watcher.expect_publish("burst/out").text())
        .collect();
    assert_eq!(passed, ["0", "1"]);
    assert!(
        watcher.next_publish(Duration::from_millis(700)).is_none(),
        "the rest is dropped"
    );
    let runs = server.get_json(ADMIN, "/svc/flows/limited/runs");
    let dropped = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["logs"].to_string().contains("dropped by rate limit"))
        .count();
    assert_eq!(dropped, 3, "{runs}");
}

#[test]
fn running_flows_and_triggered_functions_come_back_after_a_restart() {
    let mut server = Server::start();
    create_flow(
        &server,
        &json!({"name": "relay", "running": true, "nodes": [
            {"id": "in", "type": "tag-in", "config": {"topic": "relay/in"}, "wires": ["out"]},
            {"id": "out", "type": "svc.tag.write", "config": {"topic": "relay/out"}}
        ]}),
    );
    create_flow(
        &server,
        &json!({"name": "idle", "nodes": [
            {"id": "in", "type": "tag-in", "config": {"topic": "relay/in"}, "wires": ["out"]},
            {"id": "out", "type": "svc.tag.write", "config": {"topic": "idle/out"}}
        ]}),
    );
    let resp = server
        .admin(Method::POST, "/svc/processes")
        .json(&json!({"name": "double", "code": "function main(v) { svc.tag.write('relay/doubled', v * 2); }",
                      "triggers": [{"type": "tag_change", "topic": "relay/in"}]}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);
    assert!(server.terminate().success());
    server.restart();

    let mut watcher = server.mqtt_admin(Proto::V5, Via::Tcp, "after-restart");
    watcher.subscribe("relay/+", 1);
    watcher.subscribe("idle/out", 1);
    let mut device = server.mqtt_admin(Proto::V3, Via::Tcp, "relay-device");
    device.publish("relay/in", "21", 1, false);
    let mut got: Vec<(String, String)> = (0..3)
        .map(|_| {
            let m = watcher
                .next_publish(Duration::from_secs(10))
                .expect("relay/in, relay/out and relay/doubled");
            (m.topic.clone(), m.text())
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("relay/doubled".to_string(), "42".to_string()),
            ("relay/in".into(), "21".into()),
            ("relay/out".into(), "21".into()),
        ]
    );
    assert!(
        watcher.next_publish(Duration::from_millis(500)).is_none(),
        "the stopped flow stays stopped"
    );
}

#[test]
fn flows_need_the_flows_permission_and_stay_in_their_domain() {
    let server = Server::start();
    server.create_domain("a");
    server.create_domain("b");
    server.create_tag("domains:a", "a/in", false);
    server.create_tag("domains:a", "a/out", false);
    server.create_tag("domains:b", "b/in", false);
    let body = json!({"name": "watch", "running": true, "nodes": [
        {"id": "in", "type": "tag-in", "config": {"topic": "#"}, "wires": ["out", "dbg"]},
        {"id": "out", "type": "svc.tag.write", "config": {"topic": "a/out"}},
        {"id": "dbg", "type": "debug"}
    ]});
    let reader = server.user_with_grants("domains:a", "flow-reader", &[("flows", "read", "*")]);
    let as_reader =
        |method: Method, path: &str| server.with_token_in(&reader, "domains:a", method, path);
    let resp = as_reader(Method::POST, "/svc/flows")
        .json(&body)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = server
        .admin_in("domains:a", Method::POST, "/svc/flows")
        .json(&body)
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);
    for path in ["/svc/flows/watch/stop", "/svc/flows/watch/start"] {
        assert_error(
            as_reader(Method::POST, path).send().unwrap(),
            StatusCode::UNAUTHORIZED,
            &[],
        );
    }
    let resp = as_reader(Method::POST, "/svc/flows/execute")
        .json(&json!({"name": "watch"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = as_reader(Method::GET, "/svc/flows/watch/runs")
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!([]));
    let resp = server
        .admin_in("domains:b", Method::GET, "/svc/flows/watch/runs")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &["watch"]);

    // `#` in domain a sees a's tags only; b's tag never reaches it.
    let mut device = server.mqtt_admin(Proto::V3, Via::Tcp, "ab-device");
    device.publish("b/in", "1", 1, false);
    device.publish("a/in", "2", 1, false);
    server.poll(Duration::from_secs(10), "the a/in run", || {
        let runs = server.get_json("domains:a", "/svc/flows/watch/runs");
        (!runs.as_array()?.is_empty()).then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    let runs = server.get_json("domains:a", "/svc/flows/watch/runs");
    let logs = runs.to_string();
    assert!(logs.contains("a/in") && !logs.contains("b/in"), "{runs}");
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");

    // Writing another domain's tag fails the run, naming the node.
    let resp = server
        .admin_in("domains:a", Method::POST, "/svc/flows")
        .json(&json!({"name": "trespass", "nodes": [
            {"id": "in", "type": "inject", "wires": ["w"]},
            {"id": "w", "type": "svc.tag.write", "config": {"topic": "b/in"}}
        ]}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);
    let resp = server
        .admin_in("domains:a", Method::POST, "/svc/flows/execute")
        .json(&json!({"name": "trespass", "input": 5}))
        .send()
        .unwrap();
    assert_error(
        resp,
        StatusCode::UNPROCESSABLE_ENTITY,
        &["node `w`", "not a tag of domain"],
    );
}
