//! Backups end to end: `svc backup` of a server that keeps taking writes restores (with
//! `svc restore`) into a data dir a server starts on, holding every record acknowledged before
//! the snapshot began; `svc restore` refuses a data dir in use and files that are not svc
//! databases; `backup_schedule` writes snapshots and keeps `backup_keep`; `svc info` and
//! `GET /svc/` show the last backup.

use crate::cli_support::Cli;
use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ACME: &str = "domains:acme";

fn admin_cli(server: &Server) -> Cli {
    let cli = Cli::new(server);
    cli.login_admin(&[]);
    cli
}

/// The ids of every `readings` record in acme.
fn reading_ids(server: &Server) -> Vec<String> {
    let list = server.get_json(ACME, "/svc/readings/all?limit=10000");
    list.as_array()
        .expect("list")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_string())
        .collect()
}

/// Snapshots are of the SQLite store (a PostgreSQL database is backed up with its own tools):
/// these tests pin it whatever engine the run uses.
const SQLITE: &[&str] = &["--database", "sqlite"];

#[test]
fn a_backup_taken_while_writing_restores_every_acknowledged_record() {
    let mut server = Server::start_with(SQLITE);
    server.create_domain("acme");
    let cli = admin_cli(&server);
    let acked: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (client, url, token) = (
                server.client.clone(),
                server.url("/svc/readings"),
                server.admin_token(),
            );
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let resp = client
                        .post(&url)
                        .bearer_auth(&token)
                        .header("Domain", ACME)
                        .json(&json!({"writer": w, "n": n, "pad": "x".repeat(200)}))
                        .send()
                        .expect("create while backing up");
                    assert_eq!(resp.status(), StatusCode::CREATED);
                    let id = resp.json::<Value>().expect("json")["id"]
                        .as_str()
                        .expect("id")
                        .to_string();
                    acked.lock().unwrap().push((Instant::now(), id));
                    n += 1;
                }
            })
        })
        .collect();
    // Let writes pile up, take the snapshot mid-stream, then write some more.
    server.poll(Duration::from_secs(20), "200 acknowledged creates", || {
        (acked.lock().unwrap().len() >= 200).then_some(())
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("snap.db");
    let started = Instant::now();
    let run = cli.ok(&["backup", file.to_str().unwrap()]);
    assert!(run.stderr.contains("snap.db"), "{}", run.stderr);
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().expect("writer");
    }
    let before: Vec<String> = acked
        .lock()
        .unwrap()
        .iter()
        .filter(|(at, _)| *at < started)
        .map(|(_, id)| id.clone())
        .collect();
    let total = acked.lock().unwrap().len();
    assert!(total > before.len(), "no write after the snapshot began");
    assert!(std::fs::metadata(&file).unwrap().len() > 0);

    // Restoring into the running server's data dir is refused; stopped, it works.
    let data_dir = server.data_dir.to_str().unwrap().to_string();
    let refused = cli.run(&["restore", file.to_str().unwrap(), "--data-dir", &data_dir]);
    let refused = refused.expect_code(1, "restore into a running data dir");
    assert!(
        refused.stderr.contains("stop the server"),
        "{}",
        refused.stderr
    );
    server.terminate();
    cli.ok(&["restore", file.to_str().unwrap(), "--data-dir", &data_dir]);
    assert!(server.data_dir.join("svc.db.before-restore").is_file());
    server.restart();
    let restored = reading_ids(&server);
    let missing: Vec<&String> = before.iter().filter(|id| !restored.contains(id)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged records are missing",
        missing.len(),
        before.len()
    );
    assert!(restored.len() <= total);
    // The restored server takes writes.
    server.create_record(ACME, "readings", &json!({"after": true}));
}

#[test]
fn restore_refuses_files_that_are_not_svc_databases() {
    let server = Server::start_with(SQLITE);
    let cli = Cli::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().join("data");
    let garbage = dir.path().join("garbage.db");
    std::fs::write(
        &garbage,
        b"this is not a database at all, not even close........",
    )
    .unwrap();
    let other = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&other).expect("sqlite");
    conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .expect("other db");
    drop(conn);
    for (file, needle) in [
        (&garbage, "not an SQLite database"),
        (&other, "not an svc database"),
    ] {
        let run = cli.run(&[
            "restore",
            file.to_str().unwrap(),
            "--data-dir",
            data_dir.to_str().unwrap(),
        ]);
        let run = run.expect_code(1, "restore of a foreign file");
        assert!(run.stderr.contains(needle), "{}", run.stderr);
        assert!(!data_dir.join("svc.db").exists());
    }
    let missing = cli.run(&["restore", "/nonexistent/x.db", "--data-dir", "/tmp"]);
    missing.expect_code(1, "restore of a missing file");
}

fn snapshot_files(data_dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir.join("backups"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let name = p.file_name().unwrap().to_string_lossy().to_string();
                    name.starts_with("svc-") && name.ends_with(".db")
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn the_schedule_writes_snapshots_and_keeps_backup_keep() {
    let server = Server::start_with(&[
        "--backup-schedule",
        "* * * * * *",
        "--backup-keep",
        "2",
        "--database",
        "sqlite",
    ]);
    server.create_domain("acme");
    server.create_record(ACME, "readings", &json!({"v": 1}));
    // Four ticks of a once-a-second schedule: more snapshots were made than are kept.
    let first = server.poll(Duration::from_secs(10), "a first snapshot", || {
        snapshot_files(&server.data_dir).first().cloned()
    });
    server.poll(
        Duration::from_secs(15),
        "the first snapshot to be pruned",
        || (!first.exists()).then_some(()),
    );
    let kept = snapshot_files(&server.data_dir);
    assert_eq!(kept.len(), 2, "{kept:?}");
    let info = server.get_json(ACME, "/svc/");
    let last = &info["last_backup"];
    assert_eq!(last["kind"], "scheduled", "{info}");
    assert!(last["size_bytes"].as_u64().unwrap() > 0, "{info}");
    assert!(last["file"].as_str().unwrap().contains("backups"), "{info}");
    // A scheduled snapshot is a complete svc database.
    let cli = Cli::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    cli.ok(&[
        "restore",
        kept[1].to_str().unwrap(),
        "--data-dir",
        dir.path().to_str().unwrap(),
    ]);
    let conn = rusqlite::Connection::open(dir.path().join("svc.db")).expect("open restored");
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name LIKE '%readings%'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert!(tables > 0, "the snapshot lacks the readings table");
}

#[test]
fn svc_info_shows_the_last_backup() {
    let server = Server::start_with(SQLITE);
    let cli = admin_cli(&server);
    let before = cli.json(&["info"]);
    assert!(before.get("last_backup").is_none(), "{before}");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("b.db");
    cli.ok(&["backup", file.to_str().unwrap()]);
    let info = cli.json(&["info"]);
    let last = &info["last_backup"];
    assert_eq!(last["kind"], "download", "{info}");
    assert_eq!(
        last["size_bytes"].as_u64().unwrap(),
        std::fs::metadata(&file).unwrap().len(),
        "{info}"
    );
    assert!(
        is_rfc3339_millis_utc(last["time"].as_str().unwrap()),
        "{info}"
    );
    // Only an administrator may take a snapshot.
    let user = server.user_with_grants("domains:svc_admin", "eve", &[]);
    let resp = server
        .with_token(&user, Method::POST, "/svc/backup")
        .send()
        .expect("backup as non-admin");
    assert_error(resp, StatusCode::UNAUTHORIZED, &["administrator"]);
}
