//! svc as a Sparkplug B host (issue 36), against Eclipse Tahu's edge node (npm
//! sparkplug-client) and PyPI's mqtt-spb-wrapper, started by the tests: births, data by alias
//! and deaths become tags with their datatypes, units, times and qualities; a sequence gap and a
//! node svc never saw born each bring one rebirth request; the primary host's STATE is retained
//! and withdrawn; writes to a metric's tag arrive as NCMD/DCMD with the metric's datatype; every
//! BIRTH is kept under `$sparkplug/certificates/`.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

pub(crate) const ACME: &str = "domains:acme";
const GROUP: &str = "Plant";
pub(crate) const PREFIX: &str = "acme/plant/sp/Plant";
const WAIT: Duration = Duration::from_secs(15);
/// 2026-01-01T00:00:00Z
const T0: i64 = 1_767_225_600_000;

/// A server with domain `acme`: its UNS branch `acme/plant`, the Sparkplug group `Plant` in its
/// reach (a namespace over `spBv1.0/Plant`), and a host putting metrics under `acme/plant/sp`.
pub(crate) fn setup() -> Server {
    let server = Server::start();
    server.create_domain("acme");
    for (name, path) in [("plant", "acme/plant"), ("sparkplug", "spBv1.0/Plant")] {
        server.create_record(ACME, "namespaces", &json!({"name": name, "path": path}));
    }
    server.create_record(
        ACME,
        "sparkplug",
        &json!({"name": "site", "namespace": "acme/plant/sp", "groups": [GROUP],
            "host_id": "svc-acme", "rebirth_throttle": "2s"}),
    );
    server
}

pub(crate) fn tahu(server: &Server, node: &str) -> SparkplugPeer {
    let port = server.listener_port("mqtt");
    SparkplugPeer::edge_node(port, "admin", ADMIN_PASSWORD, GROUP, node)
}

fn metric(name: &str, alias: u64, kind: &str, value: Value) -> Value {
    json!({"name": name, "alias": alias, "type": kind, "value": value, "timestamp": T0})
}

/// [`metric`] stamped now, for values that must come after svc's own (a death's `bad`).
fn metric_now(name: &str, alias: u64, kind: &str, value: Value) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    json!({"name": name, "alias": alias, "type": kind, "value": value, "timestamp": now})
}

/// The tag's newest value (`GET /svc/tag/values`) once `check` accepts it.
pub(crate) fn wait_value(
    server: &Server,
    domain: &str,
    tag: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    server.poll(WAIT, tag, || {
        let values = server.get_json(domain, "/svc/tag/values");
        let found = values
            .as_array()?
            .iter()
            .find(|v| v["topic"] == tag)?
            .clone();
        check(&found["value"]).then_some(found)
    })
}

/// The newest historized point of `tag` once `check` accepts it.
pub(crate) fn wait_point(server: &Server, tag: &str, check: impl Fn(&Value) -> bool) -> Value {
    server.poll(WAIT, tag, || {
        let resp = server
            .admin_in(ACME, Method::PATCH, "/svc/historian/last")
            .json(&json!({"topic": tag, "limit": 1}))
            .send()
            .ok()?;
        let points = resp.json::<Value>().ok()?;
        let newest = points.as_array()?.first()?.clone();
        check(&newest).then_some(newest)
    })
}

fn node_status(server: &Server, node: &str) -> Value {
    let nodes = server.get_json(ACME, "/svc/sparkplug/nodes");
    nodes
        .as_array()
        .and_then(|n| n.iter().find(|s| s["node"] == node))
        .cloned()
        .unwrap_or_else(|| panic!("no node {node} in {nodes}"))
}

