//! Device info and startup: the `ready {json}` line, `GET /svc/` and `GET /svc/info` (device
//! name, `uns.basePath`, `uns.bind` with mqtt/mqtts/ws/wss and their bound ports, storage engine
//! `sqlite`, crate version), reachable with a JWT or a developer API key.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// A port given as a number or a string.
fn port_of(v: &Value) -> u16 {
    match v {
        Value::Number(n) => n.as_u64().and_then(|p| u16::try_from(p).ok()),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .unwrap_or_else(|| panic!("not a port: {v}"))
}

fn ready_port(server: &Server, listener: &str) -> u16 {
    let addr = server.ready[listener]
        .as_str()
        .unwrap_or_else(|| panic!("ready has no `{listener}`: {}", server.ready));
    addr.rsplit_once(':').unwrap().1.parse().unwrap()
}

#[test]
fn ready_line_lists_bound_listeners() {
    let server = Server::start();
    let obj = server.ready.as_object().expect("ready JSON is an object");
    let mut listeners: Vec<&str> = obj.keys().map(|k| k.as_str()).collect();
    listeners.sort();
    assert_eq!(
        listeners,
        ["http", "mqtt", "ws"],
        "no TLS configured: {}",
        server.ready
    );
    for l in ["http", "mqtt", "ws"] {
        let addr = obj[l].as_str().unwrap();
        assert!(addr.starts_with("127.0.0.1:"), "{l} = {addr}");
        assert_ne!(ready_port(&server, l), 0, "{l} reports port 0");
    }
    // The MQTT listener actually accepts TCP connections.
    std::net::TcpStream::connect(obj["mqtt"].as_str().unwrap()).expect("mqtt port is open");
    std::net::TcpStream::connect(obj["ws"].as_str().unwrap()).expect("ws port is open");
}

fn check_info(server: &Server, info: &Value) {
    assert_eq!(info["device_name"], json!("test-device-7"));
    assert_eq!(info["version"], json!(env!("CARGO_PKG_VERSION")));
    assert!(info["uns"]["basePath"].is_string(), "{info}");
    let bind = &info["uns"]["bind"];
    for (listener, enabled) in [
        ("mqtt", true),
        ("ws", true),
        ("mqtts", false),
        ("wss", false),
    ] {
        let b = &bind[listener];
        assert!(b["host"].is_string(), "{listener}: {b}");
        assert_eq!(b["enabled"], json!(enabled), "{listener}: {b}");
    }
    assert_eq!(port_of(&bind["mqtt"]["port"]), ready_port(server, "mqtt"));
    assert_eq!(port_of(&bind["ws"]["port"]), ready_port(server, "ws"));
    assert_eq!(port_of(&bind["mqtts"]["port"]), 8883);
    assert_eq!(port_of(&bind["wss"]["port"]), 443);
    check_storage(&info["storage"]);
    assert!(
        info["storage"]["size_bytes"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{info}"
    );
}

/// The storage report of the engine this run uses: SQLite's file, or PostgreSQL's host,
/// database and server version (and never its password).
fn check_storage(storage: &Value) {
    if on_postgres() {
        assert_eq!(storage["engine"], json!("postgres"), "{storage}");
        assert!(storage["path"].is_null(), "{storage}");
        assert!(
            storage["host"]
                .as_str()
                .is_some_and(|h| h.starts_with("127.0.0.1:")),
            "{storage}"
        );
        assert!(
            storage["database"]
                .as_str()
                .is_some_and(|d| d.starts_with("test_")),
            "{storage}"
        );
        assert!(
            storage["server_version"]
                .as_str()
                .is_some_and(|v| v.chars().next().is_some_and(|c| c.is_ascii_digit())),
            "{storage}"
        );
        assert!(!storage.to_string().contains("pw-"), "password: {storage}");
    } else {
        assert_eq!(storage["engine"], json!("sqlite"), "{storage}");
        assert!(storage["path"].is_string(), "{storage}");
    }
}

#[test]
fn svc_root_reports_device_info() {
    let server = Server::start_with(&["--device-name", "test-device-7"]);
    let resp = server.admin(Method::GET, "/svc/").send().unwrap();
    let info = json_ok(resp, StatusCode::OK);
    check_info(&server, &info);
}

#[test]
fn svc_info_answers_the_same() {
    let server = Server::start_with(&["--device-name", "test-device-7"]);
    let root = server.get_json("domains:svc_admin", "/svc/");
    let info = server.get_json("domains:svc_admin", "/svc/info");
    check_info(&server, &info);
    for key in ["device_name", "uns", "version"] {
        assert_eq!(root[key], info[key], "{key}");
    }
    assert_eq!(root["storage"]["engine"], info["storage"]["engine"]);
    assert_eq!(root["storage"]["path"], info["storage"]["path"]);
}

#[test]
fn device_info_with_api_key() {
    let server = Server::start_with(&["--device-name", "test-device-7"]);
    let resp = server
        .admin(Method::POST, "/auth/keys")
        .json(&json!({"name": "sdk"}))
        .send()
        .unwrap();
    let key = json_ok(resp, StatusCode::CREATED)["key"]
        .as_str()
        .unwrap()
        .to_string();
    for path in ["/svc/", "/svc/info"] {
        let resp = server
            .req(Method::GET, path)
            .header("X-Svc-Api-Key", &key)
            .send()
            .unwrap();
        let info = json_ok(resp, StatusCode::OK);
        check_info(&server, &info);
    }
}

#[test]
fn storage_path_is_in_the_data_dir() {
    // SQLite's file is what has a path in the data dir.
    let server = Server::start_with(&["--database", "sqlite"]);
    let info = server.get_json("domains:svc_admin", "/svc/");
    let path = std::path::PathBuf::from(info["storage"]["path"].as_str().unwrap());
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    assert!(
        canon(&path).starts_with(canon(&server.data_dir)),
        "{} not under {}",
        path.display(),
        server.data_dir.display()
    );
    assert!(path.exists(), "{} does not exist", path.display());
}
