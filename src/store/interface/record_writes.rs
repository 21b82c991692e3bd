//! Record writes applied as a group in one transaction (see `crate::group_commit`).

use crate::store::types::{RecordWrite, RecordWritten};
use crate::store::StoreResult;

/// Creates, updates and deletes of records, committed together.
pub trait RecordWrites {
    /// Applies the writes in order in one transaction and commits it: one result per write;
    /// an `Ok` means committed, and one write's refusal does not undo its neighbours.
    fn write_records(&self, group: Vec<RecordWrite>) -> Vec<StoreResult<RecordWritten>>;
}