#[test]
fn every_datatype_of_a_birth_becomes_a_tag_with_its_exact_value() {
    let server = setup();
    let node = tahu(&server, "edge1");
    let dataset = json!({"numOfColumns": 3, "columns": ["n", "ok", "name"],
        "types": ["Int32", "Boolean", "String"], "rows": [[-1, true, "a"], [2, false, "b"]]});
    let template = json!({"version": "v1", "templateRef": "Motor", "isDefinition": false,
        "metrics": [{"name": "Speed", "type": "Int32", "value": 1500},
                    {"name": "Running", "type": "Boolean", "value": true}],
        "parameters": [{"name": "rated", "type": "Int32", "value": 5}]});
    let metrics = vec![
        metric("Int8", 1, "Int8", json!(-12)),
        metric("Int16", 2, "Int16", json!(-12)),
        metric("Int32", 3, "Int32", json!(-12)),
        metric("Int64", 4, "Int64", json!("-9223372036854775808")),
        metric("UInt8", 5, "UInt8", json!(255)),
        metric("UInt16", 6, "UInt16", json!(65535)),
        metric("UInt32", 7, "UInt32", json!(4_294_967_295u64)),
        metric("UInt64", 8, "UInt64", json!("18446744073709551615")),
        metric("Float", 9, "Float", json!(0.1)),
        metric("Double", 10, "Double", json!(-2.5e300)),
        metric("Boolean", 11, "Boolean", json!(true)),
        metric("String", 12, "String", json!("pump ⚙")),
        metric("DateTime", 13, "DateTime", json!("1767225600000")),
        metric("Text", 14, "Text", json!("a longer text")),
        metric(
            "UUID",
            15,
            "UUID",
            json!("2f9e4c42-3f3e-4d1a-9a9a-1b2c3d4e5f60"),
        ),
        metric("Bytes", 16, "Bytes", json!("AAEC/w==")),
        metric("DataSet", 17, "DataSet", dataset),
        metric("Template", 18, "Template", template),
    ];
    node.send(json!({"cmd": "nbirth", "metrics": metrics}));
    let expected = [
        ("Int8", json!(-12)),
        ("Int16", json!(-12)),
        ("Int32", json!(-12)),
        ("Int64", json!(i64::MIN)),
        ("UInt8", json!(255)),
        ("UInt16", json!(65535)),
        ("UInt32", json!(u32::MAX)),
        ("UInt64", json!(u64::MAX)),
        ("Float", json!(0.1)),
        ("Double", json!(-2.5e300)),
        ("Boolean", json!(true)),
        ("String", json!("pump ⚙")),
        ("DateTime", json!(T0)),
        ("Text", json!("a longer text")),
        ("UUID", json!("2f9e4c42-3f3e-4d1a-9a9a-1b2c3d4e5f60")),
        ("Bytes", json!("AAEC/w==")),
        (
            "DataSet",
            json!({"columns": ["n", "ok", "name"], "types": ["Int32", "Boolean", "String"],
                   "rows": [[-1, true, "a"], [2, false, "b"]]}),
        ),
        (
            "Template",
            json!({"template_ref": "Motor", "version": "v1", "is_definition": false,
                   "parameters": {"rated": 5}, "metrics": {"Speed": 1500, "Running": true}}),
        ),
    ];
    for (name, value) in expected {
        let tag = format!("{PREFIX}/edge1/{name}");
        let found = wait_value(&server, ACME, &tag, |v| *v == value);
        // The metric's own timestamp is the tag's time.
        assert_eq!(found["timestamp"], "2026-01-01T00:00:00.000Z", "{tag}");
    }
    // Historized at the metric's time, exactly.
    let point = wait_point(&server, &format!("{PREFIX}/edge1/UInt64"), |p| !p.is_null());
    assert_eq!(point["value"], json!(u64::MAX), "{point}");
    assert_eq!(point["timestamp"], "2026-01-01T00:00:00.000Z");
    // bdSeq is the session's, not a tag.
    let tags = server.get_json(ACME, "/svc/tag/values");
    assert!(
        !tags.to_string().contains("edge1/bdSeq"),
        "bdSeq is no tag: {tags}"
    );
    let status = node_status(&server, "edge1");
    assert_eq!(status["online"], true, "{status}");
    assert_eq!(status["metrics"], 18, "{status}");
}

