//! Record tables on PostgreSQL: one table per table of a domain, in the domain's schema (see
//! `names`), holding the key, the document as `jsonb` and the server-owned timestamps.
//! Collections (schemas) are records of the domain's `collections` table and own the expression
//! indexes of their table (unique ones answer 409) and the GIN word indexes of their
//! searchable fields.

use super::filter_sql::index_expr;
use super::{names, PgStore};
use crate::ids::TableRef;
use crate::query::{Filter, ListQuery};
use crate::schema::Collection;
use crate::store::interface::Records;
use crate::store::types::*;
use crate::store::{StoreError, StoreResult};
use crate::time::now_rfc3339;
use deadpool_postgres::GenericClient;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;

/// What marks an index as built by a collection (so replacing or deleting it finds them).
const COLLECTION_INDEX: &str = "svc collection index";

pub(super) const ROW_COLUMNS: &str = "key, data, created_dt, updated_dt";
/// The same with the document as text, for answers sent as they are read (no parse).
pub(super) const ROW_TEXT_COLUMNS: &str = "key, data::text, created_dt, updated_dt";

/// The record a row holds, as the API returns it (members in the order SQLite's give).
pub(super) fn row_to_record(table: &TableRef, row: &Row) -> StoreResult<Value> {
    let key: String = row.try_get(0).map_err(StoreError::from)?;
    let data: Value = row.try_get(1).map_err(StoreError::from)?;
    let Value::Object(fields) = data else {
        return Err(StoreError::Internal(format!(
            "record `{key}` of {} is not an object",
            table.qualified()
        )));
    };
    Ok(written_record(
        table,
        &key,
        fields,
        row.get::<_, &str>(2),
        row.get::<_, &str>(3),
    ))
}

/// A row of [`ROW_TEXT_COLUMNS`] as the record's JSON text.
pub(super) fn row_to_text(table: &TableRef, row: &Row) -> StoreResult<String> {
    let text = |i: usize| row.try_get::<_, &str>(i).map_err(StoreError::from);
    let data = compact_json(text(1)?);
    Ok(record_text(table, text(0)?, &data, text(2)?, text(3)?))
}

/// Whether an error says the table (or its domain's schema) was never created.
fn is_missing_table(err: &tokio_postgres::Error) -> bool {
    err.code()
        .is_some_and(|c| *c == SqlState::UNDEFINED_TABLE || *c == SqlState::INVALID_SCHEMA_NAME)
}

/// The conflict an insert or update ran into, named by the index it broke.
fn record_conflict(err: tokio_postgres::Error) -> StoreError {
    let constraint = err
        .as_db_error()
        .filter(|db| *db.code() == SqlState::UNIQUE_VIOLATION)
        .and_then(|db| db.constraint().map(str::to_string));
    match constraint {
        Some(name) if name.ends_with("_pkey") => {
            StoreError::Conflict("a record with this id already exists".into())
        }
        Some(name) => match name.split_once("__u__") {
            Some((_, fields)) if !fields.contains('$') => StoreError::Conflict(format!(
                "a record with the same {} already exists",
                fields.replace("__", ", ")
            )),
            _ => StoreError::Conflict("the record repeats the values of a unique index".into()),
        },
        None => err.into(),
    }
}

