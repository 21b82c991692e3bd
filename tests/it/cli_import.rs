//! CLI end to end: `records import` (10,000 JSONL rows with bad rows reported by line, JSON
//! arrays, typed CSV, dry runs) and `records export` round-tripping through import in every
//! format.

use crate::cli_support::Cli;
use crate::common::Server;
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn setup(domains: &[&str]) -> (Server, Cli) {
    let server = Server::start();
    for d in domains {
        server.create_domain(d);
    }
    let cli = Cli::new(&server);
    cli.login_admin(&[]);
    (server, cli)
}

#[test]
fn ten_thousand_jsonl_rows_with_bad_rows_reported_by_line() {
    let (server, cli) = setup(&["acme"]);
    let d = ["--domain", "acme"];
    // A schema so the server rejects one row too.
    let schema = r#"{"name":"items","fields":[{"name":"name","type":"string","required":true},{"name":"n","type":"number"}]}"#;
    cli.ok(&[
        &d[..],
        &["records", "create", "collections", "--data", schema],
    ]
    .concat());
    let mut text = String::new();
    let bad_json = 17;
    let not_object = 5000;
    let rejected = 9999;
    for line in 1..=10_000 {
        let row = match line {
            l if l == bad_json => "{\"name\": \"broken\",".to_string(),
            l if l == not_object => "[1, 2, 3]".to_string(),
            l if l == rejected => json!({"n": line}).to_string(),
            _ => json!({"name": format!("item {line}"), "n": line}).to_string(),
        };
        text.push_str(&row);
        text.push('\n');
    }
    let file = cli.home().join("items.jsonl");
    std::fs::write(&file, &text).unwrap();
    let path = file.display().to_string();

    // A dry run sends nothing but finds the malformed rows.
    let run = cli.run(
        &[
            &d[..],
            &[
                "records",
                "import",
                "items",
                &path,
                "--dry-run",
                "--output",
                "json",
            ],
        ]
        .concat(),
    );
    let summary = run.expect_code(1, "dry run").json();
    assert_eq!(summary["dry_run"], true);
    assert_eq!(summary["failed"], 2);
    assert_eq!(server.count("domains:acme", "items"), 0);

    let run = cli.run(
        &[
            &d[..],
            &["records", "import", "items", &path, "--output", "json"],
        ]
        .concat(),
    );
    let run = run.expect_code(1, "import with bad rows");
    let summary = run.json();
    assert_eq!(summary["rows"], 10_000);
    assert_eq!(summary["created"], 9_997);
    assert_eq!(summary["failed"], 3);
    let failures = summary["failures"].as_array().unwrap();
    let lines: Vec<u64> = failures
        .iter()
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [bad_json, not_object, rejected]);
    assert!(failures[0]["error"]
        .as_str()
        .unwrap()
        .contains("invalid JSON"));
    assert!(failures[1]["error"]
        .as_str()
        .unwrap()
        .contains("not a JSON object"));
    let server_text = failures[2]["error"].as_str().unwrap();
    assert!(
        server_text.contains("400") && server_text.contains("name"),
        "{server_text}"
    );
    assert!(
        run.stderr.contains("3 of 10000 rows failed"),
        "{}",
        run.stderr
    );
    assert_eq!(server.count("domains:acme", "items"), 9_997);

    // Every good row is stored, exactly once.
    let all = cli.json(
        &[
            &d[..],
            &[
                "records", "list", "items", "--limit", "10000", "--fields", "n",
            ],
        ]
        .concat(),
    );
    let mut ns: Vec<u64> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n"].as_u64().unwrap())
        .collect();
    ns.sort_unstable();
    let want: Vec<u64> = (1..=10_000)
        .filter(|l| ![bad_json, not_object, rejected].contains(l))
        .collect();
    assert_eq!(ns, want);

    // The human summary names the lines too.
    let run = cli.run(
        &[
            &d[..],
            &[
                "records",
                "import",
                "items",
                &path,
                "--dry-run",
                "--output",
                "table",
            ],
        ]
        .concat(),
    );
    let run = run.expect_code(1, "table summary");
    assert!(
        run.stdout.contains("line 17: invalid JSON"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("line 5000: not a JSON object"),
        "{}",
        run.stdout
    );
}