#[test]
fn data_by_alias_units_devices_and_the_historical_and_transient_flags() {
    let server = setup();
    let node = tahu(&server, "edge2");
    let mut temp = metric("Temp", 1, "Double", json!(20.5));
    temp["properties"] = json!({"engUnit": {"type": "String", "value": "°C"}});
    let mut live_only = metric("Transient", 2, "Int32", json!(1));
    live_only["is_transient"] = json!(true);
    node.send(json!({"cmd": "nbirth", "metrics": [temp, live_only, metric("Backfill", 3, "Int32", json!(0))]}));
    let tag = format!("{PREFIX}/edge2/Temp");
    wait_value(&server, ACME, &tag, |v| *v == json!(20.5));
    // Data carries aliases only.
    node.send(json!({"cmd": "ndata", "metrics": [
        {"alias": 1, "type": "Double", "value": 21.25, "timestamp": T0 + 1000},
        {"alias": 2, "type": "Int32", "value": 7, "timestamp": T0 + 1000},
    ]}));
    wait_value(&server, ACME, &tag, |v| *v == json!(21.25));
    let transient = format!("{PREFIX}/edge2/Transient");
    wait_value(&server, ACME, &transient, |v| *v == json!(7));
    // Units from the BIRTH's properties; a transient metric's tag is not historized.
    let records = server.get_json(ACME, "/svc/tags/all");
    let unit_of = |path: &str| {
        records
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == path)
            .cloned()
            .unwrap_or_else(|| panic!("no tag {path} in {records}"))
    };
    assert_eq!(unit_of(&tag)["unit"], "°C");
    assert_eq!(unit_of(&tag)["historize"], true);
    assert_eq!(unit_of(&transient)["historize"], false);
    wait_point(&server, &tag, |p| p["value"] == json!(21.25));
    // A historical metric goes to the historian at its time, not to the tag's live value.
    node.send(json!({"cmd": "ndata", "metrics": [
        {"alias": 3, "type": "Int32", "value": 99, "timestamp": T0 - 60_000, "is_historical": true},
    ]}));
    let backfill = format!("{PREFIX}/edge2/Backfill");
    let point = wait_point(&server, &backfill, |p| {
        p["value"] == json!(99) || p["value"] == json!(0)
    });
    let history = server.history(ACME, &backfill, 2);
    assert!(history.to_string().contains("99"), "{history} ({point})");
    assert_eq!(
        wait_value(&server, ACME, &backfill, |_| true)["value"],
        json!(0),
        "the live value stays"
    );
    // A device: DBIRTH then DDATA by alias, in its own level.
    node.send(json!({"cmd": "dbirth", "device": "pump", "metrics": [metric("Speed", 1, "UInt16", json!(1200))]}));
    let speed = format!("{PREFIX}/edge2/pump/Speed");
    wait_value(&server, ACME, &speed, |v| *v == json!(1200));
    node.send(json!({"cmd": "ddata", "device": "pump", "metrics": [{"alias": 1, "type": "UInt16", "value": 1300}]}));
    wait_value(&server, ACME, &speed, |v| *v == json!(1300));
    let status = node_status(&server, "edge2");
    assert_eq!(status["devices"][0]["device"], "pump");
    assert_eq!(status["devices"][0]["online"], true);
    assert_eq!(status["rebirths_requested"], 0, "{status}");
}

