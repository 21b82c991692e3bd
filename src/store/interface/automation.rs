//! What functions and flows leave in the store beside their records: the versions of a
//! function's code and the run logs of functions and flows.

use crate::store::types::{CodeVersion, RunOwner, RunRecord};
use crate::store::StoreResult;

/// Code versions and run logs.
pub trait Automation {
    /// Keeps `version` of the function `name`'s code (replacing a version of the same number).
    fn keep_code_version(&self, domain: &str, name: &str, version: &CodeVersion)
        -> StoreResult<()>;
    /// Every kept version of the function `name`'s code, oldest first.
    fn code_versions(&self, domain: &str, name: &str) -> StoreResult<Vec<CodeVersion>>;
    /// Forgets the code versions and runs of a deleted function.
    fn forget_function(&self, domain: &str, name: &str) -> StoreResult<()>;
    /// Appends runs (each with its domain and owner), trimming an owner's log now and then
    /// back to `RUNS_KEPT`.
    fn record_runs(&self, runs: &[(String, RunOwner, RunRecord)]) -> StoreResult<()>;
    /// The newest `limit` runs of the function or flow `name`, newest first.
    fn runs(
        &self,
        domain: &str,
        owner: RunOwner,
        name: &str,
        limit: usize,
    ) -> StoreResult<Vec<RunRecord>>;
}
