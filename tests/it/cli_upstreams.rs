//! CLI end to end: `svc upstreams create|list|test|update|status|connect|disconnect|delete` against a test server and a
//! real Mosquitto as the upstream: files in and out, the password never printed, the test's
//! failure reported with the server's reason and exit 1.

use crate::cli_support::acme;
use crate::common::PeerBroker;
use serde_json::json;

#[test]
fn upstreams_from_the_shell() {
    let (server, cli) = acme();
    server.create_record(
        "domains:acme",
        "namespaces",
        &json!({"name": "site1", "path": "acme/site1"}),
    );
    let peer = PeerBroker::start("edge", "edge-pw-123");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("corp.json");
    std::fs::write(
        &file,
        json!({"name": "corp", "host": "127.0.0.1", "port": peer.port, "username": "edge",
            "password": "edge-pw-123",
            "bindings": [{"direction": "out", "local": "acme/site1", "remote": "corp/site1"}]})
        .to_string(),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let created = cli.json(&["upstreams", "create", "--file", path]);
    assert_eq!(created["password_set"], true);
    let listed = cli.ok(&["upstreams", "list", "--output", "jsonl"]);
    assert!(!listed.stdout.contains("edge-pw-123"), "{}", listed.stdout);
    assert!(
        listed.stdout.contains("\"name\":\"corp\""),
        "{}",
        listed.stdout
    );

    let reached = cli.ok(&["upstreams", "test", "corp", "--output", "table"]);
    assert!(
        reached.stdout.starts_with("reached over mqtt 5 in "),
        "{}",
        reached.stdout
    );
    let probe = cli.json(&["upstreams", "test", "--file", path]);
    assert_eq!(probe["protocol"], "mqtt 5");

    let wrong = dir.path().join("wrong.json");
    std::fs::write(&wrong, json!({"password": "nope"}).to_string()).unwrap();
    cli.ok(&[
        "upstreams",
        "update",
        "corp",
        "--file",
        wrong.to_str().unwrap(),
    ]);
    let refused = cli.run(&["upstreams", "test", "corp"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("503") && refused.stderr.contains("auth"),
        "{}",
        refused.stderr
    );

    let status = cli.json(&["upstreams", "status", "corp"]);
    assert_eq!(status["name"], "corp", "{status}");
    let off = cli.json(&["upstreams", "disconnect", "corp"]);
    assert_eq!(off["state"], "disabled", "{off}");
    let all = cli.json(&["upstreams", "status"]);
    assert_eq!(all[0]["state"], "disabled", "{all}");
    let on = cli.json(&["upstreams", "connect", "corp"]);
    assert_ne!(on["state"], "disabled", "{on}");

    let usage = cli.run(&["upstreams", "test"]);
    assert_eq!(usage.code, 2, "{}", usage.stderr);
    cli.ok(&["upstreams", "delete", "corp"]);
    assert_eq!(cli.json(&["upstreams", "list"]), json!([]));
    let gone = cli.run(&["upstreams", "delete", "corp"]);
    assert_eq!(gone.code, 1, "{}", gone.stderr);
}
