//! Tags (SPEC 7): the per-domain `tags` table through `POST /svc/tags` (a path declared by this
//! or another domain → 409, wildcard or empty-level paths → 400; a data dir from before the
//! one-owner rule keeps the earliest declaration as owner), `GET /svc/tag/list`, domain isolation of
//! tag lists and historian routes, auto-registration in `svc_admin` of topics no domain
//! declares, `POST /svc/tag/write` reaching MQTT subscribers with the JSON of `value`, and
//! `GET /svc/tag/values`. A topic first published with an API key made in a domain is
//! registered in that domain (the SDK's quick start with a key made in `acme`), unless a
//! namespace or a tag already gives it an owner, and only when the key's owner may write there.

use crate::common::*;
use reqwest::blocking::RequestBuilder;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn post_tag(server: &Server, domain: &str, body: &Value) -> reqwest::blocking::Response {
    server
        .admin_in(domain, Method::POST, "/svc/tags")
        .json(body)
        .send()
        .unwrap()
}

/// An older version let two domains declare one topic. Such a data dir starts with the earliest
/// declaration as the owner, whichever domain was written first, and logs the rest once.
#[test]
fn old_duplicate_declarations_leave_the_earliest_owner() {
    let mut server = Server::start();
    server.create_domain("a");
    server.create_domain("b");
    server.create_tag("domains:a", "a/line/temp", true);
    server.create_tag("domains:b", "b/line/temp", false);
    assert!(server.terminate().success());
    let values = "('olddup', '{\"path\":\"a/line/temp\",\"historize\":true}', \
                  '2001-01-01T00:00:00.000Z', '2001-01-01T00:00:00.000Z')";
    server.store_sql(
        &format!(
            "INSERT INTO \"b.tags\" (key, data, created_dt, updated_dt) VALUES {values} \
             RETURNING key"
        ),
        &format!(
            "INSERT INTO \"d_b\".\"tags\" (key, data, created_dt, updated_dt) VALUES {values} \
             RETURNING key"
        ),
    );
    server.restart();
    let b_tags = server.string_list(Some("domains:b"), "/svc/tag/list");
    assert_eq!(
        b_tags,
        ["a/line/temp", "b/line/temp"],
        "b declared it first"
    );
    let a_tags = server.string_list(Some("domains:a"), "/svc/tag/list");
    assert!(
        a_tags.is_empty(),
        "a's later duplicate is inert: {a_tags:?}"
    );
    let resp = server
        .admin_in("domains:a", Method::PATCH, "/svc/historian/last")
        .json(&json!({"topic": "a/line/temp"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    assert!(server.wait_for_log("declared by several domains"));
    let logs = server.logs();
    assert_eq!(
        logs.matches("declared by several domains").count(),
        1,
        "{logs}"
    );
    assert!(logs.contains(r#"owner="b" ignored="a""#), "{logs}");
}

#[test]
fn duplicate_path_in_a_domain_is_409() {
    let server = Server::start();
    server.create_domain("a");
    server.create_domain("b");
    let tag = server.create_tag("domains:a", "a/line/temp", true);
    assert_eq!(tag["path"], json!("a/line/temp"), "{tag}");
    assert_eq!(tag["historize"], json!(true), "{tag}");
    assert!(
        tag["id"].as_str().unwrap_or("").starts_with("a.tags:"),
        "{tag}"
    );
    let resp = post_tag(
        &server,
        "domains:a",
        &json!({"path": "a/line/temp", "historize": false}),
    );
    assert_error(resp, StatusCode::CONFLICT, &[]);
    // One owner per topic (issue 11): another domain cannot declare it either.
    let resp = post_tag(
        &server,
        "domains:b",
        &json!({"path": "a/line/temp", "historize": false}),
    );
    assert_error(resp, StatusCode::CONFLICT, &["another domain"]);
    // Without `historize` it defaults to false.
    let resp = post_tag(&server, "domains:a", &json!({"path": "a/line/pressure"}));
    let tag = json_ok(resp, StatusCode::CREATED);
    assert_eq!(tag["historize"], json!(false), "{tag}");
}

#[test]
fn wildcard_and_empty_level_paths_are_400() {
    let server = Server::start();
    server.create_domain("a");
    for path in ["a/+/temp", "a/#", "+", "a//b", "/a", "a/", "", "$SYS/x"] {
        let resp = post_tag(
            &server,
            "domains:a",
            &json!({"path": path, "historize": true}),
        );
        assert_error(resp, StatusCode::BAD_REQUEST, &[]);
    }
    for body in [json!({"historize": true}), json!({"path": 5})] {
        let resp = post_tag(&server, "domains:a", &body);
        assert_error(resp, StatusCode::BAD_REQUEST, &[]);
    }
    assert!(server
        .string_list(Some("domains:a"), "/svc/tag/list")
        .is_empty());
}

#[test]
fn tag_list_lists_the_domain_paths() {
    let server = Server::start();
    server.create_domain("a");
    let paths = ["a/line/temp", "a/line/speed", "a/state"];
    for (i, p) in paths.iter().enumerate() {
        server.create_tag("domains:a", p, i % 2 == 0);
    }
    let listed = server.string_list(Some("domains:a"), "/svc/tag/list");
    assert_eq!(listed.len(), paths.len(), "{listed:?}");
    assert_eq!(listed.iter().cloned().collect::<BTreeSet<_>>(), set(&paths));
    // The historian list holds only the historized ones.
    let historized = server.string_list(Some("domains:a"), "/svc/historian/list");
    assert_eq!(
        historized.into_iter().collect::<BTreeSet<_>>(),
        set(&["a/line/temp", "a/state"])
    );
    // Deleting a tag removes it from the list.
    let all = server.get_json("domains:a", "/svc/tags/all");
    let id = all
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == json!("a/state"))
        .and_then(|t| t["id"].as_str())
        .unwrap_or_else(|| panic!("no a/state in {all}"))
        .to_string();
    let resp = server
        .admin_in("domains:a", Method::DELETE, &rec_path(&id))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    let listed = server.string_list(Some("domains:a"), "/svc/tag/list");
    assert_eq!(
        listed.into_iter().collect::<BTreeSet<_>>(),
        set(&["a/line/temp", "a/line/speed"])
    );
}

#[test]
fn a_domain_cannot_see_another_domains_tags() {
    let server = Server::start();
    server.create_domain("a");
    server.create_domain("b");
    server.create_tag("domains:a", "a/line/temp", true);
    server.create_tag("domains:b", "b/line/temp", true);
    let mut admin = server.mqtt_admin(Proto::V3, Via::Tcp, "feeder");
    admin.publish(
        "a/line/temp",
        r#"{"value":1,"timestamp":"2026-01-01T00:00:00Z"}"#,
        1,
        false,
    );

    assert_eq!(
        server.string_list(Some("domains:b"), "/svc/tag/list"),
        ["b/line/temp"]
    );
    assert_eq!(
        server.string_list(Some("domains:b"), "/svc/historian/list"),
        ["b/line/temp"]
    );
    let query =
        json!({"topic": "a/line/temp", "start_time": "2025-12-31T00:00:00Z", "range": "2d"});
    for (method, path, body) in [
        (Method::PATCH, "/svc/historian", query.clone()),
        (
            Method::PATCH,
            "/svc/historian/last",
            json!({"topic": "a/line/temp", "limit": 5}),
        ),
        (
            Method::POST,
            "/svc/historian/export",
            json!({"topics": ["a/line/temp"], "startDate": "2025-12-31T00:00:00Z",
                   "endDate": "2026-01-02T00:00:00Z"}),
        ),
        (
            Method::POST,
            "/svc/tag/write",
            json!({"topic": "a/line/temp", "value": 2}),
        ),
    ] {
        let resp = server
            .admin_in("domains:b", method.clone(), path)
            .json(&body)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::NOT_FOUND, &["a/line/temp"]);
    }
    // Domain a itself sees its value (the 404s above are not an empty historian).
    let points = server.poll(Duration::from_secs(5), "a's historized value", || {
        let resp = server
            .admin_in("domains:a", Method::PATCH, "/svc/historian")
            .json(&query)
            .send()
            .unwrap();
        let points = json_ok(resp, StatusCode::OK);
        (points.as_array().map_or(0, Vec::len) == 1).then_some(points)
    });
    assert_eq!(
        points,
        json!([{"timestamp": "2026-01-01T00:00:00.000Z", "value": 1}])
    );
    // Nor does a record id of domain a leak through domain b.
    let a_tags = server.get_json("domains:a", "/svc/tags/all");
    let id = a_tags[0]["id"].as_str().unwrap().to_string();
    let resp = server
        .admin_in("domains:b", Method::GET, &rec_path(&id))
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[test]
fn undeclared_topics_are_registered_in_svc_admin() {
    let server = Server::start();
    server.create_domain("a");
    server.create_tag("domains:a", "a/declared", false);
    let mut admin = server.mqtt_admin(Proto::V5, Via::Tcp, "auto");
    admin.publish("auto/reg/one", "1", 1, false);
    admin.publish("auto/reg/two", "\"text\"", 0, false);
    admin.publish("a/declared", "3", 1, false);
    server.poll(Duration::from_secs(10), "auto-registered tags", || {
        let list = server.string_list(None, "/svc/tag/list");
        (list.iter().any(|t| t == "auto/reg/one") && list.iter().any(|t| t == "auto/reg/two"))
            .then_some(())
    });
    let list = server.string_list(None, "/svc/tag/list");
    assert!(
        !list.iter().any(|t| t == "a/declared"),
        "a topic declared by domain a was registered in svc_admin: {list:?}"
    );
    assert_eq!(
        list.iter().filter(|t| *t == "auto/reg/one").count(),
        1,
        "registered twice: {list:?}"
    );
    // Registered with historize:false.
    let all = server.get_json("domains:svc_admin", "/svc/tags/all");
    let rec = all
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == json!("auto/reg/one"))
        .unwrap_or_else(|| panic!("auto/reg/one not in {all}"));
    assert_eq!(rec["historize"], json!(false), "{rec}");
    let historized = server.string_list(None, "/svc/historian/list");
    assert!(
        !historized.iter().any(|t| t.starts_with("auto/")),
        "{historized:?}"
    );
    // A domain that now declares the same path is unaffected.
    server.create_tag("domains:a", "auto/reg/one", true);
}

#[test]
fn tag_write_reaches_mqtt_subscribers() {
    let server = Server::start();
    server.create_domain("a");
    server.create_tag("domains:a", "a/setpoint", true);
    let mut v5 = server.mqtt_admin(Proto::V5, Via::HttpMqtt, "w-v5");
    let mut v3 = server.mqtt_admin(Proto::V3, Via::Tcp, "w-v3");
    v5.subscribe("#", 2);
    v3.subscribe("+/+", 1);
    let values = [
        json!(21.5),
        json!("running"),
        json!(true),
        json!({"value": 3, "nested": {"list": [1, null, "x"]}}),
        json!([1, 2, 3]),
    ];
    for (i, value) in values.iter().enumerate() {
        let topic = format!("w/{i}");
        let resp = server
            .admin(Method::POST, "/svc/tag/write")
            .json(&json!({"topic": topic, "value": value}))
            .send()
            .unwrap();
        assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));
        for client in [&mut v5, &mut v3] {
            let m = client.expect_publish(&topic);
            let got: Value = serde_json::from_slice(&m.payload)
                .unwrap_or_else(|e| panic!("payload `{}` is not JSON: {e}", m.text()));
            assert_eq!(&got, value, "payload on {topic}");
            assert_eq!(m.qos, 1, "default qos 1 on {topic}");
        }
    }
    // In domain a, to its tag, with qos 2 and retain: a later subscriber gets it retained.
    let resp = server
        .admin_in("domains:a", Method::POST, "/svc/tag/write")
        .json(&json!({"topic": "a/setpoint", "value": 42, "qos": 2, "retain": true}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    let m = v5.expect_publish("a/setpoint");
    assert_eq!((m.text().as_str(), m.qos), ("42", 2));
    let mut late = server.mqtt_admin(Proto::V5, Via::Ws("/"), "w-late");
    late.subscribe("a/setpoint", 2);
    let m = late.expect_publish("a/setpoint");
    assert_eq!((m.text().as_str(), m.retain), ("42", true));
    // Outside svc_admin an undeclared topic is 404; a bad topic or qos is 400.
    let cases = [
        (
            "domains:a",
            json!({"topic": "a/undeclared", "value": 1}),
            StatusCode::NOT_FOUND,
        ),
        (
            "domains:a",
            json!({"topic": "a/+", "value": 1}),
            StatusCode::BAD_REQUEST,
        ),
        (
            "domains:a",
            json!({"topic": "a/setpoint", "value": 1, "qos": 3}),
            StatusCode::BAD_REQUEST,
        ),
        ("domains:a", json!({"value": 1}), StatusCode::BAD_REQUEST),
    ];
    for (domain, body, status) in cases {
        let resp = server
            .admin_in(domain, Method::POST, "/svc/tag/write")
            .json(&body)
            .send()
            .unwrap();
        assert_error(resp, status, &[]);
    }
    // The written value is historized and is the tag's latest value.
    let values = server.poll(Duration::from_secs(5), "a/setpoint in tag values", || {
        let v = server.get_json("domains:a", "/svc/tag/values");
        (v.as_array().map_or(0, Vec::len) == 1).then_some(v)
    });
    assert_eq!(values[0]["topic"], json!("a/setpoint"), "{values}");
    assert_eq!(values[0]["value"], json!(42), "{values}");
    assert!(
        is_rfc3339_millis_utc(values[0]["timestamp"].as_str().unwrap_or("")),
        "{values}"
    );
    server.poll(Duration::from_secs(5), "a/setpoint historized", || {
        let resp = server
            .admin_in("domains:a", Method::PATCH, "/svc/historian/last")
            .json(&json!({"topic": "a/setpoint", "limit": 1}))
            .send()
            .unwrap();
        let last = json_ok(resp, StatusCode::OK);
        (last.get(0).map(|p| &p["value"]) == Some(&json!(42))).then_some(())
    });
}

#[test]
fn tag_write_needs_tags_read_write() {
    let server = Server::start();
    server.create_domain("a");
    server.create_tag("domains:a", "a/x", false);
    let writer = server.user_with_grants("domains:a", "writer", &[("tags", "read-write", "*")]);
    let reader = server.user_with_grants("domains:a", "reader", &[("tags", "read", "*")]);
    let mut sub = server.mqtt_admin(Proto::V3, Via::Tcp, "sub");
    sub.subscribe("a/x", 1);
    let write = |token: &str| {
        server
            .with_token_in(token, "domains:a", Method::POST, "/svc/tag/write")
            .json(&json!({"topic": "a/x", "value": "hi"}))
            .send()
            .unwrap()
    };
    assert_error(write(&reader), StatusCode::UNAUTHORIZED, &[]);
    json_ok(write(&writer), StatusCode::OK);
    let m = sub.collect_until("a/x");
    assert_eq!(m.len(), 1, "the reader's write was published: {m:?}");
    assert_eq!(m[0].text(), "\"hi\"");
    // The reader can list the tags.
    let resp = server
        .with_token_in(&reader, "domains:a", Method::GET, "/svc/tag/list")
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!(["a/x"]));
}

const ACME: &str = "domains:acme";

/// Creates an API key with `token`, in `domain` when given (the console sends the domain it
/// shows); returns the key's secret.
fn key_made_in(server: &Server, token: &str, domain: Option<&str>, name: &str) -> String {
    let req = match domain {
        Some(d) => server.with_token_in(token, d, Method::POST, "/auth/keys"),
        None => server.with_token(token, Method::POST, "/auth/keys"),
    };
    let created = req.json(&json!({"name": name})).send().unwrap();
    json_ok(created, StatusCode::CREATED)["key"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A request as the SDK sends it with `application_id` `acme`: the key and `Domain`.
fn with_key(server: &Server, key: &str, method: Method, path: &str) -> RequestBuilder {
    let req = server.req(method, path).header("X-Svc-Api-Key", key);
    req.header("Domain", ACME)
}

/// A client connected as the SDK connects: MQTT 5 over WebSocket, the key as password.
fn sdk_client(server: &Server, key: &str, client_id: &str) -> Mqtt {
    server.mqtt(MqttOpts::new(Proto::V5, Via::Ws("/mqtt"), client_id).creds("sdk", key))
}

/// `sdk.tag.publish(topic, value)`: QoS 2, retained, JSON content type; its PUBCOMP reason.
fn sdk_publish(client: &mut Mqtt, topic: &str, value: Value) -> String {
    client.publish_ct(topic, value.to_string(), 2, true, Some("application/json"))
}

/// The tag list of `domain` as the admin sees it.
fn tags_of(server: &Server, domain: &str) -> BTreeSet<String> {
    let list = server.string_list(Some(domain), "/svc/tag/list");
    list.into_iter().collect()
}

/// Waits until `topic` is a tag of `domain`.
fn registered(server: &Server, domain: &str, topic: &str) {
    let what = format!("{topic} in {domain}");
    server.poll(Duration::from_secs(10), &what, || {
        tags_of(server, domain).contains(topic).then_some(())
    });
}

/// The values the SDK's three historian reads give for `topic` with `key`: the window
/// (`PATCH /svc/historian`), the newest values (`/svc/historian/last`) and the export
/// (`/svc/historian/export/aggregated`, its CSV column); each must answer 200.
fn sdk_history(server: &Server, key: &str, topic: &str) -> [Vec<Value>; 3] {
    let call = |method: Method, path: &str, body: Value| {
        let resp = with_key(server, key, method, path)
            .json(&body)
            .send()
            .unwrap();
        let status = resp.status();
        let bytes = resp.bytes().unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        assert_eq!(status, StatusCode::OK, "{path}: {text}");
        bytes
    };
    let values = |bytes: bytes::Bytes| -> Vec<Value> {
        let points: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
        points.iter().map(|p| p["value"].clone()).collect()
    };
    let now = chrono::Utc::now();
    let start = (now - chrono::Duration::hours(1)).to_rfc3339();
    let end = (now + chrono::Duration::hours(1)).to_rfc3339();
    let window = json!({"topic": topic, "start_time": start, "range": "2h"});
    let query = values(call(Method::PATCH, "/svc/historian", window));
    let last = json!({"topic": topic, "limit": 10});
    let last = values(call(Method::PATCH, "/svc/historian/last", last));
    let export = json!({"topics": [topic], "startDate": start, "endDate": end});
    let gz = call(Method::POST, "/svc/historian/export/aggregated", export);
    let mut csv = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut csv).unwrap();
    let mut rows = csv.lines();
    assert_eq!(rows.next(), Some(&*format!("Timestamp,{topic}")), "{csv}");
    let cell = |row: &str| serde_json::from_str(row.rsplit(',').next().unwrap()).unwrap();
    [query, last, rows.map(cell).collect()]
}

/// The SDK's quick start as its README has it, with a developer key made in `acme` (the
/// console's Developer Keys page with `acme` chosen) and `application_id` `acme`:
/// `sdk.tag.publish('my/topic', {value: 42})` over MQTT (which carries only the key), then the
/// historian reads over HTTP in `acme`. The topic, which no namespace covers, becomes acme's tag
/// (not historized, as every registered topic: the reads answer 200 `[]`, not 404); once the
/// application historizes it, the same publish is read back by all three reads.
#[test]
fn sdk_quick_start_with_a_key_made_in_a_domain() {
    let server = Server::start();
    server.create_domain("acme");
    let key = key_made_in(&server, &server.admin_token(), Some(ACME), "quickstart");
    let mut sdk = sdk_client(&server, &key, "sdk-quickstart");
    assert_eq!(
        sdk_publish(&mut sdk, "my/topic", json!({"value": 42})),
        "Success"
    );
    registered(&server, ACME, "my/topic");
    assert!(!tags_of(&server, "domains:svc_admin").contains("my/topic"));
    let history = sdk_history(&server, &key, "my/topic");
    assert_eq!(history, <[Vec<Value>; 3]>::default(), "not historized yet");

    let tags = server.get_json(ACME, "/svc/tags/all");
    let put = with_key(
        &server,
        &key,
        Method::PUT,
        &rec_path(tags[0]["id"].as_str().unwrap()),
    );
    json_ok(
        put.json(&json!({"historize": true})).send().unwrap(),
        StatusCode::OK,
    );
    assert_eq!(
        sdk_publish(&mut sdk, "my/topic", json!({"value": 42})),
        "Success"
    );
    let history = sdk_history(&server, &key, "my/topic");
    assert_eq!(history, [vec![json!(42)], vec![json!(42)], vec![json!(42)]]);
    // The key says where it registers topics.
    let listed = server.get_json(ACME, "/auth/keys");
    assert_eq!(listed[0]["domain"], json!(ACME), "{listed}");
}

/// A key made in `svc_admin` (or with no Domain header, as every key made before keys had a
/// domain) registers what it publishes first in `svc_admin`, as before.
#[test]
fn a_key_made_in_svc_admin_registers_in_svc_admin() {
    let server = Server::start();
    server.create_domain("acme");
    let admin = server.admin_token();
    for (i, domain) in [None, Some("domains:svc_admin")].into_iter().enumerate() {
        let key = key_made_in(&server, &admin, domain, &format!("k{i}"));
        let mut sdk = sdk_client(&server, &key, &format!("sdk-{i}"));
        let topic = format!("loose/{i}");
        assert_eq!(
            sdk_publish(&mut sdk, &topic, json!({"value": i})),
            "Success"
        );
        registered(&server, "domains:svc_admin", &topic);
    }
    assert!(tags_of(&server, ACME).is_empty());
    let keys = server.get_json("domains:svc_admin", "/auth/keys");
    assert!(!keys.to_string().contains("\"domain\""), "{keys}");
}

/// A key made in `acme` takes no topic that has an owner: another domain's tag, a topic in
/// another domain's namespace, a topic `svc_admin` registered first.
#[test]
fn a_key_made_in_a_domain_takes_no_topic_another_owns() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    server.create_tag("domains:beta", "beta/line/temp", false);
    let ns = server.admin_in("domains:beta", Method::POST, "/svc/namespaces");
    let ns = ns
        .json(&json!({"name": "plant", "path": "beta/plant"}))
        .send();
    json_ok(ns.unwrap(), StatusCode::CREATED);
    let mut admin = server.mqtt_admin(Proto::V5, Via::Tcp, "admin");
    admin.publish("loose/old", "1", 1, false);
    registered(&server, "domains:svc_admin", "loose/old");

    let key = key_made_in(&server, &server.admin_token(), Some(ACME), "acme-key");
    let mut sdk = sdk_client(&server, &key, "sdk-acme");
    for topic in ["beta/line/temp", "beta/plant/new", "loose/old", "acme/new"] {
        assert_eq!(sdk_publish(&mut sdk, topic, json!(1)), "Success", "{topic}");
    }
    registered(&server, ACME, "acme/new");
    registered(&server, "domains:beta", "beta/plant/new");
    assert_eq!(tags_of(&server, ACME), set(&["acme/new"]));
    let beta = set(&["beta/line/temp", "beta/plant/new"]);
    assert_eq!(tags_of(&server, "domains:beta"), beta);
    assert_eq!(tags_of(&server, "domains:svc_admin"), set(&["loose/old"]));
}

/// A user's key made in `acme` publishes a new topic (registered there) only with `tags`
/// read-write in `acme`; without it the publish is refused and nothing is registered.
#[test]
fn a_key_made_in_a_domain_registers_only_where_its_owner_may_write() {
    let server = Server::start();
    server.create_domain("acme");
    let writer = server.user_with_grants(ACME, "writer", &[("tags", "read-write", "*")]);
    let reader = server.user_with_grants(ACME, "reader", &[("tags", "read", "*")]);
    let writer_key = key_made_in(&server, &writer, Some(ACME), "w");
    let reader_key = key_made_in(&server, &reader, Some(ACME), "r");
    let mut r = sdk_client(&server, &reader_key, "r");
    assert_eq!(r.publish("reader/topic", "1", 1, false), "NotAuthorized");
    let mut w = sdk_client(&server, &writer_key, "w");
    assert_eq!(w.publish("writer/topic", "1", 1, false), "Success");
    registered(&server, ACME, "writer/topic");
    assert_eq!(tags_of(&server, ACME), set(&["writer/topic"]));
    assert!(!tags_of(&server, "domains:svc_admin").contains("reader/topic"));
}