#[test]
fn a_sequence_gap_and_a_node_never_born_each_bring_one_rebirth_request() {
    let mut server = setup();
    let node = tahu(&server, "edge3");
    node.send(json!({"cmd": "nbirth", "metrics": [metric("Level", 1, "Float", json!(1.5))]}));
    let tag = format!("{PREFIX}/edge3/Level");
    wait_value(&server, ACME, &tag, |v| *v == json!(1.5));
    node.send(json!({"cmd": "skip_seq"}));
    for value in [2.5, 3.5, 4.5] {
        node.send(
            json!({"cmd": "ndata", "metrics": [{"alias": 1, "type": "Float", "value": value}]}),
        );
    }
    node.wait_event(|e| e["event"] == "rebirth", WAIT);
    // The values that came still count.
    wait_value(&server, ACME, &tag, |v| *v == json!(4.5));
    std::thread::sleep(Duration::from_millis(500));
    let rebirths = node
        .events()
        .iter()
        .filter(|e| e["event"] == "rebirth")
        .count();
    assert_eq!(rebirths, 1, "one request, throttled: {}", node.output());
    assert_eq!(node_status(&server, "edge3")["rebirths_requested"], 1);
    let metrics = server.scrape();
    assert_eq!(
        sample(&metrics, "svc_sparkplug_rebirth_requests_total"),
        1.0
    );
    assert_eq!(
        sample(&metrics, "svc_sparkplug_nodes{state=\"online\"}"),
        1.0
    );
    assert_eq!(
        sample(&metrics, "svc_sparkplug_messages_total"),
        4.0,
        "a birth and three data"
    );
    assert_eq!(
        sample(&metrics, "svc_sparkplug_problems_total"),
        1.0,
        "the gap"
    );

    // After a restart svc has no session of the node: its data brings a rebirth request, and
    // the BIRTH that answers it brings the node back.
    drop(node);
    server.terminate();
    server.restart();
    let node = tahu(&server, "edge3");
    node.send(json!({"cmd": "ndata", "metrics": [{"alias": 1, "type": "Float", "value": 5.5}]}));
    node.wait_event(|e| e["event"] == "rebirth", WAIT);
    node.send(json!({"cmd": "nbirth", "metrics": [metric("Level", 1, "Float", json!(6.5))]}));
    wait_value(&server, ACME, &tag, |v| *v == json!(6.5));
    let rebirths = node
        .events()
        .iter()
        .filter(|e| e["event"] == "rebirth")
        .count();
    assert_eq!(rebirths, 1, "{}", node.output());
    let status = node_status(&server, "edge3");
    assert_eq!(status["online"], true);
    assert_eq!(status["rebirths_requested"], 1, "{status}");
}

#[test]
fn a_death_turns_the_node_and_its_devices_bad_until_the_next_birth() {
    let server = setup();
    let mut node = tahu(&server, "edge4");
    node.send(json!({"cmd": "nbirth", "metrics": [metric("Pressure", 1, "Double", json!(3.5))]}));
    node.send(json!({"cmd": "dbirth", "device": "valve", "metrics": [metric("Open", 1, "Boolean", json!(true))]}));
    let pressure = format!("{PREFIX}/edge4/Pressure");
    let open = format!("{PREFIX}/edge4/valve/Open");
    wait_value(&server, ACME, &open, |v| *v == json!(true));
    // DDEATH: the device's tags only.
    node.send(json!({"cmd": "ddeath", "device": "valve"}));
    let bad = wait_point(&server, &open, |p| p["quality"] == "bad");
    assert_eq!(bad["value"], true, "the last value is kept: {bad}");
    assert!(
        wait_point(&server, &pressure, |p| !p.is_null())["quality"].is_null(),
        "the node's tags stay good"
    );
    // The node's connection drops: its will (NDEATH, the session's bdSeq) turns every tag bad.
    node.kill();
    wait_point(&server, &pressure, |p| {
        p["quality"] == "bad" && p["value"] == json!(3.5)
    });
    assert_eq!(node_status(&server, "edge4")["online"], false);
    let node = tahu(&server, "edge4");
    node.send(
        json!({"cmd": "nbirth", "metrics": [metric_now("Pressure", 1, "Double", json!(4.0))]}),
    );
    let good = wait_point(&server, &pressure, |p| p["value"].as_f64() == Some(4.0));
    assert!(good["quality"].is_null(), "good again: {good}");
    assert_eq!(node_status(&server, "edge4")["online"], true);
}

