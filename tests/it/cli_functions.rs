//! CLI end to end: `svc functions` deploys code files (with triggers and limits), runs them,
//! lists them, keeps and restores versions and shows the run log; `svc flows` imports, lists,
//! runs, starts and stops a flow; and the failures (a file that is not code, a malformed
//! trigger or input, an invalid flow graph) exit with the right code and message.

use crate::cli_support::{acme, Cli};
use serde_json::{json, Value};
use std::path::PathBuf;

const DOUBLE: &str = "function main(input){ return {y: input.x * 2}; }";
const TRIPLE: &str =
    "function main(input){ console.log('tripling', input.x); return {y: input.x * 3}; }";

/// Writes `text` to `name` in the CLI user's home and returns its path as a string.
fn write(cli: &Cli, name: &str, text: &str) -> String {
    let path: PathBuf = cli.home().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn one<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {list}"))
}

#[test]
fn deploy_run_list_versions_restore_and_logs() {
    let (_server, cli) = acme();
    let file = write(&cli, "f.js", DOUBLE);
    let record = cli.json(&["functions", "deploy", &file, "--trigger", "http"]);
    assert_eq!(record["name"], "f", "the name is the file stem: {record}");
    assert_eq!(record["version"], 1, "{record}");
    // The answer of PUT /svc/processes/triggers/:id: the process in the SDK's shape.
    assert_eq!(
        record["triggers"],
        json!([{"type": "http", "config": {}}]),
        "{record}"
    );
    assert!(
        record["id"]
            .as_str()
            .unwrap()
            .starts_with("acme.processes:"),
        "{record}"
    );

    let resp = cli.json(&["functions", "run", "f", "--input", r#"{"x":2}"#]);
    assert_eq!(resp["success"], true, "{resp}");
    assert_eq!(resp["output"], json!({"y": 4}), "{resp}");
    let table = cli.ok(&[
        "functions",
        "run",
        "f",
        "--input",
        r#"{"x":2}"#,
        "--output",
        "table",
    ]);
    assert_eq!(
        table.json(),
        json!({"y": 4}),
        "table output is the output JSON"
    );

    let list = cli.json(&["functions", "list"]);
    assert_eq!(one(&list, "f")["version"], 1, "{list}");
    // The SDK's RecordID objects are shown as the RecordID strings of every other command.
    assert_eq!(one(&list, "f")["id"], record["id"], "{list}");
    assert_eq!(one(&list, "f")["domain_id"], "domains:acme", "{list}");
    let (header, rows) = cli.ok(&["functions", "list", "--output", "csv"]).csv();
    assert_eq!(
        header,
        ["name", "version", "enabled", "triggers", "updated_dt"]
    );
    assert_eq!(rows[0][..4], ["f", "1", "true", "http"]);
    let table = cli.ok(&["functions", "list", "--output", "table"]).stdout;
    assert!(
        table.starts_with("NAME  VERSION  ENABLED  TRIGGERS  UPDATED_DT\n"),
        "{table}"
    );

    // New code: version 2, with its console output on stderr in a table.
    write(&cli, "f.js", TRIPLE);
    let deployed = cli.ok(&["functions", "deploy", &file, "--output", "table"]);
    assert_eq!(deployed.stdout, "deployed f version 2\n");
    let run = cli.ok(&[
        "functions",
        "run",
        "f",
        "--input",
        r#"{"x":2}"#,
        "--output",
        "table",
    ]);
    assert_eq!(run.json(), json!({"y": 6}));
    assert!(run.stderr.contains("tripling 2"), "logs: {}", run.stderr);

    let versions = cli.json(&["functions", "versions", "f"]);
    let mut numbers: Vec<u64> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, [1, 2], "{versions}");
    let table = cli.ok(&["functions", "versions", "f", "--output", "table"]);
    assert!(table.stdout.starts_with("VERSION"), "{}", table.stdout);
    assert_eq!(table.stdout.lines().count(), 3, "{}", table.stdout);

    let restored = cli.json(&["functions", "restore", "f", "1"]);
    assert_eq!(restored["version"], 3, "{restored}");
    assert_eq!(restored["code"], DOUBLE, "{restored}");
    let resp = cli.json(&["functions", "run", "f", "--input", r#"{"x":5}"#]);
    assert_eq!(resp["output"], json!({"y": 10}), "{resp}");
    let table = cli.ok(&["functions", "restore", "f", "2", "--output", "table"]);
    assert_eq!(table.stdout, "restored f version 2 as version 4\n");

    let runs = cli.json(&["functions", "logs", "f", "--limit", "10"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert!(runs.iter().all(|r| r["success"] == true), "{runs:?}");
    assert_eq!(
        runs[0]["output"],
        json!({"y": 10}),
        "newest first: {runs:?}"
    );
    let logs = cli.json(&["functions", "logs", "f", "--limit", "2"]);
    assert_eq!(logs.as_array().unwrap().len(), 2, "{logs}");
    let table = cli
        .ok(&["functions", "logs", "f", "--output", "table"])
        .stdout;
    let mut lines = table.lines();
    assert_eq!(
        lines.next().unwrap().split_whitespace().collect::<Vec<_>>(),
        [
            "STARTED_DT",
            "TRIGGER",
            "DURATION_MS",
            "SUCCESS",
            "ERROR",
            "LOGS"
        ]
    );
    assert!(table.contains("tripling 2"), "{table}");
    assert_eq!(lines.count(), 4, "{table}");
}

#[test]
fn deploy_options_and_failures() {
    let (_server, cli) = acme();
    let file = write(&cli, "ticker.js", DOUBLE);
    let record = cli.json(&[
        "functions",
        "deploy",
        &file,
        "--name",
        "tick",
        "--trigger",
        "every:5s",
        "--trigger",
        "tag:plant/+/temp",
        "--trigger",
        "cron:*/5 * * * *",
        "--disabled",
        "--timeout-ms",
        "500",
        "--memory-mb",
        "64",
    ]);
    assert_eq!(record["name"], "tick", "{record}");
    assert_eq!(record["enabled"], false, "{record}");
    assert_eq!(record["timeout_ms"], 500, "{record}");
    assert_eq!(record["memory_mb"], 64, "{record}");
    assert_eq!(
        record["triggers"],
        json!([
            {"type": "interval", "config": {"interval_value": 5, "interval_unit": "s"}},
            {"type": "tag_change", "config": {"tag": "plant/+/temp"}},
            {"type": "cron", "config": {"cron_expression": "*/5 * * * *"}}
        ]),
        "{record}"
    );
    let (_, rows) = cli.ok(&["functions", "list", "--output", "csv"]).csv();
    assert_eq!(
        rows[0][..4],
        [
            "tick",
            "1",
            "false",
            "interval:5s, tag_change:plant/+/temp, cron:*/5 * * * *"
        ]
    );
    let run = cli
        .run(&["functions", "run", "tick"])
        .expect_code(1, "run a disabled function");
    assert!(run.stderr.contains("disabled"), "{}", run.stderr);

    let text = write(&cli, "notes.txt", "hello");
    let run = cli
        .run(&["functions", "deploy", &text])
        .expect_code(1, "deploy a .txt");
    assert!(
        run.stderr.starts_with("svc: error: 422"),
        "the server's 422: {}",
        run.stderr
    );
    assert!(run.stderr.contains("notes.txt"), "{}", run.stderr);

    let run = cli
        .run(&["functions", "deploy", &file, "--trigger", "bogus:x"])
        .expect_code(2, "bad trigger");
    assert!(run.stderr.contains("bogus:x"), "{}", run.stderr);
    cli.run(&["functions", "deploy", &file, "--trigger", "every:5parsecs"])
        .expect_code(2, "bad interval unit");
    let run = cli
        .run(&["functions", "run", "tick", "--input", "{x"])
        .expect_code(2, "bad input");
    assert!(run.stderr.contains("--input"), "{}", run.stderr);
    let run = cli
        .run(&["functions", "run", "nothing"])
        .expect_code(1, "unknown function");
    assert!(run.stderr.contains("404"), "{}", run.stderr);
    cli.run(&["functions", "deploy", "/nonexistent/x.js"])
        .expect_code(1, "missing file");
    // Nothing was deployed by the failures.
    let list = cli.json(&["functions", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
}

#[test]
fn flows_import_list_run_start_stop_and_logs() {
    let (_server, cli) = acme();
    let nodes = json!([
        {"id": "i", "type": "inject", "config": {}, "wires": [["d"]]},
        {"id": "d", "type": "debug", "config": {}}
    ]);
    let file = write(
        &cli,
        "echo.json",
        &json!({"name": "echo", "nodes": nodes}).to_string(),
    );
    let record = cli.json(&["flows", "import", &file]);
    assert_eq!(record["name"], "echo", "{record}");
    assert_eq!(record["running"], false, "{record}");

    let list = cli.json(&["flows", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let table = cli.ok(&["flows", "list", "--output", "table"]).stdout;
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        ["NAME", "RUNNING", "NODES", "UPDATED_DT"],
        "{table}"
    );
    assert_eq!(lines[1][..3], ["echo", "false", "2"], "{table}");

    let resp = cli.json(&["flows", "run", "echo", "--input", r#"{"hello":"plant-42"}"#]);
    assert_eq!(resp["success"], true, "{resp}");
    assert!(
        resp["debug"].to_string().contains("plant-42"),
        "debug output holds the input: {resp}"
    );
    let table = cli.ok(&[
        "flows", "run", "echo", "--input", "21.5", "--node", "i", "--output", "table",
    ]);
    assert!(table.stdout.contains("21.5"), "{}", table.stdout);

    let started = cli.json(&["flows", "start", "echo"]);
    assert_eq!(started["running"], true, "{started}");
    assert_eq!(one(&cli.json(&["flows", "list"]), "echo")["running"], true);
    let stopped = cli.ok(&["flows", "stop", "echo", "--output", "table"]);
    assert_eq!(stopped.stdout, "stopped flow echo\n");
    assert_eq!(one(&cli.json(&["flows", "list"]), "echo")["running"], false);

    // Importing the same name again replaces the flow (from standard input this time).
    let again = json!({"name": "echo", "description": "echoes", "nodes": nodes}).to_string();
    let run = cli
        .run_with(
            &["flows", "import", "-", "--start", "--output", "table"],
            &[],
            Some(&again),
        )
        .expect_code(0, "re-import");
    assert_eq!(run.stdout, "updated flow echo and started it\n");
    let list = cli.json(&["flows", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(one(&list, "echo")["description"], "echoes", "{list}");
    assert_eq!(one(&list, "echo")["running"], true, "{list}");

    let runs = cli.json(&["flows", "logs", "echo"]);
    assert!(!runs.as_array().unwrap().is_empty(), "{runs}");
    let table = cli.ok(&["flows", "logs", "echo", "--limit", "1", "--output", "table"]);
    assert_eq!(table.stdout.lines().count(), 2, "{}", table.stdout);
}

#[test]
fn flow_failures() {
    let (_server, cli) = acme();
    let bad = json!({"name": "broken", "nodes": [
        {"id": "lonely", "type": "inject", "config": {}, "wires": [["ghost"]]}
    ]});
    let file = write(&cli, "broken.json", &bad.to_string());
    let run = cli
        .run(&["flows", "import", &file])
        .expect_code(1, "invalid flow");
    assert!(run.stderr.starts_with("svc: error: 400"), "{}", run.stderr);
    assert!(
        run.stderr.contains("lonely") && run.stderr.contains("ghost"),
        "the bad node is named: {}",
        run.stderr
    );
    assert_eq!(cli.json(&["flows", "list"]), json!([]));

    let file = write(&cli, "nameless.json", r#"{"nodes": []}"#);
    cli.run(&["flows", "import", &file])
        .expect_code(2, "a flow without a name");
    let run = cli
        .run(&["flows", "run", "nothing"])
        .expect_code(1, "unknown flow");
    assert!(run.stderr.contains("404"), "{}", run.stderr);
    cli.run(&["flows", "run", "nothing", "--input", "{"])
        .expect_code(2, "bad input");
    cli.run(&["flows", "start", "nothing"])
        .expect_code(1, "start an unknown flow");
}
