//! Record writes applied as a group in one transaction (see `crate::group_commit`): concurrent
//! creates, updates and deletes share a commit instead of each taking SQLite's write lock in
//! turn, and each write still gets its own result.
//!
//! No savepoints are needed to keep one write's refusal from undoing its neighbours: every
//! write is a single statement (a conflict aborts only that statement, SQLite keeps the
//! transaction and the statements before it), and an update's check runs before its statement.
//! A failure that makes SQLite roll back the whole transaction (a full disk, an I/O error) is
//! detected and fails every write of the group, since none of them was committed.

use super::records::{delete_on, update_on};
use super::{SqliteStore, StoreError, StoreResult};
use crate::store::interface::RecordWrites;
use crate::store::types::*;
use rusqlite::TransactionBehavior;

impl SqliteStore {
    /// Tables created in a transaction that was not committed do not exist: every table is
    /// checked again on its next write.
    fn forget_known_tables(&self) {
        if let Ok(mut known) = self.known_tables.lock() {
            known.clear();
        }
    }
}

impl RecordWrites for SqliteStore {
    /// Applies the writes in order in one immediate transaction and commits it: one result per
    /// write; an `Ok` means committed.
    fn write_records(&self, group: Vec<RecordWrite>) -> Vec<StoreResult<RecordWritten>> {
        let count = group.len();
        let failed = |e: &StoreError| -> Vec<StoreResult<RecordWritten>> {
            (0..count)
                .map(|_| Err(StoreError::Internal(e.to_string())))
                .collect()
        };
        let mut conn = match self.conn() {
            Ok(conn) => conn,
            Err(e) => return failed(&e),
        };
        let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
            Ok(tx) => tx,
            Err(e) => return failed(&e.into()),
        };
        let touches_collections = group.iter().any(|write| write.table().table == COLLECTIONS);
        let mut results = Vec::with_capacity(count);
        for write in group {
            let result = match write {
                RecordWrite::Insert { table, key, fields } => self
                    .insert_on(&tx, &table, &key, &fields)
                    .map(RecordWritten::Record),
                RecordWrite::Update {
                    table,
                    key,
                    patch,
                    check,
                } => update_on(&tx, &table, &key, &patch, check)
                    .map(|r| r.map_or(RecordWritten::Absent, RecordWritten::Record)),
                RecordWrite::Delete { table, key } => delete_on(&tx, &table, &key).map(|gone| {
                    if gone {
                        RecordWritten::Deleted
                    } else {
                        RecordWritten::Absent
                    }
                }),
            };
            if let Err(e) = &result {
                if tx.is_autocommit() {
                    // SQLite rolled the transaction back: nothing of the group is written.
                    self.forget_known_tables();
                    return failed(e);
                }
            }
            results.push(result);
        }
        let committed = tx.commit();
        if touches_collections {
            // Not the collection routes' way, but a definition written is a definition written.
            self.forget_schemas();
        }
        if let Err(e) = committed {
            self.forget_known_tables();
            return failed(&e.into());
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TableRef;
    use crate::store::interface::*;
    use serde_json::{json, Map, Value};

    fn obj(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn a_refused_write_does_not_undo_its_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("svc.db")).expect("open");
        let t = TableRef::new("acme", "items").expect("table");
        store
            .insert_record(&t, "old", &obj(json!({"n": 0})))
            .expect("seed");
        let insert = |key: &str, n: i64| RecordWrite::Insert {
            table: t.clone(),
            key: key.into(),
            fields: obj(json!({ "n": n })),
        };
        let results = store.write_records(vec![
            insert("a", 1),
            insert("old", 2),
            RecordWrite::Update {
                table: t.clone(),
                key: "a".into(),
                patch: obj(json!({"n": 10})),
                check: Box::new(|_, _| Ok(())),
            },
            RecordWrite::Update {
                table: t.clone(),
                key: "old".into(),
                patch: obj(json!({"n": -1})),
                check: Box::new(|_, merged| {
                    if merged["n"] == json!(-1) {
                        Err("n may not be negative".into())
                    } else {
                        Ok(())
                    }
                }),
            },
            insert("b", 3),
            RecordWrite::Delete {
                table: t.clone(),
                key: "b".into(),
            },
            RecordWrite::Delete {
                table: t.clone(),
                key: "never".into(),
            },
        ]);
        assert!(matches!(&results[0], Ok(RecordWritten::Record(r)) if r["n"] == 1));
        assert!(
            matches!(&results[1], Err(StoreError::Conflict(_))),
            "{results:?}"
        );
        assert!(matches!(&results[2], Ok(RecordWritten::Record(r)) if r["n"] == 10));
        assert!(
            matches!(&results[3], Err(StoreError::Invalid(_))),
            "{results:?}"
        );
        assert!(matches!(&results[4], Ok(RecordWritten::Record(_))));
        assert!(matches!(&results[5], Ok(RecordWritten::Deleted)));
        assert!(matches!(&results[6], Ok(RecordWritten::Absent)));
        let stored = |key: &str| store.get_record(&t, key).expect("read");
        assert_eq!(stored("a").expect("a")["n"], 10);
        assert_eq!(stored("old").expect("old")["n"], 0);
        assert!(stored("b").is_none());
        let returned = match &results[2] {
            Ok(RecordWritten::Record(r)) => r.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            Some(returned),
            stored("a"),
            "the answer is the stored record"
        );
    }
}
