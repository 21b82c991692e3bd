//! CLI end to end: `svc alarms …` against a test server: definitions created from a file and
//! from standard input, listed, updated and deleted; values published with `svc tags publish`
//! raise an alarm that `active` lists; every operator action with its journal entry and the
//! journal's filters; health; `watch` following the stream; and bad arguments refused with
//! exit 2 (usage) or exit 1 with the server's sentence.

use crate::cli_support::{acme, Cli};
use crate::common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(10);

/// The alarm's row of `svc alarms active`, if it stands.
fn standing(cli: &Cli, name: &str) -> Option<Value> {
    cli.ok(&["alarms", "active", "--output", "jsonl"])
        .jsonl()
        .into_iter()
        .find(|a| a["name"] == name)
}

fn publish(cli: &Cli, value: &str) {
    cli.ok(&["tags", "publish", "acme/plant/temp", value]);
}

/// An alarm `hot` (high, 80 then 85) and `cold` (low, 10) on `acme/plant/temp`, made from a
/// file and from standard input.
fn definitions(server: &Server, cli: &Cli) {
    server.create_record(
        "domains:acme",
        "namespaces",
        &json!({"name": "plant", "path": "acme/plant"}),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hot.json");
    let hot = json!({"name": "hot", "tag": "acme/plant/temp", "kind": "high",
        "setpoint": 80, "priority": "high", "message": "{tag} is {value}"});
    std::fs::write(&file, hot.to_string()).unwrap();
    let path = file.to_str().unwrap();
    let created = cli.json(&["alarms", "create", "--file", path]);
    assert_eq!(created["name"], "hot", "{created}");
    let cold = json!({"name": "cold", "tag": "acme/plant/temp", "kind": "low", "setpoint": 10});
    cli.run_with(
        &["alarms", "create", "--file", "-", "--output", "json"],
        &[],
        Some(&cold.to_string()),
    )
    .expect_code(0, "create from stdin");
    let names: Vec<Value> = cli
        .ok(&["alarms", "list", "--output", "jsonl"])
        .jsonl()
        .iter()
        .map(|a| a["name"].clone())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&json!("hot")) && names.contains(&json!("cold")));

    std::fs::write(&file, json!({"setpoint": 85}).to_string()).unwrap();
    let updated = cli.json(&["alarms", "update", "hot", "--file", path]);
    assert_eq!(updated["setpoint"], 85, "{updated}");
    // A tag outside the domain's namespaces: the server's sentence names the field.
    let elsewhere = json!({"name": "x", "tag": "other/temp", "kind": "high", "setpoint": 1});
    std::fs::write(&file, elsewhere.to_string()).unwrap();
    let refused = cli
        .run(&["alarms", "create", "--file", path])
        .expect_code(1, "a tag outside the namespaces");
    assert!(refused.stderr.contains("tag"), "{}", refused.stderr);
    std::fs::write(&file, "[1]").unwrap();
    cli.run(&["alarms", "create", "--file", path])
        .expect_code(2, "not a JSON object");
}

