//! Upstreams as Sparkplug B edge nodes (issue 36), against Mosquitto as the upstream broker and
//! a real MQTT client on it as the host application: the NBIRTH declares every tag of the
//! branch (alias, datatype, value, `engUnit`) after bdSeq and node control; a tag change is an
//! NDATA by alias; an NCMD rebirth brings a new NBIRTH and an NCMD write reaches the local tag;
//! a new tag brings a rebirth; the bindings of the same upstream keep working; a deleted or
//! disabled upstream says NDEATH, a killed svc's will does, and bdSeq counts the connections;
//! another svc, as Sparkplug host, makes the node's metrics its tags and writes one back.
//! Payloads are decoded with srad-types (Tahu's `sparkplug_b.proto` through prost) and, as an
//! independent implementation, by npm's sparkplug-payload (Tahu's JavaScript codec, the
//! `sparkplug_listen.cjs` peer), which also encodes an NCMD.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use srad_types::payload::{metric, DataType, Message as _, Metric, Payload};
use std::time::Duration;

const NBIRTH: &str = "spBv1.0/Plant/NBIRTH/svc1";
const NDATA: &str = "spBv1.0/Plant/NDATA/svc1";
const NDEATH: &str = "spBv1.0/Plant/NDEATH/svc1";
const NCMD: &str = "spBv1.0/Plant/NCMD/svc1";

fn add_namespace(server: &Server, path: &str) {
    let resp = server
        .admin_in("domains:acme", Method::POST, "/svc/namespaces")
        .json(&json!({"name": path.replace('/', "_"), "path": path}))
        .send()
        .expect("POST /svc/namespaces");
    json_ok(resp, StatusCode::CREATED);
}

fn status(server: &Server, id: &str) -> Value {
    server.get_json(
        "domains:acme",
        &format!("/svc/upstreams/{}/status", enc(id)),
    )
}

/// The plant: domain `acme` with namespace `acme/site1`, three tags with values (one with a
/// unit), and the host application subscribed to everything Sparkplug on `peer`.
fn plant(peer: &PeerBroker) -> (Server, Mqtt) {
    let server = Server::start();
    server.create_domain("acme");
    add_namespace(&server, "acme/site1");
    server.create_record(
        "domains:acme",
        "tags",
        &json!({"path": "acme/site1/line1/temp", "historize": false, "unit": "°C"}),
    );
    server.create_tag("domains:acme", "acme/site1/line1/count", false);
    server.create_tag("domains:acme", "acme/site1/mode", false);
    let mut device = server.mqtt_admin(Proto::V5, Via::Tcp, "device");
    for (topic, value) in [
        ("acme/site1/line1/temp", "21.5"),
        ("acme/site1/line1/count", "42"),
        ("acme/site1/mode", "\"auto\""),
    ] {
        assert_eq!(device.publish(topic, value, 1, false), "Success");
    }
    let mut host = peer.client("scada-host");
    assert_eq!(host.subscribe("spBv1.0/#", 1), Some(1));
    (server, host)
}

fn edge_upstream(server: &Server, peer: &PeerBroker, extra: Value) -> String {
    let mut body = json!({"name": "scada", "host": "127.0.0.1", "port": peer.port,
        "username": "edge", "password": "edge-pw-123",
        "reconnect": {"initial": "200ms", "max": "1s"},
        "sparkplug": {"group": "Plant", "node": "svc1", "branch": "acme/site1"}});
    body.as_object_mut()
        .expect("object")
        .extend(extra.as_object().expect("object").clone());
    let created = server.create_record("domains:acme", "upstreams", &body);
    created["id"].as_str().expect("id").to_string()
}

/// The next message on `topic` (others are skipped), decoded.
fn next_on(host: &mut Mqtt, topic: &str) -> (Msg, Payload) {
    decoded(host.expect_publish(topic))
}

fn decoded(msg: Msg) -> (Msg, Payload) {
    let payload = Payload::decode(&msg.payload[..])
        .unwrap_or_else(|e| panic!("{}: not a Sparkplug B payload: {e}", msg.topic));
    (msg, payload)
}

