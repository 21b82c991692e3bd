//! `svc migrate` (issue 18): a store built through the API on SQLite (users, a group, an API
//! key, a domain, records, a collection with a unique index, tags, historian values, a function
//! and its run) is copied into a fresh PostgreSQL database; a second run changes nothing; a
//! server on that database serves the same data (same JSON, same logins, the same key, the same
//! history, the unique index still answering 409, tokens of the old server still good). Bad
//! arguments and a running server are refused with a sentence. The source is SQLite and the
//! target PostgreSQL in both runs of the suite (`SVC_TEST_ENGINE` is not looked at).

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::process::{Command, Output};
use std::time::Duration;

const PLANT: &str = "domains:plant";
const TEMP: &str = "plant/line1/temp";
/// 2026-01-01T00:00:00Z in epoch milliseconds.
const T0: i64 = 1_767_225_600_000;

fn migrate(from: &str, to: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["migrate", "--from", from, "--to", to])
        .env_remove("SVC_CONFIG")
        .output()
        .expect("run svc migrate")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every view of the data the test compares between the two servers.
fn snapshot(server: &Server, ids: &[String]) -> Vec<(String, Value)> {
    let mut views = Vec::new();
    for path in [
        "/svc/machines/all",
        "/svc/notes/all?sort=[key][asc]",
        "/svc/collections/all",
        "/svc/tag/list",
        "/svc/historian/list",
        "/svc/processes/all",
        "/svc/processes/runs/double",
        "/svc/machines/count",
    ] {
        views.push((path.to_string(), server.get_json(PLANT, path)));
    }
    for id in ids {
        views.push((id.clone(), server.get_json(PLANT, &rec_path(id))));
    }
    for path in ["/auth/domains", "/auth/user", "/auth/keys?scope=all"] {
        views.push((path.to_string(), server.get_json(PLANT, path)));
    }
    let window = json!({"topic": TEMP, "start_time": "2026-01-01T00:00:00Z", "range": "1h"});
    let resp = server
        .admin_in(PLANT, Method::PATCH, "/svc/historian")
        .json(&window)
        .send()
        .expect("historian query");
    views.push(("historian".into(), json_ok(resp, StatusCode::OK)));
    views
}