#[test]
fn alarms_from_the_shell() {
    let (server, cli) = acme();
    definitions(&server, &cli);

    // 84 is below the updated setpoint; 90 raises `hot`.
    publish(&cli, "84");
    publish(&cli, "90");
    let raised = server.poll(WAIT, "hot raised", || standing(&cli, "hot"));
    assert_eq!(raised["state"], "active_unacknowledged", "{raised}");
    assert_eq!(raised["value"], 90);
    assert!(standing(&cli, "cold").is_none());
    let csv = cli.ok(&["alarms", "active", "--priority", "high", "--output", "csv"]);
    let (header, rows) = csv.csv();
    // The columns an operator scans (JSON keeps everything).
    let mut sorted = header.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["message", "name", "priority", "since", "state", "tag", "unit", "value"]
    );
    assert_eq!(rows.len(), 1);
    let cell = |name: &str| &rows[0][header.iter().position(|h| h == name).unwrap()];
    assert_eq!(cell("name"), "hot");
    assert_eq!(cell("message"), "acme/plant/temp is 90");
    assert_eq!(cell("state"), "active_unacknowledged");
    let low = cli.ok(&["alarms", "active", "--priority", "low", "--output", "jsonl"]);
    assert!(low.stdout.is_empty(), "{}", low.stdout);
    let by_state = cli.ok(&[
        "alarms",
        "active",
        "--state",
        "active_unacknowledged",
        "--output",
        "jsonl",
    ]);
    assert_eq!(by_state.jsonl().len(), 1);

    let acked = cli.ok(&[
        "alarms",
        "ack",
        "hot",
        "--comment",
        "on it",
        "--output",
        "table",
    ]);
    assert_eq!(acked.stdout.trim(), "hot: active_acknowledged");
    let again = cli
        .run(&["alarms", "ack", "hot"])
        .expect_code(1, "acknowledged twice");
    assert!(
        again.stderr.contains("409") && again.stderr.contains("already acknowledged"),
        "{}",
        again.stderr
    );
    let shelved = cli.json(&[
        "alarms",
        "shelve",
        "hot",
        "--reason",
        "sensor swap",
        "--for",
        "2h",
    ]);
    assert_eq!(shelved["state"], "shelved", "{shelved}");
    assert_eq!(shelved["shelved"]["reason"], "sensor swap");
    let unshelved = cli.json(&["alarms", "unshelve", "hot", "--comment", "done"]);
    // The condition still holds: raised again, unacknowledged.
    assert_eq!(unshelved["state"], "active_unacknowledged", "{unshelved}");
    let until = chrono::Utc::now() + chrono::Duration::hours(1);
    let until = until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let shelved = cli.json(&[
        "alarms", "shelve", "hot", "--reason", "r", "--until", &until,
    ]);
    assert_eq!(shelved["state"], "shelved");
    cli.ok(&["alarms", "unshelve", "hot"]);
    let oos = cli.json(&["alarms", "out-of-service", "cold", "--comment", "pm"]);
    assert_eq!(oos["state"], "out_of_service", "{oos}");
    let back = cli.json(&["alarms", "in-service", "cold"]);
    assert_eq!(back["state"], "normal", "{back}");
    let not_oos = cli
        .run(&["alarms", "in-service", "cold"])
        .expect_code(1, "not out of service");
    assert!(
        not_oos.stderr.contains("not out of service"),
        "{}",
        not_oos.stderr
    );
    let unknown = cli
        .run(&["alarms", "ack", "nope"])
        .expect_code(1, "no such alarm");
    assert!(
        unknown.stderr.contains("404") && unknown.stderr.contains("nope"),
        "{}",
        unknown.stderr
    );

    // The journal: newest first, with who acted and the filters.
    let hot = cli
        .ok(&["alarms", "journal", "--alarm", "hot", "--output", "jsonl"])
        .jsonl();
    let causes: Vec<&str> = hot.iter().map(|e| e["cause"].as_str().unwrap()).collect();
    assert_eq!(
        causes,
        [
            "unshelve",
            "shelve",
            "unshelve",
            "shelve",
            "acknowledge",
            "raised"
        ],
        "{hot:?}"
    );
    let ack = &hot[4];
    assert_eq!(ack["who"], "admin");
    assert_eq!(ack["comment"], "on it");
    let shelves = cli
        .ok(&[
            "alarms", "journal", "--state", "shelved", "--output", "jsonl",
        ])
        .jsonl();
    assert_eq!(shelves.len(), 2, "{shelves:?}");
    let by_admin = cli
        .ok(&["alarms", "journal", "--who", "admin", "--output", "jsonl"])
        .jsonl();
    assert!(by_admin.iter().all(|e| e["who"] == "admin"));
    assert_eq!(by_admin.len(), 7, "{by_admin:?}"); // hot's 5 actions, cold's 2
    let one = cli
        .ok(&[
            "alarms", "journal", "--limit", "1", "--from", "-1h", "--output", "jsonl",
        ])
        .jsonl();
    assert_eq!(one.len(), 1);
    let older = cli
        .ok(&[
            "alarms",
            "journal",
            "--before",
            &one[0]["id"].to_string(),
            "--to",
            "now",
            "--output",
            "jsonl",
        ])
        .jsonl();
    assert_eq!(older.len(), 7, "{older:?}"); // all 8 entries but the newest
    let future = cli
        .ok(&[
            "alarms",
            "journal",
            "--from",
            "2999-01-01T00:00:00Z",
            "--output",
            "jsonl",
        ])
        .jsonl();
    assert!(future.is_empty());
    let health = cli.json(&["alarms", "health"]);
    // Raised once, and raised again by each unshelve: three raises in a minute chatter.
    assert_eq!(health["rate_10min"], 3, "{health}");
    assert_eq!(health["chattering"], json!(["hot"]), "{health}");
    assert_eq!(health["counts"]["total"], 2, "{health}");

    cli.ok(&["alarms", "delete", "cold"]);
    let left = cli.ok(&["alarms", "list", "--output", "jsonl"]).jsonl();
    assert_eq!(left.len(), 1);
    let gone = cli
        .run(&["alarms", "delete", "cold"])
        .expect_code(1, "deleted twice");
    assert!(gone.stderr.contains("cold"), "{}", gone.stderr);
}

