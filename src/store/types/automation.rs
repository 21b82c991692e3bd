//! What functions and flows leave in the store: the policy of the run log and the owners of runs.

use crate::functions::CodeVersion;
use crate::time::now_rfc3339;

// ---- Functions and flows ----

/// Runs kept per function or flow; older ones are deleted as new ones arrive.
pub const RUNS_KEPT: i64 = 1000;
/// One insert in this many (on average) trims its owner's log back to [`RUNS_KEPT`].
pub const PRUNE_EVERY: u32 = 50;

/// Whose runs: a function's or a flow's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOwner {
    Function,
    Flow,
}

impl RunOwner {
    pub fn as_str(self) -> &'static str {
        match self {
            RunOwner::Function => "function",
            RunOwner::Flow => "flow",
        }
    }
}

/// A version stamped now.
pub fn version_now(version: u64, def: &crate::functions::FunctionDef) -> CodeVersion {
    CodeVersion {
        version,
        language: def.language.clone(),
        module: def.module,
        code: def.code.clone(),
        modules: def.modules.clone(),
        created_dt: now_rfc3339(),
    }
}
