//! Python processes (issue 15): run by the system's `python3` in svc's sandbox. Every fence is
//! tried from a process and refused with a clear error while the server keeps answering (a
//! socket to the server's own port, the data dir, `/etc/passwd`, writing outside the run's
//! directory, the server's environment, signals to the server, fork bombs, other programs,
//! runaway CPU and memory, an oversized output); `GET /svc/` reports the fences; a syntax
//! error is refused with its line and column; an `http` endpoint, SDK-shaped interval and cron
//! triggers, `log_enabled: false`; `.py` uploads and `svc functions deploy x.py`; and another
//! domain's records are out of reach from JavaScript, TypeScript and Python alike.

use crate::cli_support::acme;
use crate::common::*;
use reqwest::blocking::multipart::{Form, Part};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const ACME: &str = "domains:acme";

fn post_process(server: &Server, body: &Value) -> reqwest::blocking::Response {
    server
        .admin_in(ACME, Method::POST, "/svc/processes")
        .json(body)
        .send()
        .expect("POST /svc/processes")
}

fn create_python(server: &Server, name: &str, code: &str) -> Value {
    json_ok(
        post_process(
            server,
            &json!({"name": name, "language": "python", "code": code}),
        ),
        StatusCode::CREATED,
    )
}

fn execute(server: &Server, name: &str, input: Value) -> reqwest::blocking::Response {
    server
        .admin_in(ACME, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": name, "input": input}))
        .send()
        .expect("POST /svc/processes/execute")
}

fn output(server: &Server, name: &str, input: Value) -> Value {
    json_ok(execute(server, name, input), StatusCode::OK)["output"].clone()
}

fn setup() -> Server {
    let server = Server::start();
    server.create_domain("acme");
    server
}

#[test]
fn get_svc_reports_python_and_its_fences() {
    let server = setup();
    let info = server.get_json(ACME, "/svc/");
    let python = &info["python"];
    assert_eq!(python["available"], true, "{info}");
    assert!(
        python["version"]
            .as_str()
            .is_some_and(|v| v.starts_with('3')),
        "{python}"
    );
    for fence in [
        "filesystem",
        "network",
        "signals",
        "fork",
        "exec",
        "rlimits",
    ] {
        assert!(
            python["sandbox"]
                .as_array()
                .is_some_and(|s| s.contains(&json!(fence))),
            "{fence} in {python}"
        );
    }
    assert_eq!(python["missing"], json!([]), "{python}");
}

#[test]
fn a_python_process_uses_the_standard_library_logs_and_the_host_api() {
    let server = setup();
    server.create_tag(ACME, "plant/line1/temp", false);
    let code = r#"
import json, statistics

def main(readings):
    print("readings:", len(readings))
    svc.log("mean", statistics.mean(readings), {"unit": "C"})
    svc.tag.write("plant/line1/temp", statistics.mean(readings))
    saved = svc.records.create("batches", {"mean": statistics.mean(readings)})
    again = svc.records.get(saved["id"])
    listed = svc.records.list("batches", {"limit": 5})
    return {"last": svc.tag.read("plant/line1/temp"), "id": again["id"], "n": len(listed)}
"#;
    create_python(&server, "stats", code);
    let resp = json_ok(
        execute(&server, "stats", json!([20, 22, 24])),
        StatusCode::OK,
    );
    assert_eq!(resp["output"]["last"], json!(22), "{resp}");
    assert_eq!(resp["output"]["n"], 1, "{resp}");
    assert!(
        resp["output"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("acme.batches:")),
        "{resp}"
    );
    assert_eq!(
        resp["logs"],
        json!(["readings: 3", "mean 22 {\"unit\": \"C\"}"]),
        "{resp}"
    );
    // The last expression is the output when there is no `main`; state does not survive.
    create_python(
        &server,
        "counter",
        "import builtins\nbuiltins.runs = getattr(builtins, 'runs', 0) + 1\nbuiltins.runs",
    );
    assert_eq!(output(&server, "counter", json!(null)), json!(1));
    assert_eq!(output(&server, "counter", json!(null)), json!(1));
}

#[test]
fn every_fence_of_the_python_sandbox_holds_and_the_server_keeps_answering() {
    let server = setup();
    let http_port = server.ready["http"]
        .as_str()
        .and_then(|a| a.rsplit(':').next())
        .expect("http port")
        .to_string();
    let outside = std::env::temp_dir().join(format!("svc-escape-{}", std::process::id()));
    // The data dir's lock file: there whichever engine holds the data.
    let data_db = server.data_dir.join("svc.lock");
    let attempts: Vec<(&str, String, &[&str])> = vec![
        (
            "socket",
            format!("import socket\nsocket.create_connection(('127.0.0.1', {http_port}))"),
            &["PermissionError"],
        ),
        (
            "data_dir",
            format!("open({:?}, 'rb').read(16)", data_db.display().to_string()),
            &["PermissionError"],
        ),
        (
            "passwd",
            "open('/etc/passwd').read()".into(),
            &["PermissionError"],
        ),
        (
            "listing",
            "import os\nos.listdir('/')".into(),
            &["PermissionError"],
        ),
        (
            "write_outside",
            format!("open({:?}, 'w').write('x')", outside.display().to_string()),
            &["PermissionError"],
        ),
        (
            "server_env",
            "open('/proc/1/environ', 'rb').read()".into(),
            &["PermissionError"],
        ),
        (
            "signal",
            "import os\nos.kill(os.getppid(), 9)".into(),
            &["PermissionError"],
        ),
        (
            "fork_bomb",
            "import os\nwhile True:\n    os.fork()".into(),
            &["PermissionError"],
        ),
        (
            "multiprocessing",
            "import multiprocessing\np = multiprocessing.Process(target=print)\np.start()".into(),
            &["Error"],
        ),
        (
            "exec",
            "import subprocess\nsubprocess.run(['/bin/sh', '-c', 'true'])".into(),
            &["PermissionError"],
        ),
        (
            "raise_limits",
            "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))".into(),
            &["Error"],
        ),
        ("cpu", "while True:\n    pass".into(), &["time limit"]),
        (
            "sleep",
            "import time\ntime.sleep(60)".into(),
            &["time limit"],
        ),
        (
            "memory",
            "block = bytearray(10 * 1024 ** 3)".into(),
            &["memory limit"],
        ),
        (
            "big_output",
            "'x' * (2 * 1024 * 1024)".into(),
            &["larger than 1 MiB"],
        ),
    ];
    for (name, code, needles) in &attempts {
        create_python(&server, name, code);
        let body = assert_error(
            execute(&server, name, json!(null)),
            StatusCode::UNPROCESSABLE_ENTITY,
            needles,
        );
        assert!(!body.contains('\n'), "{name}: one sentence: {body}");
        // The server answers after every attempt.
        let info = server.get_json(ACME, "/svc/");
        assert_eq!(info["python"]["available"], true, "after {name}");
    }
    assert!(!outside.exists(), "nothing was written outside");

    // The environment is the interpreter's own, not the server's.
    create_python(&server, "environ", "import os\nsorted(os.environ)");
    let environ = output(&server, "environ", json!(null));
    let names: Vec<&str> = environ
        .as_array()
        .expect("names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("CARGO") && *n != "PATH" && *n != "HOME"),
        "{names:?}"
    );
    // A run's files live in its own directory, gone before the next run.
    create_python(
        &server,
        "files",
        "import os\nbefore = os.listdir('.')\nopen('note.txt', 'w').write('x')\nbefore",
    );
    assert_eq!(output(&server, "files", json!(null)), json!([]));
    assert_eq!(output(&server, "files", json!(null)), json!([]));
    // Threads are allowed, and the interpreter still runs ordinary code.
    create_python(
        &server,
        "threads",
        "import threading\nout = []\nt = threading.Thread(target=lambda: out.append(7))\nt.start()\nt.join()\nout",
    );
    assert_eq!(output(&server, "threads", json!(null)), json!([7]));
}

#[test]
fn python_syntax_errors_are_refused_with_their_line_and_column() {
    let server = setup();
    let resp = post_process(
        &server,
        &json!({"name": "broken", "language": "python",
            "code": "def main(x):\n    return (x +\n\nprint('x')"}),
    );
    assert_error(resp, StatusCode::BAD_REQUEST, &["line 2, column 12"]);
    let resp = execute(&server, "broken", json!(1));
    assert_eq!(resp.status(), StatusCode::NOT_FOUND, "nothing was stored");
    let resp = post_process(
        &server,
        &json!({"name": "bundle", "language": "python", "code": "1", "module": true}),
    );
    assert_error(resp, StatusCode::BAD_REQUEST, &["Python"]);
}

#[test]
fn a_python_http_endpoint_answers_posts_and_gets() {
    let server = setup();
    json_ok(
        post_process(
            &server,
            &json!({"name": "scale", "language": "python",
                "code": "def main(body):\n    x = float(body['x'])\n    return {'y': x * 2}",
                "triggers": [{"type": "http", "config": {"endpoint": "scale"}}]}),
        ),
        StatusCode::CREATED,
    );
    let posted = server
        .admin_in(ACME, Method::POST, "/svc/processes/http/scale")
        .json(&json!({"x": 21}))
        .send()
        .expect("POST endpoint");
    assert_eq!(json_ok(posted, StatusCode::OK), json!({"y": 42.0}));
    let got = server
        .admin_in(ACME, Method::GET, "/svc/processes/http/scale?x=4")
        .send()
        .expect("GET endpoint");
    assert_eq!(json_ok(got, StatusCode::OK), json!({"y": 8.0}));
    let bad = server
        .admin_in(ACME, Method::POST, "/svc/processes/http/scale")
        .json(&json!({"x": "abc"}))
        .send()
        .expect("POST endpoint");
    assert_error(bad, StatusCode::UNPROCESSABLE_ENTITY, &["ValueError"]);
}

#[test]
fn sdk_interval_and_cron_triggers_run_python_and_log_enabled_false_is_quiet() {
    let server = setup();
    for (name, trigger) in [
        (
            "every",
            json!({"type": "interval", "config": {"interval_value": 200, "interval_unit": "ms"}}),
        ),
        (
            "cron",
            json!({"type": "cron", "config": {"cron_expression": "* * * * * *"}}),
        ),
    ] {
        json_ok(
            post_process(
                &server,
                &json!({"name": name, "language": "python", "code": "'tick'",
                    "triggers": [trigger]}),
            ),
            StatusCode::CREATED,
        );
    }
    for (name, kind) in [("every", "interval"), ("cron", "cron")] {
        let runs = server.poll(Duration::from_secs(10), "a timed Python run", || {
            let runs = server.get_json(ACME, &format!("/svc/processes/runs/{name}"));
            let done = runs.as_array()?.iter().any(|r| r["trigger"] == kind);
            done.then_some(runs)
        });
        assert_eq!(runs[0]["success"], true, "{runs}");
    }

    json_ok(
        post_process(
            &server,
            &json!({"name": "quiet", "language": "python", "log_enabled": false,
                "code": "def main(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x * 2"}),
        ),
        StatusCode::CREATED,
    );
    assert_eq!(output(&server, "quiet", json!(4)), json!(8));
    assert_error(
        execute(&server, "quiet", json!(-1)),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["ValueError: negative"],
    );
    let runs = server.get_json(ACME, "/svc/processes/runs/quiet");
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["success"], false);
}

