//! Full-text matching for the `@@` filter: every word of the query is a word of the field.
//! Words are maximal runs of letters and digits, compared in lower case; a field holding an
//! array or object is matched on the words of its JSON text (so any element's words count).
//!
//! Any field matches unindexed through `svc_words_match(field, query)`, registered on every
//! connection. A field a collection declares `searchable` gets an FTS5 index instead: a table
//! `<d>.<t>__fts__<field>` keyed by the record's rowid, so `@@` on it reads the index rather
//! than every record.
//!
//! Updates and deletes keep the index current through triggers on the record table. Inserts
//! do not: the store indexes a new record with its own statement ([`index_new_record`]). A
//! trigger makes its statement open a statement journal, and FTS5 writes its pending terms to
//! a new segment at every such savepoint, so a group of creates sharing one transaction paid a
//! segment write (and its merges) per record. A plain insert opens none, and the group's terms
//! are written once, at its commit.

use super::{quoted, StoreResult};
use crate::ids::TableRef;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use std::collections::HashSet;

/// The lower-case words of a text.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Whether every word of `query` is a word of `field` (a query without words matches nothing).
pub fn words_match(field: &str, query: &str) -> bool {
    let have: HashSet<String> = words(field).collect();
    let mut wanted = words(query).peekable();
    wanted.peek().is_some() && wanted.all(|w| have.contains(&w))
}

/// Registers `svc_words_match` on a connection.
pub fn register(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        "svc_words_match",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let text = |i: usize| -> rusqlite::Result<Option<String>> {
                Ok(match ctx.get_raw(i) {
                    ValueRef::Null => None,
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Some(String::from_utf8_lossy(t).into_owned())
                    }
                    ValueRef::Integer(n) => Some(n.to_string()),
                    ValueRef::Real(x) => Some(x.to_string()),
                })
            };
            Ok(match (text(0)?, text(1)?) {
                (Some(field), Some(query)) => words_match(&field, &query),
                _ => false,
            })
        },
    )
}

/// The FTS5 table indexing `field` of `table`.
pub fn index_name(table: &TableRef, field: &str) -> String {
    format!("{}__fts__{field}", table.qualified())
}

/// Creates the index of a searchable field, its update and delete triggers, and fills it from
/// existing records. `field` is a validated identifier.
pub fn create_index(
    tx: &rusqlite::Transaction<'_>,
    table: &TableRef,
    field: &str,
) -> StoreResult<()> {
    let records = quoted(&table.qualified());
    let index = index_name(table, field);
    let fts = quoted(&index);
    let body = format!("json_extract(new.data, '$.{field}')");
    tx.execute_batch(&format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(body, \
             tokenize = 'unicode61 remove_diacritics 0'); \
         CREATE TRIGGER IF NOT EXISTS {ad} AFTER DELETE ON {records} BEGIN \
             DELETE FROM {fts} WHERE rowid = old.rowid; END; \
         CREATE TRIGGER IF NOT EXISTS {au} AFTER UPDATE ON {records} BEGIN \
             DELETE FROM {fts} WHERE rowid = old.rowid; \
             INSERT INTO {fts}(rowid, body) VALUES (new.rowid, {body}); END; \
         DELETE FROM {fts}; \
         INSERT INTO {fts}(rowid, body) SELECT rowid, json_extract(data, '$.{field}') FROM {records};",
        ad = quoted(&format!("{index}__ad")),
        au = quoted(&format!("{index}__au")),
    ))?;
    Ok(())
}

/// Indexes `field` of the record just inserted as `rowid`, whose stored JSON text is `data`.
/// `field` is one of [`indexed_fields`].
pub fn index_new_record(
    conn: &rusqlite::Connection,
    table: &TableRef,
    field: &str,
    rowid: i64,
    data: &str,
) -> StoreResult<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO {}(rowid, body) VALUES (?1, json_extract(?2, '$.{field}'))",
        quoted(&index_name(table, field))
    ))?
    .execute(rusqlite::params![rowid, data])?;
    Ok(())
}

/// Drops the insert triggers that indexes made before the store indexed new records itself
/// (see the module's comment); run when the store opens.
pub fn drop_insert_triggers(conn: &rusqlite::Connection) -> StoreResult<()> {
    let triggers: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' \
             AND name LIKE '%\\_\\_fts\\_\\_%\\_\\_ai' ESCAPE '\\'",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for trigger in triggers {
        conn.execute_batch(&format!("DROP TRIGGER IF EXISTS {}", quoted(&trigger)))?;
    }
    Ok(())
}

/// Drops every full-text index of a table with its triggers (the records stay).
pub fn drop_indexes(tx: &rusqlite::Transaction<'_>, table: &TableRef) -> StoreResult<()> {
    for index in indexed_tables(tx, table)? {
        for suffix in ["__ai", "__ad", "__au"] {
            tx.execute_batch(&format!(
                "DROP TRIGGER IF EXISTS {}",
                quoted(&format!("{index}{suffix}"))
            ))?;
        }
        tx.execute_batch(&format!("DROP TABLE IF EXISTS {}", quoted(&index)))?;
    }
    Ok(())
}

/// The fields of a table that have a full-text index.
pub fn indexed_fields(
    conn: &rusqlite::Connection,
    table: &TableRef,
) -> StoreResult<HashSet<String>> {
    let prefix = index_name(table, "");
    Ok(indexed_tables(conn, table)?
        .into_iter()
        .filter_map(|name| name.strip_prefix(&prefix).map(str::to_string))
        .collect())
}

fn indexed_tables(conn: &rusqlite::Connection, table: &TableRef) -> StoreResult<Vec<String>> {
    let prefix = index_name(table, "");
    // FTS5's shadow tables (`…_data`, `…_idx`, …) share the prefix but are not virtual.
    let mut stmt = conn.prepare_cached(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND substr(name, 1, length(?1)) = ?1 AND sql LIKE 'CREATE VIRTUAL TABLE%'",
    )?;
    let names = stmt.query_map([&prefix], |r| r.get::<_, String>(0))?;
    Ok(names.collect::<Result<_, _>>()?)
}

/// An FTS5 query holding every word of `text` (each a quoted phrase, so none is an operator);
/// `None` when the text has no words.
pub fn fts_query(text: &str) -> Option<String> {
    let phrases: Vec<String> = words(text).map(|w| format!("\"{w}\"")).collect();
    (!phrases.is_empty()).then(|| phrases.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_word_must_be_a_whole_word_of_the_field() {
        assert!(words_match("Pump 7 — Main Hall", "main pump"));
        assert!(words_match("[\"north\",\"Boiler room\"]", "boiler"));
        assert!(!words_match("Pumping station", "pump"), "whole words only");
        assert!(!words_match("Pump 7", "pump 8"));
        assert!(!words_match("anything", " ,; "), "no words, no match");
        assert!(words_match("Überdruck-Ventil", "überdruck ventil"));
    }

    #[test]
    fn the_sql_function_matches_like_the_rust_one() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let hit: bool = conn
            .query_row(
                "SELECT svc_words_match('Main pump, hall B', 'PUMP b')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(hit);
        let null: bool = conn
            .query_row("SELECT svc_words_match(NULL, 'x')", [], |r| r.get(0))
            .unwrap();
        assert!(!null);
    }
}
