//! The SQLite schema as versioned steps (`migrations/NNNN_name.sql`, and the two steps that
//! must look before they change), applied in order at open, each in one transaction with the
//! row that records it in `svc_schema_migrations`. The first ten are idempotent: a database
//! from before the steps were numbered runs them all once, changes nothing it already has, and
//! is recorded at version 10. Steps after those run exactly once and need not be idempotent.

use super::{auth_profiles, fulltext};
use crate::store::StoreResult;
use rusqlite::{Connection, TransactionBehavior};

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
    (2, Step::Code(auth_profiles::migrate)),
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
];

/// Applies the steps the database lacks; returns the version it is at.
pub(super) fn apply(conn: &mut Connection) -> StoreResult<i64> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS svc_schema_migrations (
            version INTEGER PRIMARY KEY,
            applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
    )?;
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
                "INSERT INTO svc_schema_migrations (version) VALUES (?1)",
                [version],
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

    #[test]
    fn each_step_is_applied_once_and_recorded() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(apply(&mut conn).unwrap(), 10);
        assert_eq!(versions(&conn), (1..=10).collect::<Vec<_>>());
        conn.execute(
            "INSERT INTO auth_domains (name, created_dt) VALUES ('plant', 'x')",
            [],
        )
        .unwrap();
        assert_eq!(apply(&mut conn).unwrap(), 10);
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
        assert_eq!(apply(&mut conn).unwrap(), 10);
        let profile: String = conn
            .query_row("SELECT profile FROM auth_users WHERE key = 'u1'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(profile, "{}");
    }
}
