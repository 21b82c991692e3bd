//! OPC UA connectors end to end (issue 35), against servers the test starts: Python's asyncua
//! and npm's node-opcua-server. Values of every type reach their tags with the server's source
//! time; writes answer after the server (200, 422 with its Bad status, 503 when it is gone);
//! Basic256Sha256 SignAndEncrypt with a user name works once an administrator trusts the
//! server's certificate, which is refused and listed until then; a server that freezes is
//! caught by the watchdog; browse lists the address space one level at a time.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const DOMAIN: &str = "domains:acme";
/// The source time the asyncua peer gives its variables.
const SOURCE_TIME: &str = "2024-01-02T03:04:05.678Z";

fn setup() -> Server {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    server.create_record(
        DOMAIN,
        "namespaces",
        &json!({"name": "plant", "path": "acme/ua"}),
    );
    server
}

fn endpoint(peer: &DevicePeer) -> String {
    format!("opc.tcp://127.0.0.1:{}/svc", peer.port)
}

fn connector(name: &str, settings: Value, points: Value) -> Value {
    let mut settings = settings;
    settings["publishing_interval"] = json!("200ms");
    settings["keep_alive_count"] = json!(5);
    json!({
        "name": name,
        "kind": "opcua",
        "settings": settings,
        "reconnect": {"initial": "200ms", "max": "1s", "jitter": 0.1},
        "points": points,
    })
}

fn node(tag: &str, id: &str) -> Value {
    json!({"tag": format!("acme/ua/{tag}"), "address": {"node_id": id}})
}

fn create(server: &Server, body: &Value) -> String {
    server.create_connector(DOMAIN, body)["id"]
        .as_str()
        .expect("id")
        .to_string()
}

#[test]
fn values_of_every_type_arrive_with_the_source_time() {
    let peer = DevicePeer::python("opcua_server.py", &[]);
    let server = setup();
    let mut points = vec![json!({"tag": "acme/ua/int16", "historize": true,
        "address": {"node_id": "ns=2;s=Int16"}})];
    let expected = [
        ("boolean", "Boolean", json!(true)),
        ("sbyte", "SByte", json!(-8)),
        ("int32", "Int32", json!(-12)),
        ("uint32", "UInt32", json!(4294967295u64)),
        ("int64", "Int64", json!(-9007199254740993i64)),
        ("uint64", "UInt64", json!(u64::MAX)),
        ("float", "Float", json!(1.5)),
        ("double", "Double", json!(std::f64::consts::PI)),
        ("string", "String", json!("héllo")),
        ("datetime", "DateTime", json!(SOURCE_TIME)),
        ("array", "DoubleArray", json!([1.5, 2.5, 3.5])),
        ("matrix", "Int32Matrix", json!([[1, 2, 3], [4, 5, 6]])),
        (
            "point",
            "Point",
            json!({"X": 1.25, "Y": -2.5, "Label": "p"}),
        ),
    ];
    for (tag, id, _) in &expected {
        points.push(node(tag, &format!("ns=2;s={id}")));
    }
    // A browse path, a polled point, and a node the server does not have.
    points.push(json!({"tag": "acme/ua/by_path", "address": {"browse_path": "2:Plant/2:Int16"}}));
    points.push(
        json!({"tag": "acme/ua/polled", "address": {"node_id": "ns=2;s=Counter",
        "mode": "poll", "poll_interval": "200ms"}}),
    );
    points.push(node("missing", "ns=2;s=NoSuchNode"));
    let id = create(
        &server,
        &connector("line", json!({"endpoint": endpoint(&peer)}), json!(points)),
    );
    let status = server.wait_connector(DOMAIN, &id, "connected");
    assert!(status["device"].is_object(), "{status}");

    let int16 = server.wait_device_tag(DOMAIN, "acme/ua/int16", |v| v["value"] == -12);
    assert_eq!(
        int16["timestamp"], SOURCE_TIME,
        "the server's source time: {int16}"
    );
    assert_eq!(int16["quality"], "good");
    for (tag, _, value) in &expected {
        let topic = format!("acme/ua/{tag}");
        let got = server.wait_device_tag(DOMAIN, &topic, |v| v.get("value").is_some());
        assert_eq!(&got["value"], value, "{topic}: {got}");
    }
    server.wait_device_tag(DOMAIN, "acme/ua/by_path", |v| v["value"] == -12);
    // The counter changes; polling follows it.
    let first = server.wait_device_tag(DOMAIN, "acme/ua/polled", |v| v["value"].is_i64());
    server.wait_device_tag(DOMAIN, "acme/ua/polled", |v| v["value"] != first["value"]);
    // The unknown node is bad with the server's status; the others go on.
    server.wait_device_tag(DOMAIN, "acme/ua/missing", |v| v["quality"] == "bad");
    let missing = server.point_status(DOMAIN, &id, "acme/ua/missing");
    assert!(
        missing["error"]
            .as_str()
            .unwrap_or_default()
            .contains("BadNodeIdUnknown"),
        "{missing}"
    );
    // The historian keeps the source time.
    let history = server.history(DOMAIN, "acme/ua/int16", 1);
    assert_eq!(history[0]["timestamp"], SOURCE_TIME, "{history}");

    // Browse: the Objects folder, then one level below Plant.
    let top = server.get_json(DOMAIN, &format!("/svc/connectors/{}/browse", enc(&id)));
    let plant = top
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["browse_name"] == "2:Plant")
        .unwrap_or_else(|| panic!("Plant under Objects: {top}"))
        .clone();
    assert_eq!(plant["has_children"], true, "{plant}");
    let below = server.get_json(
        DOMAIN,
        &format!(
            "/svc/connectors/{}/browse?node={}",
            enc(&id),
            enc(plant["node_id"].as_str().unwrap())
        ),
    );
    let int16 = below
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["node_id"] == "ns=2;s=Int16")
        .unwrap_or_else(|| panic!("Int16 under Plant: {below}"))
        .clone();
    assert_eq!(
        (
            int16["node_class"].clone(),
            int16["data_type"].clone(),
            int16["access_level"].clone()
        ),
        (json!("Variable"), json!("Int16"), json!("read")),
        "{int16}"
    );
    let resp = server
        .admin_in(
            "domains:beta",
            Method::GET,
            &format!("/svc/connectors/{}/browse", enc(&id)),
        )
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
}

