//! The one writer of REST record writes: creates, updates and deletes waiting at the same moment
//! go in one transaction ([`GroupCommit`]), so concurrent clients share a commit instead of
//! queueing for SQLite's write lock. A request is answered once its group is committed, with
//! its own result (a conflict fails that request only).

use crate::group_commit::GroupCommit;
use crate::ids::TableRef;
use crate::server::error::{ApiError, ApiResult};
use crate::store::{RecordWrite, RecordWritten, Store, StoreResult, UpdateCheck};
use serde_json::{Map, Value};

/// Writes taken into one transaction at most: enough to spread a commit over every waiting
/// client, small enough that one transaction holds the write lock briefly.
const MAX_GROUP: usize = 256;

#[derive(Clone)]
pub struct RecordWriter {
    writer: GroupCommit<RecordWrite, StoreResult<RecordWritten>>,
}

impl RecordWriter {
    /// Starts the writer thread; it ends when the last `RecordWriter` is dropped.
    pub fn start(store: Store) -> std::io::Result<RecordWriter> {
        let writer = GroupCommit::start_each("svc-record-writer", MAX_GROUP, move |group| {
            store.write_records(group).into_iter().map(Ok).collect()
        })?;
        Ok(RecordWriter { writer })
    }

    async fn write(&self, write: RecordWrite) -> ApiResult<RecordWritten> {
        Ok(self
            .writer
            .write(write)
            .await
            .map_err(ApiError::internal)??)
    }

    /// Inserts a record; the stored record once committed.
    pub async fn insert(
        &self,
        table: &TableRef,
        key: &str,
        fields: Map<String, Value>,
    ) -> ApiResult<Value> {
        let written = self
            .write(RecordWrite::Insert {
                table: table.clone(),
                key: key.to_string(),
                fields,
            })
            .await?;
        match written {
            RecordWritten::Record(record) => Ok(record),
            other => Err(unexpected(other)),
        }
    }

    /// Merges `patch` into a record once `check` accepts the merge; `None` when it does not
    /// exist.
    pub async fn update(
        &self,
        table: &TableRef,
        key: &str,
        patch: Map<String, Value>,
        check: UpdateCheck,
    ) -> ApiResult<Option<Value>> {
        let written = self
            .write(RecordWrite::Update {
                table: table.clone(),
                key: key.to_string(),
                patch,
                check,
            })
            .await?;
        match written {
            RecordWritten::Record(record) => Ok(Some(record)),
            RecordWritten::Absent => Ok(None),
            other => Err(unexpected(other)),
        }
    }

    /// Deletes a record; false when it did not exist.
    pub async fn delete(&self, table: &TableRef, key: &str) -> ApiResult<bool> {
        let written = self
            .write(RecordWrite::Delete {
                table: table.clone(),
                key: key.to_string(),
            })
            .await?;
        match written {
            RecordWritten::Deleted => Ok(true),
            RecordWritten::Absent => Ok(false),
            other => Err(unexpected(other)),
        }
    }
}

fn unexpected(written: RecordWritten) -> ApiError {
    ApiError::internal(format!("the record writer answered {written:?}"))
}
