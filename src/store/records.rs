//! Record tables: one SQLite table `"<domain>.<table>"` per table of a domain, holding the key,
//! the JSON document and the server-owned timestamps. Collections (schemas) are records of the
//! domain's `collections` table and own the expression indexes of their table.

use super::filter_sql::{build_order, build_where, index_expr};
use super::fulltext;
use super::{is_missing_table, prepare_on_table, quoted, Store, StoreError, StoreResult};
use crate::ids::TableRef;
use crate::query::{Filter, ListQuery, Op};
use crate::schema::Collection;
use crate::time::now_rfc3339;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row, TransactionBehavior};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Name of the system table holding a domain's collection definitions.
pub const COLLECTIONS: &str = "collections";

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
    let key = row.get_ref(0)?.as_str()?;
    let data = row.get_ref(1)?.as_str()?;
    let created = row.get_ref(2)?.as_str()?;
    let updated = row.get_ref(3)?.as_str()?;
    let members = data
        .trim()
        .strip_prefix('{')
        .and_then(|d| d.strip_suffix('}'))
        .unwrap_or_default()
        .trim();
    let mut text = String::with_capacity(data.len() + 128);
    text.push_str("{\"id\":\"");
    text.push_str(&table.record_id(key));
    text.push_str("\",\"created_dt\":\"");
    text.push_str(created);
    text.push_str("\",\"updated_dt\":\"");
    text.push_str(updated);
    text.push('"');
    if !members.is_empty() {
        text.push(',');
        text.push_str(members);
    }
    text.push('}');
    Ok(text)
}