#[test]
fn alarms_watch_prints_one_line_per_change() {
    let (server, cli) = acme();
    definitions(&server, &cli);
    let mut watch = cli
        .command(&["alarms", "watch", "--count", "2", "--output", "jsonl"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn svc alarms watch");
    let stdout = watch.stdout.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    // The stream may not be open yet: keep changing the alarm until two changes are printed.
    let started = Instant::now();
    let mut got = Vec::new();
    let mut high = true;
    while got.len() < 2 {
        assert!(started.elapsed() < WAIT, "watch printed {got:?}");
        publish(&cli, if high { "95" } else { "20" });
        high = !high;
        while let Ok(line) = lines.recv_timeout(Duration::from_millis(300)) {
            got.push(line);
        }
    }
    let status = watch.wait().unwrap();
    assert!(status.success(), "watch exited {status}");
    assert_eq!(got.len(), 2, "{got:?}");
    for line in &got {
        let change: Value = serde_json::from_str(line).unwrap();
        assert_eq!(change["alarm"], "hot", "{change}");
        assert_eq!(change["domain"], "acme");
    }

    // Usage errors: exit 2 before anything is sent.
    for bad in [
        &["alarms", "shelve", "hot", "--reason", "r"][..],
        &["alarms", "shelve", "hot", "--for", "2h"],
        &[
            "alarms",
            "shelve",
            "hot",
            "--reason",
            "r",
            "--for",
            "2h",
            "--until",
            "2030-01-01T00:00:00Z",
        ],
        &["alarms", "shelve", "hot", "--reason", "r", "--for", "soon"],
        &["alarms", "active", "--state", "bogus"],
        &["alarms", "active", "--priority", "urgent"],
        &["alarms", "journal", "--limit", "0"],
        &["alarms", "journal", "--from", "yesterday"],
        &["alarms", "watch", "--count", "0"],
        &["alarms", "ack"],
        &["alarms", "ack", ""],
    ] {
        let run = cli.run(bad).expect_code(2, &bad.join(" "));
        assert!(!run.stderr.trim().is_empty(), "{bad:?} said nothing");
    }
    // A shelve beyond 30 days: the server's sentence, exit 1.
    let long = cli
        .run(&["alarms", "shelve", "hot", "--reason", "r", "--for", "60d"])
        .expect_code(1, "a shelve of 60 days");
    assert!(long.stderr.contains("30 days"), "{}", long.stderr);
}