#[test]
fn state_is_retained_online_and_withdrawn_when_the_host_goes() {
    let mut server = setup();
    let node = tahu(&server, "edge5");
    let state = node.wait_event(|e| e["event"] == "state", WAIT);
    assert_eq!(state["topic"], "spBv1.0/STATE/svc-acme");
    let online: Value = serde_json::from_str(state["payload"].as_str().unwrap()).unwrap();
    assert_eq!(online["online"], true, "{state}");
    assert!(online["timestamp"].as_u64().is_some(), "{state}");
    // svc stops: the subscribers hear it go offline, with the timestamp of its online STATE.
    server.terminate();
    let offline = node.wait_event(
        |e| e["event"] == "state" && e["payload"].as_str().is_some_and(|p| p.contains("false")),
        WAIT,
    );
    let offline: Value = serde_json::from_str(offline["payload"].as_str().unwrap()).unwrap();
    assert_eq!(offline["timestamp"], online["timestamp"]);
}

#[test]
fn disabling_the_host_withdraws_its_state_and_stops_decoding() {
    let server = setup();
    let listener = SparkplugPeer::listener(
        server.listener_port("mqtt"),
        "admin",
        ADMIN_PASSWORD,
        "spBv1.0/STATE/#",
    );
    listener.wait_event(
        |e| e["text"].as_str().is_some_and(|t| t.contains("true")),
        WAIT,
    );
    let host = server.get_json(ACME, "/svc/sparkplug/all");
    let id = host["items"][0]["id"]
        .as_str()
        .or(host[0]["id"].as_str())
        .unwrap_or_else(|| panic!("{host}"))
        .to_string();
    let resp = server
        .admin_in(ACME, Method::PUT, &rec_path(&id))
        .json(&json!({"enabled": false}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    let gone = listener.wait_event(
        |e| e["text"].as_str().is_some_and(|t| t.contains("false")),
        WAIT,
    );
    assert_eq!(
        gone["retain"], false,
        "a live subscriber gets it as published: {gone}"
    );
    // A new subscriber gets the retained offline STATE.
    let later = SparkplugPeer::listener(
        server.listener_port("mqtt"),
        "admin",
        ADMIN_PASSWORD,
        "spBv1.0/STATE/#",
    );
    let retained = later.wait_event(|e| e["topic"] == "spBv1.0/STATE/svc-acme", WAIT);
    assert_eq!(retained["retain"], true);
    assert!(
        retained["text"]
            .as_str()
            .unwrap()
            .contains("\"online\":false"),
        "{retained}"
    );
    // A disabled host decodes nothing: a BIRTH makes no tags.
    let node = tahu(&server, "edge6");
    node.send(json!({"cmd": "nbirth", "metrics": [metric("X", 1, "Int32", json!(1))]}));
    std::thread::sleep(Duration::from_millis(500));
    let values = server.get_json(ACME, "/svc/tag/values");
    assert!(!values.to_string().contains("edge6/X"), "{values}");
}

#[test]
fn writes_to_metric_tags_arrive_as_commands_with_the_metrics_datatype() {
    let server = setup();
    let node = tahu(&server, "edge7");
    node.send(json!({"cmd": "nbirth", "metrics": [metric("Setpoint", 5, "Int32", json!(10))]}));
    node.send(json!({"cmd": "dbirth", "device": "drive", "metrics": [metric("Speed", 9, "UInt64", json!("1"))]}));
    let setpoint = format!("{PREFIX}/edge7/Setpoint");
    let speed = format!("{PREFIX}/edge7/drive/Speed");
    wait_value(&server, ACME, &speed, |v| *v == json!(1));
    json_ok(server.write_tag(ACME, &setpoint, json!(-5)), StatusCode::OK);
    let ncmd = node.wait_event(|e| e["event"] == "ncmd", WAIT);
    let m = &ncmd["metrics"][0];
    assert_eq!(m["alias"], 5, "{ncmd}");
    assert_eq!(m["type"], "Int32", "{ncmd}");
    assert_eq!(m["value"], -5, "{ncmd}");
    // Tahu's decoders sign-extend 32 bits: the command is encoded as Tahu encodes.
    assert_eq!(m["raw"]["int_value"], 4_294_967_291u64, "{ncmd}");
    // A device metric, through its MQTT write topic, keeps all 64 bits.
    let mut writer = Raw5::admin(&server, Via::Tcp, "writer");
    writer.publish(publish_packet(
        &format!("{speed}/set"),
        "18446744073709551615",
        1,
        false,
    ));
    let dcmd = node.wait_event(|e| e["event"] == "dcmd", WAIT);
    assert_eq!(dcmd["device"], "drive", "{dcmd}");
    assert_eq!(dcmd["metrics"][0]["alias"], 9, "{dcmd}");
    assert_eq!(dcmd["metrics"][0]["type"], "UInt64", "{dcmd}");
    assert_eq!(
        dcmd["metrics"][0]["value"], "18446744073709551615",
        "{dcmd}"
    );
    // A value the datatype cannot hold: 400, nothing sent.
    assert_error(
        server.write_tag(ACME, &setpoint, json!("hot")),
        StatusCode::BAD_REQUEST,
        &["Int32"],
    );
    assert_error(
        server.write_tag(ACME, &setpoint, json!(3_000_000_000u64)),
        StatusCode::BAD_REQUEST,
        &["Int32"],
    );
    // The node gone: 503 naming it.
    node.send(json!({"cmd": "stop"}));
    server.poll(WAIT, "the node offline", || {
        (node_status(&server, "edge7")["online"] == false).then_some(())
    });
    assert_error(
        server.write_tag(ACME, &setpoint, json!(1)),
        StatusCode::SERVICE_UNAVAILABLE,
        &["edge7", "offline"],
    );
    let commands = node
        .events()
        .iter()
        .filter(|e| e["event"] == "ncmd")
        .count();
    assert_eq!(commands, 1, "{}", node.output());
}

#[test]
fn births_are_kept_retained_under_sparkplug_certificates_and_raw_messages_still_flow() {
    let server = setup();
    let live = SparkplugPeer::listener(
        server.listener_port("mqtt"),
        "admin",
        ADMIN_PASSWORD,
        "$sparkplug/certificates/spBv1.0/Plant/#",
    );
    let raw = SparkplugPeer::listener(
        server.listener_port("mqtt"),
        "admin",
        ADMIN_PASSWORD,
        "spBv1.0/Plant/#",
    );
    let node = tahu(&server, "edge8");
    node.send(json!({"cmd": "nbirth", "metrics": [metric("A", 1, "Int8", json!(-12))]}));
    node.send(
        json!({"cmd": "dbirth", "device": "d1", "metrics": [metric("B", 1, "Int8", json!(-1))]}),
    );
    // Subscribers of spBv1.0 see the messages as the node sent them.
    let birth = raw.wait_event(|e| e["topic"] == "spBv1.0/Plant/NBIRTH/edge8", WAIT);
    assert_eq!(
        birth["payload"]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "A")
            .unwrap()["value"],
        -12
    );
    wait_value(&server, ACME, &format!("{PREFIX}/edge8/d1/B"), |v| {
        *v == json!(-1)
    });
    // A group no host takes: the broker keeps its BIRTH all the same.
    let port = server.listener_port("mqtt");
    let lab = SparkplugPeer::edge_node(port, "admin", ADMIN_PASSWORD, "Lab", "bench1");
    lab.send(json!({"cmd": "nbirth", "metrics": [metric("C", 1, "Boolean", json!(true))]}));
    let certificates =
        SparkplugPeer::listener(port, "admin", ADMIN_PASSWORD, "$sparkplug/certificates/#");
    for topic in [
        "spBv1.0/Plant/NBIRTH/edge8",
        "spBv1.0/Plant/DBIRTH/edge8/d1",
        "spBv1.0/Lab/NBIRTH/bench1",
    ] {
        let kept = certificates.wait_event(
            |e| e["topic"] == format!("$sparkplug/certificates/{topic}"),
            WAIT,
        );
        assert_eq!(kept["retain"], true, "{kept}");
        assert!(
            kept["payload"]["metrics"].is_array(),
            "the BIRTH as it came: {kept}"
        );
    }
    // Published once each, as it came.
    let copies = live.events();
    let nbirth = "$sparkplug/certificates/spBv1.0/Plant/NBIRTH/edge8";
    let copied = copies.iter().filter(|e| e["topic"] == nbirth).count();
    assert_eq!(copied, 1, "{copies:?}");
}

#[test]
fn records_that_reach_outside_the_domain_or_are_malformed_are_refused() {
    let server = setup();
    for (body, needles) in [
        (
            json!({"name": "x", "namespace": "beta/sp"}),
            vec!["namespace", "not inside"],
        ),
        (json!({"name": "x"}), vec!["namespace", "required"]),
        (
            json!({"name": "x", "namespace": "acme/plant/x", "groups": ["a/b"]}),
            vec!["groups"],
        ),
        (
            json!({"name": "x", "namespace": "acme/plant/x", "tag_template": "{node}"}),
            vec!["tag_template"],
        ),
        (
            json!({"name": "x", "namespace": "acme/plant/x", "rebirth_throttle": "often"}),
            vec!["rebirth_throttle"],
        ),
    ] {
        let resp = server
            .admin_in(ACME, Method::POST, "/svc/sparkplug")
            .json(&body)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::BAD_REQUEST, &needles);
    }
    assert_eq!(
        server.count(ACME, "sparkplug"),
        1,
        "nothing stored beside the first host"
    );
}

