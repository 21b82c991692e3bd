//! Flows: stored graphs of nodes (tag-in, inject, function, switch, change, `svc.tag.write`,
//! record-write, delay, debug) that the server runs per domain. [`graph`] parses and checks a
//! flow's JSON; [`nodes`] holds the pure per-message logic of switch and change nodes. The
//! server's automation runs deployed flows.

mod config;
pub mod graph;
pub mod nodes;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `POST /svc/flows/execute` answers: the debug output of everything the injected
/// message caused, delays included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowExecution {
    pub success: bool,
    pub debug: Vec<Value>,
    pub duration_ms: u64,
}
