//! The README's "From the shell" examples, run verbatim with bash against a test server.

mod cli_support;
mod common;

use cli_support::Cli;
use common::{Server, ADMIN_PASSWORD};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The first ```sh block after the "## From the shell" heading.
fn readme_block() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let text = std::fs::read_to_string(path).expect("README.md");
    let section = &text[text.find("## From the shell").expect("README section")..];
    let start = section.find("```sh\n").expect("sh block") + 6;
    let end = start + section[start..].find("```").expect("block end");
    section[start..end].to_string()
}

#[test]
fn readme_shell_examples_run() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("archive");
    let cli = Cli::new(&server);
    let work = cli.home().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_svc")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = format!("set -euo pipefail\n{}", readme_block());
    let mut bash = Command::new("bash");
    cli.configure(&mut bash);
    let mut proc = bash
        .args(["-c", &script])
        .env("PATH", path)
        .env("SVC_PASSWORD", ADMIN_PASSWORD)
        .current_dir(&work)
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
}