/// A stored row as a JSON value.
fn row_to_record(table: &TableRef, row: &Row) -> rusqlite::Result<Value> {
    let text = row_to_text(table, row)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// Drops the server-owned fields from a document before it is stored.
fn stored_fields(fields: &Map<String, Value>) -> Map<String, Value> {
    fields
        .iter()
        .filter(|(k, _)| !crate::schema::is_system_field(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
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

impl Store {
    fn ensure_table(&self, conn: &Connection, table: &TableRef) -> StoreResult<()> {
        let name = table.qualified();
        let known = self
            .known_tables
            .lock()
            .map(|set| set.contains(&name))
            .unwrap_or(false);
        if !known {
            conn.execute_batch(&table_ddl(table))?;
            if let Ok(mut set) = self.known_tables.lock() {
                set.insert(name);
            }
        }
        Ok(())
    }

    /// Inserts a new record; a taken key or unique field is a conflict.
    pub fn insert_record(
        &self,
        table: &TableRef,
        key: &str,
        fields: &Map<String, Value>,
    ) -> StoreResult<Value> {
        let conn = self.conn()?;
        self.ensure_table(&conn, table)?;
        let now = now_rfc3339();
        let data = serde_json::to_string(&stored_fields(fields))?;
        conn.execute(
            &format!(
                "INSERT INTO {} (key, data, created_dt, updated_dt) VALUES (?1, ?2, ?3, ?3)",
                quoted(&table.qualified())
            ),
            params![key, data, now],
        )?;
        self.get_record(table, key)?
            .ok_or_else(|| StoreError::Internal("inserted record vanished".into()))
    }

    pub fn get_record(&self, table: &TableRef, key: &str) -> StoreResult<Option<Value>> {
        self.get_row(table, key, row_to_record)
    }

    /// A record as JSON text, ready to send.
    pub fn get_record_text(&self, table: &TableRef, key: &str) -> StoreResult<Option<String>> {
        self.get_row(table, key, row_to_text)
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

    /// The first record (by key) whose top-level `field` equals `value`; `field` must be an
    /// identifier.
    pub fn record_by_field(
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

    /// Merges `patch` into the stored record; `check` sees the stored and the merged document
    /// before the merge is written, and may normalise the merge. Returns `None` when the record
    /// does not exist.
    pub fn update_record(
        &self,
        table: &TableRef,
        key: &str,
        patch: &Map<String, Value>,
        check: impl FnOnce(&Map<String, Value>, &mut Map<String, Value>) -> Result<(), String>,
    ) -> StoreResult<Option<Value>> {
        let mut conn = self.conn()?;
        let name = quoted(&table.qualified());
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stored: Option<String> = match tx.query_row(
            &format!("SELECT data FROM {name} WHERE key = ?1"),
            [key],
            |row| row.get(0),
        ) {
            Ok(data) => Some(data),
            Err(rusqlite::Error::QueryReturnedNoRows) => None,
            Err(e) if is_missing_table(&e) => None,
            Err(e) => return Err(e.into()),
        };
        let Some(stored) = stored else {
            return Ok(None);
        };
        let before: Map<String, Value> = serde_json::from_str(&stored)?;
        let mut merged = before.clone();
        merged.extend(stored_fields(patch));
        check(&before, &mut merged).map_err(StoreError::Invalid)?;
        tx.execute(
            &format!("UPDATE {name} SET data = ?1, updated_dt = ?2 WHERE key = ?3"),
            params![serde_json::to_string(&merged)?, now_rfc3339(), key],
        )?;
        tx.commit()?;
        self.get_record(table, key)
    }

    /// Deletes a record; false when it did not exist.
    pub fn delete_record(&self, table: &TableRef, key: &str) -> StoreResult<bool> {
        let conn = self.conn()?;
        let sql = format!("DELETE FROM {} WHERE key = ?1", quoted(&table.qualified()));
        match conn.execute(&sql, [key]) {
            Ok(n) => Ok(n > 0),
            Err(e) if is_missing_table(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Lists records matching the query's filters, sorted and paged (projection and expansion
    /// are the caller's).
    pub fn list_records(&self, table: &TableRef, query: &ListQuery) -> StoreResult<Vec<Value>> {
        self.list_rows(table, query, row_to_record)
    }

    /// Records as JSON texts, ready to send.
    pub fn list_records_text(
        &self,
        table: &TableRef,
        query: &ListQuery,
    ) -> StoreResult<Vec<String>> {
        self.list_rows(table, query, row_to_text)
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

    pub fn count_records(
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
    pub fn create_collection(&self, domain: &str, collection: &Collection) -> StoreResult<Value> {
        let defs = TableRef::new(domain, COLLECTIONS).map_err(StoreError::Invalid)?;
        let target = TableRef::new(domain, &collection.name).map_err(StoreError::Invalid)?;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(&table_ddl(&defs))?;
        tx.execute_batch(&table_ddl(&target))?;
        let now = now_rfc3339();
        let doc = serde_json::to_value(collection)?;
        let inserted = tx.execute(
            &format!(
                "INSERT INTO {} (key, data, created_dt, updated_dt) VALUES (?1, ?2, ?3, ?3) \
                 ON CONFLICT(key) DO NOTHING",
                quoted(&defs.qualified())
            ),
            params![collection.name, doc.to_string(), now],
        )?;
        if inserted == 0 {
            return Err(StoreError::Conflict(format!(
                "collection `{}` already exists",
                collection.name
            )));
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
        if let Ok(mut set) = self.known_tables.lock() {
            set.insert(defs.qualified());
            set.insert(target.qualified());
        }
        self.get_record(&defs, &collection.name)?
            .ok_or_else(|| StoreError::Internal("stored collection vanished".into()))
    }

    /// Removes a collection definition and the indexes it built; the records stay.
    pub fn delete_collection(&self, domain: &str, name: &str) -> StoreResult<bool> {
        let defs = TableRef::new(domain, COLLECTIONS).map_err(StoreError::Invalid)?;
        let target = TableRef::new(domain, name).map_err(StoreError::Invalid)?;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
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
        fulltext::drop_indexes(&tx, &target)?;
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

    /// The collection defined for a table, if any.
    pub fn collection(&self, table: &TableRef) -> StoreResult<Option<Collection>> {
        let defs = TableRef::new(&table.domain, COLLECTIONS).map_err(StoreError::Invalid)?;
        let Some(Value::Object(mut doc)) = self.get_record(&defs, &table.table)? else {
            return Ok(None);
        };
        for system in ["id", "created_dt", "updated_dt"] {
            doc.remove(system);
        }
        Ok(Some(serde_json::from_value(Value::Object(doc))?))
    }
}
