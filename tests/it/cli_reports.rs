//! CLI end to end: `svc historian query-sql` runs a report SELECT and prints its rows in every
//! `--output` format; a refused query exits 1 with the server's sentence.

use crate::cli_support::acme;
use serde_json::json;
use std::time::Duration;

#[test]
fn query_sql_prints_rows_in_every_format() {
    let (server, cli) = acme();
    let topic = "acme/line1/temp";
    cli.ok(&["tags", "create", topic, "--historize"]);
    for (ts, v) in [
        ("2026-01-01T00:00:00Z", 10.0),
        ("2026-01-01T00:10:00Z", 30.0),
    ] {
        let payload = json!({"value": v, "timestamp": ts}).to_string();
        cli.ok(&["tags", "publish", topic, &payload]);
    }
    let sql = "SELECT topic, count(*) AS n, avg(value) AS mean FROM historian GROUP BY topic";
    let rows = server.poll(Duration::from_secs(10), "2 values", || {
        let rows = cli.json(&["historian", "query-sql", sql]);
        (rows[0]["n"] == 2).then_some(rows)
    });
    assert_eq!(rows, json!([{"topic": topic, "n": 2, "mean": 20.0}]));

    let lines = cli
        .ok(&["historian", "query-sql", sql, "--output", "jsonl"])
        .jsonl();
    assert_eq!(lines, [json!({"topic": topic, "n": 2, "mean": 20.0})]);
    let (header, records) = cli
        .ok(&["historian", "query-sql", sql, "--output", "csv"])
        .csv();
    assert_eq!(header, ["mean", "n", "topic"]);
    assert_eq!(
        records,
        [vec!["20.0".to_string(), "2".into(), topic.into()]]
    );
    let table = cli
        .ok(&["historian", "query-sql", sql, "--output", "table"])
        .stdout;
    assert!(table.contains("MEAN") && table.contains("TOPIC"), "{table}");
    assert!(table.contains(topic) && table.contains("20"), "{table}");

    let run = cli
        .run(&["historian", "query-sql", "DELETE FROM historian"])
        .expect_code(1, "refused statement");
    assert!(run.stderr.contains("only a SELECT"), "{}", run.stderr);
    cli.run(&["historian", "query-sql", ""])
        .expect_code(2, "empty query");
}