#[test]
fn no_language_reaches_another_domains_records() {
    let server = setup();
    server.create_domain("beta");
    let secret = server.create_record("domains:beta", "secrets", &json!({"pin": "1234"}));
    let secret_id = secret["id"].as_str().expect("id").to_string();
    let programs = [
        (
            "javascript",
            format!(
                "function main() {{ let list; try {{ list = svc.records.list('beta.secrets'); }} catch (e) {{ list = String(e); }} return {{got: svc.records.get('{secret_id}'), list}}; }}"
            ),
        ),
        (
            "typescript",
            format!(
                "function main(): unknown {{ let list: unknown; try {{ list = svc.records.list('beta.secrets'); }} catch (e) {{ list = String(e); }} return {{got: svc.records.get('{secret_id}'), list}}; }}"
            ),
        ),
        (
            "python",
            format!(
                "def main(_):\n    try:\n        found = svc.records.list('beta.secrets')\n    except svc.HostError as e:\n        found = str(e)\n    return {{'got': svc.records.get('{secret_id}'), 'list': found}}"
            ),
        ),
    ];
    for (language, code) in &programs {
        let name = format!("peek_{language}");
        json_ok(
            post_process(
                &server,
                &json!({"name": name, "language": language, "code": code}),
            ),
            StatusCode::CREATED,
        );
        let out = output(&server, &name, json!(null));
        assert_eq!(out["got"], Value::Null, "{language}: {out}");
        assert!(
            out["list"].as_str().is_some(),
            "{language}: listing another domain's table is an error: {out}"
        );
        assert!(!out.to_string().contains("1234"), "{language}: {out}");
    }
}

