//! Upstream records (issue 14): the `upstreams` system table under the `upstreams` feature.
//! Defaults are filled in, every bad field is a 400 naming it, names are unique (409), the
//! password is write-only (kept out of the record: reads say `password_set`, an update without
//! it keeps it), bindings must lie inside the domain's namespaces, and another domain or a
//! user without the feature sees nothing.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const SECRET: &str = "s3cret-upstream-pw";

fn post(server: &Server, domain: &str, body: Value) -> reqwest::blocking::Response {
    server
        .admin_in(domain, Method::POST, "/svc/upstreams")
        .json(&body)
        .send()
        .expect("POST /svc/upstreams")
}

fn put(server: &Server, id: &str, body: Value) -> Value {
    let resp = server
        .admin_in("domains:acme", Method::PUT, &rec_path(id))
        .json(&body)
        .send()
        .expect("PUT");
    json_ok(resp, StatusCode::OK)
}

/// The password stored for upstream record `key` of `domain`, read from the database file.
fn stored_password(server: &Server, key: &str) -> Option<String> {
    // `key` is the server's generated record key: letters and digits only.
    let sql = format!(
        "SELECT password FROM upstream_secrets WHERE domain = 'acme' AND upstream = '{key}'"
    );
    server.store_sql(&sql, &sql)
}

fn setup() -> Server {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    server.create_record(
        "domains:acme",
        "namespaces",
        &json!({"name": "site1", "path": "acme/site1"}),
    );
    server
}

#[test]
fn an_upstream_is_stored_complete_with_a_write_only_password() {
    let server = setup();
    let created = json_ok(
        post(
            &server,
            "domains:acme",
            json!({
                "name": "corp", "host": "broker.corp.example", "username": "edge",
                "password": SECRET,
                "bindings": [{"direction": "both", "local": "acme/site1", "remote": "corp/acme/site1"}]
            }),
        ),
        StatusCode::CREATED,
    );
    assert_eq!(created["port"], 1883);
    assert_eq!(created["protocol"], "mqtt");
    assert_eq!(created["mqtt_version"], "5");
    assert_eq!(created["password_set"], true);
    assert!(created.get("password").is_none(), "{created}");
    assert!(
        created["client_id"]
            .as_str()
            .unwrap_or_default()
            .ends_with("-acme-corp"),
        "{created}"
    );
    assert_eq!(created["bindings"][0]["filter"], "#");
    let id = created["id"].as_str().expect("id").to_string();
    let key = id.rsplit(':').next().unwrap().to_string();
    assert_eq!(stored_password(&server, &key).as_deref(), Some(SECRET));

    // No read shows it: one record, the list, a filter on it finds nothing to probe.
    let listed = server
        .admin_in("domains:acme", Method::GET, "/svc/upstreams/all")
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        !listed.contains(SECRET) && !listed.contains("\"password\""),
        "{listed}"
    );
    let one = server.get_json("domains:acme", &rec_path(&id));
    assert_eq!(one["password_set"], true);

    // An update without the password keeps it; `password_set` cannot be claimed; "" clears.
    let renamed = put(
        &server,
        &id,
        json!({"description": "plant to corp", "port": 8883}),
    );
    assert_eq!(
        (renamed["password_set"].clone(), renamed["port"].clone()),
        (json!(true), json!(8883))
    );
    assert_eq!(stored_password(&server, &key).as_deref(), Some(SECRET));
    let cleared = put(&server, &id, json!({"password": ""}));
    assert_eq!(cleared["password_set"], false);
    assert_eq!(stored_password(&server, &key), None);
    let claimed = put(&server, &id, json!({"password_set": true}));
    assert_eq!(claimed["password_set"], false, "a claim without a password");
    put(&server, &id, json!({"password": "again"}));
    assert_eq!(stored_password(&server, &key).as_deref(), Some("again"));

    // A duplicate name is a conflict; deleting drops the password too.
    assert_error(
        post(
            &server,
            "domains:acme",
            json!({"name": "corp", "host": "other"}),
        ),
        StatusCode::CONFLICT,
        &[],
    );
    let resp = server
        .admin_in("domains:acme", Method::DELETE, &rec_path(&id))
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(stored_password(&server, &key), None);
}