#[test]
fn json_array_and_typed_csv_imports() {
    let (server, cli) = setup(&["acme"]);
    let d = ["--domain", "acme"];
    let run = cli.run_with(
        &[
            &d[..],
            &["records", "import", "things", "-", "--output", "json"],
        ]
        .concat(),
        &[],
        Some(r#"[{"a": 1}, "oops", {"id": "k2", "a": 2}]"#),
    );
    let summary = run.expect_code(1, "json array").json();
    assert_eq!(summary["created"], 2);
    assert_eq!(summary["failures"][0]["item"], 2);
    let k2 = cli.json(&[&d[..], &["records", "get", "acme.things:k2"]].concat());
    assert_eq!(k2["a"], 2);

    let csv = "id,name,code:string,price:number,ok:boolean,tags:json,note\n\
               c1,Pump 1,007,12.5,true,\"[\"\"a\"\"]\",hello\n\
               c2,\"Valve, big\",8,3,false,{},42\n\
               c3,Bad,1,notanumber,true,[],x\n\
               c4,Short\n";
    let file = cli.home().join("things.csv");
    std::fs::write(&file, csv).unwrap();
    let run = cli.run(
        &[
            &d[..],
            &[
                "records",
                "import",
                "parts",
                &file.display().to_string(),
                "--output",
                "json",
            ],
        ]
        .concat(),
    );
    let summary = run.expect_code(1, "csv").json();
    assert_eq!(summary["created"], 2, "{summary}");
    let lines: Vec<u64> = summary["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [4, 5]);
    let c1 = cli.json(&[&d[..], &["records", "get", "acme.parts:c1"]].concat());
    assert_eq!(c1["code"], "007");
    assert_eq!(c1["price"], 12.5);
    assert_eq!(c1["ok"], true);
    assert_eq!(c1["tags"], json!(["a"]));
    let c2 = cli.json(&[&d[..], &["records", "get", "acme.parts:c2"]].concat());
    assert_eq!(
        (c2["name"].clone(), c2["note"].clone()),
        (json!("Valve, big"), json!(42))
    );
    assert_eq!(server.count("domains:acme", "parts"), 2);

    // All rows good: exit 0.
    let run = cli.run_with(
        &[
            &d[..],
            &[
                "records", "import", "more", "-", "--format", "jsonl", "--output", "table",
            ],
        ]
        .concat(),
        &[],
        Some("{\"a\":1}\n{\"a\":2}\n"),
    );
    assert!(run
        .expect_code(0, "clean import")
        .stdout
        .contains("created 2 of 2 rows"));
}

/// Records keyed by their key, without the server's timestamps.
fn normalized(records: &[Value]) -> BTreeMap<String, Value> {
    records
        .iter()
        .map(|r| {
            let mut r = r.as_object().unwrap().clone();
            r.remove("created_dt");
            r.remove("updated_dt");
            let id = r.remove("id").unwrap();
            let key = id.as_str().unwrap().rsplit_once(':').unwrap().1.to_string();
            (key, Value::Object(r))
        })
        .collect()
}

fn parse_export(format: &str, text: &str) -> Vec<Value> {
    match format {
        "json" => serde_json::from_str::<Vec<Value>>(text).expect("export is a JSON array"),
        "jsonl" => text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        _ => {
            // Typed headers; parse them the way a reader of the contract would.
            let mut r = csv::Reader::from_reader(text.as_bytes());
            let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
            r.records()
                .map(|rec| {
                    let rec = rec.unwrap();
                    let mut map = serde_json::Map::new();
                    for (h, cell) in header.iter().zip(rec.iter()) {
                        if cell.is_empty() {
                            continue;
                        }
                        let (name, ty) = h.rsplit_once(':').unwrap();
                        let v = match ty {
                            "string" => json!(cell),
                            _ => serde_json::from_str(cell).unwrap(),
                        };
                        map.insert(name.to_string(), v);
                    }
                    Value::Object(map)
                })
                .collect()
        }
    }
}

#[test]
fn export_round_trips_through_import_in_every_format() {
    let (server, cli) = setup(&["acme", "cjson", "cjsonl", "ccsv"]);
    let mut source = String::new();
    for i in 0..250 {
        let mut rec = json!({
            "id": format!("r{i:03}"),
            "name": format!("Item {i}, \"quoted\"\nnext line"),
            "code": format!("{:03}", i % 7),
            "price": i as f64 * 1.25,
            "count": i,
            "ok": i % 2 == 0,
            "tags": ["a", i.to_string()],
            "dims": {"w": i, "unit": "mm"},
            "unicode": "Größe ✓",
        });
        if i % 3 == 0 {
            rec["maybe"] = json!(null);
        }
        if i % 5 == 0 {
            rec["empty"] = json!("");
        }
        if i % 4 == 0 {
            rec["mixed"] = json!(i);
        } else if i % 4 == 1 {
            rec["mixed"] = json!(format!("s{i}"));
        }
        source.push_str(&rec.to_string());
        source.push('\n');
    }
    let run = cli.run_with(
        &[
            "--domain", "acme", "records", "import", "stock", "-", "--format", "jsonl",
        ],
        &[],
        Some(&source),
    );
    run.expect_code(0, "seed");
    let original = cli.json(&[
        "--domain", "acme", "records", "list", "stock", "--limit", "1000",
    ]);
    let original = normalized(original.as_array().unwrap());
    assert_eq!(original.len(), 250);

    for format in ["json", "jsonl", "csv"] {
        let export = cli.ok(&[
            "--domain",
            "acme",
            "records",
            "export",
            "stock",
            "--page-size",
            "40",
            "--output",
            format,
        ]);
        let exported = parse_export(format, &export.stdout);
        assert_eq!(
            normalized(&exported),
            original,
            "{format} export holds every record"
        );
        if format == "csv" {
            let header = export.stdout.lines().next().unwrap();
            assert!(
                header.contains("code:string") && header.contains("price:number"),
                "{header}"
            );
        }
        let file = cli.home().join(format!("stock.{format}"));
        std::fs::write(&file, &export.stdout).unwrap();
        let domain = format!("c{format}");
        let run = cli.run(&[
            "--domain",
            &domain,
            "records",
            "import",
            "stock",
            &file.display().to_string(),
            "--output",
            "json",
        ]);
        let summary = run.expect_code(0, &format!("{format} import")).json();
        assert_eq!(summary["created"], 250);
        let again = cli.ok(&[
            "--domain", &domain, "records", "export", "stock", "--output", format,
        ]);
        let copy = normalized(&parse_export(format, &again.stdout));
        assert_eq!(copy, original, "{format} round trip");
        assert_eq!(server.count(&format!("domains:{domain}"), "stock"), 250);
    }

    // Export honours filters and sorts, and an empty table exports as an empty array.
    let some = cli.json(&[
        "--domain",
        "acme",
        "records",
        "export",
        "stock",
        "--filter",
        "count < 10",
        "--sort",
        "count:desc",
        "--page-size",
        "3",
    ]);
    let counts: Vec<u64> = some
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, (0..10).rev().collect::<Vec<u64>>());
    assert_eq!(
        cli.json(&["--domain", "acme", "records", "export", "nothing"]),
        json!([])
    );
}
