//! The PostgreSQL side of `svc migrate`: takes batches of rows copied from an SQLite store
//! into the tables the migrations created, each batch in one transaction with the row of
//! `svc_migrate_progress` that records how far its table got, so an interrupted migration
//! resumes after the last committed batch and a finished one is not redone. Rows already there
//! are left as they are (`ON CONFLICT DO NOTHING`). Also what a copy needs around the rows: a
//! domain's record tables, the historian's partitions, identity sequences moved past copied
//! ids, a collection's indexes, and the counts the summary compares.

use super::historian::Partitioned;
use super::{names, records, PgStore};
use crate::ids::TableRef;
use crate::schema::Collection;
use crate::store::migrate::batch::{Batch, Partitioning, TableCopy};
use crate::store::{StoreError, StoreResult};
use serde_json::Value;
use tokio_postgres::types::ToSql;

/// Where a table's copy stands, as the progress table keeps it.
#[derive(Debug, Clone, Default)]
pub struct CopyProgress {
    /// The key of the last row copied (where the next batch starts).
    pub last_key: Option<Value>,
    pub copied: u64,
    pub done: bool,
}

impl PgStore {
    /// Whether the database holds svc data that no migration put there (users, records or
    /// history while the progress table is empty): a migration into it would mix two stores.
    pub fn import_target_is_foreign(&self) -> StoreResult<bool> {
        let row = self.query_one(
            "SELECT NOT EXISTS (SELECT 1 FROM svc_migrate_progress) AND (
                 EXISTS (SELECT 1 FROM auth_users) OR EXISTS (SELECT 1 FROM hist_series)
                 OR EXISTS (SELECT 1 FROM pg_namespace WHERE nspname LIKE 'd\\_%'))",
            &[],
        )?;
        Ok(row.get(0))
    }

    /// This instance's id (the one its per-instance rows are keyed by).
    pub fn instance_id(&self) -> &str {
        &self.instance
    }

    pub fn import_progress(&self, item: &str) -> StoreResult<CopyProgress> {
        Ok(self
            .query_opt(
                "SELECT last_key, copied, done FROM svc_migrate_progress WHERE item = $1",
                &[&item],
            )?
            .map(|row| CopyProgress {
                last_key: row.get(0),
                copied: row.get::<_, i64>(1).max(0) as u64,
                done: row.get(2),
            })
            .unwrap_or_default())
    }

    /// Marks an item (a table, a collection's indexes, the JWT secret) as finished.
    pub fn import_done(&self, item: &str) -> StoreResult<()> {
        self.execute(
            "INSERT INTO svc_migrate_progress (item, done) VALUES ($1, true) \
             ON CONFLICT (item) DO UPDATE SET done = true, updated_at = now()",
            &[&item],
        )?;
        Ok(())
    }

    /// The schema and table a domain's records go to.
    pub fn import_record_table(&self, table: &TableRef) -> StoreResult<()> {
        self.ensure_table(table)
    }

    /// Inserts one batch (rows already there are left alone) and records its last key, in one
    /// transaction; the rows it inserted.
    pub fn import_batch(&self, table: &TableCopy, batch: &Batch) -> StoreResult<u64> {
        if batch.rows == 0 {
            return Ok(0);
        }
        if let Some(partitioning) = table.partitioned {
            let times = batch.ints(table, partitioning.column()).unwrap_or_default();
            let kind = match partitioning {
                Partitioning::Points => Partitioned::Points,
                Partitioning::Blocks => Partitioned::Blocks,
            };
            self.ensure_partitions_of(kind, times.iter().flatten().copied())?;
        }
        let sql = insert_sql(table);
        let instance: Vec<Option<String>> = if table.per_instance {
            vec![Some(self.instance.clone()); batch.rows]
        } else {
            Vec::new()
        };
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        if table.per_instance {
            params.push(&instance);
        }
        params.extend(batch.columns.iter().map(|c| c.as_param()));
        let rows = batch.rows as i64;
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let inserted = tx
                .execute(&sql, &params)
                .await
                .map_err(|e| StoreError::from(e).in_context(&table.label))?;
            tx.execute(
                "INSERT INTO svc_migrate_progress (item, last_key, copied) VALUES ($1, $2, $3) \
                 ON CONFLICT (item) DO UPDATE SET last_key = excluded.last_key, \
                 copied = svc_migrate_progress.copied + excluded.copied, updated_at = now()",
                &[&table.label, &batch.last_key, &rows],
            )
            .await?;
            tx.commit().await?;
            Ok(inserted)
        })
    }

    /// Moves an identity column's sequence past the copied ids, so new rows do not collide.
    pub fn import_identity(&self, table: &TableCopy) -> StoreResult<()> {
        let Some(column) = table.identity else {
            return Ok(());
        };
        let unquoted = table.target.trim_matches('"');
        self.execute(
            &format!(
                "SELECT setval(pg_get_serial_sequence($1, $2), coalesce(max({}), 0) + 1, false) \
                 FROM {}",
                names::quoted(column),
                table.target
            ),
            &[&unquoted, &column],
        )?;
        Ok(())
    }

    /// Rows of the table (this instance's, for per-instance state).
    pub fn import_count(&self, table: &TableCopy) -> StoreResult<u64> {
        let row = if table.per_instance {
            self.query_one(
                &format!("SELECT count(*) FROM {} WHERE instance = $1", table.target),
                &[&self.instance],
            )?
        } else {
            self.query_one(&format!("SELECT count(*) FROM {}", table.target), &[])?
        };
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }

    /// (Re)builds a collection's indexes from its definition, through the engine's own
    /// collection code (expression indexes, unique ones, GIN word indexes), in one transaction.
    pub fn import_collection_indexes(
        &self,
        domain: &str,
        collection: &Collection,
    ) -> StoreResult<()> {
        let target = TableRef::new(domain, &collection.name).map_err(StoreError::Invalid)?;
        self.ensure_table(&target)?;
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            records::drop_collection_indexes(&tx, &target).await?;
            records::build_collection_indexes(&tx, &target, collection).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    /// The JWT secret of the SQLite instance, as the one every instance on this database signs
    /// with (unless one is there already), so tokens issued before the migration stay valid.
    pub fn import_jwt_secret(&self, secret: &[u8]) -> StoreResult<()> {
        self.execute(
            "INSERT INTO svc_secrets (name, value) VALUES ('jwt', $1) ON CONFLICT DO NOTHING",
            &[&secret],
        )?;
        Ok(())
    }

    pub fn import_has_jwt_secret(&self) -> StoreResult<bool> {
        Ok(self
            .query_opt("SELECT 1 FROM svc_secrets WHERE name = 'jwt'", &[])?
            .is_some())
    }
}