#[test]
fn bad_fields_are_refused_naming_them() {
    let server = setup();
    let cases = [
        (json!({"port": 70000}), "port"),
        (json!({"protocol": "http"}), "protocol"),
        (json!({"keep_alive": "soon"}), "keep_alive"),
        (json!({"tls": {"ca": "not pem"}}), "tls.ca"),
        (
            json!({"buffer": {"overflow": "explode"}}),
            "buffer.overflow",
        ),
        (
            json!({"bindings": [{"direction": "out", "local": "acme/site1", "qos": 3}]}),
            "bindings[0].qos",
        ),
        (
            json!({"bindings": [{"direction": "out", "local": "acme/site1", "filter": "a/#/b"}]}),
            "bindings[0].filter",
        ),
        (
            json!({"bindings": [{"direction": "out", "local": "beta/x"}]}),
            "bindings[0].local",
        ),
        (
            json!({"bindings": [{"direction": "sideways", "local": "acme/site1"}]}),
            "bindings[0].direction",
        ),
        (json!({"password": 12}), "password"),
        (json!({"colour": "red"}), "colour"),
    ];
    for (patch, field) in cases {
        let mut body = json!({"name": "u", "host": "h"});
        for (k, v) in patch.as_object().unwrap() {
            body[k] = v.clone();
        }
        assert_error(
            post(&server, "domains:acme", body),
            StatusCode::BAD_REQUEST,
            &[&format!("`{field}`")],
        );
    }
    assert_eq!(
        server.count("domains:acme", "upstreams"),
        0,
        "nothing was stored"
    );
}

