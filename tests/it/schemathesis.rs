//! schemathesis (PyPI, pinned by scripts/test.sh into `target/schemathesis-venv`) generates
//! requests from the served OpenAPI document for every operation and checks the real server's
//! answers: no 5xx, and every status, content type and body as documented.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::path::PathBuf;
use std::process::Command;

/// Examples per operation and phase: bounded so the run stays within minutes on 2 CPUs.
const MAX_EXAMPLES: &str = "20";
/// No 5xx, and every status, content type, header and body as the document says.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_headers_conformance,response_schema_conformance";
/// A fixed seed: the same document generates the same requests run after run.
const SEED: &str = "17";

fn schemathesis() -> PathBuf {
    let venv = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
        .join("schemathesis-venv/bin/schemathesis");
    assert!(
        venv.is_file(),
        "schemathesis is not installed at {}: run the README's test command \
         (scripts/test.sh), which installs it into that venv",
        venv.display()
    );
    venv
}

/// A domain with collections, records, a historized tag with values and a second user, so
/// the authenticated routes have something to read.
fn seed_data(server: &Server) {
    server.load_fixtures();
    server.create_tag(DEMO, "plant/line1/temp", true);
    for value in [20.5, 21.0] {
        let resp = server
            .admin_in(DEMO, Method::POST, "/svc/tag/write")
            .json(&json!({"topic": "plant/line1/temp", "value": value, "qos": 1, "retain": true}))
            .send()
            .expect("tag write");
        json_ok(resp, StatusCode::OK);
    }
    server.user_with_grants(DEMO, "operator", &[("records", "read", "*")]);
}

#[test]
fn schemathesis_finds_no_server_error_and_no_undocumented_response() {
    let binary = schemathesis();
    let server = Server::start();
    seed_data(&server);
    let token = server.admin_token();
    let output = Command::new(&binary)
        .args(["run", &server.url("/svc/openapi.json")])
        // The server's answers must be as documented; whether the document is precise enough
        // that every schema-valid request is accepted (positive_data_acceptance) is not
        // asked: path ids, names and limits have rules the schemas only partly state.
        .args(["--checks", CHECKS])
        .args(["--max-examples", MAX_EXAMPLES, "--seed", SEED])
        .args(["--phases", "examples,coverage,fuzzing"])
        // One worker: Python 3.11's AST checker keeps its recursion depth per interpreter, so
        // two threads compiling at once (hypothesis describes its filters that way) end in
        // "AST constructor recursion depth mismatch" inside schemathesis (CPython gh-106905).
        .args(["--workers", "1", "--request-timeout", "20"])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(["-H", &format!("Domain: {DEMO}")])
        // Connects to the address its body names: fuzzed, it would reach arbitrary hosts.
        .args(["--exclude-path", "/svc/upstreams/test"])
        // Server-sent events never end, so no response completes within a timeout.
        .args(["--exclude-path", "/svc/tag/stream"])
        .args(["--exclude-path", "/svc/alarms/stream"])
        .env("NO_COLOR", "1")
        .current_dir(server.data_dir.parent().expect("temp dir"))
        .output()
        .expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}\n{stderr}");
    let logs = server.stderr();
    let server_errors: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("panicked") || l.contains("status=5"))
        .collect();
    assert!(
        output.status.success(),
        "schemathesis exited with {}; its report is above. Server errors logged: {server_errors:#?}",
        output.status
    );
}