fn named<'p>(payload: &'p Payload, name: &str) -> &'p Metric {
    payload
        .metrics
        .iter()
        .find(|m| m.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no metric `{name}` in {payload:?}"))
}

fn bd_seq(payload: &Payload) -> u64 {
    let metric = named(payload, "bdSeq");
    assert_eq!(metric.datatype, Some(DataType::Int64 as u32), "{metric:?}");
    match metric.value {
        Some(metric::Value::LongValue(n)) => n,
        ref other => panic!("bdSeq holds {other:?}"),
    }
}

/// (name, alias, datatype, value) of the tag metrics of an NBIRTH, in order.
fn tag_metrics(birth: &Payload) -> Vec<(String, u64, DataType, Option<metric::Value>)> {
    birth
        .metrics
        .iter()
        .filter(|m| !matches!(m.name.as_deref(), Some("bdSeq" | "Node Control/Rebirth")))
        .map(|m| {
            let datatype = DataType::try_from(m.datatype.expect("a datatype") as i32)
                .expect("a known datatype");
            (
                m.name.clone().expect("a name"),
                m.alias.expect("an alias"),
                datatype,
                m.value.clone(),
            )
        })
        .collect()
}

fn ncmd(metric: Metric) -> Vec<u8> {
    Payload {
        timestamp: Some(1),
        metrics: vec![metric],
        seq: None,
        uuid: None,
        body: None,
    }
    .encode_to_vec()
}

/// What Tahu's decoder (the listener peer) made of the first message on `topic`: no error
/// from sparkplug-payload's own decoder either.
fn tahu(listener: &SparkplugPeer, topic: &str) -> Value {
    let found = listener.wait_event(|line| line["topic"] == topic, Duration::from_secs(10));
    assert!(found.get("lib_error").is_none(), "{found}");
    found
}

/// The metric named `name` of a decoded payload.
fn tahu_metric<'v>(message: &'v Value, name: &str) -> &'v Value {
    message["payload"]["metrics"]
        .as_array()
        .and_then(|metrics| metrics.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("no metric `{name}` in {message}"))
}

