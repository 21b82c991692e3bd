//! Functions (issue 6): records of the `processes` table run in the embedded JavaScript
//! sandbox. A `tag_change` function converts a tag and writes another one that an MQTT
//! subscriber receives and the historian records; runaway code is stopped by its time and
//! memory limits while the server keeps answering; a function sees only its own domain;
//! interval and cron triggers fire without overlapping runs; the execute route's errors; the
//! run log; and triggers replaced through `PUT /svc/processes/triggers/:id`.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ADMIN: &str = "domains:svc_admin";

fn create_function(server: &Server, domain: &str, body: &Value) -> Value {
    let resp = server
        .admin_in(domain, Method::POST, "/svc/processes")
        .json(body)
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED)
}

fn execute(server: &Server, domain: &str, name: &str, input: Value) -> reqwest::blocking::Response {
    server
        .admin_in(domain, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": name, "input": input}))
        .send()
        .unwrap()
}

fn runs(server: &Server, domain: &str, name: &str) -> Vec<Value> {
    server
        .get_json(domain, &format!("/svc/processes/runs/{name}?limit=1000"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn tag_change_function_converts_a_tag_for_subscribers_and_the_historian() {
    let server = Server::start();
    server.create_tag(ADMIN, "plant/boiler/temp_c", false);
    server.create_tag(ADMIN, "plant/boiler/temp_f", true);
    create_function(
        &server,
        ADMIN,
        &json!({
            "name": "c_to_f",
            "code": "function main(c) {\n  const f = c * 9 / 5 + 32;\n  svc.tag.write('plant/boiler/temp_f', f);\n  console.log('converted', c, f);\n  return f;\n}",
            "triggers": [{"type": "tag_change", "topic": "plant/+/temp_c"}]
        }),
    );
    let mut sub = server.mqtt_admin(Proto::V5, Via::Tcp, "fahrenheit-watcher");
    sub.subscribe("plant/boiler/temp_f", 1);
    let mut device = server.mqtt_admin(Proto::V3, Via::Tcp, "boiler");
    for c in [100, 0, -40] {
        assert_eq!(
            device.publish("plant/boiler/temp_c", c.to_string(), 1, false),
            "Success"
        );
    }
    let received: Vec<f64> = (0..3)
        .map(|_| {
            let msg = sub.expect_publish("plant/boiler/temp_f");
            msg.text().parse().expect("a number")
        })
        .collect();
    assert_eq!(received, [212.0, 32.0, -40.0]);
    let history = server.history(ADMIN, "plant/boiler/temp_f", 3);
    let values: Vec<f64> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [-40.0, 32.0, 212.0], "newest first: {history}");
    // A run is logged when it ends, after its own tag write reached subscribers and the
    // historian: wait for the third entry rather than race it.
    let log = server.poll(Duration::from_secs(10), "3 logged runs", || {
        let log = runs(&server, ADMIN, "c_to_f");
        (log.len() >= 3).then_some(log)
    });
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log
        .iter()
        .all(|r| r["trigger"] == "tag_change" && r["success"] == true));
    assert_eq!(log[2]["logs"], json!(["converted 100 212"]), "{log:?}");
    // The function's own write does not trigger it again, even through a matching filter.
    create_function(
        &server,
        ADMIN,
        &json!({
            "name": "echo",
            "code": "function main(v) { svc.tag.write('loop/b', v + 1); }",
            "triggers": [{"type": "tag_change", "topic": "loop/#"}]
        }),
    );
    device.publish("loop/a", "1", 1, false);
    server.poll(Duration::from_secs(5), "the echo run", || {
        (runs(&server, ADMIN, "echo").len() == 1).then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(runs(&server, ADMIN, "echo").len(), 1);
}

#[test]
fn runaway_code_is_stopped_by_its_limits_and_the_server_keeps_answering() {
    let server = Server::start();
    create_function(
        &server,
        ADMIN,
        &json!({"name": "spin", "code": "while (true) {}", "timeout_ms": 200}),
    );
    create_function(
        &server,
        ADMIN,
        &json!({
            "name": "hog",
            "code": "let a = []; while (true) { a.push(new Array(100000).fill(1.5)); }",
            "memory_mb": 16,
            "timeout_ms": 20000
        }),
    );
    create_function(
        &server,
        ADMIN,
        &json!({"name": "ok", "code": "function main(i) { return {twice: i.n * 2}; }"}),
    );
    let started = Instant::now();
    let body = assert_error(
        execute(&server, ADMIN, "spin", Value::Null),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["time limit", "200 ms"],
    );
    assert!(started.elapsed() < Duration::from_secs(3), "{body}");
    let started = Instant::now();
    assert_error(
        execute(&server, ADMIN, "hog", Value::Null),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["memory limit", "16 MB"],
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let resp = server.admin(Method::GET, "/svc/").send().unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let out = json_ok(
        execute(&server, ADMIN, "ok", json!({"n": 21})),
        StatusCode::OK,
    );
    assert_eq!(out["success"], json!(true));
    assert_eq!(out["output"], json!({"twice": 42}));
    assert!(out["duration_ms"].is_u64(), "{out}");
    let spin = runs(&server, ADMIN, "spin");
    assert_eq!(spin[0]["success"], json!(false));
    assert!(
        spin[0]["error"]
            .as_str()
            .unwrap_or("")
            .contains("time limit"),
        "{spin:?}"
    );
}

#[test]
fn a_function_sees_only_its_own_domain() {
    let server = Server::start();
    server.create_domain("a");
    server.create_domain("b");
    let secret = server.create_record("domains:a", "secrets", &json!({"id": "k1", "pin": 1234}));
    assert_eq!(secret["id"], json!("a.secrets:k1"));
    server.create_tag("domains:a", "a/valve", false);
    let code = "function main() {\n  let tag = null;\n  try { tag = svc.tag.read('a/valve'); } catch (e) { tag = 'denied: ' + e.message; }\n  return { byId: svc.records.get('a.secrets:k1'), listed: svc.records.list('secrets').length, tag };\n}";
    for domain in ["domains:a", "domains:b"] {
        create_function(&server, domain, &json!({"name": "peek", "code": code}));
    }
    let a = json_ok(
        execute(&server, "domains:a", "peek", Value::Null),
        StatusCode::OK,
    );
    assert_eq!(a["output"]["byId"]["pin"], json!(1234), "{a}");
    assert_eq!(a["output"]["listed"], json!(1), "{a}");
    let b = json_ok(
        execute(&server, "domains:b", "peek", Value::Null),
        StatusCode::OK,
    );
    assert_eq!(b["output"]["byId"], Value::Null, "{b}");
    assert_eq!(b["output"]["listed"], json!(0), "{b}");
    assert!(
        b["output"]["tag"]
            .as_str()
            .unwrap_or("")
            .starts_with("denied"),
        "{b}"
    );
    // Writes land in the function's own domain, and never into system tables.
    create_function(
        &server,
        "domains:b",
        &json!({"name": "writer", "code": "function main() { svc.records.create('notes', {text: 'hi'}); try { svc.records.create('processes', {name: 'x'}); return 'wrote'; } catch (e) { return e.message; } }"}),
    );
    let out = json_ok(
        execute(&server, "domains:b", "writer", Value::Null),
        StatusCode::OK,
    );
    assert!(
        out["output"].as_str().unwrap().contains("system table"),
        "{out}"
    );
    assert_eq!(server.count("domains:b", "notes"), 1);
    assert_eq!(server.count("domains:a", "notes"), 0);
    // Another domain's function is unknown here.
    assert_error(
        execute(&server, "domains:a", "writer", Value::Null),
        StatusCode::NOT_FOUND,
        &["writer"],
    );
}

fn started_ms(run: &Value) -> i64 {
    let text = run["started_dt"].as_str().unwrap();
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp_millis()
}

#[test]
fn interval_and_cron_triggers_fire_and_runs_never_overlap() {
    let server = Server::start();
    create_function(
        &server,
        ADMIN,
        &json!({
            "name": "tick",
            "code": "function main(i) { svc.records.create('ticks', {trigger: i.trigger}); }",
            "triggers": [{"type": "interval", "value": 300, "unit": "ms"}]
        }),
    );
    create_function(
        &server,
        ADMIN,
        &json!({
            "name": "every_second",
            "code": "function main(i) { return i.trigger; }",
            "triggers": [{"type": "cron", "expr": "* * * * * *"}]
        }),
    );
    // A run takes ~400 ms but the timer asks every 100 ms: firings are skipped, not piled up.
    create_function(
        &server,
        ADMIN,
        &json!({
            "name": "slow",
            "code": "function main() { const end = Date.now() + 400; while (Date.now() < end) {} }",
            "triggers": [{"type": "interval", "value": 100, "unit": "ms"}]
        }),
    );
    server.poll(Duration::from_secs(10), "3 interval ticks", || {
        (server.count(ADMIN, "ticks") >= 3).then_some(())
    });
    let ticks = server.get_json(ADMIN, "/svc/ticks/all");
    assert!(
        ticks
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["trigger"] == "interval"),
        "{ticks}"
    );
    let cron = server.poll(Duration::from_secs(10), "2 cron runs", || {
        let log = runs(&server, ADMIN, "every_second");
        (log.len() >= 2).then_some(log)
    });
    assert!(
        cron.iter()
            .all(|r| r["trigger"] == "cron" && r["output"] == "cron"),
        "{cron:?}"
    );
    let gap = started_ms(&cron[0]) - started_ms(&cron[1]);
    assert!((700..=1500).contains(&gap), "cron runs {gap} ms apart");
    let slow = server.poll(Duration::from_secs(10), "4 slow runs", || {
        let log = runs(&server, ADMIN, "slow");
        (log.len() >= 4).then_some(log)
    });
    for pair in slow.windows(2) {
        let (newer, older) = (&pair[0], &pair[1]);
        let older_end = started_ms(older) + older["duration_ms"].as_i64().unwrap();
        assert!(
            started_ms(newer) >= older_end,
            "overlapping runs: {older} then {newer}"
        );
    }
    // Disabling a function stops its timers.
    let id = server
        .get_json(ADMIN, "/svc/processes/domain")
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "tick")
        .map(|f| {
            format!(
                "{}:{}",
                f["id"]["Table"].as_str().unwrap(),
                f["id"]["ID"].as_str().unwrap()
            )
        })
        .unwrap();
    let resp = server
        .admin_in(ADMIN, Method::PUT, &format!("/svc/{}", enc(&id)))
        .json(&json!({"enabled": false}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    let before = server.count(ADMIN, "ticks");
    std::thread::sleep(Duration::from_millis(1000));
    assert!(server.count(ADMIN, "ticks") <= before + 1);
    assert_error(
        execute(&server, ADMIN, "tick", Value::Null),
        StatusCode::CONFLICT,
        &["disabled"],
    );
}

#[test]
fn bad_functions_bad_calls_and_trigger_replacement() {
    let server = Server::start();
    let post = |body: Value| {
        server
            .admin_in(ADMIN, Method::POST, "/svc/processes")
            .json(&body)
            .send()
            .unwrap()
    };
    assert_error(
        post(json!({"name": "f", "code": "function ("})),
        StatusCode::BAD_REQUEST,
        &["compile"],
    );
    assert_error(
        post(json!({"name": "f"})),
        StatusCode::BAD_REQUEST,
        &["code"],
    );
    assert_error(
        post(json!({"name": "bad name", "code": "1"})),
        StatusCode::BAD_REQUEST,
        &["name"],
    );
    assert_error(
        post(
            json!({"name": "f", "code": "1", "triggers": [{"type": "cron", "expr": "every tuesday"}]}),
        ),
        StatusCode::BAD_REQUEST,
        &["cron"],
    );
    assert_error(
        post(
            json!({"name": "f", "code": "1", "triggers": [{"type": "tag_change", "topic": "a/#/b"}]}),
        ),
        StatusCode::BAD_REQUEST,
        &["filter"],
    );
    let f = create_function(
        &server,
        ADMIN,
        &json!({"name": "f", "code": "function main(i) { if (i === 'boom') throw new Error('valve stuck'); return i; }"}),
    );
    assert_eq!(f["version"], json!(1));
    assert_eq!(f["enabled"], json!(true));
    assert_eq!(f["language"], json!("javascript"));
    assert_error(
        post(json!({"name": "f", "code": "2"})),
        StatusCode::CONFLICT,
        &[],
    );
    assert_error(
        execute(&server, ADMIN, "nope", Value::Null),
        StatusCode::NOT_FOUND,
        &["nope"],
    );
    assert_error(
        execute(&server, ADMIN, "f", json!("boom")),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["valve stuck"],
    );
    let resp = server
        .admin_in(ADMIN, Method::POST, "/svc/processes/execute")
        .body("{not json")
        .header("content-type", "application/json")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &[]);
    let listed = server.get_json(ADMIN, "/svc/processes/all");
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

    // Triggers are replaced as a whole; invalid ones are refused and change nothing.
    let id = f["id"].as_str().unwrap();
    let put = |body: Value| {
        server
            .admin_in(
                ADMIN,
                Method::PUT,
                &format!("/svc/processes/triggers/{}", enc(id)),
            )
            .json(&body)
            .send()
            .unwrap()
    };
    let updated = json_ok(
        put(json!({"triggers": [{"type": "http"}, {"type": "interval", "value": 1, "unit": "h"}]})),
        StatusCode::OK,
    );
    assert_eq!(
        updated["triggers"].as_array().unwrap().len(),
        2,
        "{updated}"
    );
    assert_eq!(
        updated["version"],
        json!(1),
        "triggers are not a new version"
    );
    assert_error(
        put(json!({"triggers": [{"type": "sometimes"}]})),
        StatusCode::BAD_REQUEST,
        &[],
    );
    assert_error(
        put(json!({"triggers": "http"})),
        StatusCode::BAD_REQUEST,
        &[],
    );
    let resp = server
        .admin_in(ADMIN, Method::PUT, "/svc/processes/triggers/nosuchkey")
        .json(&json!({"triggers": []}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    // Stored in svc's flat shape; the answer was the process in the SDK's shape.
    let stored = server.get_json(ADMIN, &format!("/svc/{}", enc(id)));
    assert_eq!(
        stored["triggers"],
        json!([{"type": "http"}, {"type": "interval", "value": 1, "unit": "h"}])
    );
    assert_eq!(
        updated["triggers"],
        json!([
            {"type": "http", "config": {}},
            {"type": "interval", "config": {"interval_value": 1, "interval_unit": "h"}}
        ])
    );
    // New code through the generic update is a new version; renaming is refused.
    let resp = server
        .admin_in(ADMIN, Method::PUT, &format!("/svc/{}", enc(id)))
        .json(&json!({"code": "function main() { return 2; }"}))
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK)["version"], json!(2));
    let resp = server
        .admin_in(ADMIN, Method::PUT, &format!("/svc/{}", enc(id)))
        .json(&json!({"name": "g"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["renamed"]);
    let out = json_ok(execute(&server, ADMIN, "f", Value::Null), StatusCode::OK);
    assert_eq!(out["output"], json!(2));
    // The run log keeps successes and failures, newest first.
    let log = runs(&server, ADMIN, "f");
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(
        (log[0]["success"].clone(), log[1]["success"].clone()),
        (json!(true), json!(false))
    );
    assert!(log[1]["error"].as_str().unwrap().contains("valve stuck"));
    // Deleting a function forgets it.
    let resp = server
        .admin_in(ADMIN, Method::DELETE, &format!("/svc/{}", enc(id)))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    assert_error(
        execute(&server, ADMIN, "f", Value::Null),
        StatusCode::NOT_FOUND,
        &[],
    );
}

#[test]
fn functions_need_the_processes_permission() {
    let server = Server::start();
    server.create_domain("a");
    create_function(&server, "domains:a", &json!({"name": "f", "code": "1"}));
    let reader = server.user_with_grants("domains:a", "reader", &[("processes", "read", "*")]);
    let resp = server
        .with_token_in(&reader, "domains:a", Method::POST, "/svc/processes/execute")
        .json(&json!({"name": "f"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = server
        .with_token_in(&reader, "domains:a", Method::GET, "/svc/processes/domain")
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK).as_array().unwrap().len(), 1);
}
