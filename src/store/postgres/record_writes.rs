//! Record writes applied as a group in one transaction (see `crate::group_commit`), as the
//! SQLite engine applies them. A failed statement aborts a PostgreSQL transaction, so each write
//! runs in a savepoint of its own: a refused write is rolled back to it and its neighbours
//! stay. A failure of the commit itself fails every write of the group.

use super::records::{delete_on, insert_on, update_on};
use super::PgStore;
use crate::ids::TableRef;
use crate::store::interface::RecordWrites;
use crate::store::types::*;
use crate::store::{StoreError, StoreResult};

/// A copy of an error with its kind kept (an outage stays a 503 for every write).
fn same_kind(e: &StoreError) -> StoreError {
    match e {
        StoreError::Unavailable(m) => StoreError::Unavailable(m.clone()),
        other => StoreError::Internal(other.to_string()),
    }
}

impl RecordWrites for PgStore {
    /// Applies the writes in order and commits them together: one result per write; an `Ok`
    /// means committed.
    fn write_records(&self, group: Vec<RecordWrite>) -> Vec<StoreResult<RecordWritten>> {
        let count = group.len();
        let failed = |e: &StoreError| -> Vec<StoreResult<RecordWritten>> {
            (0..count).map(|_| Err(same_kind(e))).collect()
        };
        // Tables are created outside the group's transaction (under their own lock), so a
        // refused write never takes a new table with it.
        for write in &group {
            if let RecordWrite::Insert { table, .. } = write {
                if let Err(e) = self.ensure_table(table) {
                    return failed(&e);
                }
            }
        }
        let mut tables: Vec<TableRef> = group.iter().map(|w| w.table().clone()).collect();
        tables.dedup();
        let applied = self.block(async {
            let mut client = self.client().await?;
            let mut tx = client.transaction().await?;
            let mut results = Vec::with_capacity(count);
            for write in group {
                let savepoint = tx.savepoint("svc_write").await?;
                let result = match write {
                    RecordWrite::Insert { table, key, fields } => {
                        insert_on(&savepoint, &table, &key, &fields)
                            .await
                            .map(RecordWritten::Record)
                    }
                    RecordWrite::Update {
                        table,
                        key,
                        patch,
                        check,
                    } => update_on(&savepoint, &table, &key, &patch, check)
                        .await
                        .map(|r| r.map_or(RecordWritten::Absent, RecordWritten::Record)),
                    RecordWrite::Delete { table, key } => {
                        delete_on(&savepoint, &table, &key).await.map(|gone| {
                            if gone {
                                RecordWritten::Deleted
                            } else {
                                RecordWritten::Absent
                            }
                        })
                    }
                };
                if result.is_ok() {
                    savepoint.commit().await?;
                } else {
                    savepoint.rollback().await?;
                }
                results.push(result);
            }
            tx.commit().await?;
            Ok(results)
        });
        // Whether or not the commit went through, what was cached of these tables may be old.
        for table in &tables {
            self.written(table);
        }
        applied.unwrap_or_else(|e| failed(&e))
    }
}