#[test]
fn what_the_host_took_in_is_stored_when_svc_stops() {
    let mut server = setup();
    let node = tahu(&server, "edge9");
    node.send(json!({"cmd": "nbirth", "metrics": [metric_now("Count", 1, "Int32", json!(0))]}));
    // Each at a time of its own: the historian keeps one point per tag and time.
    let base = metric_now("x", 0, "Int32", json!(0))["timestamp"]
        .as_i64()
        .unwrap();
    for n in 1..=50 {
        node.send(json!({"cmd": "ndata", "metrics": [
            {"alias": 1, "type": "Int32", "value": n, "timestamp": base + n}]}));
    }
    // Every message reached the host (QoS 0 still in a socket when svc stops may not).
    server.poll(WAIT, "the host took every message", || {
        let taken = sample(&server.scrape(), "svc_sparkplug_messages_total");
        (taken >= 51.0).then_some(())
    });
    // Stopped at once: the host's queue is applied and stored before the historian stops.
    server.terminate();
    drop(node);
    server.restart();
    // The 51 values (and possibly `bad` from the node's will, sent when svc closed its
    // connection): every one the host took in was stored before the historian stopped.
    let tag = format!("{PREFIX}/edge9/Count");
    let mut seen = String::new();
    let good = server.poll(WAIT, "the 51 values", || {
        let resp = server
            .admin_in(ACME, Method::PATCH, "/svc/historian/last")
            .json(&json!({"topic": tag, "limit": 100}))
            .send()
            .ok()?;
        let points = resp.json::<Value>().ok()?;
        // What the history held, printed when it changes: a timeout then shows how far it got.
        let now = points.to_string();
        if now != seen {
            eprintln!("the history of {tag}: {now}");
            seen = now;
        }
        let good: Vec<i64> = points
            .as_array()?
            .iter()
            .filter(|p| p["quality"].is_null())
            .filter_map(|p| p["value"].as_i64())
            .collect();
        (good.len() >= 51).then_some(good)
    });
    assert_eq!(good, (0..=50).rev().collect::<Vec<i64>>());
}
