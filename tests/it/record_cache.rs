//! Reads by id come from memory once read (the record cache): they must never lag behind a
//! write that was answered. Readers hammer the record while it is written, so that reads race
//! every step of each write (before its statement, between statement and commit, after the
//! commit); after each acknowledged write, the next read must show it. The same holds with the
//! cache turned off (`--record-cache-size 0`), and a table's other records stay readable.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

const ACME: &str = "domains:acme";
const WRITES: u64 = 150;

fn reads_never_lag_behind_writes(server: &Server) {
    server.create_domain("acme");
    let created = server.create_record(ACME, "gauges", &json!({"id": "g1", "n": 0}));
    server.create_record(ACME, "gauges", &json!({"id": "g2", "n": -1}));
    let path = rec_path(created["id"].as_str().expect("id"));
    let token = server.admin_token();
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (url, token, stop, reads) = (
                server.url(&path),
                token.clone(),
                stop.clone(),
                reads.clone(),
            );
            thread::spawn(move || {
                let client = reqwest::blocking::Client::new();
                while !stop.load(Ordering::Relaxed) {
                    let resp = client
                        .get(&url)
                        .bearer_auth(&token)
                        .header("Domain", ACME)
                        .send()
                        .expect("read");
                    assert!(
                        resp.status() == StatusCode::OK || resp.status() == StatusCode::NOT_FOUND,
                        "{}",
                        resp.status()
                    );
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for n in 1..=WRITES {
        let resp = server
            .admin_in(ACME, Method::PUT, &path)
            .json(&json!({ "n": n }))
            .send()
            .expect("write");
        assert_eq!(resp.status(), StatusCode::OK);
        let read: Value = server.get_json(ACME, &path);
        assert_eq!(
            read["n"],
            json!(n),
            "a read after write {n} answered {read}"
        );
    }
    let resp = server
        .admin_in(ACME, Method::DELETE, &path)
        .send()
        .expect("delete");
    assert!(resp.status().is_success(), "{}", resp.status());
    let gone = server
        .admin_in(ACME, Method::GET, &path)
        .send()
        .expect("read");
    assert_eq!(
        gone.status(),
        StatusCode::NOT_FOUND,
        "a deleted record is gone"
    );
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.join().expect("reader");
    }
    assert!(
        reads.load(Ordering::Relaxed) > WRITES,
        "the readers raced the writes"
    );
    let other = server.get_json(ACME, &rec_path("acme.gauges:g2"));
    assert_eq!(other["n"], json!(-1), "{other}");
}

#[test]
fn reads_by_id_never_lag_behind_an_acknowledged_write() {
    reads_never_lag_behind_writes(&Server::start());
}

#[test]
fn with_the_cache_off_reads_are_the_same() {
    reads_never_lag_behind_writes(&Server::start_with(&["--record-cache-size", "0"]));
}

#[test]
fn a_record_cache_size_that_is_not_a_number_is_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["serve", "--record-cache-size", "lots"])
        .output()
        .expect("run svc");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--record-cache-size"), "{stderr}");
}
