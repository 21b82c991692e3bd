//! The private PostgreSQL server the PostgreSQL engine's tests run against (issue 18): it starts
//! from Debian's package as an unprivileged user, refuses a wrong password, gives each test a
//! database of its own, and keeps its data across a crash-like stop and a restart (what the
//! outage tests do to it).

use crate::common::*;

#[test]
fn the_private_postgres_gives_each_test_its_own_database_and_survives_a_restart() {
    let mut pg = Postgres::start();
    let version: u32 = pg
        .psql("postgres", "SHOW server_version_num")
        .expect("version")
        .parse()
        .expect("a number");
    assert!(version >= 130000, "PostgreSQL 13 or newer: {version}");

    let wrong = pg.url("postgres").replace(":pw-", ":wrong-");
    let refused = pg
        .psql_at(&wrong, "SELECT 1")
        .expect_err("a wrong password");
    assert!(
        refused.contains("password authentication failed"),
        "{refused}"
    );

    let (a, b) = (pg.fresh_database(), pg.fresh_database());
    assert_ne!(a, b);
    let (a, b) = (database_name(&a), database_name(&b));
    pg.psql(&a, "CREATE TABLE t (n int); INSERT INTO t VALUES (7)")
        .expect("write a");
    let missing = pg.psql(&b, "SELECT n FROM t").expect_err("t is a's only");
    assert!(missing.contains("does not exist"), "{missing}");

    pg.stop();
    assert!(pg.psql(&a, "SELECT 1").is_err(), "stopped");
    pg.start_server();
    assert_eq!(pg.psql(&a, "SELECT n FROM t").expect("read a"), "7");

    // As root, the server runs as another user (PostgreSQL refuses root).
    let pid = pg.server_pid().expect("running");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .expect("a Uid line");
    assert!(!uid.split_whitespace().skip(1).all(|id| id == "0"), "{uid}");
}