/// Rows of a read on a table that may not exist yet (which reads as empty).
pub(super) async fn rows_of(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> StoreResult<Vec<Row>> {
    let statement = match client.prepare_cached(sql).await {
        Ok(statement) => statement,
        Err(e) if is_missing_table(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    Ok(client.query(&statement, params).await?)
}

impl PgStore {
    /// Creates the domain's schema and the table unless this instance knows they exist. Under
    /// an advisory lock on the table's name: concurrent `CREATE … IF NOT EXISTS` of one table
    /// (two instances, say) may otherwise collide in the catalogs.
    pub(super) fn ensure_table(&self, table: &TableRef) -> StoreResult<()> {
        let name = table.qualified();
        if self
            .known_tables
            .lock()
            .is_ok_and(|known| known.contains(&name))
        {
            return Ok(());
        }
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&name])
                .await?;
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {schema}; \
                 CREATE TABLE IF NOT EXISTS {t} (key text PRIMARY KEY, data jsonb NOT NULL, \
                     created_dt text NOT NULL, updated_dt text NOT NULL); \
                 CREATE INDEX IF NOT EXISTS {idx} ON {t} (created_dt, key); \
                 DROP TRIGGER IF EXISTS svc_records ON {t}; \
                 CREATE TRIGGER svc_records AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {t} \
                     FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_records();",
                schema = names::schema(&table.domain),
                t = names::table(table),
                idx = names::index(table, "__created"),
            ))
            .await?;
            tx.commit().await?;
            Ok(())
        })?;
        if let Ok(mut known) = self.known_tables.lock() {
            known.insert(name);
        }
        Ok(())
    }

    /// Drops what is cached of `table`, after this instance wrote it.
    pub(super) fn written(&self, table: &TableRef) {
        self.record_cache.invalidate(&cache_key(table));
    }

    /// Stores a definition and (re)builds its indexes in one transaction: a taken name, or
    /// existing records that break a unique index, is a conflict and changes nothing.
    fn write_collection(
        &self,
        domain: &str,
        collection: &Collection,
        replace: bool,
    ) -> StoreResult<Option<Value>> {
        let defs = TableRef::new(domain, COLLECTIONS).map_err(StoreError::Invalid)?;
        let target = TableRef::new(domain, &collection.name).map_err(StoreError::Invalid)?;
        self.ensure_table(&defs)?;
        self.ensure_table(&target)?;
        let written = self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let now = now_rfc3339();
            let doc = serde_json::to_value(collection)?;
            let written = if replace {
                drop_collection_indexes(&tx, &target).await?;
                tx.execute(
                    &format!(
                        "UPDATE {} SET data = $2, updated_dt = $3 WHERE key = $1",
                        names::table(&defs)
                    ),
                    &[&collection.name, &doc, &now],
                )
                .await?
            } else {
                tx.execute(
                    &format!(
                        "INSERT INTO {} (key, data, created_dt, updated_dt) \
                         VALUES ($1, $2, $3, $3) ON CONFLICT (key) DO NOTHING",
                        names::table(&defs)
                    ),
                    &[&collection.name, &doc, &now],
                )
                .await?
            };
            match (written, replace) {
                (0, false) => {
                    return Err(StoreError::Conflict(format!(
                        "collection `{}` already exists",
                        collection.name
                    )))
                }
                // Dropping the transaction undoes the dropped indexes.
                (0, true) => return Ok(false),
                _ => {}
            }
            build_collection_indexes(&tx, &target, collection).await?;
            tx.commit().await?;
            Ok(true)
        });
        // Whether or not the commit went through, what was cached of the definitions may be old.
        self.written(&defs);
        if !written? {
            return Ok(None);
        }
        self.get_record(&defs, &collection.name)
    }
}

/// The name a record table's cached records go by: `<schema>.<table>`, as its trigger's
/// notification names it.
pub(super) fn cache_key(table: &TableRef) -> String {
    format!("{}.{}", names::schema_name(&table.domain), table.table)
}

/// Inserts a new record with one statement; a taken key or unique field is a conflict.
pub(super) async fn insert_on(
    client: &impl GenericClient,
    table: &TableRef,
    key: &str,
    fields: &Map<String, Value>,
) -> StoreResult<Value> {
    let now = now_rfc3339();
    let stored = stored_fields(fields);
    let data = Value::Object(stored);
    let statement = client
        .prepare_cached(&format!(
            "INSERT INTO {} (key, data, created_dt, updated_dt) VALUES ($1, $2, $3, $3)",
            names::table(table)
        ))
        .await?;
    client
        .execute(&statement, &[&key, &data, &now])
        .await
        .map_err(record_conflict)?;
    let Value::Object(stored) = data else {
        unreachable!("built as an object above")
    };
    Ok(written_record(table, key, stored, &now, &now))
}

