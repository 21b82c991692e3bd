//! The SQLite side of `svc migrate`: the data dir's `svc.db`, opened read-only (the copy never
//! changes its source) in one read transaction, so every table is read from the same snapshot.
//! Reads tables in key order, one batch at a time, starting after a given key.

use super::batch::{Batch, TableCopy, Values};
use crate::ids::TableRef;
use crate::store::sqlite::quoted;
use crate::store::{StoreError, StoreResult};
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub struct Source {
    conn: Connection,
    path: PathBuf,
}

fn failed(path: &Path, e: rusqlite::Error) -> StoreError {
    StoreError::Internal(format!("cannot read {}: {e}", path.display()))
}

impl Source {
    /// Opens the database file read-only and begins the read transaction.
    pub fn open(path: &Path) -> StoreResult<Source> {
        crate::store::check_svc_database(path).map_err(StoreError::Invalid)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| failed(path, e))?;
        conn.execute_batch("BEGIN").map_err(|e| failed(path, e))?;
        Ok(Source {
            conn,
            path: path.to_path_buf(),
        })
    }

    fn fail(&self, e: rusqlite::Error) -> StoreError {
        failed(&self.path, e)
    }

    /// The historian journal's mark: the last journal entry already in the series.
    pub fn journal_folded(&self) -> StoreResult<u64> {
        if !self.has_table("hist_journal")? {
            return Ok(0);
        }
        let folded: Option<i64> = self
            .conn
            .query_row("SELECT folded FROM hist_journal WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.fail(e))?;
        Ok(folded.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
    }

    fn has_table(&self, name: &str) -> StoreResult<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
                [name],
                |r| r.get(0),
            )
            .map_err(|e| self.fail(e))
    }

    /// The columns a table has (an older database may lack newer ones: read as NULL).
    fn columns_of(&self, name: &str) -> StoreResult<HashSet<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(|e| self.fail(e))?;
        let names = stmt
            .query_map([name], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<HashSet<_>, _>>())
            .map_err(|e| self.fail(e))?;
        Ok(names)
    }

    /// Every domain's record table, by domain and name: the tables named `<domain>.<table>`,
    /// without the full-text indexes' own tables (`…__fts__…`), which the PostgreSQL engine
    /// replaces with GIN indexes built from the collections.
    pub fn record_tables(&self) -> StoreResult<Vec<TableRef>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND instr(name, '.') > 0 \
                 AND instr(name, '__fts__') = 0 AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' \
                 ORDER BY name",
            )
            .map_err(|e| self.fail(e))?;
        let names: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.fail(e))?;
        names
            .iter()
            .map(|name| {
                let (domain, table) = name.split_once('.').unwrap_or((name, ""));
                TableRef::new(domain, table).map_err(|e| {
                    StoreError::Invalid(format!("the SQLite table `{name}` is not svc's: {e}"))
                })
            })
            .collect()
    }

    /// The collection definitions of a domain (its `collections` table): key and document.
    pub fn collections(&self, domain: &str) -> StoreResult<Vec<(String, Value)>> {
        let defs = TableRef::new(domain, crate::store::COLLECTIONS).map_err(StoreError::Invalid)?;
        if !self.has_table(&defs.qualified())? {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT key, data FROM {} ORDER BY key",
                quoted(&defs.qualified())
            ))
            .map_err(|e| self.fail(e))?;
        let rows: Vec<(String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.fail(e))?;
        rows.into_iter()
            .map(|(key, data)| Ok((key, serde_json::from_str(&data)?)))
            .collect()
    }

    /// Rows in the table; 0 when it does not exist.
    pub fn count(&self, table: &TableCopy) -> StoreResult<u64> {
        if !self.has_table(&table.source)? {
            return Ok(0);
        }
        let n: i64 = self
            .conn
            .query_row(
                &format!("SELECT count(*) FROM {}", quoted(&table.source)),
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.fail(e))?;
        Ok(n.max(0) as u64)
    }

    /// The next batch of rows in key order after `after` (a key as [`Source::read`] returned
    /// it; `None` from the start); empty at the end.
    pub fn read(&self, table: &TableCopy, after: Option<&Value>) -> StoreResult<Batch> {
        let mut batch = Batch {
            columns: table.columns.iter().map(|c| Values::new(c.kind)).collect(),
            rows: 0,
            last_key: None,
        };
        if !self.has_table(&table.source)? {
            return Ok(batch);
        }
        let present = self.columns_of(&table.source)?;
        let select: Vec<String> = table
            .columns
            .iter()
            .map(|c| {
                if present.contains(c.name) {
                    quoted(c.name)
                } else {
                    c.absent.to_string()
                }
            })
            .collect();
        let key: Vec<String> = table.key.iter().map(|k| quoted(k)).collect();
        let after_values = match after {
            Some(Value::Array(parts)) if parts.len() == key.len() => parts
                .iter()
                .map(key_value)
                .collect::<StoreResult<Vec<SqlValue>>>(
            )?,
            Some(other) => {
                return Err(StoreError::Internal(format!(
                    "the progress of {} holds an unusable key {other}",
                    table.label
                )))
            }
            None => Vec::new(),
        };
        let placeholders: Vec<String> = (1..=key.len()).map(|i| format!("?{i}")).collect();
        let filter = if after_values.is_empty() {
            String::new()
        } else {
            format!("WHERE ({}) > ({})", key.join(", "), placeholders.join(", "))
        };
        let sql = format!(
            "SELECT {}, {} FROM {} {filter} ORDER BY {} LIMIT {}",
            select.join(", "),
            key.join(", "),
            quoted(&table.source),
            key.join(", "),
            table.batch_rows
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.fail(e))?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(after_values))
            .map_err(|e| self.fail(e))?;
        let width = table.columns.len();
        while let Some(row) = rows.next().map_err(|e| self.fail(e))? {
            for (i, column) in table.columns.iter().enumerate() {
                let value = row.get_ref(i).map_err(|e| self.fail(e))?;
                batch.columns[i].push(value, column.name).map_err(|e| {
                    e.in_context(&format!("{} of {}", table.label, self.path.display()))
                })?;
            }
            let mut last = Vec::with_capacity(key.len());
            for k in 0..key.len() {
                last.push(key_json(row.get_ref(width + k).map_err(|e| self.fail(e))?));
            }
            batch.last_key = Some(Value::Array(last));
            batch.rows += 1;
        }
        Ok(batch)
    }
}

