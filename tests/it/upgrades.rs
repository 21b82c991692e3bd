//! Data written by other releases (issue 39): every schema step records the release that
//! applied it, and a data dir or database that a newer release moved past this one's steps is
//! refused at start with a sentence naming both releases, changing nothing.

use crate::common::*;

const RELEASE: &str = env!("CARGO_PKG_VERSION");

fn steps(db: &rusqlite::Connection) -> Vec<(i64, Option<String>)> {
    db.prepare("SELECT version, release FROM svc_schema_migrations ORDER BY version")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn a_sqlite_data_dir_of_a_newer_release_is_refused_naming_both_and_left_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ready, stderr) = serve_on(dir.path(), &[]);
    assert!(ready, "{stderr}");
    let db = rusqlite::Connection::open(dir.path().join("svc.db")).expect("svc.db");
    let applied = steps(&db);
    assert!(!applied.is_empty());
    assert!(
        applied.iter().all(|(_, r)| r.as_deref() == Some(RELEASE)),
        "each step names the release that applied it: {applied:?}"
    );
    // A later release's step.
    let newest = applied.last().expect("a step").0 + 1;
    db.execute(
        "INSERT INTO svc_schema_migrations (version, release) VALUES (?1, '99.0.0')",
        [newest],
    )
    .expect("insert");
    drop(db);

    let (ready, stderr) = serve_on(dir.path(), &[]);
    assert!(!ready, "a newer data dir was opened: {stderr}");
    assert!(stderr.contains("svc 99.0.0"), "{stderr}");
    assert!(stderr.contains(&format!("svc {RELEASE}")), "{stderr}");
    assert!(
        stderr.contains(&format!("schema version {newest}")),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let db = rusqlite::Connection::open(dir.path().join("svc.db")).expect("svc.db");
    assert_eq!(
        steps(&db).len(),
        applied.len() + 1,
        "nothing applied or removed"
    );
}

#[test]
fn a_postgres_database_of_a_newer_release_is_refused_naming_both() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let db = database_name(&url);
    let (ready, stderr) = serve_once(&url);
    assert!(ready, "{stderr}");
    let releases = pg
        .psql(
            &db,
            "SELECT string_agg(DISTINCT coalesce(release, 'none'), ',') FROM svc_schema_migrations",
        )
        .expect("psql");
    assert_eq!(releases.trim(), RELEASE);
    pg.psql(
        &db,
        "INSERT INTO svc_schema_migrations (version, release) \
         SELECT max(version) + 1, '99.0.0' FROM svc_schema_migrations",
    )
    .expect("psql");
    let (ready, stderr) = serve_once(&url);
    assert!(!ready, "a newer database was opened: {stderr}");
    assert!(stderr.contains("svc 99.0.0"), "{stderr}");
    assert!(stderr.contains(&format!("svc {RELEASE}")), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