/// Merges `patch` into the stored record (locked until the transaction ends); `check` sees the
/// stored and the merged document first. `None` when the record does not exist.
pub(super) async fn update_on(
    client: &impl GenericClient,
    table: &TableRef,
    key: &str,
    patch: &Map<String, Value>,
    check: impl FnOnce(&Map<String, Value>, &mut Map<String, Value>) -> Result<(), String>,
) -> StoreResult<Option<Value>> {
    let name = names::table(table);
    let rows = rows_of(
        client,
        &format!("SELECT data, created_dt FROM {name} WHERE key = $1 FOR UPDATE"),
        &[&key],
    )
    .await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let Value::Object(before) = row.get::<_, Value>(0) else {
        return Err(StoreError::Internal(format!(
            "record `{key}` is not an object"
        )));
    };
    let created: String = row.get(1);
    let mut merged = before.clone();
    merged.extend(stored_fields(patch));
    check(&before, &mut merged).map_err(StoreError::Invalid)?;
    let now = now_rfc3339();
    let data = Value::Object(merged);
    let statement = client
        .prepare_cached(&format!(
            "UPDATE {name} SET data = $1, updated_dt = $2 WHERE key = $3"
        ))
        .await?;
    client
        .execute(&statement, &[&data, &now, &key])
        .await
        .map_err(record_conflict)?;
    let Value::Object(merged) = data else {
        unreachable!("built as an object above")
    };
    Ok(Some(written_record(table, key, merged, &created, &now)))
}

/// Deletes one record; false when it (or its table) did not exist.
pub(super) async fn delete_on(
    client: &impl GenericClient,
    table: &TableRef,
    key: &str,
) -> StoreResult<bool> {
    let sql = format!("DELETE FROM {} WHERE key = $1", names::table(table));
    let statement = match client.prepare_cached(&sql).await {
        Ok(statement) => statement,
        Err(e) if is_missing_table(&e) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    Ok(client.execute(&statement, &[&key]).await? > 0)
}

/// The expression indexes of a collection, and GIN word indexes of its searchable fields.
pub(super) async fn build_collection_indexes(
    tx: &deadpool_postgres::Transaction<'_>,
    target: &TableRef,
    collection: &Collection,
) -> StoreResult<()> {
    let mut indexes: Vec<(String, String)> = Vec::new();
    for index in &collection.index_details {
        let (unique, marker) = if index.is_unique {
            ("UNIQUE ", "__u__")
        } else {
            ("", "__i__")
        };
        let name = names::index(target, &format!("{marker}{}", index.fields.join("__")));
        let exprs: Vec<String> = index
            .fields
            .iter()
            .map(|f| format!("({})", index_expr(f)))
            .collect();
        let sql = format!(
            "CREATE {unique}INDEX {name} ON {} ({})",
            names::table(target),
            exprs.join(", ")
        );
        tx.batch_execute(&sql).await.map_err(|e| {
            if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
                StoreError::Conflict(format!(
                    "existing records of `{}` already repeat values of unique index ({})",
                    collection.name,
                    index.fields.join(", ")
                ))
            } else {
                e.into()
            }
        })?;
        indexes.push((name, sql));
    }
    for field in collection.fields.iter().filter(|f| f.searchable) {
        let name = names::index(target, &format!("__w__{}", field.name));
        tx.batch_execute(&format!(
            "CREATE INDEX {name} ON {} USING gin (svc_words(svc_text({})))",
            names::table(target),
            index_expr(&field.name)
        ))
        .await?;
        indexes.push((name, String::new()));
    }
    for (name, _) in indexes {
        tx.batch_execute(&format!(
            "COMMENT ON INDEX {}.{name} IS '{COLLECTION_INDEX}'",
            names::schema(&target.domain)
        ))
        .await?;
    }
    Ok(())
}

/// Drops the indexes a collection built on its table.
pub(super) async fn drop_collection_indexes(
    tx: &deadpool_postgres::Transaction<'_>,
    target: &TableRef,
) -> StoreResult<()> {
    let owned = tx
        .query(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace \
             WHERE n.nspname = $1 AND t.relname = $2 \
             AND obj_description(c.oid, 'pg_class') = $3",
            &[
                &names::schema_name(&target.domain),
                &target.table,
                &COLLECTION_INDEX,
            ],
        )
        .await?;
    for row in owned {
        let name: String = row.get(0);
        tx.batch_execute(&format!(
            "DROP INDEX IF EXISTS {}.{}",
            names::schema(&target.domain),
            names::quoted(&name)
        ))
        .await?;
    }
    Ok(())
}