#[test]
fn an_upstream_is_a_sparkplug_edge_node_born_with_its_tags_and_commanded_by_ncmd() {
    let peer = PeerBroker::start("edge", "edge-pw-123");
    let (server, mut host) = plant(&peer);
    assert_eq!(host.subscribe("cloud/#", 1), Some(1));
    let listener = SparkplugPeer::listener(peer.port, "edge", "edge-pw-123", "spBv1.0/#");
    let id = edge_upstream(
        &server,
        &peer,
        json!({"bindings": [{"direction": "out", "local": "acme/site1/line1",
            "remote": "cloud/line1"}]}),
    );

    // NBIRTH: seq 0, bdSeq 0, node control, then every tag by sorted name with aliases 1, 2, ….
    let (msg, birth) = next_on(&mut host, NBIRTH);
    assert_eq!((msg.qos, msg.retain), (0, false));
    assert_eq!(birth.seq, Some(0));
    assert_eq!(bd_seq(&birth), 0);
    let rebirth = named(&birth, "Node Control/Rebirth");
    assert_eq!(rebirth.datatype, Some(DataType::Boolean as u32));
    assert_eq!(rebirth.value, Some(metric::Value::BooleanValue(false)));
    assert_eq!(
        tag_metrics(&birth),
        [
            (
                "line1/count".to_string(),
                1,
                DataType::Int64,
                Some(metric::Value::LongValue(42))
            ),
            (
                "line1/temp".to_string(),
                2,
                DataType::Double,
                Some(metric::Value::DoubleValue(21.5))
            ),
            (
                "mode".to_string(),
                3,
                DataType::String,
                Some(metric::Value::StringValue("auto".into()))
            ),
        ]
    );
    let temp = named(&birth, "line1/temp");
    let properties = temp.properties.as_ref().expect("engUnit");
    assert_eq!(properties.keys, ["engUnit"]);
    assert_eq!(
        properties.values[0].value,
        Some(srad_types::payload::property_value::Value::StringValue(
            "°C".into()
        ))
    );
    assert!(temp.timestamp.is_some_and(|ts| ts > 1_600_000_000_000));
    let birth = tahu(&listener, NBIRTH);
    assert_eq!(birth["payload"]["seq"], 0, "{birth}");
    let bd = tahu_metric(&birth, "bdSeq");
    assert_eq!((&bd["type"], &bd["value"]), (&json!("Int64"), &json!("0")));
    let rebirth = tahu_metric(&birth, "Node Control/Rebirth");
    assert_eq!(
        (&rebirth["type"], &rebirth["value"]),
        (&json!("Boolean"), &json!(false))
    );
    let temp = tahu_metric(&birth, "line1/temp");
    assert_eq!(
        (&temp["alias"], &temp["type"], &temp["value"]),
        (&json!(2), &json!("Double"), &json!(21.5))
    );
    assert_eq!(
        temp["properties"],
        json!({"engUnit": {"type": "String", "value": "°C"}})
    );
    let count = tahu_metric(&birth, "line1/count");
    assert_eq!(
        (&count["alias"], &count["type"], &count["value"]),
        (&json!(1), &json!("Int64"), &json!("42"))
    );
    let mode = tahu_metric(&birth, "mode");
    assert_eq!(
        (&mode["alias"], &mode["type"], &mode["value"]),
        (&json!(3), &json!("String"), &json!("auto"))
    );
    let connected = status(&server, &id);
    assert_eq!(connected["state"], "connected", "{connected}");
    assert_eq!(connected["sparkplug"]["online"], true, "{connected}");
    assert_eq!(connected["sparkplug"]["bd_seq"], 0, "{connected}");

    // A tag change: one NDATA by alias, seq 1; the binding carries it as well.
    let mut device = server.mqtt_admin(Proto::V5, Via::Tcp, "device2");
    assert_eq!(
        device.publish("acme/site1/line1/temp", "22.5", 1, false),
        "Success"
    );
    // The bridged copy goes through the durable queue, the NDATA after its window: either
    // may come first.
    let mut seen = host.collect_until(NDATA);
    let (msg, data) = decoded(seen.pop().expect("the NDATA"));
    if !seen.iter().any(|m| m.topic == "cloud/line1/temp") {
        seen.push(host.expect_publish("cloud/line1/temp"));
    }
    let bridged: Vec<String> = seen
        .iter()
        .filter(|m| m.topic.starts_with("cloud/"))
        .map(|m| format!("{} {}", m.topic, m.text()))
        .collect();
    assert_eq!(bridged, ["cloud/line1/temp 22.5"]);
    assert_eq!((msg.qos, msg.retain), (0, false));
    assert_eq!(data.seq, Some(1));
    assert_eq!(data.metrics.len(), 1, "{data:?}");
    let changed = &data.metrics[0];
    assert_eq!((changed.alias, changed.name.as_deref()), (Some(2), None));
    assert_eq!(changed.value, Some(metric::Value::DoubleValue(22.5)));
    let data = tahu(&listener, NDATA);
    assert_eq!(data["payload"]["seq"], 1, "{data}");
    let metrics = data["payload"]["metrics"].as_array().expect("metrics");
    assert_eq!(metrics.len(), 1, "{data}");
    assert_eq!(metrics[0]["alias"], 2, "{data}");
    assert!(metrics[0].get("name").is_none(), "by alias only: {data}");
    assert_eq!(metrics[0]["raw"], json!({"double_value": 22.5}), "{data}");

    // An NCMD rebirth (encoded by Tahu's codec): a new NBIRTH, seq 0 again, the same bdSeq,
    // the latest values.
    listener.send(
        json!({"cmd": "publish", "topic": NCMD, "qos": 0, "payload_json": {
        "timestamp": 1_767_225_600_000u64,
        "metrics": [{"name": "Node Control/Rebirth", "type": "Boolean", "value": true}]}}),
    );
    let (_, reborn) = next_on(&mut host, NBIRTH);
    assert_eq!((reborn.seq, bd_seq(&reborn)), (Some(0), 0));
    assert_eq!(
        named(&reborn, "line1/temp").value,
        Some(metric::Value::DoubleValue(22.5))
    );

    // An NCMD write by alias: the local tag takes the value, and reports it as NDATA.
    let mut watcher = server.mqtt_admin(Proto::V5, Via::Tcp, "watcher");
    watcher.subscribe("acme/site1/mode", 1);
    let mut write = Metric::new();
    write
        .set_alias(3)
        .set_datatype(DataType::String)
        .set_value(metric::Value::StringValue("manual".into()));
    host.publish(NCMD, ncmd(write), 1, false);
    let written = watcher.expect_publish("acme/site1/mode");
    assert_eq!(written.text(), "\"manual\"");
    let (_, data) = next_on(&mut host, NDATA);
    assert_eq!(data.seq, Some(1), "the first NDATA after the rebirth");
    assert_eq!(data.metrics[0].alias, Some(3));
    assert_eq!(
        data.metrics[0].value,
        Some(metric::Value::StringValue("manual".into()))
    );

    // A tag new since the NBIRTH (registered on its first publish): a rebirth declaring it.
    assert_eq!(
        device.publish("acme/site1/line2/speed", "7", 1, false),
        "Success"
    );
    let (_, grown) = next_on(&mut host, NBIRTH);
    let speed = named(&grown, "line2/speed");
    assert_eq!(
        (speed.alias, speed.value.clone()),
        (Some(4), Some(metric::Value::LongValue(7))),
        "the next alias; the others keep theirs"
    );
    assert_eq!(named(&grown, "mode").alias, Some(3));
    let now = status(&server, &id);
    assert_eq!(now["sparkplug"]["commands"], 2, "{now}");
    assert_eq!(now["sparkplug"]["writes"], 1, "{now}");

    // Deleted: the explicit NDEATH (QoS 1) of this connection's bdSeq, without seq.
    std::thread::sleep(PAUSE);
    let resp = server
        .admin_in("domains:acme", Method::DELETE, &rec_path(&id))
        .send()
        .expect("DELETE upstream");
    assert_eq!(resp.status(), StatusCode::OK);
    let (msg, death) = next_on(&mut host, NDEATH);
    assert_eq!((msg.qos, msg.retain), (1, false));
    assert_eq!((death.seq, bd_seq(&death)), (None, 0));
    assert_eq!(death.metrics.len(), 1);
    assert!(explicit(&death, &grown), "not the will: {death:?}");
    let death = tahu(&listener, NDEATH);
    assert_eq!(
        (death["qos"].clone(), death["retain"].clone()),
        (json!(1), json!(false))
    );
    assert!(death["payload"].get("seq").is_none(), "{death}");
    let bd = tahu_metric(&death, "bdSeq");
    assert_eq!((&bd["type"], &bd["value"]), (&json!("Int64"), &json!("0")));
    // Every message read by sparkplug-payload's own decoder as well: three NBIRTHs, two
    // NDATA, the NDEATH (and the NCMD the listener sent).
    let events = listener.events();
    let messages: Vec<&Value> = events.iter().filter(|l| l.get("topic").is_some()).collect();
    assert!(
        messages.iter().all(|m| m.get("lib_error").is_none()),
        "{}",
        listener.output()
    );
    let count = |topic: &str| messages.iter().filter(|m| m["topic"] == topic).count();
    assert_eq!(
        [count(NBIRTH), count(NDATA), count(NDEATH)],
        [3, 2, 1],
        "{}",
        listener.output()
    );
}

