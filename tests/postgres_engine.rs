//! The `database` setting and the PostgreSQL engine's start (issue 18): a URL that is not one
//! is refused with a sentence, an unreachable server is named without its password, and on a
//! fresh database the engine applies its versioned migrations once, records them, and keeps
//! identity (the bootstrap administrator) in PostgreSQL across restarts.

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

/// Runs `svc serve` on `database` in a fresh data directory until it prints its `ready` line
/// (then stops it) or exits by itself; what it printed, and whether it became ready.
fn serve_once(database: &str) -> (bool, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .args(["--http-port", "0", "--mqtt-port", "0", "--ws-port", "0"])
        .args(["--admin-password", ADMIN_PASSWORD, "--database", database])
        .env_remove("SVC_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn svc serve");
    let stdout = child.stdout.take().expect("stdout");
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.starts_with("ready "));
    if ready {
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    let Output { stderr, .. } = child.wait_with_output().expect("wait for svc");
    (ready, String::from_utf8_lossy(&stderr).into_owned())
}

#[test]
fn a_database_setting_that_is_not_a_postgres_url_is_refused_with_a_sentence() {
    for bad in ["mysql://h/db", "postgres://h:notaport/db", "postgres://h"] {
        let out = Command::new(env!("CARGO_BIN_EXE_svc"))
            .args(["serve", "--database", bad])
            .env_remove("SVC_CONFIG")
            .output()
            .expect("run svc");
        assert!(!out.status.success(), "{bad}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("invalid database"), "{bad}: {stderr}");
        assert!(!stderr.contains("panicked"), "{bad}: {stderr}");
    }
}

#[test]
fn an_unreachable_postgres_is_named_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("postgres://svc:hunter2-secret@127.0.0.1:{port}/plant?sslmode=disable");
    let (ready, stderr) = serve_once(&url);
    assert!(!ready, "{stderr}");
    assert!(
        stderr.contains(&format!("postgres://svc@127.0.0.1:{port}/plant")),
        "{stderr}"
    );
    assert!(stderr.contains("unreachable"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "the password leaked: {stderr}");
}

#[test]
fn the_engine_applies_its_migrations_once_and_keeps_identity_in_postgres() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let db = url
        .rsplit('/')
        .next()
        .and_then(|tail| tail.split('?').next())
        .expect("database name")
        .to_string();
    let password = url
        .split(':')
        .nth(2)
        .and_then(|rest| rest.split('@').next())
        .expect("password in the URL")
        .to_string();

    let (_, first) = serve_once(&url);
    assert!(!first.contains(&password), "the password leaked: {first}");
    let migrations = |pg: &Postgres| {
        pg.psql(
            &db,
            "SELECT string_agg(version::text, ',' ORDER BY version) FROM svc_schema_migrations",
        )
        .expect("migrations table")
    };
    let applied = migrations(&pg);
    assert!(applied.starts_with("1,2"), "{applied}");
    let admins = |pg: &Postgres| {
        pg.psql(
            &db,
            "SELECT string_agg(username, ',') FROM auth_users WHERE admin",
        )
        .expect("users table")
    };
    assert_eq!(admins(&pg), "admin", "{first}");
    assert_eq!(
        pg.psql(
            &db,
            "SELECT count(*) FROM auth_domains WHERE name = 'svc_admin'"
        )
        .expect("domains"),
        "1"
    );

    // A second start (another instance, or the same one again) finds every migration applied
    // and the administrator already there.
    let (_, second) = serve_once(&url);
    assert_eq!(migrations(&pg), applied, "{second}");
    assert_eq!(admins(&pg), "admin", "{second}");
    assert!(!second.contains(&password), "the password leaked: {second}");
}