#[test]
fn py_uploads_and_svc_functions_deploy_run_python() {
    let (server, cli) = acme();
    let form = Form::new().part(
        "file",
        Part::bytes(b"def main(x):\n    return x['a'] + 1\n".to_vec()).file_name("inc.py"),
    );
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/code/inc")
        .multipart(form)
        .send()
        .expect("POST /svc/code/inc");
    let record = json_ok(resp, StatusCode::CREATED);
    assert_eq!(record["language"], "python", "{record}");
    assert_eq!(output(&server, "inc", json!({"a": 41})), json!(42));

    let file = cli.home().join("double.py");
    std::fs::write(&file, "def main(x):\n    return {'y': x['x'] * 2}\n").expect("write");
    let record = cli.json(&[
        "functions",
        "deploy",
        &file.display().to_string(),
        "--trigger",
        "http",
    ]);
    assert_eq!(record["language"], "python", "{record}");
    let resp = cli.json(&["functions", "run", "double", "--input", r#"{"x":3}"#]);
    assert_eq!(resp["output"], json!({"y": 6}), "{resp}");
}

#[test]
fn one_worker_serves_runs_by_the_hundred_without_leaking() {
    let server = setup();
    create_python(
        &server,
        "inc",
        "def main(i):\n    open('scratch.txt', 'w').write(str(i))\n    return i + 1",
    );
    // One caller at a time: the same worker serves every run, past its descriptor limit.
    for i in 0..400 {
        assert_eq!(output(&server, "inc", json!(i)), json!(i + 1));
    }
    assert!(
        !server.stderr().contains("python worker"),
        "the worker complained: {}",
        server.stderr()
    );
}

#[test]
fn without_an_interpreter_python_is_reported_unavailable_and_javascript_still_runs() {
    let server = Server::start_with(&["--python", "/nonexistent/python3"]);
    server.create_domain("acme");
    let info = server.get_json(ACME, "/svc/");
    assert_eq!(info["python"]["available"], false, "{info}");
    assert!(
        info["python"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("/nonexistent/python3")),
        "{info}"
    );
    let resp = post_process(
        &server,
        &json!({"name": "py", "language": "python", "code": "1"}),
    );
    assert_error(resp, StatusCode::BAD_REQUEST, &["Python is not available"]);
    json_ok(
        post_process(
            &server,
            &json!({"name": "js", "code": "function main(i) { return i + 1 }"}),
        ),
        StatusCode::CREATED,
    );
    assert_eq!(output(&server, "js", json!(1)), json!(2));
    assert!(
        server.stderr().contains("Python processes are unavailable"),
        "the start log says so once"
    );
}