#[test]
fn writes_answer_after_the_server_and_refusals_carry_its_status() {
    let peer = DevicePeer::python("opcua_server.py", &[]);
    let server = setup();
    let points = json!([
        {"tag": "acme/ua/w_int16", "writable": true, "address": {"node_id": "ns=2;s=W.Int16"}},
        {"tag": "acme/ua/w_double", "writable": true, "scale": 2,
            "address": {"node_id": "ns=2;s=W.Double"}},
        {"tag": "acme/ua/w_string", "writable": true, "address": {"node_id": "ns=2;s=W.String"}},
        {"tag": "acme/ua/ro_int16", "writable": true, "address": {"node_id": "ns=2;s=Int16"}},
    ]);
    let id = create(
        &server,
        &connector("cell", json!({"endpoint": endpoint(&peer)}), points),
    );
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/ua/w_int16", |v| v["value"] == -12);

    server.write_and_read_back(DOMAIN, "acme/ua/w_int16", json!(-300));
    server.write_and_read_back(DOMAIN, "acme/ua/w_double", json!(5.0));
    server.write_and_read_back(DOMAIN, "acme/ua/w_string", json!("ünïcode"));
    // Out of the type's range: 400; the server refuses a read-only node: 422 with its status.
    assert_error(
        server.write_tag(DOMAIN, "acme/ua/w_int16", json!(40000)),
        StatusCode::BAD_REQUEST,
        &[],
    );
    assert_error(
        server.write_tag(DOMAIN, "acme/ua/ro_int16", json!(1)),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["Bad"],
    );
    let status = server.connector_status(DOMAIN, &id);
    assert!(status["writes"].as_u64().unwrap() >= 3, "{status}");
    assert!(status["write_errors"].as_u64().unwrap() >= 1, "{status}");

    // Over MQTT, the write topic.
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "ua-writer");
    mqtt.subscribe("acme/ua/answers", 1);
    mqtt.publish_request("acme/ua/w_int16/set", "7", "acme/ua/answers", b"x");
    let answer: Value =
        serde_json::from_slice(&mqtt.expect_publish("acme/ua/answers").payload).unwrap();
    assert_eq!(answer["ok"], true, "{answer}");
    server.wait_device_tag(DOMAIN, "acme/ua/w_int16", |v| v["value"] == 7);

    // The server gone: 503 and the tags bad; back: good again.
    let mut peer = peer;
    peer.kill();
    server.wait_connector(DOMAIN, &id, "backoff");
    server.wait_device_tag(DOMAIN, "acme/ua/w_int16", |v| v["quality"] == "bad");
    assert_error(
        server.write_tag(DOMAIN, "acme/ua/w_int16", json!(1)),
        StatusCode::SERVICE_UNAVAILABLE,
        &["not connected"],
    );
    peer.restart();
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/ua/w_int16", |v| {
        v["quality"] == "good" && v["value"] == -12
    });
}

