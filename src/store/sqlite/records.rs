//! Record tables: one SQLite table `"<domain>.<table>"` per table of a domain, holding the key,
//! the JSON document and the server-owned timestamps. Collections (schemas) are records of the
//! domain's `collections` table and own the expression indexes of their table.

use super::filter_sql::{build_order, build_where, index_expr};
use super::fulltext;
use super::{is_missing_table, prepare_on_table, quoted, SqliteStore, StoreError, StoreResult};
use crate::ids::TableRef;
use crate::query::{Filter, ListQuery, Op};
use crate::schema::Collection;
use crate::store::interface::Records;
use crate::store::types::*;
use crate::time::now_rfc3339;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row, TransactionBehavior};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

fn table_ddl(table: &TableRef) -> String {
    let name = table.qualified();
    format!(
        "CREATE TABLE IF NOT EXISTS {t} (key TEXT NOT NULL UNIQUE, data TEXT NOT NULL, \
         created_dt TEXT NOT NULL, updated_dt TEXT NOT NULL); \
         CREATE INDEX IF NOT EXISTS {idx} ON {t}(created_dt, key);",
        t = quoted(&name),
        idx = quoted(&format!("{name}__created")),
    )
}

/// The JSON text of a stored row: `id`, `created_dt`, `updated_dt` and its fields. The stored
/// document is spliced in as it is, not decoded and encoded again: reads are the hot path. The
/// server-owned parts need no escaping (validated identifiers and generated timestamps).
fn row_to_text(table: &TableRef, row: &Row) -> rusqlite::Result<String> {
    Ok(record_text(
        table,
        row.get_ref(0)?.as_str()?,
        row.get_ref(1)?.as_str()?,
        row.get_ref(2)?.as_str()?,
        row.get_ref(3)?.as_str()?,
    ))
}