/// Whether an NDEATH is the one svc publishes before disconnecting, made later than `birth`
/// (the stop comes at least [`PAUSE`] after it), not the will, made at the CONNECT, before it.
fn explicit(death: &Payload, birth: &Payload) -> bool {
    death.timestamp > birth.timestamp
}

/// Between an NBIRTH and a stop, so the explicit NDEATH is younger than the NBIRTH.
const PAUSE: Duration = Duration::from_millis(20);

#[test]
fn the_will_says_ndeath_when_svc_dies_and_bd_seq_counts_the_connections() {
    for version in ["5", "3.1.1"] {
        will_and_bd_seq(version);
    }
}

fn will_and_bd_seq(version: &str) {
    let peer = PeerBroker::start("edge", "edge-pw-123");
    let (mut server, mut host) = plant(&peer);
    let id = edge_upstream(&server, &peer, json!({"mqtt_version": version}));
    let (_, birth) = next_on(&mut host, NBIRTH);
    assert_eq!(bd_seq(&birth), 0);

    // Disabled: an NDEATH of bdSeq 0; enabled again: the next connection is bdSeq 1.
    std::thread::sleep(PAUSE);
    let off = server
        .admin_in(
            "domains:acme",
            Method::POST,
            &format!("/svc/upstreams/{}/disconnect", enc(&id)),
        )
        .send()
        .expect("disconnect");
    assert_eq!(json_ok(off, StatusCode::OK)["state"], "disabled");
    let (_, death) = next_on(&mut host, NDEATH);
    assert_eq!(bd_seq(&death), 0);
    assert!(explicit(&death, &birth), "not the will: {death:?}");
    let on = server
        .admin_in(
            "domains:acme",
            Method::POST,
            &format!("/svc/upstreams/{}/connect", enc(&id)),
        )
        .send()
        .expect("connect");
    json_ok(on, StatusCode::OK);
    let (_, birth) = next_on(&mut host, NBIRTH);
    assert_eq!(bd_seq(&birth), 1);

    // Killed: Mosquitto publishes the will, the NDEATH of that connection (QoS 1).
    server.kill9();
    let (msg, will) = next_on(&mut host, NDEATH);
    assert_eq!((msg.qos, msg.retain), (1, false));
    assert_eq!((will.seq, bd_seq(&will)), (None, 1));

    // svc keeps bdSeq in memory: started again, it counts from 0 (NBIRTH and will agree).
    server.restart();
    let (_, birth) = next_on(&mut host, NBIRTH);
    assert_eq!(bd_seq(&birth), 0, "MQTT {version}");
    assert_eq!(tag_metrics(&birth).len(), 3, "{birth:?}");
    server.poll(Duration::from_secs(10), "the edge node is online", || {
        let now = status(&server, &id);
        (now["sparkplug"]["online"] == true).then_some(())
    });

    // Stopped (SIGTERM): the node says NDEATH before it disconnects.
    std::thread::sleep(PAUSE);
    assert!(server.terminate().success());
    let (_, death) = next_on(&mut host, NDEATH);
    assert_eq!(bd_seq(&death), 0);
    assert!(explicit(&death, &birth), "not the will: {death:?}");
}