/// `INSERT … SELECT … FROM unnest(…)`: the whole batch in one statement, one array per column.
fn insert_sql(table: &TableCopy) -> String {
    let mut names_out: Vec<String> = Vec::new();
    let mut selected: Vec<String> = Vec::new();
    let mut arrays: Vec<String> = Vec::new();
    let mut aliases: Vec<String> = Vec::new();
    let mut n = 0;
    if table.per_instance {
        n += 1;
        names_out.push("instance".into());
        selected.push("u.instance".into());
        arrays.push(format!("${n}::text[]"));
        aliases.push("instance".into());
    }
    for column in &table.columns {
        n += 1;
        let name = names::quoted(column.name);
        names_out.push(name.clone());
        selected.push(format!("u.{name}{}", column.kind.cast()));
        arrays.push(format!("${n}::{}", column.kind.array_type()));
        aliases.push(name);
    }
    let overriding = if table.identity.is_some() {
        " OVERRIDING SYSTEM VALUE"
    } else {
        ""
    };
    format!(
        "INSERT INTO {} ({}){overriding} SELECT {} FROM unnest({}) AS u({}) {}",
        table.target,
        names_out.join(", "),
        selected.join(", "),
        arrays.join(", "),
        aliases.join(", "),
        table.on_conflict
    )
}
