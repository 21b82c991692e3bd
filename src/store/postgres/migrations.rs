//! The PostgreSQL schema as versioned files (`migrations/NNNN_name.sql`), applied in order at
//! open. Each runs in one transaction with the row that records it in `svc_schema_migrations`,
//! under an advisory lock, so instances that start together apply each file exactly once and a
//! failed file leaves nothing half done.

use super::super::{schema_release, StoreResult};
use deadpool_postgres::Pool;

/// Every migration, oldest first: (version, file text). Versions only ever grow.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/0001_identity.sql")),
    (2, include_str!("migrations/0002_audit.sql")),
    (3, include_str!("migrations/0003_records.sql")),
    (4, include_str!("migrations/0004_historian.sql")),
    (5, include_str!("migrations/0005_upstream_queue.sql")),
    (6, include_str!("migrations/0006_broker.sql")),
    (7, include_str!("migrations/0007_automation.sql")),
    (8, include_str!("migrations/0008_report_numbers.sql")),
    (9, include_str!("migrations/0009_instances.sql")),
    (10, include_str!("migrations/0010_peers.sql")),
    (11, include_str!("migrations/0011_migrate_progress.sql")),
    (12, include_str!("migrations/0012_record_changes.sql")),
    (13, include_str!("migrations/0013_api_key_domain.sql")),
    (14, include_str!("migrations/0014_historian_blocks.sql")),
    (15, include_str!("migrations/0015_connectors.sql")),
    (16, include_str!("migrations/0016_alarms.sql")),
];

/// Key of the advisory lock that serialises migrations between instances ("svc-migr").
const MIGRATION_LOCK: i64 = 0x7376_632d_6d69_6772;

/// Applies the migrations the database lacks; returns the version it is at.
pub async fn apply(pool: &Pool) -> StoreResult<i32> {
    let mut client = pool.get().await?;
    // Under the migrations' lock: instances starting together would race on the DDL.
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS svc_schema_migrations (
            version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
         ALTER TABLE svc_schema_migrations ADD COLUMN IF NOT EXISTS release text",
    )
    .await?;
    let newest = tx
        .query_opt(
            "SELECT version, release FROM svc_schema_migrations ORDER BY version DESC LIMIT 1",
            &[],
        )
        .await?;
    tx.commit().await?;
    if let Some(row) = newest {
        let found: i32 = row.get(0);
        let release: Option<String> = row.get(1);
        let known = MIGRATIONS.last().map_or(0, |(version, _)| *version);
        schema_release::refuse_newer(found.into(), release.as_deref(), known.into())?;
    }
    let mut at = 0;
    for (version, sql) in MIGRATIONS {
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        let applied = tx
            .query_opt(
                "SELECT 1 FROM svc_schema_migrations WHERE version = $1",
                &[version],
            )
            .await?
            .is_some();
        if !applied {
            tx.batch_execute(sql).await?;
            tx.execute(
                "INSERT INTO svc_schema_migrations (version, release) VALUES ($1, $2)",
                &[version, &schema_release::RELEASE],
            )
            .await?;
        }
        tx.commit().await?;
        at = *version;
    }
    Ok(at)
}
