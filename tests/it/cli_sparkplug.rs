//! CLI end to end: `svc sparkplug create|list|nodes|update|delete` against a test server and
//! Tahu's edge node: a host made from a file, the node it sees born and then dead, a bad file
//! refused with the server's sentence and exit 1.

use crate::cli_support::acme;
use crate::common::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn sparkplug_hosts_and_nodes_from_the_shell() {
    let (server, cli) = acme();
    for (name, path) in [("plant", "acme/plant"), ("sparkplug", "spBv1.0/Plant")] {
        server.create_record(
            "domains:acme",
            "namespaces",
            &json!({"name": name, "path": path}),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("site.json");
    std::fs::write(
        &file,
        json!({"name": "site", "namespace": "acme/plant/sp"}).to_string(),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let created = cli.json(&["sparkplug", "create", "--file", path]);
    assert_eq!(
        created["tag_template"], "{group}/{node}/{device}/{metric}",
        "{created}"
    );
    let listed = cli.ok(&["sparkplug", "list", "--output", "jsonl"]).jsonl();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["name"], "site");

    let mut node = SparkplugPeer::edge_node(
        server.listener_port("mqtt"),
        "admin",
        ADMIN_PASSWORD,
        "Plant",
        "n1",
    );
    node.send(json!({"cmd": "nbirth", "metrics": [{"name": "T", "alias": 1, "type": "Int16", "value": -7}]}));
    let nodes = server.poll(Duration::from_secs(10), "the node", || {
        let nodes = cli.ok(&["sparkplug", "nodes", "--output", "jsonl"]).jsonl();
        (nodes.first()?["online"] == true).then_some(nodes)
    });
    assert_eq!(nodes[0]["node"], "n1");
    assert_eq!(nodes[0]["group"], "Plant");
    let table = cli.ok(&["sparkplug", "nodes"]).stdout;
    assert!(table.contains("n1"), "{table}");
    node.kill();
    server.poll(Duration::from_secs(10), "the node offline", || {
        let nodes = cli.ok(&["sparkplug", "nodes", "--output", "jsonl"]).jsonl();
        (nodes.first()?["online"] == false).then_some(())
    });

    std::fs::write(&file, json!({"tag_template": "{node}"}).to_string()).unwrap();
    let refused = cli
        .run(&["sparkplug", "update", "site", "--file", path])
        .expect_code(1, "a bad template");
    assert!(
        refused.stderr.contains("tag_template"),
        "{}",
        refused.stderr
    );
    std::fs::write(&file, json!({"historize": false}).to_string()).unwrap();
    let updated = cli.json(&["sparkplug", "update", "site", "--file", path]);
    assert_eq!(updated["historize"], false);
    cli.ok(&["sparkplug", "delete", "site"]);
    assert!(cli
        .ok(&["sparkplug", "list", "--output", "jsonl"])
        .jsonl()
        .is_empty());
}
