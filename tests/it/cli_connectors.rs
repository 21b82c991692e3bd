//! CLI end to end: `svc connectors test|certificates|trust|create|list|status|browse|update|
//! reject|delete` against a test server and a secure OPC UA server (asyncua) the test starts:
//! the untrusted certificate refused then trusted from the shell, the password never printed,
//! the address space browsed, failures reported with the server's reason and exit 1.

use crate::cli_support::acme;
use crate::common::DevicePeer;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[test]
fn connectors_from_the_shell() {
    let (server, cli) = acme();
    server.create_record(
        "domains:acme",
        "namespaces",
        &json!({"name": "ua", "path": "acme/ua"}),
    );
    let peer = DevicePeer::python(
        "opcua_server.py",
        &[
            "--security",
            "basic256sha256",
            "--user",
            "operator:cli-ua-pw",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("line.json");
    std::fs::write(
        &file,
        json!({"name": "line", "kind": "opcua",
            "settings": {"endpoint": format!("opc.tcp://127.0.0.1:{}/svc", peer.port),
                "security_policy": "Basic256Sha256",
                "identity": {"type": "username", "username": "operator"}},
            "password": "cli-ua-pw",
            "reconnect": {"initial": "200ms", "max": "1s"},
            "points": [{"tag": "acme/ua/int16", "address": {"node_id": "ns=2;s=Int16"}}]})
        .to_string(),
    )
    .unwrap();
    let path = file.to_str().unwrap();

    // The server's certificate is not trusted yet: refused, with the cause, and listed.
    let refused = cli.run(&["connectors", "test", "--file", path]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("503") && refused.stderr.contains("security"),
        "{}",
        refused.stderr
    );
    let listed = cli.json(&["connectors", "certificates"]);
    assert_eq!(listed[0]["state"], "pending", "{listed}");
    // Enough to recognise the server: its subject, application URI and validity.
    assert!(listed[0]["subject"].is_string(), "{listed}");
    assert!(listed[0]["not_after"].is_string(), "{listed}");
    let thumbprint = listed[0]["thumbprint"].as_str().unwrap().to_string();
    let trusted = cli.json(&["connectors", "trust", &thumbprint]);
    assert_eq!(trusted["state"], "trusted", "{trusted}");
    let reached = cli.ok(&["connectors", "test", "--file", path, "--output", "table"]);
    assert!(
        reached.stdout.starts_with("reached in "),
        "{}",
        reached.stdout
    );

    let created = cli.json(&["connectors", "create", "--file", path]);
    assert_eq!(created["password_set"], true, "{created}");
    let list = cli.ok(&["connectors", "list", "--output", "jsonl"]);
    assert!(!list.stdout.contains("cli-ua-pw"), "{}", list.stdout);
    assert!(list.stdout.contains("\"name\":\"line\""), "{}", list.stdout);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = cli.json(&["connectors", "status", "line"]);
        if status["state"] == "connected" && status["points"][0]["quality"] == "good" {
            break;
        }
        assert!(Instant::now() < deadline, "never connected: {status}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The stored connector, with its stored password.
    let stored = cli.json(&["connectors", "test", "line"]);
    assert_eq!(stored["ok"], true, "{stored}");
    let all = cli.json(&["connectors", "status"]);
    assert_eq!(all[0]["name"], "line", "{all}");

    let children = cli.json(&["connectors", "browse", "line", "--node", "ns=2;s=Plant"]);
    let names: Vec<&str> = children
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["browse_name"].as_str())
        .collect();
    assert!(names.contains(&"2:Int16"), "{children}");
    for usage in [&["connectors", "browse"][..], &["connectors", "test"]] {
        let run = cli.run(usage);
        assert_eq!(run.code, 2, "{usage:?}: {}", run.stderr);
    }

    let off = dir.path().join("off.json");
    std::fs::write(&off, json!({"enabled": false}).to_string()).unwrap();
    let updated: Value = cli.json(&[
        "connectors",
        "update",
        "line",
        "--file",
        off.to_str().unwrap(),
    ]);
    assert_eq!(updated["enabled"], false);
    assert_eq!(
        cli.json(&["connectors", "status", "line"])["state"],
        "disabled"
    );

    let rejected = cli.json(&["connectors", "reject", &thumbprint]);
    assert_eq!(rejected["state"], "rejected", "{rejected}");
    let unknown = cli.run(&["connectors", "trust", "not-a-thumbprint"]);
    assert_eq!(unknown.code, 1, "{}", unknown.stderr);
    assert!(unknown.stderr.contains("400"), "{}", unknown.stderr);
    cli.ok(&["connectors", "delete", "line"]);
    assert_eq!(cli.json(&["connectors", "list"]), json!([]));
    let gone = cli.run(&["connectors", "delete", "line"]);
    assert_eq!(gone.code, 1, "{}", gone.stderr);
}