#[test]
fn the_sparkplug_member_is_checked_field_by_field() {
    let server = Server::start();
    server.create_domain("acme");
    add_namespace(&server, "acme/site1");
    let body =
        |sparkplug: Value| json!({"name": "scada", "host": "127.0.0.1", "sparkplug": sparkplug});
    for (sparkplug, needle) in [
        (
            json!({"node": "n", "branch": "acme/site1"}),
            "`sparkplug.group`",
        ),
        (
            json!({"group": "a/b", "node": "n", "branch": "acme/site1"}),
            "`sparkplug.group`",
        ),
        (
            json!({"group": "g", "node": "#", "branch": "acme/site1"}),
            "`sparkplug.node`",
        ),
        (
            json!({"group": "g", "node": "n", "branch": "acme/elsewhere"}),
            "`sparkplug.branch`",
        ),
    ] {
        let resp = server
            .admin_in("domains:acme", Method::POST, "/svc/upstreams")
            .json(&body(sparkplug))
            .send()
            .expect("POST /svc/upstreams");
        assert_error(resp, StatusCode::BAD_REQUEST, &[needle]);
    }
    let created = server.create_record(
        "domains:acme",
        "upstreams",
        &json!({"name": "scada", "host": "127.0.0.1", "enabled": false,
            "sparkplug": {"group": "g", "node": "n", "branch": "acme/site1/line1"}}),
    );
    assert_eq!(created["sparkplug"]["branch"], "acme/site1/line1");
    let id = created["id"].as_str().expect("id");
    let resp = server
        .admin_in("domains:acme", Method::PUT, &rec_path(id))
        .json(&json!({"sparkplug": false}))
        .send()
        .expect("PUT");
    let updated = json_ok(resp, StatusCode::OK);
    assert!(updated.get("sparkplug").is_none(), "{updated}");
}