#[test]
fn a_secure_server_is_trusted_by_an_administrator_then_reached() {
    let peer = DevicePeer::python(
        "opcua_server.py",
        &[
            "--security",
            "basic256sha256",
            "--user",
            "operator:s3cret-ua",
        ],
    );
    let server = setup();
    let settings = json!({"endpoint": endpoint(&peer), "security_policy": "Basic256Sha256",
        "security_mode": "SignAndEncrypt",
        "identity": {"type": "username", "username": "operator"}});
    let mut body = connector(
        "secure",
        settings.clone(),
        json!([node("secure_int16", "ns=2;s=Int16")]),
    );
    body["password"] = json!("s3cret-ua");
    let id = create(&server, &body);

    // Refused and listed: the domain has not trusted the server's certificate.
    let status = server.wait_connector(DOMAIN, &id, "error");
    assert_eq!(status["last_error"]["kind"], "security", "{status}");
    let listed = server.poll(Duration::from_secs(10), "a listed certificate", || {
        let listed = server.get_json(DOMAIN, "/svc/connectors/certificates");
        (listed.as_array()?.len() == 1).then_some(listed)
    });
    assert_eq!(listed[0]["state"], "pending", "{listed}");
    let thumbprint = listed[0]["thumbprint"].as_str().unwrap().to_string();
    assert_eq!(thumbprint.len(), 40);
    assert_eq!(
        server.get_json("domains:beta", "/svc/connectors/certificates"),
        json!([]),
        "another domain's trust list is its own"
    );

    // Trusted: the connector connects and values flow.
    let resp = server
        .admin_in(
            DOMAIN,
            Method::POST,
            &format!("/svc/connectors/certificates/{thumbprint}/trust"),
        )
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK)["state"], "trusted");
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/ua/secure_int16", |v| v["value"] == -12);
    // The password is write-only.
    let record = server.get_json(DOMAIN, &rec_path(&id));
    assert_eq!(record["password_set"], true);
    assert!(!record.to_string().contains("s3cret-ua"), "{record}");

    // A wrong password: auth, with the server's status code.
    let mut wrong = connector("wrong", settings, json!([]));
    wrong["password"] = json!("nope");
    let wrong_id = create(&server, &wrong);
    let status = server.wait_connector(DOMAIN, &wrong_id, "error");
    assert_eq!(status["last_error"]["kind"], "auth", "{status}");
}

#[test]
fn a_server_that_stops_answering_is_caught_by_the_watchdog() {
    let peer = DevicePeer::python("opcua_server.py", &["--change-every", "0.2"]);
    let server = setup();
    let id = create(
        &server,
        &connector(
            "watched",
            json!({"endpoint": endpoint(&peer)}),
            json!([node("counter", "ns=2;s=Counter")]),
        ),
    );
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/ua/counter", |v| v["value"].as_i64() > Some(0));

    // Frozen: the TCP connection stays open and no publish response arrives.
    peer.freeze();
    let status = server.wait_connector(DOMAIN, &id, "backoff");
    assert_eq!(status["last_error"]["kind"], "timeout", "{status}");
    server.wait_device_tag(DOMAIN, "acme/ua/counter", |v| v["quality"] == "bad");
    peer.thaw();
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/ua/counter", |v| v["quality"] == "good");
}