#[test]
fn upstreams_stay_in_their_domain_and_need_the_feature() {
    let server = setup();
    let created = json_ok(
        post(
            &server,
            "domains:acme",
            json!({"name": "corp", "host": "h", "password": SECRET}),
        ),
        StatusCode::CREATED,
    );
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(
        server.get_json("domains:beta", "/svc/upstreams/all"),
        json!([])
    );
    let resp = server
        .admin_in("domains:beta", Method::GET, &rec_path(&id))
        .send()
        .unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());

    // A user with tags rights only gets 401; with `upstreams` read it lists but cannot write.
    let plain = server.user_with_grants("domains:acme", "tagger", &[("tags", "read-write", "*")]);
    for (method, path) in [
        (Method::GET, "/svc/upstreams/all"),
        (Method::POST, "/svc/upstreams"),
    ] {
        let resp = server
            .with_token_in(&plain, "domains:acme", method, path)
            .json(&json!({"name": "x", "host": "h"}))
            .send()
            .unwrap();
        assert_error(resp, StatusCode::UNAUTHORIZED, &["upstreams"]);
    }
    let reader = server.user_with_grants("domains:acme", "viewer", &[("upstreams", "read", "*")]);
    let resp = server
        .with_token_in(&reader, "domains:acme", Method::GET, "/svc/upstreams/all")
        .send()
        .unwrap();
    let listed = json_ok(resp, StatusCode::OK);
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    assert_eq!(listed[0]["password_set"], true);
    let resp = server
        .with_token_in(&reader, "domains:acme", Method::POST, "/svc/upstreams")
        .json(&json!({"name": "x", "host": "h"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &["upstreams"]);
}

fn test_route(server: &Server, path: &str, body: &Value) -> reqwest::blocking::Response {
    server
        .admin_in("domains:acme", Method::POST, path)
        .json(body)
        .send()
        .expect("POST test")
}

#[test]
fn the_test_route_reaches_a_real_broker_or_says_why_not() {
    let server = setup();
    let peer = PeerBroker::start("edge", SECRET);
    // The upstream's own session settings are used (clean_start false by default): an MQTT 5
    // probe asks no session expiry, so it leaves no session; the 3.1.1 one does, and the last
    // probe (same client id) finds it.
    let probes = [
        ("mqtt", peer.port, json!(5)),
        ("mqtt", peer.port, json!("3.1.1")),
        ("ws", peer.ws_port, json!(5)),
    ];
    for (i, (protocol, port, version)) in probes.into_iter().enumerate() {
        let body = json!({"name": "corp", "host": "127.0.0.1", "port": port, "protocol": protocol,
            "mqtt_version": version, "username": "edge", "password": SECRET});
        let probe = json_ok(
            test_route(&server, "/svc/upstreams/test", &body),
            StatusCode::OK,
        );
        assert!(probe["latency_ms"].as_u64().is_some(), "{probe}");
        assert_eq!(probe["session_present"], i == 2, "{probe}");
        assert!(
            probe["protocol"]
                .as_str()
                .unwrap_or_default()
                .starts_with(protocol),
            "{probe}"
        );
    }

    // A wrong password: 503 naming authentication, for an unsaved and a stored upstream.
    let wrong = json!({"name": "corp", "host": "127.0.0.1", "port": peer.port,
        "username": "edge", "password": "wrong"});
    assert_error(
        test_route(&server, "/svc/upstreams/test", &wrong),
        StatusCode::SERVICE_UNAVAILABLE,
        &["auth"],
    );
    let stored = json_ok(post(&server, "domains:acme", wrong), StatusCode::CREATED);
    let id = stored["id"].as_str().unwrap().to_string();
    let path = format!("/svc/upstreams/{}/test", enc(&id));
    assert_error(
        test_route(&server, &path, &json!({})),
        StatusCode::SERVICE_UNAVAILABLE,
        &["auth"],
    );
    // The stored password is the one used: fixing it makes the stored upstream reachable.
    put(&server, &id, json!({"password": SECRET}));
    json_ok(test_route(&server, &path, &json!({})), StatusCode::OK);

    // Nothing listening: 503 at once, naming TCP; an unknown host: 503 naming DNS.
    let closed = json!({"name": "x", "host": "127.0.0.1", "port": free_port()});
    let started = std::time::Instant::now();
    assert_error(
        test_route(&server, "/svc/upstreams/test", &closed),
        StatusCode::SERVICE_UNAVAILABLE,
        &["tcp"],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let nowhere = json!({"name": "x", "host": "no-such-host.invalid"});
    assert_error(
        test_route(&server, "/svc/upstreams/test", &nowhere),
        StatusCode::SERVICE_UNAVAILABLE,
        &["dns"],
    );

    // Bad bodies are 400, another domain's upstream is not found, tests need write access.
    assert_error(
        test_route(
            &server,
            "/svc/upstreams/test",
            &json!({"name": "x", "host": "h", "port": 0}),
        ),
        StatusCode::BAD_REQUEST,
        &["`port`"],
    );
    let resp = server
        .admin_in("domains:beta", Method::POST, &path)
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let reader = server.user_with_grants("domains:acme", "viewer", &[("upstreams", "read", "*")]);
    let resp = server
        .with_token_in(&reader, "domains:acme", Method::POST, &path)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &["upstreams"]);
}

#[test]
fn the_test_route_verifies_an_upstreams_tls_certificate() {
    let server = setup();
    let peer = PeerBroker::start("edge", SECRET);
    let over_tls = |host: &str, tls: Value| {
        let body = json!({"name": "corp", "host": host, "port": peer.tls_port,
            "protocol": "mqtts", "username": "edge", "password": SECRET, "tls": tls});
        test_route(&server, "/svc/upstreams/test", &body)
    };
    let ca = peer.ca_pem.clone();
    let probe = json_ok(over_tls("localhost", json!({"ca": ca})), StatusCode::OK);
    assert_eq!(probe["protocol"], "mqtts 5");
    // Verified against the server name when one is given (the connection goes to the host).
    json_ok(
        over_tls("127.0.0.1", json!({"ca": ca, "server_name": "localhost"})),
        StatusCode::OK,
    );
    for tls in [json!({}), json!({"ca": ca, "server_name": "other.example"})] {
        assert_error(
            over_tls("localhost", tls),
            StatusCode::SERVICE_UNAVAILABLE,
            &["tls"],
        );
    }
    // Only an explicit opt-out skips verification.
    json_ok(
        over_tls("localhost", json!({"insecure_skip_verify": true})),
        StatusCode::OK,
    );
}
