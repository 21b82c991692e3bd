//! CLI end to end: tags list/create (with compression)/publish, `tags watch` seeing what `tags publish` sends
//! (over MQTT), and the historian subcommands (list, query raw and aggregated with absolute
//! and relative times, last-N, gzipped CSV export, also in a time zone with day buckets).

use crate::cli_support::acme;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[test]
fn watch_sees_what_publish_sends() {
    let (_server, cli) = acme();
    cli.ok(&["tags", "create", "acme/line1/temp", "--unit", "degC"]);
    cli.ok(&[
        "tags",
        "create",
        "acme/line1/state",
        "--description",
        "run state",
    ]);
    let tags = cli.json(&["tags", "list"]);
    let mut tags: Vec<&str> = tags
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    tags.sort_unstable();
    assert_eq!(tags, ["acme/line1/state", "acme/line1/temp"]);
    let (h, rows) = cli.ok(&["tags", "list", "--output", "csv"]).csv();
    assert_eq!((h, rows.len()), (vec!["path".to_string()], 2));

    let mut watch = cli
        .command(&[
            "tags", "watch", "acme/#", "--count", "3", "--output", "jsonl",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn watch");
    let stderr = watch.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("watch reports its subscription");
    assert!(line.starts_with("watching acme/# on mqtt://"), "{line}");

    cli.ok(&["tags", "publish", "acme/line1/temp", "21.5"]);
    cli.ok(&[
        "tags",
        "publish",
        "acme/line1/state",
        "running",
        "--string",
        "--qos",
        "2",
    ]);
    cli.ok(&[
        "tags",
        "publish",
        "acme/line1/temp",
        r#"{"value": 22, "unit": "degC"}"#,
        "--qos",
        "0",
    ]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = watch.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = watch.kill();
            panic!("tags watch did not exit after 3 messages");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    watch
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(status.success(), "watch exit {status}: {out}");
    let msgs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<(Value, Value)> = msgs
        .iter()
        .map(|m| (m["topic"].clone(), m["value"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (json!("acme/line1/temp"), json!(21.5)),
            (json!("acme/line1/state"), json!("running")),
            (
                json!("acme/line1/temp"),
                json!({"value": 22, "unit": "degC"})
            ),
        ]
    );
    assert!(msgs.iter().all(|m| m["timestamp"].is_string()));

    // A topic that is not a tag of the domain.
    let run = cli
        .run(&["tags", "publish", "other/x", "1"])
        .expect_code(1, "publish elsewhere");
    assert!(run.stderr.contains("404"), "{}", run.stderr);
    // Duplicate tag.
    let run = cli
        .run(&["tags", "create", "acme/line1/temp"])
        .expect_code(1, "duplicate tag");
    assert!(run.stderr.contains("409"), "{}", run.stderr);
}

#[test]
fn create_with_compression() {
    let (_server, cli) = acme();
    let settings = r#"{"deviation":0.5,"max_time":"1h"}"#;
    let tag = cli.json(&[
        "tags",
        "create",
        "acme/line1/flow",
        "--historize",
        "--compression",
        settings,
    ]);
    assert_eq!(
        tag["compression"],
        json!({"deviation": 0.5, "max_time": "1h"})
    );
    // Not JSON: a usage error before any request; settings the server refuses: its 400.
    let run = cli
        .run(&["tags", "create", "acme/x", "--compression", "deviation=1"])
        .expect_code(2, "compression that is not JSON");
    assert!(run.stderr.contains("is not JSON"), "{}", run.stderr);
    let run = cli
        .run(&[
            "tags",
            "create",
            "acme/x",
            "--compression",
            r#"{"deviation":-1}"#,
        ])
        .expect_code(1, "compression the server refuses");
    assert!(
        run.stderr.contains("400") && run.stderr.contains("`compression.deviation`"),
        "{}",
        run.stderr
    );
}

#[test]
fn watch_with_a_rejected_credential_fails_cleanly() {
    let (_server, cli) = acme();
    let run = cli.run_with(
        &["tags", "watch", "#", "--count", "1"],
        &[("SVC_API_KEY", "svcx_nope")],
        None,
    );
    let run = run.expect_code(1, "bad key");
    assert!(run.stderr.contains("401"), "{}", run.stderr);
}

#[test]
fn historian_subcommands() {
    let (server, cli) = acme();
    let topic = "acme/line1/temp";
    let tag = cli.json(&["tags", "create", topic, "--historize", "--unit", "degC"]);
    assert_eq!(
        (tag["historize"].clone(), tag["unit"].clone()),
        (json!(true), json!("degC"))
    );
    cli.ok(&["tags", "create", "acme/line1/raw"]);
    assert_eq!(cli.json(&["historian", "list"]), json!([topic]));

    let points = [
        ("2026-01-01T00:00:00Z", 10.0),
        ("2026-01-01T00:10:00Z", 20.0),
        ("2026-01-01T00:40:00Z", 40.0),
    ];
    for (ts, v) in points {
        let payload = json!({"value": v, "timestamp": ts}).to_string();
        cli.ok(&["tags", "publish", topic, &payload]);
    }
    cli.ok(&["tags", "publish", topic, "50"]);
    server.poll(Duration::from_secs(10), "4 historized values", || {
        let last = cli.json(&["historian", "last", topic, "-n", "10"]);
        (last.as_array().unwrap().len() == 4).then_some(())
    });
    let last = cli.json(&["historian", "last", topic, "-n", "2"]);
    assert_eq!(last[0]["value"], 50);
    assert_eq!(last[1]["value"], 40.0);
    let lines = cli
        .ok(&["historian", "last", topic, "-n", "1", "--output", "jsonl"])
        .jsonl();
    assert_eq!(lines.len(), 1);

    // A raw window, as CSV.
    let run = cli.ok(&[
        "historian",
        "query",
        topic,
        "--start",
        "2026-01-01T00:00:00Z",
        "--range",
        "1h",
        "--output",
        "csv",
    ]);
    let (header, rows) = run.csv();
    assert_eq!(header, ["timestamp", "value"]);
    let values: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(values, ["10.0", "20.0", "40.0"]);
    assert_eq!(rows[0][0], "2026-01-01T00:00:00.000Z");
    // Buckets with an aggregation.
    let agg = cli.json(&[
        "historian",
        "query",
        topic,
        "--start",
        "2026-01-01T00:00:00Z",
        "--range",
        "1h",
        "--bucket",
        "30m",
        "--agg",
        "mean",
    ]);
    let values: Vec<f64> = agg
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [15.0, 40.0]);
    // Relative start: only the live value.
    let recent = cli.json(&["historian", "query", topic, "--start", "-1h"]);
    assert_eq!(recent.as_array().unwrap().len(), 1, "{recent}");
    assert_eq!(recent[0]["value"], 50);
    // End instead of a range.
    let ended = cli.json(&[
        "historian",
        "query",
        topic,
        "--start=2026-01-01T00:00:00Z",
        "--end",
        "2026-01-01T00:30:00Z",
    ]);
    assert_eq!(ended.as_array().unwrap().len(), 2);

    // Gzipped CSV export to a file.
    let file = cli.home().join("temp.csv.gz");
    let out = file.display().to_string();
    cli.ok(&[
        "historian",
        "export",
        topic,
        "--start",
        "2026-01-01T00:00:00Z",
        "--end",
        "2026-01-02T00:00:00Z",
        "-o",
        &out,
    ]);
    let mut csv_text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&file).unwrap())
        .read_to_string(&mut csv_text)
        .unwrap();
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(header, ["Timestamp", topic]);
    assert_eq!(reader.records().count(), 3);

    // Errors: not a tag, bad time.
    let run = cli
        .run(&["historian", "last", "acme/nope"])
        .expect_code(1, "not a tag");
    assert!(run.stderr.contains("404 Not Found"), "{}", run.stderr);
    let run = cli.run(&[
        "historian",
        "query",
        topic,
        "--start",
        "-1h",
        "--range",
        "forever",
    ]);
    assert!(run.expect_code(1, "bad range").stderr.contains("400"));
}

/// The CSV rows (header first) of a gzipped export file.
fn gz_csv_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

#[test]
fn historian_export_in_a_time_zone() {
    let (_server, cli) = acme();
    let temp = "acme/line1/temp";
    let speed = "acme/line1/speed";
    cli.ok(&["tags", "create", temp, "--historize"]);
    cli.ok(&["tags", "create", speed, "--historize"]);
    // Around Berlin's spring-forward on 2026-03-29: that local day has 23 hours.
    for (topic, ts, v) in [
        (temp, "2026-03-28T10:00:00Z", 1),
        (temp, "2026-03-28T23:30:00Z", 4), // 00:30 on the 29th in Berlin
        (temp, "2026-03-29T21:30:00Z", 16), // 23:30 on the 29th
        (temp, "2026-03-29T22:30:00Z", 32), // 00:30 on the 30th
        (speed, "2026-03-29T01:30:00Z", 100),
    ] {
        let payload = json!({"value": v, "timestamp": ts}).to_string();
        cli.ok(&["tags", "publish", topic, &payload]);
    }
    let file = cli.home().join("daily.csv.gz");
    let out = file.display().to_string();
    let window = [
        "--start",
        "2026-03-28T00:00:00+01:00",
        "--end",
        "2026-03-31T00:00:00+02:00",
    ];
    let export = |extra: &[&str]| {
        let mut args = vec!["historian", "export", temp, speed];
        args.extend(window);
        args.extend(extra);
        args.extend(["-o", &out]);
        cli.ok(&args);
        gz_csv_rows(&file)
    };
    let rows = |rows: &[&[&str]]| -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    };

    let got = export(&[
        "--timezone",
        "Europe/Berlin",
        "--sample-rate",
        "1_d",
        "--agg",
        "sum",
        "--map",
        "acme/line1/temp=Temperature",
    ]);
    let want = rows(&[
        &["Timestamp", "Temperature", speed],
        &["2026-03-28T00:00:00.000+01:00", "1", ""],
        &["2026-03-29T00:00:00.000+01:00", "20", "100"],
        &["2026-03-30T00:00:00.000+02:00", "32", ""],
    ]);
    assert_eq!(got, want);
    // A sample rate alone gives means; `--tz` is short for `--timezone`.
    let got = export(&["--tz", "Europe/Berlin", "--sample-rate", "1d"]);
    let means: Vec<&str> = got[1..].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(means, ["1", "10", "32"]);
    // Raw values in New York (already on daylight time, -04:00) and in UTC (the default).
    let got = export(&["--timezone", "America/New_York"]);
    assert_eq!(got[1], ["2026-03-28T06:00:00.000-04:00", "1", ""]);
    assert_eq!(got.len(), 6, "{got:?}");
    let got = export(&[]);
    assert_eq!(got[1], ["2026-03-28T10:00:00.000Z", "1", ""]);

    // The server refuses an unknown zone (400, exit 1); a bad --map is a usage error (exit 2).
    let mut args = vec!["historian", "export", temp];
    args.extend(window);
    args.extend(["--timezone", "Mars/Base", "-o", &out]);
    let run = cli.run(&args).expect_code(1, "unknown zone");
    assert!(
        run.stderr.contains("400") && run.stderr.contains("timezone"),
        "{}",
        run.stderr
    );
    let mut args = vec!["historian", "export", temp];
    args.extend(window);
    args.extend(["--map", "Temperature", "-o", &out]);
    cli.run(&args).expect_code(2, "bad --map");
}