#[test]
fn node_opcua_server_values_and_writes() {
    let peer = DevicePeer::node("opcua_server.mjs", &[]);
    let server = setup();
    let points = json!([
        node("n_int16", "ns=1;s=Int16"),
        node("n_uint64", "ns=1;s=UInt64"),
        {"tag": "acme/ua/n_double", "writable": true, "address": {"node_id": "ns=1;s=W.Double"}},
    ]);
    let id = create(
        &server,
        &connector("node", json!({"endpoint": endpoint(&peer)}), points),
    );
    server.wait_connector(DOMAIN, &id, "connected");
    server.wait_device_tag(DOMAIN, "acme/ua/n_int16", |v| v["value"] == -12);
    server.wait_device_tag(DOMAIN, "acme/ua/n_uint64", |v| {
        v["value"] == json!(u64::MAX)
    });
    server.write_and_read_back(DOMAIN, "acme/ua/n_double", json!(-2.25));
}

#[test]
fn a_connector_of_many_points_subscribes_and_polls_them_all() {
    // More items than one service call or one publish response may carry.
    const MANY: usize = 1800;
    let peer = DevicePeer::python("opcua_server.py", &["--many", &MANY.to_string()]);
    let server = setup();
    let points: Vec<Value> = (0..MANY)
        .map(|i| {
            let mode = if i % 3 == 0 { "poll" } else { "subscribe" };
            json!({"tag": format!("acme/ua/many/{i}"), "historize": true,
                "address": {"node_id": format!("ns=2;s=Many.{i}"), "mode": mode}})
        })
        .collect();
    let id = create(
        &server,
        &connector("many", json!({"endpoint": endpoint(&peer)}), json!(points)),
    );
    server.wait_connector(DOMAIN, &id, "connected");
    let status = server.poll(Duration::from_secs(60), "every point good", || {
        let status = server.connector_status(DOMAIN, &id);
        let points = status["points"].as_array()?;
        (points.len() == MANY && points.iter().all(|p| p["quality"] == "good")).then_some(status)
    });
    assert!(
        status["values_in"].as_u64().unwrap() >= MANY as u64,
        "{}",
        status["values_in"]
    );
    let last = format!("acme/ua/many/{}", MANY - 1);
    server.wait_device_tag(DOMAIN, &last, |v| v["value"] == (MANY - 1) as i64);
    assert_eq!(
        server
            .string_list(Some(DOMAIN), "/svc/historian/list")
            .len(),
        MANY
    );
}

#[test]
fn every_security_policy_and_mode_and_the_certificate_identity() {
    let peer = DevicePeer::python(
        "opcua_server.py",
        &["--security", "all", "--user", "operator:s3cret-ua"],
    );
    let server = setup();
    let mut ids = Vec::new();
    for (i, (policy, mode, identity)) in [
        (
            "Basic256Sha256",
            "Sign",
            json!({"type": "username", "username": "operator"}),
        ),
        (
            "Aes128_Sha256_RsaOaep",
            "Sign",
            json!({"type": "username", "username": "operator"}),
        ),
        (
            "Aes128_Sha256_RsaOaep",
            "SignAndEncrypt",
            json!({"type": "certificate"}),
        ),
        (
            "Aes256_Sha256_RsaPss",
            "SignAndEncrypt",
            json!({"type": "username", "username": "operator"}),
        ),
        (
            "Aes256_Sha256_RsaPss",
            "Sign",
            json!({"type": "certificate"}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let settings = json!({"endpoint": endpoint(&peer), "security_policy": policy,
            "security_mode": mode, "identity": identity});
        let mut body = connector(
            &format!("c{i}"),
            settings,
            json!([node(&format!("p{i}"), "ns=2;s=Int16")]),
        );
        body["password"] = json!("s3cret-ua");
        ids.push(create(&server, &body));
    }
    // One certificate to trust for all of them.
    let listed = server.poll(Duration::from_secs(20), "a listed certificate", || {
        let listed = server.get_json(DOMAIN, "/svc/connectors/certificates");
        (listed.as_array()?.len() == 1).then_some(listed)
    });
    let thumbprint = listed[0]["thumbprint"].as_str().unwrap().to_string();
    let resp = server
        .admin_in(
            DOMAIN,
            Method::POST,
            &format!("/svc/connectors/certificates/{thumbprint}/trust"),
        )
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    for (i, id) in ids.iter().enumerate() {
        let status = server.wait_connector(DOMAIN, id, "connected");
        assert!(status["device"]["security_policy"].is_string(), "{status}");
        server.wait_device_tag(DOMAIN, &format!("acme/ua/p{i}"), |v| v["value"] == -12);
    }
}
