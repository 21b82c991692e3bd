//! What functions and flows leave in the store: the policy of the run log and the owners of runs.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

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

/// One run of a function or a flow, as `GET /svc/processes/runs/:name` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub name: String,
    pub started_dt: String,
    /// What started it: `manual`, `http`, `tag_change`, `interval`, `cron` (flows: the node).
    pub trigger: String,
    pub duration_ms: u64,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub logs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// A stored version of a function's code (`GET /svc/code/:name/versions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeVersion {
    pub version: u64,
    pub language: String,
    pub module: bool,
    pub code: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub modules: BTreeMap<String, String>,
    pub created_dt: String,
}
