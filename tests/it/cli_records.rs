//! CLI end to end: records list/get/create/update/delete/count in every output format, and
//! filters with spaces, quotes and `=` reaching the server intact.

use crate::cli_support::acme;
use serde_json::{json, Value};

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .map(|r| r["name"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn crud_in_every_output_format() {
    let (server, cli) = acme();
    let created = cli.json(&[
        "records",
        "create",
        "items",
        "--data",
        r#"{"name":"Pump 1","price":12.5}"#,
    ]);
    let id = created["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("acme.items:"), "{created}");
    assert_eq!(created["price"], 12.5);

    // --data from a file and from stdin.
    let file = cli.home().join("rec.json");
    std::fs::write(&file, r#"{"name":"Valve","price":3,"tags":["a","b"]}"#).unwrap();
    cli.json(&[
        "records",
        "create",
        "items",
        "--data",
        &format!("@{}", file.display()),
    ]);
    let run = cli.run_with(
        &[
            "records", "create", "items", "--data", "-", "--output", "json",
        ],
        &[],
        Some(r#"{"id":"k-3","name":"Motor","price":99}"#),
    );
    assert_eq!(
        run.expect_code(0, "stdin data").json()["id"],
        "acme.items:k-3"
    );
    assert_eq!(server.count("domains:acme", "items"), 3);

    // get
    let got = cli.json(&["records", "get", &id]);
    assert_eq!(got["name"], "Pump 1");
    let table = cli.ok(&["records", "get", &id, "--output", "table"]).stdout;
    assert!(table.starts_with("FIELD"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("name") && l.ends_with("Pump 1")),
        "{table}"
    );

    // list: json, jsonl, csv, table
    let list = cli.json(&["records", "list", "items", "--sort", "price"]);
    assert_eq!(names(&list), ["Valve", "Pump 1", "Motor"]);
    let lines = cli
        .ok(&[
            "records", "list", "items", "--sort", "price", "--output", "jsonl",
        ])
        .jsonl();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[2]["name"], "Motor");
    let (header, rows) = cli
        .ok(&[
            "records", "list", "items", "--sort", "-price", "--output", "csv",
        ])
        .csv();
    assert_eq!(header[0], "id");
    let name_col = header.iter().position(|h| h == "name").unwrap();
    let tags_col = header.iter().position(|h| h == "tags").unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0][name_col], "Motor");
    assert_eq!(rows[2][tags_col], r#"["a","b"]"#);
    let table = cli
        .ok(&["records", "list", "items", "--output", "table"])
        .stdout;
    assert!(table.lines().next().unwrap().starts_with("ID "), "{table}");
    assert_eq!(table.lines().count(), 4);

    // update
    let updated = cli.json(&["records", "update", &id, "--data", r#"{"price":13}"#]);
    assert_eq!(
        (updated["price"].clone(), updated["name"].clone()),
        (json!(13), json!("Pump 1"))
    );

    // count
    assert_eq!(cli.json(&["records", "count", "items"])["count"], 3);
    assert_eq!(
        cli.ok(&[
            "records",
            "count",
            "items",
            "-f",
            "price > 10",
            "--output",
            "table"
        ])
        .stdout,
        "2\n"
    );
    let (h, r) = cli
        .ok(&["records", "count", "items", "--output", "csv"])
        .csv();
    assert_eq!(
        (h, r),
        (vec!["count".to_string()], vec![vec!["3".to_string()]])
    );

    // delete
    let deleted = cli.json(&["records", "delete", &id]);
    assert_eq!(deleted["success"], true);
    let run = cli
        .run(&["records", "get", &id])
        .expect_code(1, "get deleted");
    assert!(run.stderr.contains("404 Not Found"), "{}", run.stderr);
    assert!(run.stderr.contains("no record"), "{}", run.stderr);
    cli.run(&["records", "delete", &id])
        .expect_code(1, "delete twice");
    assert_eq!(server.count("domains:acme", "items"), 2);
}

#[test]
fn filters_reach_the_server_intact() {
    let (server, cli) = acme();
    for rec in [
        json!({"name": "Pump 1", "code": "007", "n": 7, "note": "a=b c", "quote": "say \"hi\"", "status": "on"}),
        json!({"name": "Pump 2", "code": 7, "n": 8, "note": "x&y=%20", "quote": "it's", "status": "idle"}),
        json!({"name": "Valve", "code": "7", "n": 9, "note": "  padded  ", "status": "off", "site": {"city": "Gent"}}),
    ] {
        server.create_record("domains:acme", "items", &rec);
    }
    let list = |filters: &[&str]| -> Vec<String> {
        let mut args = vec!["records", "list", "items", "--sort", "name"];
        for f in filters {
            args.extend(["--filter", f]);
        }
        names(&cli.json(&args))
    };
    assert_eq!(list(&["name = Pump 1"]), ["Pump 1"]);
    assert_eq!(list(&[r#"name = "Pump 2""#]), ["Pump 2"]);
    assert_eq!(list(&["note = a=b c"]), ["Pump 1"]);
    assert_eq!(list(&["note == x&y=%20"]), ["Pump 2"]);
    assert_eq!(list(&["note = \"  padded  \""]), ["Valve"]);
    assert_eq!(list(&[r#"quote = say "hi""#]), ["Pump 1"]);
    assert_eq!(list(&["quote = it's"]), ["Pump 2"]);
    // Quoting or a type forces a string; a bare number is a number.
    assert_eq!(list(&[r#"code = "007""#]), ["Pump 1"]);
    assert_eq!(list(&["code:string = 7"]), ["Valve"]);
    assert_eq!(list(&["code = 7"]), ["Pump 2"]);
    assert_eq!(list(&["n:number >= 8"]), ["Pump 2", "Valve"]);
    assert_eq!(list(&["n > 7", "n < 9"]), ["Pump 2"]);
    assert_eq!(list(&["name contains Pump"]), ["Pump 1", "Pump 2"]);
    assert_eq!(list(&["status in on,off"]), ["Pump 1", "Valve"]);
    assert_eq!(list(&["status NOT IN on,off"]), ["Pump 2"]);
    assert_eq!(list(&["site.city = Gent"]), ["Valve"]);
    assert_eq!(list(&["site = null"]), ["Pump 1", "Pump 2"]);
    // OR group, ANDed with the filters.
    let args = [
        "records",
        "list",
        "items",
        "--or-filter",
        "status = on",
        "--or-filter",
        "status = off",
        "--filter",
        "n > 7",
    ];
    assert_eq!(names(&cli.json(&args)), ["Valve"]);
    // Sort, limit, offset, fields.
    let args = [
        "records", "list", "items", "--sort", "n:desc", "--limit", "1", "--offset", "1",
    ];
    assert_eq!(names(&cli.json(&args)), ["Pump 2"]);
    let proj = cli.json(&[
        "records", "list", "items", "--fields", "name", "--filter", "n = 9",
    ]);
    let keys: Vec<&String> = proj[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["id", "name"]);
    // Count honours filters.
    let count = cli.json(&[
        "records",
        "count",
        "items",
        "--filter",
        "note = a=b c",
        "--or-filter",
        "n = 7",
        "--or-filter",
        "n = 9",
    ]);
    assert_eq!(count["count"], 1);
}

#[test]
fn expand_replaces_references() {
    let (server, cli) = acme();
    let site = server.create_record("domains:acme", "sites", &json!({"name": "Gent"}));
    let site_id = site["id"].as_str().unwrap();
    server.create_record(
        "domains:acme",
        "items",
        &json!({"name": "Pump", "site": site_id}),
    );
    let list = cli.json(&["records", "list", "items", "--expand", "site"]);
    assert_eq!(list[0]["site"]["name"], "Gent");
    let plain = cli.json(&["records", "list", "items"]);
    assert_eq!(plain[0]["site"], site_id);
}
