//! Warm runtimes (issue 38): a process version keeps its JavaScript context between runs, so
//! module-level state persists from one run to the next, and loses it on a redeploy, a disable,
//! a run that hits its time or memory limit, after `process_warm_runs` runs, or when the warm
//! contexts pass `process_warm_memory` (least recently used first); processes and domains with
//! the same global names never see each other's state; `fresh_state` keeps the old rule.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const ADMIN: &str = "domains:svc_admin";

/// Counts its runs in module-level state; `"loop"` runs past its time limit, `"hog"` past its
/// memory cap.
const COUNTER: &str = "let runs = 0;
function main(what) {
  runs += 1;
  if (what === 'loop') { for (;;) {} }
  if (what === 'hog') { const a = []; for (;;) a.push(new Array(1e5).fill(runs)); }
  return runs;
}";

fn create(server: &Server, domain: &str, body: Value) -> String {
    let resp = server
        .admin_in(domain, Method::POST, "/svc/processes")
        .json(&body)
        .send()
        .unwrap();
    let record = json_ok(resp, StatusCode::CREATED);
    record["id"].as_str().expect("id").to_string()
}

fn counter(server: &Server, domain: &str, name: &str) -> String {
    create(
        server,
        domain,
        json!({"name": name, "code": COUNTER, "timeout_ms": 200, "memory_mb": 8}),
    )
}

fn update(server: &Server, id: &str, fields: Value) {
    let resp = server
        .admin_in(ADMIN, Method::PUT, &format!("/svc/{}", enc(id)))
        .json(&fields)
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
}

fn execute(server: &Server, domain: &str, name: &str, input: Value) -> reqwest::blocking::Response {
    server
        .admin_in(domain, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": name, "input": input}))
        .send()
        .unwrap()
}

fn output(server: &Server, domain: &str, name: &str) -> Value {
    let body = json_ok(execute(server, domain, name, Value::Null), StatusCode::OK);
    body["output"].clone()
}

/// The outputs of `n` runs in a row.
fn outputs(server: &Server, domain: &str, name: &str, n: usize) -> Vec<Value> {
    (0..n).map(|_| output(server, domain, name)).collect()
}

#[test]
fn state_persists_between_runs_of_a_version_and_is_gone_after_a_redeploy() {
    let server = Server::start();
    let id = counter(&server, ADMIN, "counter");
    assert_eq!(outputs(&server, ADMIN, "counter", 3), [1, 2, 3]);
    // New code: a new version, fresh state.
    update(&server, &id, json!({"code": format!("{COUNTER}\n// v2")}));
    assert_eq!(outputs(&server, ADMIN, "counter", 2), [1, 2]);
    // Same code, other settings: still a redeploy, fresh state.
    update(&server, &id, json!({"timeout_ms": 300}));
    assert_eq!(outputs(&server, ADMIN, "counter", 2), [1, 2]);
    // Disabled, then enabled again: fresh state.
    update(&server, &id, json!({"enabled": false}));
    assert_error(
        execute(&server, ADMIN, "counter", Value::Null),
        StatusCode::CONFLICT,
        &["disabled"],
    );
    update(&server, &id, json!({"enabled": true}));
    assert_eq!(outputs(&server, ADMIN, "counter", 2), [1, 2]);
}

#[test]
fn processes_and_domains_with_the_same_globals_never_share_state() {
    let server = Server::start();
    server.create_domain("acme");
    let acme = "domains:acme";
    counter(&server, ADMIN, "a");
    counter(&server, ADMIN, "b");
    counter(&server, acme, "a");
    assert_eq!(outputs(&server, ADMIN, "a", 3), [1, 2, 3]);
    assert_eq!(outputs(&server, ADMIN, "b", 1), [1]);
    assert_eq!(outputs(&server, acme, "a", 1), [1]);
    // What one process puts on its global object (or a shared prototype) stays its own.
    let leaker =
        "function main() { globalThis.secret = 'x'; Object.prototype.secret = 'y'; return 1; }";
    let spy =
        "function main() { return [typeof runs, globalThis.secret ?? null, ({}).secret ?? null]; }";
    create(&server, ADMIN, json!({"name": "leaker", "code": leaker}));
    create(&server, ADMIN, json!({"name": "spy", "code": spy}));
    create(&server, acme, json!({"name": "spy", "code": spy}));
    assert_eq!(output(&server, ADMIN, "leaker"), 1);
    for domain in [ADMIN, acme] {
        assert_eq!(
            output(&server, domain, "spy"),
            json!(["undefined", null, null])
        );
    }
    assert_eq!(outputs(&server, ADMIN, "a", 1), [4]);
    assert_eq!(outputs(&server, acme, "a", 1), [2]);
}

#[test]
fn a_run_that_hits_its_time_or_memory_limit_leaves_no_state() {
    let server = Server::start();
    for (what, needle) in [("loop", "200 ms time limit"), ("hog", "8 MB memory limit")] {
        counter(&server, ADMIN, what);
        assert_eq!(outputs(&server, ADMIN, what, 2), [1, 2], "{what}");
        assert_error(
            execute(&server, ADMIN, what, json!(what)),
            StatusCode::UNPROCESSABLE_ENTITY,
            &[needle],
        );
        assert_eq!(outputs(&server, ADMIN, what, 2), [1, 2], "after {what}");
    }
}

#[test]
fn the_warm_contexts_past_their_memory_cap_lose_the_least_recently_used() {
    // Each process keeps 4 MiB; the cap holds two of them, not three.
    let server = Server::start_with(&["--process-warm-memory", &(10usize << 20).to_string()]);
    let code = "const block = new Float64Array(512 * 1024); let runs = 0;
function main() { block[runs] = runs; runs += 1; return runs; }";
    for name in ["a", "b", "c"] {
        create(&server, ADMIN, json!({"name": name, "code": code}));
    }
    assert_eq!(outputs(&server, ADMIN, "a", 1), [1]);
    assert_eq!(outputs(&server, ADMIN, "b", 1), [1]);
    assert_eq!(outputs(&server, ADMIN, "a", 1), [2]);
    // c's context passes the cap: b, the least recently used, goes.
    assert_eq!(outputs(&server, ADMIN, "c", 1), [1]);
    assert_eq!(outputs(&server, ADMIN, "a", 1), [3]);
    assert_eq!(outputs(&server, ADMIN, "b", 1), [1]);
}

#[test]
fn a_context_is_built_anew_after_process_warm_runs_runs() {
    let server = Server::start_with(&["--process-warm-runs", "3"]);
    counter(&server, ADMIN, "counter");
    assert_eq!(outputs(&server, ADMIN, "counter", 7), [1, 2, 3, 1, 2, 3, 1]);
    let never = Server::start_with(&["--process-warm-runs", "0"]);
    counter(&never, ADMIN, "counter");
    assert_eq!(outputs(&never, ADMIN, "counter", 2), [1, 1]);
}

#[test]
fn a_fresh_state_process_starts_every_run_from_nothing() {
    let server = Server::start();
    let id = create(
        &server,
        ADMIN,
        json!({"name": "fresh", "code": COUNTER, "fresh_state": true}),
    );
    assert_eq!(outputs(&server, ADMIN, "fresh", 2), [1, 1]);
    update(&server, &id, json!({"fresh_state": false}));
    assert_eq!(outputs(&server, ADMIN, "fresh", 2), [1, 2]);
    let resp = server
        .admin_in(ADMIN, Method::POST, "/svc/processes")
        .json(&json!({"name": "bad", "code": "1", "fresh_state": "yes"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["expected a boolean"]);
}
