//! CLI end to end: `svc namespaces create|list|tree|delete` against a test server, in a table
//! and as JSON, and the errors a user can make (an overlapping path, an unknown name).

use crate::cli_support::acme;
use serde_json::json;

#[test]
fn namespaces_from_the_shell() {
    let (server, cli) = acme();
    let created = cli.json(&["namespaces", "create", "plant1", "acme/plant1"]);
    assert_eq!(created["path"], "acme/plant1");
    cli.ok(&[
        "namespaces",
        "create",
        "plant2",
        "acme/plant2",
        "--description",
        "second",
    ]);
    let listed = cli.json(&["namespaces", "list"]);
    let mut names: Vec<&str> = listed
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|n| n["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["plant1", "plant2"]);

    // Overlap with another domain's namespace: the server's sentence, exit 1.
    server.create_domain("beta");
    let resp = server
        .admin_in("domains:beta", reqwest::Method::POST, "/svc/namespaces")
        .json(&json!({"name": "b", "path": "beta"}))
        .send()
        .expect("POST");
    assert_eq!(resp.status(), reqwest::StatusCode::CREATED);
    let refused = cli.run(&["namespaces", "create", "x", "beta/line"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("domain `beta`"),
        "{}",
        refused.stderr
    );

    // The tree of published tags, drawn and as JSON.
    server.create_record(
        "domains:acme",
        "tags",
        &json!({"path": "acme/plant1/line1/temp", "historize": true, "unit": "degC"}),
    );
    cli.ok(&["tags", "publish", "acme/plant1/line1/temp", "21.5"]);
    let drawn = server.poll(
        std::time::Duration::from_secs(10),
        "the value in the tree",
        || {
            let run = cli.ok(&["namespaces", "tree", "acme/plant1", "--output", "table"]);
            run.stdout.contains("21.5").then_some(run.stdout)
        },
    );
    let lines: Vec<&str> = drawn.lines().collect();
    assert_eq!(lines[0], "acme/plant1", "{drawn}");
    assert_eq!(lines[1], "  line1/", "{drawn}");
    assert_eq!(lines[2], "    temp  21.5 degC  [historized]", "{drawn}");
    let tree = cli.json(&["namespaces", "tree", "acme/plant1", "--depth", "0"]);
    assert_eq!(tree["folders"][0]["truncated"], true, "{tree}");

    // Delete by name; an unknown name is an error.
    cli.ok(&["namespaces", "delete", "plant2"]);
    let listed = cli.json(&["namespaces", "list"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let unknown = cli.run(&["namespaces", "delete", "plant9"]);
    assert_eq!(unknown.code, 1, "{}", unknown.stderr);
    assert!(unknown.stderr.contains("plant9"), "{}", unknown.stderr);
}