/// One svc consumes another as a Sparkplug source: the edge svc's upstream is the plant svc,
/// whose Sparkplug host makes the edge node's metrics tags (values, units), follows their
/// changes, and writes one back as an NCMD that reaches the edge's tag.
#[test]
fn another_svc_consumes_svc_as_a_sparkplug_source_and_writes_back() {
    let plant = Server::start();
    plant.create_domain("corp");
    for (name, path) in [("plant", "corp/plant"), ("sparkplug", "spBv1.0/Plant")] {
        plant.create_record(
            "domains:corp",
            "namespaces",
            &json!({"name": name, "path": path}),
        );
    }
    plant.create_record(
        "domains:corp",
        "sparkplug",
        &json!({"name": "site", "namespace": "corp/plant/sp", "groups": ["Plant"]}),
    );
    plant.user_with_grants("domains:corp", "edge", &[("tags", "read-write", "*")]);
    let edge = Server::start();
    edge.create_domain("acme");
    add_namespace(&edge, "acme/site1");
    edge.create_record(
        "domains:acme",
        "tags",
        &json!({"path": "acme/site1/line1/temp", "historize": false, "unit": "°C"}),
    );
    edge.create_tag("domains:acme", "acme/site1/mode", false);
    let mut device = edge.mqtt_admin(Proto::V5, Via::Tcp, "device");
    device.publish("acme/site1/line1/temp", "21.5", 1, false);
    device.publish("acme/site1/mode", "\"auto\"", 1, false);
    edge.create_record(
        "domains:acme",
        "upstreams",
        &json!({"name": "plant", "host": "127.0.0.1", "port": plant.listener_port("mqtt"),
            "username": "edge", "password": "edge-pw-123",
            "sparkplug": {"group": "Plant", "node": "svc1", "branch": "acme/site1"}}),
    );

    let value_on_plant = |tag: &str, expected: Value| {
        plant.poll(Duration::from_secs(15), tag, || {
            let values = plant.get_json("domains:corp", "/svc/tag/values");
            let found = values
                .as_array()?
                .iter()
                .find(|v| v["topic"] == tag)?
                .clone();
            (found["value"] == expected).then_some(())
        })
    };
    let temp = "corp/plant/sp/Plant/svc1/line1/temp";
    value_on_plant(temp, json!(21.5));
    value_on_plant("corp/plant/sp/Plant/svc1/mode", json!("auto"));
    let tree = plant.get_json(
        "domains:corp",
        "/svc/namespaces/tree?path=corp/plant/sp/Plant/svc1/line1",
    );
    assert_eq!(tree["tags"][0]["unit"], "°C", "{tree}");

    // A change on the edge reaches the plant as NDATA.
    device.publish("acme/site1/line1/temp", "23.25", 1, false);
    value_on_plant(temp, json!(23.25));

    // A write on the plant goes back as an NCMD and sets the edge's tag.
    let resp = plant
        .admin_in("domains:corp", Method::POST, "/svc/tag/write")
        .json(&json!({"topic": "corp/plant/sp/Plant/svc1/mode", "value": "manual"}))
        .send()
        .expect("POST /svc/tag/write");
    json_ok(resp, StatusCode::OK);
    edge.poll(Duration::from_secs(15), "the edge's tag written", || {
        let values = edge.get_json("domains:acme", "/svc/tag/values");
        let mode = values
            .as_array()?
            .iter()
            .find(|v| v["topic"] == "acme/site1/mode")?
            .clone();
        (mode["value"] == "manual").then_some(())
    });
    value_on_plant("corp/plant/sp/Plant/svc1/mode", json!("manual"));
}
