//! The SQLite schema as versioned steps (`migrations/NNNN_name.sql`, and the two steps that
//! must look before they change), applied in order at open, each in one transaction with the
//! row that records it in `svc_schema_migrations`. The first ten are idempotent: a database
//! from before the steps were numbered runs them all once, changes nothing it already has, and
//! is recorded at version 10. Steps after those run exactly once and need not be idempotent.

use super::fulltext;
use crate::store::{schema_release, StoreResult};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

enum Step {
    Sql(&'static str),
    /// A change that must look at the database first (SQLite has no `ADD COLUMN IF NOT
    /// EXISTS`).
    Code(fn(&Connection) -> StoreResult<()>),
}

/// Every step, oldest first: (version, step). Versions only ever grow.
const STEPS: &[(i64, Step)] = &[
    (1, Step::Sql(include_str!("migrations/0001_identity.sql"))),
    // Databases from before user profiles lack the column.
    (
        2,
        Step::Code(|c| add_column(c, "auth_users", "profile", "TEXT NOT NULL DEFAULT '{}'")),
    ),
    // Full-text rows are written by the store; databases from before had insert triggers.
    (3, Step::Code(fulltext::drop_insert_triggers)),
    (4, Step::Sql(include_str!("migrations/0004_historian.sql"))),
    (
        5,
        Step::Sql(include_str!("migrations/0005_historian_journal.sql")),
    ),
    (6, Step::Sql(include_str!("migrations/0006_automation.sql"))),
    (7, Step::Sql(include_str!("migrations/0007_audit.sql"))),
    (8, Step::Sql(include_str!("migrations/0008_broker.sql"))),
    (
        9,
        Step::Sql(include_str!("migrations/0009_upstream_secrets.sql")),
    ),
    (
        10,
        Step::Sql(include_str!("migrations/0010_upstream_queue.sql")),
    ),
    // The domain an API key was made in (NULL: svc_admin, and every older key).
    (
        11,
        Step::Code(|c| add_column(c, "auth_api_keys", "domain", "TEXT")),
    ),
    // Historian blocks; a point's quality (an OPC UA StatusCode, 0 = good); the newest time a
    // series' blocks hold (NULL: no block yet), which tells late points from new ones.
    (
        12,
        Step::Code(|c| {
            add_column(c, "hist_points", "quality", "INTEGER NOT NULL DEFAULT 0")?;
            add_column(c, "hist_series", "sealed_upto", "INTEGER")?;
            Ok(c.execute_batch(include_str!("migrations/0012_historian_blocks.sql"))?)
        }),
    ),
    (
        13,
        Step::Sql(include_str!("migrations/0013_connectors.sql")),
    ),
    (14, Step::Sql(include_str!("migrations/0014_alarms.sql"))),
];

/// Adds a column the table lacks; a table that has it is left alone, so a database whose
/// record of steps was lost (or predates it) can run the step again.
fn add_column(conn: &Connection, table: &str, column: &str, definition: &str) -> StoreResult<()> {
    let has: bool = conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2)",
        [table, column],
        |r| r.get(0),
    )?;
    if !has {
        conn.execute_batch(&format!(
            "ALTER TABLE {table} ADD COLUMN {column} {definition}"
        ))?;
    }
    Ok(())
}

/// Applies the steps the database lacks; returns the version it is at.
pub(super) fn apply(conn: &mut Connection) -> StoreResult<i64> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS svc_schema_migrations (
            version INTEGER PRIMARY KEY,
            applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            release TEXT)",
    )?;
    // Tables made before releases were recorded lack the column (their rows stay NULL).
    add_column(conn, "svc_schema_migrations", "release", "TEXT")?;
    let newest: Option<(i64, Option<String>)> = conn
        .query_row(
            "SELECT version, release FROM svc_schema_migrations ORDER BY version DESC LIMIT 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    if let Some((found, release)) = newest {
        let known = STEPS.last().map_or(0, |(version, _)| *version);
        schema_release::refuse_newer(found, release.as_deref(), known)?;
    }
    let mut at = 0;
    for (version, step) in STEPS {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let applied: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM svc_schema_migrations WHERE version = ?1)",
            [version],
            |row| row.get(0),
        )?;
        if !applied {
            match step {
                Step::Sql(sql) => tx.execute_batch(sql)?,
                Step::Code(change) => change(&tx)?,
            }
            tx.execute(
                "INSERT INTO svc_schema_migrations (version, release) VALUES (?1, ?2)",
                rusqlite::params![version, schema_release::RELEASE],
            )?;
        }
        tx.commit()?;
        at = *version;
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(conn: &Connection) -> Vec<i64> {
        conn.prepare("SELECT version FROM svc_schema_migrations ORDER BY version")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// The newest step's version.
    fn latest() -> i64 {
        STEPS.last().map_or(0, |(version, _)| *version)
    }

    #[test]
    fn each_step_is_applied_once_and_recorded() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(apply(&mut conn).unwrap(), latest());
        assert_eq!(versions(&conn), (1..=latest()).collect::<Vec<_>>());
        conn.execute(
            "INSERT INTO auth_domains (name, created_dt) VALUES ('plant', 'x')",
            [],
        )
        .unwrap();
        assert_eq!(apply(&mut conn).unwrap(), latest());
        let domains: i64 = conn
            .query_row("SELECT count(*) FROM auth_domains", [], |r| r.get(0))
            .unwrap();
        assert_eq!(domains, 2, "svc_admin and plant, nothing redone");
    }

    #[test]
    fn a_database_from_before_the_numbered_steps_is_brought_up_to_date() {
        let mut conn = Connection::open_in_memory().unwrap();
        // Identity as it was before user profiles, with no record of any step.
        conn.execute_batch(
            "CREATE TABLE auth_users (key TEXT PRIMARY KEY NOT NULL, username TEXT NOT NULL \
             UNIQUE, password_hash TEXT NOT NULL, admin INTEGER NOT NULL, created_dt TEXT NOT NULL);
             INSERT INTO auth_users VALUES ('u1', 'ops', 'h', 0, 'x');",
        )
        .unwrap();
        assert_eq!(apply(&mut conn).unwrap(), latest());
        let profile: String = conn
            .query_row("SELECT profile FROM auth_users WHERE key = 'u1'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(profile, "{}");
    }

    #[test]
    fn keys_made_before_keys_had_a_domain_have_none() {
        let mut conn = Connection::open_in_memory().unwrap();
        apply(&mut conn).unwrap();
        // A database at version 10: its keys have no domain column.
        conn.execute_batch(
            "ALTER TABLE auth_api_keys DROP COLUMN domain;
             DELETE FROM svc_schema_migrations WHERE version = 11;
             INSERT INTO auth_api_keys (key, user_key, name, prefix, secret_hash, created_dt)
                 VALUES ('k1', 'u1', 'old', 'svcx_ab', 'h', 'x');",
        )
        .unwrap();
        assert_eq!(apply(&mut conn).unwrap(), latest());
        let domain: Option<String> = conn
            .query_row(
                "SELECT domain FROM auth_api_keys WHERE key = 'k1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(domain, None);
        // Its record of steps lost, the database runs the step again unharmed.
        conn.execute_batch("DELETE FROM svc_schema_migrations WHERE version = 11")
            .unwrap();
        assert_eq!(apply(&mut conn).unwrap(), latest());
    }
}