/// A stored row as a JSON value.
fn row_to_record(table: &TableRef, row: &Row) -> rusqlite::Result<Value> {
    let text = row_to_text(table, row)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// The fields with a full-text index, looked up only when a filter asks for `@@`.
fn searchable_fields(
    conn: &rusqlite::Connection,
    table: &TableRef,
    filters: &[Filter],
    or_filters: &[Filter],
) -> StoreResult<HashSet<String>> {
    if filters.iter().chain(or_filters).any(|f| f.op == Op::Match) {
        fulltext::indexed_fields(conn, table)
    } else {
        Ok(HashSet::new())
    }
}

impl SqliteStore {
    /// Creates the table unless it is known to exist; its fields with a full-text index.
    fn ensure_table(&self, conn: &Connection, table: &TableRef) -> StoreResult<Arc<[String]>> {
        let name = table.qualified();
        let known = self
            .known_tables
            .lock()
            .ok()
            .and_then(|tables| tables.get(&name).cloned());
        if let Some(searchable) = known {
            return Ok(searchable);
        }
        // A collection written after this reading bumps the generation and clears the
        // known tables; what was read then is not kept (see `SqliteStore::forget_schemas`).
        let seen = self.collections.generation();
        conn.execute_batch(&table_ddl(table))?;
        let searchable: Arc<[String]> =
            fulltext::indexed_fields(conn, table)?.into_iter().collect();
        if let Ok(mut tables) = self.known_tables.lock() {
            if self.collections.generation() == seen {
                tables.insert(name, searchable.clone());
            }
        }
        Ok(searchable)
    }

    /// Forgets every remembered collection definition and record table: called once a
    /// collection write (which may create or drop tables and indexes) is committed or failed.
    pub(super) fn forget_schemas(&self) {
        self.collections.forget_all();
        if let Ok(mut tables) = self.known_tables.lock() {
            tables.clear();
        }
    }

    /// [`SqliteStore::insert_record`] on a given connection (in its transaction, if one is open).
    /// One statement: a conflict leaves the transaction as it was.
    pub(super) fn insert_on(
        &self,
        conn: &Connection,
        table: &TableRef,
        key: &str,
        fields: &Map<String, Value>,
    ) -> StoreResult<Value> {
        let searchable = self.ensure_table(conn, table)?;
        let now = now_rfc3339();
        let stored = stored_fields(fields);
        let data = serde_json::to_string(&stored)?;
        conn.prepare_cached(&format!(
            "INSERT INTO {} (key, data, created_dt, updated_dt) VALUES (?1, ?2, ?3, ?3)",
            quoted(&table.qualified())
        ))?
        .execute(params![key, data, now])?;
        let rowid = conn.last_insert_rowid();
        let indexed = searchable
            .iter()
            .try_for_each(|field| fulltext::index_new_record(conn, table, field, rowid, &data));
        if let Err(e) = indexed {
            // The create fails whole: its record must not stay behind, unindexed (its delete
            // trigger removes what was indexed).
            conn.execute(
                &format!(
                    "DELETE FROM {} WHERE rowid = ?1",
                    quoted(&table.qualified())
                ),
                [rowid],
            )?;
            return Err(e);
        }
        Ok(written_record(table, key, stored, &now, &now))
    }

    fn get_row<T>(
        &self,
        table: &TableRef,
        key: &str,
        decode: fn(&TableRef, &Row) -> rusqlite::Result<T>,
    ) -> StoreResult<Option<T>> {
        let conn = self.conn()?;
        let sql = format!(
            "SELECT key, data, created_dt, updated_dt FROM {} WHERE key = ?1",
            quoted(&table.qualified())
        );
        let Some(mut stmt) = prepare_on_table(&conn, &sql)? else {
            return Ok(None);
        };
        Ok(stmt.query_row([key], |row| decode(table, row)).optional()?)
    }

    /// Merges `patch` into the stored record; `check` sees the stored and the merged document
    /// before the merge is written, and may normalise the merge. Returns `None` when the record
    /// does not exist. (The server writes through [`SqliteStore::write_records`]; this one write in
    /// its own transaction is for tests.)
    #[cfg(test)]
    pub fn update_record(
        &self,
        table: &TableRef,
        key: &str,
        patch: &Map<String, Value>,
        check: impl FnOnce(&Map<String, Value>, &mut Map<String, Value>) -> Result<(), String>,
    ) -> StoreResult<Option<Value>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let updated = update_on(&tx, table, key, patch, check)?;
        tx.commit()?;
        Ok(updated)
    }

    /// Deletes a record; false when it did not exist (for tests, as [`SqliteStore::update_record`]).
    #[cfg(test)]
    pub fn delete_record(&self, table: &TableRef, key: &str) -> StoreResult<bool> {
        delete_on(&*self.conn()?, table, key)
    }

    fn list_rows<T>(
        &self,
        table: &TableRef,
        query: &ListQuery,
        decode: fn(&TableRef, &Row) -> rusqlite::Result<T>,
    ) -> StoreResult<Vec<T>> {
        let conn = self.conn()?;
        let searchable = searchable_fields(&conn, table, &query.filters, &query.or_filters)?;
        let filter = build_where(table, &query.filters, &query.or_filters, &searchable);
        let sql = format!(
            "SELECT key, data, created_dt, updated_dt FROM {} WHERE {} ORDER BY {} LIMIT {} OFFSET {}",
            quoted(&table.qualified()),
            filter.sql,
            build_order(table, &query.sort),
            query.limit,
            query.offset
        );
        let Some(mut stmt) = prepare_on_table(&conn, &sql)? else {
            return Ok(Vec::new());
        };
        let rows = stmt.query_map(params_from_iter(filter.params), |row| decode(table, row))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn write_collection(
        &self,
        domain: &str,
        collection: &Collection,
        replace: bool,
    ) -> StoreResult<Option<Value>> {
        let defs = TableRef::new(domain, COLLECTIONS).map_err(StoreError::Invalid)?;
        let target = TableRef::new(domain, &collection.name).map_err(StoreError::Invalid)?;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(&table_ddl(&defs))?;
        tx.execute_batch(&table_ddl(&target))?;
        let now = now_rfc3339();
        let doc = serde_json::to_value(collection)?.to_string();
        let written = if replace {
            drop_collection_indexes(&tx, &target)?;
            tx.execute(
                &format!(
                    "UPDATE {} SET data = ?2, updated_dt = ?3 WHERE key = ?1",
                    quoted(&defs.qualified())
                ),
                params![collection.name, doc, now],
            )?
        } else {
            tx.execute(
                &format!(
                    "INSERT INTO {} (key, data, created_dt, updated_dt) VALUES (?1, ?2, ?3, ?3) \
                     ON CONFLICT(key) DO NOTHING",
                    quoted(&defs.qualified())
                ),
                params![collection.name, doc, now],
            )?
        };
        match (written, replace) {
            (0, false) => {
                return Err(StoreError::Conflict(format!(
                    "collection `{}` already exists",
                    collection.name
                )))
            }
            // Dropping the transaction undoes the dropped indexes.
            (0, true) => return Ok(None),
            _ => {}
        }
        for index in &collection.index_details {
            let unique = if index.is_unique { "UNIQUE " } else { "" };
            let marker = if index.is_unique { "__u__" } else { "__i__" };
            let name = format!("{}{marker}{}", target.qualified(), index.fields.join("__"));
            let exprs: Vec<String> = index.fields.iter().map(|f| index_expr(f)).collect();
            tx.execute_batch(&format!(
                "CREATE {unique}INDEX IF NOT EXISTS {} ON {}({})",
                quoted(&name),
                quoted(&target.qualified()),
                exprs.join(", ")
            ))
            .map_err(|e| match StoreError::from(e) {
                StoreError::Conflict(_) => StoreError::Conflict(format!(
                    "existing records of `{}` already repeat values of unique index ({})",
                    collection.name,
                    index.fields.join(", ")
                )),
                other => other,
            })?;
        }
        for field in collection.fields.iter().filter(|f| f.searchable) {
            fulltext::create_index(&tx, &target, &field.name)?;
        }
        tx.commit()?;
        self.get_record(&defs, &collection.name)
    }

    fn remove_collection(&self, domain: &str, name: &str) -> StoreResult<bool> {
        let defs = TableRef::new(domain, COLLECTIONS).map_err(StoreError::Invalid)?;
        let target = TableRef::new(domain, name).map_err(StoreError::Invalid)?;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        drop_collection_indexes(&tx, &target)?;
        let removed = match tx.execute(
            &format!("DELETE FROM {} WHERE key = ?1", quoted(&defs.qualified())),
            [name],
        ) {
            Ok(n) => n > 0,
            Err(e) if is_missing_table(&e) => false,
            Err(e) => return Err(e.into()),
        };
        tx.commit()?;
        Ok(removed)
    }

    fn read_collection(&self, table: &TableRef) -> StoreResult<Option<Collection>> {
        let defs = TableRef::new(&table.domain, COLLECTIONS).map_err(StoreError::Invalid)?;
        collection_of_record(self.get_record(&defs, &table.table)?)
    }
}

/// [`SqliteStore::update_record`] on a connection that is in a write transaction. The only write is
/// one statement, after `check` accepted the merge: a refusal leaves the transaction as it was.
pub(super) fn update_on(
    conn: &Connection,
    table: &TableRef,
    key: &str,
    patch: &Map<String, Value>,
    check: impl FnOnce(&Map<String, Value>, &mut Map<String, Value>) -> Result<(), String>,
) -> StoreResult<Option<Value>> {
    let name = quoted(&table.qualified());
    let stored = match conn
        .prepare_cached(&format!(
            "SELECT data, created_dt FROM {name} WHERE key = ?1"
        ))
        .and_then(|mut stmt| {
            stmt.query_row([key], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
        }) {
        Ok(row) => Some(row),
        Err(rusqlite::Error::QueryReturnedNoRows) => None,
        Err(e) if is_missing_table(&e) => None,
        Err(e) => return Err(e.into()),
    };
    let Some((stored, created)) = stored else {
        return Ok(None);
    };
    let before: Map<String, Value> = serde_json::from_str(&stored)?;
    let mut merged = before.clone();
    merged.extend(stored_fields(patch));
    check(&before, &mut merged).map_err(StoreError::Invalid)?;
    let now = now_rfc3339();
    conn.prepare_cached(&format!(
        "UPDATE {name} SET data = ?1, updated_dt = ?2 WHERE key = ?3"
    ))?
    .execute(params![serde_json::to_string(&merged)?, now, key])?;
    Ok(Some(written_record(table, key, merged, &created, &now)))
}

/// [`SqliteStore::delete_record`] on a given connection; one statement.
pub(super) fn delete_on(conn: &Connection, table: &TableRef, key: &str) -> StoreResult<bool> {
    let sql = format!("DELETE FROM {} WHERE key = ?1", quoted(&table.qualified()));
    match conn
        .prepare_cached(&sql)
        .and_then(|mut stmt| stmt.execute([key]))
    {
        Ok(n) => Ok(n > 0),
        Err(e) if is_missing_table(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Drops the expression and full-text indexes a collection built on its table.
fn drop_collection_indexes(tx: &rusqlite::Transaction, target: &TableRef) -> StoreResult<()> {
    let owned = |index: &String| {
        ["__u__", "__i__"]
            .iter()
            .any(|m| index.starts_with(&format!("{}{m}", target.qualified())))
    };
    let indexes: Vec<String> = tx
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1")?
        .query_map([target.qualified()], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?
        .into_iter()
        .filter(owned)
        .collect();
    for index in indexes {
        tx.execute_batch(&format!("DROP INDEX IF EXISTS {}", quoted(&index)))?;
    }
    fulltext::drop_indexes(tx, target)
}

impl Records for SqliteStore {
    /// Inserts a new record; a taken key or unique field is a conflict.
    fn insert_record(
        &self,
        table: &TableRef,
        key: &str,
        fields: &Map<String, Value>,
    ) -> StoreResult<Value> {
        let conn = self.conn()?;
        self.insert_on(&conn, table, key, fields)
    }

    fn get_record(&self, table: &TableRef, key: &str) -> StoreResult<Option<Value>> {
        self.get_row(table, key, row_to_record)
    }

    /// A record as JSON text, ready to send, read from the database and kept in memory for the
    /// next read (see `record_cache`); callers look in [`SqliteStore::cached_record_text`] first.
    fn get_record_text(&self, table: &TableRef, key: &str) -> StoreResult<Option<String>> {
        let qualified = table.qualified();
        let read = self.record_cache.begin_read(&qualified, key);
        let text = self.get_row(table, key, row_to_text)?;
        if let (Some(read), Some(text)) = (read, &text) {
            self.record_cache.finish_read(read, &qualified, key, text);
        }
        Ok(text)
    }

    /// The record's JSON text if memory holds it; never reads the database.
    fn cached_record_text(&self, table: &TableRef, key: &str) -> Option<String> {
        self.record_cache
            .get(&table.qualified(), key)
            .map(|text| text.to_string())
    }

    /// The first record (by key) whose top-level `field` equals `value`; `field` must be an
    /// identifier.
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
        let conn = self.conn()?;
        let sql = format!(
            "SELECT key, data, created_dt, updated_dt FROM {} \
             WHERE json_extract(data, '$.{field}') = json_extract(?1, '$') ORDER BY key LIMIT 1",
            quoted(&table.qualified())
        );
        let Some(mut stmt) = prepare_on_table(&conn, &sql)? else {
            return Ok(None);
        };
        let value = serde_json::to_string(value)?;
        Ok(stmt
            .query_row([value], |row| row_to_record(table, row))
            .optional()?)
    }

    /// Lists records matching the query's filters, sorted and paged (projection and expansion
    /// are the caller's).
    fn list_records(&self, table: &TableRef, query: &ListQuery) -> StoreResult<Vec<Value>> {
        self.list_rows(table, query, row_to_record)
    }

    /// Records as JSON texts, ready to send.
    fn list_records_text(&self, table: &TableRef, query: &ListQuery) -> StoreResult<Vec<String>> {
        self.list_rows(table, query, row_to_text)
    }

    fn count_records(
        &self,
        table: &TableRef,
        filters: &[Filter],
        or_filters: &[Filter],
    ) -> StoreResult<u64> {
        let conn = self.conn()?;
        let searchable = searchable_fields(&conn, table, filters, or_filters)?;
        let filter = build_where(table, filters, or_filters, &searchable);
        let sql = format!(
            "SELECT COUNT(*) FROM {} WHERE {}",
            quoted(&table.qualified()),
            filter.sql
        );
        let Some(mut stmt) = prepare_on_table(&conn, &sql)? else {
            return Ok(0);
        };
        let count: i64 = stmt.query_row(params_from_iter(filter.params), |row| row.get(0))?;
        Ok(count.max(0) as u64)
    }

    /// Stores a collection definition and builds its indexes in one transaction: a taken name,
    /// or existing records that break a unique index, is a conflict and changes nothing.
    fn create_collection(&self, domain: &str, collection: &Collection) -> StoreResult<Value> {
        let written = self.write_collection(domain, collection, false);
        self.forget_schemas();
        written?.ok_or_else(|| StoreError::Internal("stored collection vanished".into()))
    }

    /// Replaces a collection's definition and rebuilds its indexes in one transaction; the
    /// records stay and are not checked again. `Ok(None)` when no such collection exists; a
    /// new unique index that existing records break is a conflict and changes nothing.
    fn replace_collection(
        &self,
        domain: &str,
        collection: &Collection,
    ) -> StoreResult<Option<Value>> {
        let written = self.write_collection(domain, collection, true);
        self.forget_schemas();
        written
    }

    /// Removes a collection definition and the indexes it built; the records stay.
    fn delete_collection(&self, domain: &str, name: &str) -> StoreResult<bool> {
        let removed = self.remove_collection(domain, name);
        self.forget_schemas();
        removed
    }

    /// The collection defined for a table, if any (remembered until a collection is written).
    fn collection(&self, table: &TableRef) -> StoreResult<Option<Arc<Collection>>> {
        let name = table.qualified();
        if let Some(definition) = self.collections.get(&name) {
            return Ok(definition);
        }
        let seen = self.collections.generation();
        let definition = self.read_collection(table)?.map(Arc::new);
        self.collections.remember(name, definition.clone(), seen);
        Ok(definition)
    }
}