#[test]
fn sqlite_data_is_served_identically_after_migrating_to_postgres() {
    let mut source = Server::start_with(&["--database", "sqlite"]);
    source.create_domain("plant");
    let resp = source
        .admin_in(PLANT, Method::POST, "/svc/collections")
        .json(&json!({"name": "machines", "fields": [
            {"name": "serial", "type": "string", "required": true},
            {"name": "name", "type": "string", "required": false, "searchable": true},
            {"name": "power", "type": "number", "required": false}],
            "indexDetails": [{"fields": ["serial"], "isUnique": true},
                             {"fields": ["power"], "isUnique": false}]}))
        .send()
        .expect("create collection");
    json_ok(resp, StatusCode::CREATED);
    let mut ids = Vec::new();
    for (serial, name, power) in [("S-1", "Press one", 7.5), ("S-2", "Lathe", 3.0)] {
        let record = source.create_record(
            PLANT,
            "machines",
            &json!({"serial": serial, "name": name, "power": power, "meta": {"floor": [1, 2]}}),
        );
        ids.push(record["id"].as_str().expect("id").to_string());
    }
    for n in 0..25 {
        source.create_record(
            PLANT,
            "notes",
            &json!({"id": format!("n{n:02}"), "text": format!("note {n}"), "n": n}),
        );
    }
    ids.push("plant.notes:n07".into());
    let operator = source.create_user("operator", "Operator-pw-123");
    let group =
        source.create_group_with_grants(PLANT, "operators", &[("collections", "read", "*")]);
    source.add_user_to_group(PLANT, &group, &operator);
    let operator_token = source.login("operator", "Operator-pw-123");
    // Made in plant: the snapshot's key list shows that the key keeps its domain.
    let created = source
        .with_token_in(&operator_token, PLANT, Method::POST, "/auth/keys")
        .json(&json!({"name": "gateway"}))
        .send()
        .expect("create a key in plant");
    let api_key = json_ok(created, StatusCode::CREATED)["key"]
        .as_str()
        .expect("the key")
        .to_string();
    source.create_tag(PLANT, TEMP, true);
    source.create_tag(PLANT, "plant/line1/state", false);
    let mut mqtt = source.mqtt_admin(Proto::V5, Via::Tcp, "feed");
    for i in 0..6 {
        let payload = json!({"value": 20.0 + i as f64 / 2.0, "timestamp": T0 + i * 1000});
        assert_eq!(mqtt.publish(TEMP, payload.to_string(), 1, false), "Success");
    }
    mqtt.publish("plant/line1/state", "running", 1, true);
    drop(mqtt);
    source.history(PLANT, TEMP, 6);
    let resp = source
        .admin_in(PLANT, Method::POST, "/svc/processes")
        .json(&json!({"name": "double", "code": "function main(i) { return i * 2; }"}))
        .send()
        .expect("create function");
    json_ok(resp, StatusCode::CREATED);
    let resp = source
        .admin_in(PLANT, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": "double", "input": 21}))
        .send()
        .expect("execute");
    json_ok(resp, StatusCode::OK);
    let before = snapshot(&source, &ids);
    let old_token = source.admin_token();

    let pg = shared_postgres();
    let url = pg.fresh_database();
    let from = format!("sqlite://{}", source.data_dir.display());
    // A running server holds its data dir: the copy would not be of one moment.
    let refused = migrate(&from, &url);
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        text(&refused.stderr).contains("stop the server"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(source.terminate().code(), Some(0), "{}", source.logs());

    let first = migrate(&from, &url);
    let summary = text(&first.stdout);
    eprintln!("{summary}{}", text(&first.stderr));
    assert!(
        first.status.success(),
        "stdout: {summary}\nstderr: {}",
        text(&first.stderr)
    );
    for line in [
        "plant.machines",
        "plant.notes",
        "auth_users",
        "hist_points",
        "mqtt_retained",
    ] {
        let row = summary
            .lines()
            .find(|l| l.starts_with(&format!("{line} ")))
            .unwrap_or_else(|| panic!("no `{line}` in the summary:\n{summary}"));
        assert!(row.ends_with("yes"), "{row}");
    }
    let counts = |table: &str| -> Vec<String> {
        summary
            .lines()
            .find(|l| l.starts_with(&format!("{table} ")))
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    };
    assert_eq!(counts("plant.notes")[1..3], ["25", "25"], "{summary}");
    assert_eq!(counts("hist_points")[1..3], ["6", "6"], "{summary}");
    assert_eq!(counts("auth_users")[1..3], ["2", "2"], "{summary}");

    // Again on the finished target: nothing to do, the same counts.
    let second = migrate(&from, &url);
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert_eq!(text(&second.stdout), summary);

    // As if a run had been cut off after the batch ending at n09: the rows after it are
    // missing and the progress says where to go on. The next run copies just those.
    let db = &database_name(&url);
    pg.psql(
        db,
        "DELETE FROM d_plant.notes WHERE key > 'n09'; \
         UPDATE svc_migrate_progress SET done = false, last_key = '[\"n09\"]', copied = 10 \
         WHERE item = 'plant.notes'",
    )
    .expect("cut the copy short");
    let resumed = migrate(&from, &url);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(text(&resumed.stdout), summary);
    assert_eq!(
        pg.psql(db, "SELECT count(*) FROM d_plant.notes").as_deref(),
        Ok("25")
    );

    let target = Server::start_with(&["--database", &url]);
    let after = snapshot(&target, &ids);
    for ((what, want), (_, got)) in before.iter().zip(&after) {
        assert_eq!(got, want, "{what} differs after the migration");
    }
    // The same password, the same key, the same tokens.
    let token = target.login("operator", "Operator-pw-123");
    let resp = target
        .with_token_in(&token, PLANT, Method::GET, "/svc/notes/count")
        .send()
        .expect("count as operator");
    assert_eq!(json_ok(resp, StatusCode::OK)["count"], json!(25));
    let resp = target
        .req(Method::GET, "/svc/notes/count")
        .header("X-Svc-Api-Key", &api_key)
        .header("Domain", PLANT)
        .send()
        .expect("count with the API key");
    assert_eq!(json_ok(resp, StatusCode::OK)["count"], json!(25));
    let resp = target
        .with_token(&old_token, Method::GET, "/auth/domains")
        .send()
        .expect("an old token");
    assert_eq!(resp.status(), StatusCode::OK);
    // The unique index was built on PostgreSQL.
    let resp = target
        .admin_in(PLANT, Method::POST, "/svc/machines")
        .json(&json!({"serial": "S-1", "name": "copy"}))
        .send()
        .expect("duplicate serial");
    assert_error(resp, StatusCode::CONFLICT, &["serial"]);
    // New rows do not collide with copied ids (identity sequences moved on).
    let resp = target
        .admin_in(PLANT, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": "double", "input": 2}))
        .send()
        .expect("execute on the target");
    json_ok(resp, StatusCode::OK);
    let runs = target.poll(Duration::from_secs(5), "two runs", || {
        let runs = target.get_json(PLANT, "/svc/processes/runs/double");
        (runs.as_array()?.len() == 2).then_some(runs)
    });
    assert_eq!(runs.as_array().map(Vec::len), Some(2));
}

#[test]
fn bad_arguments_are_refused_with_a_sentence() {
    let empty = tempfile::tempdir().expect("tempdir");
    let empty_dir = empty.path().display().to_string();
    let url = "postgres://svc:pw@127.0.0.1:1/db?sslmode=disable";
    let cases: [(&str, &str, &str); 5] = [
        ("/no/such/dir", url, "no data dir"),
        (&empty_dir, url, "holds no svc.db"),
        (url, url, "--from must be an SQLite data dir"),
        (&empty_dir, "mysql://h/db", "--to"),
        (&empty_dir, "postgres://h", "--to"),
    ];
    for (from, to, needle) in cases {
        let out = migrate(from, to);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{from} → {to}: {stderr}");
        assert!(stderr.contains(needle), "{from} → {to}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one sentence: {stderr}");
    }
}