impl Records for PgStore {
    fn insert_record(
        &self,
        table: &TableRef,
        key: &str,
        fields: &Map<String, Value>,
    ) -> StoreResult<Value> {
        self.ensure_table(table)?;
        let inserted = self.block(async {
            let client = self.client().await?;
            insert_on(&client, table, key, fields).await
        });
        self.written(table);
        inserted
    }

    fn get_record(&self, table: &TableRef, key: &str) -> StoreResult<Option<Value>> {
        self.block(self.record_async(table, key))
    }

    /// A record as JSON text, read from the database and kept in memory for the next read
    /// (see [`PgStore::cached_record_text`]).
    fn get_record_text(&self, table: &TableRef, key: &str) -> StoreResult<Option<String>> {
        self.block(self.record_text_async(table, key))
    }

    /// The record's JSON text if memory holds it; never asks the server. The cache is the
    /// SQLite engine's ([`crate::store::record_cache`]), invalidated per table: by this
    /// instance after each of its writes commits (so it reads its own writes), and by every
    /// `NOTIFY svc_records` a record table's trigger raises, whoever wrote. It answers only
    /// while the listening connection is up, and is emptied whenever that connection is back,
    /// so what another instance wrote is served stale for the notification's way at most.
    fn cached_record_text(&self, table: &TableRef, key: &str) -> Option<String> {
        if !self.cache_listening() {
            return None;
        }
        self.record_cache
            .get(&cache_key(table), key)
            .map(|text| text.to_string())
    }

    fn record_by_field(
        &self,
        table: &TableRef,
        field: &str,
        value: &Value,
    ) -> StoreResult<Option<Value>> {
        if !crate::ids::is_identifier(field) {
            return Err(StoreError::Invalid(format!(
                "`{field}` is not a field name"
            )));
        }
        let sql = format!(
            "SELECT {ROW_COLUMNS} FROM {} WHERE {} = $1::jsonb ORDER BY key LIMIT 1",
            names::table(table),
            index_expr(field)
        );
        let rows = self.block(async {
            let client = self.client().await?;
            rows_of(&client, &sql, &[value]).await
        })?;
        rows.first()
            .map(|row| row_to_record(table, row))
            .transpose()
    }

    fn list_records(&self, table: &TableRef, query: &ListQuery) -> StoreResult<Vec<Value>> {
        self.block(self.records_async(table, query))
    }

    fn list_records_text(&self, table: &TableRef, query: &ListQuery) -> StoreResult<Vec<String>> {
        self.block(self.records_text_async(table, query))
    }

    fn count_records(
        &self,
        table: &TableRef,
        filters: &[Filter],
        or_filters: &[Filter],
    ) -> StoreResult<u64> {
        self.block(self.count_async(table, filters, or_filters))
    }

    fn create_collection(&self, domain: &str, collection: &Collection) -> StoreResult<Value> {
        self.write_collection(domain, collection, false)?
            .ok_or_else(|| StoreError::Internal("stored collection vanished".into()))
    }

    fn replace_collection(
        &self,
        domain: &str,
        collection: &Collection,
    ) -> StoreResult<Option<Value>> {
        self.write_collection(domain, collection, true)
    }

    /// Removes a collection definition and the indexes it built; the records stay.
    fn delete_collection(&self, domain: &str, name: &str) -> StoreResult<bool> {
        let defs = TableRef::new(domain, COLLECTIONS).map_err(StoreError::Invalid)?;
        let target = TableRef::new(domain, name).map_err(StoreError::Invalid)?;
        let removed = self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            drop_collection_indexes(&tx, &target).await?;
            let sql = format!("DELETE FROM {} WHERE key = $1", names::table(&defs));
            let removed = match tx.execute(&sql, &[&name]).await {
                Ok(n) => n > 0,
                Err(e) if is_missing_table(&e) => false,
                Err(e) => return Err(e.into()),
            };
            tx.commit().await?;
            Ok(removed)
        });
        self.written(&defs);
        removed
    }

    /// The collection defined for a table, read each time: another instance may change it.
    fn collection(&self, table: &TableRef) -> StoreResult<Option<Arc<Collection>>> {
        let defs = TableRef::new(&table.domain, COLLECTIONS).map_err(StoreError::Invalid)?;
        Ok(collection_of_record(self.get_record(&defs, &table.table)?)?.map(Arc::new))
    }
}
