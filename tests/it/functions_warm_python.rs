//! Warm Python workers (issue 38): a Python process version keeps an interpreter of its own
//! between runs, inside the same fences as a forked run, so module-level state persists from
//! one run to the next and nothing is shared between processes, domains or versions; a run
//! that hits its time or memory limit, a redeploy or `process_warm_runs` runs start it afresh;
//! `fresh_state` keeps the fork per run.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const ACME: &str = "domains:acme";

/// Counts its runs in module-level state; `"loop"` runs past its time limit, `"hog"` past its
/// memory cap, `"fork"`/`"escape"` try the sandbox.
const COUNTER: &str = "import os
runs = 0

def main(what):
    global runs
    runs += 1
    if what == 'loop':
        while True:
            pass
    if what == 'hog':
        block = bytearray(1 << 30)
    if what == 'fork':
        os.fork()
    if what == 'escape':
        open('/etc/passwd').read()
    if what == 'file':
        before = sorted(os.listdir('.'))
        open('note.txt', 'w').write('x')
        return before
    return runs";

fn setup(extra: &[&str]) -> Server {
    let server = Server::start_with(extra);
    server.create_domain("acme");
    server
}

fn create(server: &Server, domain: &str, body: Value) -> String {
    let resp = server
        .admin_in(domain, Method::POST, "/svc/processes")
        .json(&body)
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED)["id"]
        .as_str()
        .expect("id")
        .to_string()
}

fn counter(server: &Server, domain: &str, name: &str, extra: Value) -> String {
    let mut body = json!({"name": name, "language": "python", "code": COUNTER,
        "timeout_ms": 500, "memory_mb": 64});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    create(server, domain, body)
}

fn execute(server: &Server, domain: &str, name: &str, input: Value) -> reqwest::blocking::Response {
    server
        .admin_in(domain, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": name, "input": input}))
        .send()
        .unwrap()
}

fn outputs(server: &Server, domain: &str, name: &str, n: usize) -> Vec<Value> {
    (0..n)
        .map(|_| {
            json_ok(execute(server, domain, name, Value::Null), StatusCode::OK)["output"].clone()
        })
        .collect()
}

#[test]
fn python_state_persists_between_runs_and_is_gone_after_a_redeploy() {
    let server = setup(&[]);
    let id = counter(&server, ACME, "counter", json!({}));
    assert_eq!(outputs(&server, ACME, "counter", 3), [1, 2, 3]);
    let resp = server
        .admin_in(ACME, Method::PUT, &format!("/svc/{}", enc(&id)))
        .json(&json!({"code": format!("{COUNTER}\n# v2")}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    assert_eq!(outputs(&server, ACME, "counter", 2), [1, 2]);
    // A run's files are gone before the next run; its memory is not.
    let file = |server: &Server| {
        json_ok(
            execute(server, ACME, "counter", json!("file")),
            StatusCode::OK,
        )["output"]
            .clone()
    };
    assert_eq!(file(&server), json!([]));
    assert_eq!(file(&server), json!([]));
    assert_eq!(outputs(&server, ACME, "counter", 1), [5]);
}

#[test]
fn python_processes_and_domains_never_share_state() {
    let server = setup(&[]);
    counter(&server, ACME, "a", json!({}));
    counter(&server, ACME, "b", json!({}));
    counter(&server, "domains:svc_admin", "a", json!({}));
    assert_eq!(outputs(&server, ACME, "a", 2), [1, 2]);
    assert_eq!(outputs(&server, ACME, "b", 1), [1]);
    assert_eq!(outputs(&server, "domains:svc_admin", "a", 1), [1]);
    // Even what one process puts in the interpreter's builtins stays its own.
    let leaker = "import builtins\ndef main():\n    builtins.secret = 'x'\n    return 1";
    let spy = "import builtins\ndef main():\n    return getattr(builtins, 'secret', None)";
    create(
        &server,
        ACME,
        json!({"name": "leaker", "language": "python", "code": leaker}),
    );
    create(
        &server,
        ACME,
        json!({"name": "spy", "language": "python", "code": spy}),
    );
    assert_eq!(outputs(&server, ACME, "leaker", 1), [1]);
    assert_eq!(outputs(&server, ACME, "spy", 1), [Value::Null]);
    assert_eq!(outputs(&server, ACME, "a", 1), [3]);
}

#[test]
fn a_python_run_that_hits_a_limit_leaves_no_state_and_the_fences_hold_in_a_warm_worker() {
    let server = setup(&[]);
    for (what, needle) in [("loop", "500 ms time limit"), ("hog", "64 MB memory limit")] {
        counter(&server, ACME, what, json!({}));
        assert_eq!(outputs(&server, ACME, what, 2), [1, 2], "{what}");
        assert_error(
            execute(&server, ACME, what, json!(what)),
            StatusCode::UNPROCESSABLE_ENTITY,
            &[needle],
        );
        assert_eq!(outputs(&server, ACME, what, 2), [1, 2], "after {what}");
    }
    // The run's fences are on the warm interpreter itself, for every run after the first.
    counter(&server, ACME, "fenced", json!({}));
    assert_eq!(outputs(&server, ACME, "fenced", 1), [1]);
    for attempt in ["fork", "escape"] {
        assert_error(
            execute(&server, ACME, "fenced", json!(attempt)),
            StatusCode::UNPROCESSABLE_ENTITY,
            &["PermissionError"],
        );
    }
    assert_eq!(outputs(&server, ACME, "fenced", 1), [4]);
}

#[test]
fn python_fresh_state_forks_every_run_and_warm_runs_are_counted() {
    let server = setup(&["--process-warm-runs", "2"]);
    counter(&server, ACME, "fresh", json!({"fresh_state": true}));
    assert_eq!(outputs(&server, ACME, "fresh", 2), [1, 1]);
    counter(&server, ACME, "counted", json!({}));
    assert_eq!(outputs(&server, ACME, "counted", 5), [1, 2, 1, 2, 1]);
}

#[test]
fn a_thread_left_spinning_between_runs_uses_up_its_cpu_time_and_the_next_run_starts_fresh() {
    let server = setup(&[]);
    let code = "import threading
runs = 0

def spin():
    while True:
        pass

def main(what):
    global runs
    runs += 1
    if what == 'spin':
        threading.Thread(target=spin, daemon=True).start()
    return runs";
    create(
        &server,
        ACME,
        json!({"name": "spinner", "language": "python", "code": code, "timeout_ms": 200}),
    );
    assert_eq!(outputs(&server, ACME, "spinner", 2), [1, 2]);
    let spun = json_ok(
        execute(&server, ACME, "spinner", json!("spin")),
        StatusCode::OK,
    );
    assert_eq!(spun["output"], 3);
    // Its CPU allowance (the time limit rounded up, plus a second, from the start of each run)
    // runs out while it is idle, however busy this machine is (each run renews it, so it is
    // given a few seconds alone each time).
    let mut seen = Vec::new();
    for _ in 0..10 {
        std::thread::sleep(std::time::Duration::from_millis(3000));
        seen.extend(outputs(&server, ACME, "spinner", 1));
        if seen.last() == Some(&json!(1)) {
            break;
        }
    }
    assert_eq!(seen.last(), Some(&json!(1)), "the next runs: {seen:?}");
    assert_eq!(outputs(&server, ACME, "spinner", 1), [2]);
}
