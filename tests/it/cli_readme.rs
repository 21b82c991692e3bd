//! The README's "From the shell" examples, run verbatim with bash against a test server.

use crate::cli_support::Cli;
use crate::common::{Server, ADMIN_PASSWORD};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The first ```sh block after a README heading.
fn readme_block(heading: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let text = std::fs::read_to_string(path).expect("README.md");
    let section = &text[text.find(heading).expect("README section")..];
    let start = section.find("```sh\n").expect("sh block") + 6;
    let end = start + section[start..].find("```").expect("block end");
    section[start..end].to_string()
}

/// Runs a README block with bash as a user of `svc` would (the binary on `PATH`, the admin
/// password in `SVC_PASSWORD`), in `work`; panics unless it succeeds; returns its stdout.
fn run_block(cli: &Cli, work: &Path, heading: &str) -> String {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_svc")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = format!("set -euo pipefail\n{}", readme_block(heading));
    let mut bash = Command::new("bash");
    cli.configure(&mut bash);
    let mut proc = bash
        .args(["-c", &script])
        .env("PATH", path)
        .env("SVC_PASSWORD", ADMIN_PASSWORD)
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = proc.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = proc.kill();
            panic!("README examples did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (mut out, mut err) = (String::new(), String::new());
    proc.stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    proc.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        status.success(),
        "README examples failed ({status})\nstdout:\n{out}\nstderr:\n{err}"
    );
    out
}

fn work_dir(cli: &Cli) -> std::path::PathBuf {
    let work = cli.home().join("work");
    std::fs::create_dir_all(&work).unwrap();
    work
}

#[test]
fn readme_shell_examples_run() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("archive");
    let cli = Cli::new(&server);
    let work = work_dir(&cli);
    let out = run_block(&cli, &work, "## From the shell");
    // What the examples should have produced.
    assert_eq!(server.count("domains:archive", "products"), 1);
    let watched = std::fs::read_to_string(work.join("watched.jsonl")).unwrap();
    let msg: serde_json::Value = serde_json::from_str(watched.trim()).unwrap();
    assert_eq!(msg["value"], 21.5);
    assert!(std::fs::metadata(work.join("temp.csv.gz")).unwrap().len() > 0);
    assert!(std::fs::read_to_string(work.join("svc.bash"))
        .unwrap()
        .contains("svc"));
    assert!(out.contains("mqtt.port"), "{out}");
    assert!(out.contains("Pump 1"), "{out}");
    assert!(
        out.contains("\n  temp  21.5 degC  [historized]"),
        "the namespace tree: {out}"
    );
}

#[test]
fn readme_functions_and_flows_examples_run() {
    let server = Server::start();
    server.create_domain("acme");
    let cli = Cli::new(&server);
    let work = work_dir(&cli);
    let out = run_block(&cli, &work, "## Functions and flows");
    assert!(out.contains("212"), "the function's output: {out}");
    assert_eq!(server.count("domains:acme", "alarm_log"), 1);
    assert!(
        out.contains("acme/boiler/temp_f"),
        "the alarm record: {out}"
    );
    let converted = server.poll(Duration::from_secs(10), "the tag-change run", || {
        let runs = server.get_json("domains:acme", "/svc/processes/runs/c_to_f");
        let runs = runs.as_array()?.clone();
        runs.iter()
            .find(|r| r["trigger"] == "tag_change")
            .map(|r| r["output"].clone())
    });
    assert_eq!(converted, serde_json::json!(70.7));
}

#[test]
fn readme_alarms_example_runs() {
    let server = Server::start();
    server.create_domain("acme");
    let cli = Cli::new(&server);
    let work = work_dir(&cli);
    let out = run_block(&cli, &work, "## Alarms");
    assert!(out.contains("boiler-hot"), "the alarm summary: {out}");
    let journal = server.get_json("domains:acme", "/svc/alarms/journal?alarm=boiler-hot");
    let causes: Vec<&str> = journal
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["cause"].as_str().unwrap())
        .collect();
    assert_eq!(causes, ["shelve", "acknowledge", "raised"], "{journal}");
    assert_eq!(journal[1]["comment"], "checking the burner");
}