/// A key column's value as JSON (keys are text or integers).
fn key_json(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Integer(n) => Value::from(n),
        ValueRef::Text(t) => Value::from(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Real(x) => Value::from(x),
        ValueRef::Null | ValueRef::Blob(_) => Value::Null,
    }
}

fn key_value(value: &Value) -> StoreResult<SqlValue> {
    match value {
        Value::String(s) => Ok(SqlValue::Text(s.clone())),
        Value::Number(n) if n.is_i64() => Ok(SqlValue::Integer(n.as_i64().unwrap_or_default())),
        Value::Number(n) => Ok(SqlValue::Real(n.as_f64().unwrap_or_default())),
        other => Err(StoreError::Internal(format!(
            "a stored progress key holds {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan;
    use super::*;
    use crate::store::{HistoryWrite, Store};
    use serde_json::json;

    #[test]
    fn batches_in_key_order_cover_every_row_once_across_a_composite_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("svc.db");
        let store = Store::open(&path).unwrap();
        // Two series, repeated timestamps (so `seq` matters), out of order.
        let writes: Vec<HistoryWrite> = [(3, 1.0), (1, 2.0), (1, 3.0), (2, 4.0), (1, 5.0)]
            .iter()
            .flat_map(|(ts, v)| {
                ["a", "b"].map(|topic| HistoryWrite {
                    domain: "d".into(),
                    topic: topic.into(),
                    ts_ms: *ts,
                    value: json!(v),
                    quality: crate::store::Quality::GOOD,
                })
            })
            .collect();
        store.append_history(&writes).unwrap();
        store.close().unwrap();
        drop(store);

        let source = Source::open(&path).unwrap();
        let mut points = plan::historian_tables()
            .into_iter()
            .find(|t| t.source == "hist_points")
            .unwrap();
        points.batch_rows = 3;
        assert_eq!(source.count(&points).unwrap(), 10);
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let batch = source.read(&points, after.as_ref()).unwrap();
            if batch.rows == 0 {
                break;
            }
            let key = |name| batch.ints(&points, name).unwrap().to_vec();
            for ((series, ts), seq) in key("series").iter().zip(key("ts")).zip(key("seq")) {
                seen.push((series.unwrap(), ts.unwrap(), seq.unwrap()));
            }
            after = batch.last_key;
        }
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(seen, sorted, "in key order, each row once");
        assert_eq!(seen.len(), 10);
        assert_eq!(seen.iter().filter(|(_, ts, _)| *ts == 1).count(), 6);
    }

    #[test]
    fn record_tables_are_the_dotted_tables_without_full_text_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("svc.db");
        let store = Store::open(&path).unwrap();
        let table = TableRef::new("acme", "items").unwrap();
        store
            .insert_record(&table, "k1", json!({"n": 1}).as_object().unwrap())
            .unwrap();
        drop(store);
        let source = Source::open(&path).unwrap();
        assert_eq!(source.record_tables().unwrap(), vec![table]);
        let batch = source.read(
            &plan::record_table(&TableRef::new("acme", "items").unwrap()),
            None,
        );
        assert_eq!(batch.unwrap().last_key, Some(json!(["k1"])));
    }
}
