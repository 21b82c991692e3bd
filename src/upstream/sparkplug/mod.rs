//! An upstream as a Sparkplug B edge node (issue 36): the tags of a branch of the domain's
//! namespace published to the upstream broker as the metrics of one edge node, so Ignition or
//! another svc consumes svc as a Sparkplug source.
//!
//! What an upstream's edge node is across its connections lives here ([`Edge`]: its group,
//! node and branch, the `bdSeq` of the next connection, what it did, for the status). One
//! connection's session is [`EdgeLink`] (`link.rs`: the will, NBIRTH after the NCMD
//! subscription, NDATA batched from the tags' changes, NCMD rebirths and writes, the explicit
//! NDEATH on a graceful stop), built on the payloads of `node.rs`.
//!
//! Sparkplug traffic does not go through the durable out-queue: it is a live stream whose
//! sequence numbers belong to one connection, so a new connection starts with an NBIRTH of the
//! current values and nothing of an old connection is sent after it.

mod link;
mod node;
#[cfg(test)]
mod node_tests;

pub use link::{EdgeLink, EdgeWake};

use crate::sparkplug::topic::{SparkplugTopic, Verb};
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// bdSeq runs from 0 to 255 and wraps (Sparkplug 3.0).
const BD_SEQ_MODULO: u64 = 256;

/// The `sparkplug` member of an upstream record, with the domain it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeConfig {
    pub domain: String,
    pub group: String,
    pub node: String,
    /// The local topic path whose tags are the node's metrics.
    pub branch: String,
}

impl EdgeConfig {
    /// The edge node a normalised upstream record of `domain` describes, if it describes one.
    pub fn of(domain: &str, record: &Map<String, Value>) -> Option<EdgeConfig> {
        let edge = record.get("sparkplug")?;
        let text = |name: &str| edge.get(name).and_then(Value::as_str).map(str::to_string);
        Some(EdgeConfig {
            domain: domain.to_string(),
            group: text("group")?,
            node: text("node")?,
            branch: text("branch")?,
        })
    }

    /// The node's topic of `verb`.
    pub fn topic(&self, verb: Verb) -> String {
        SparkplugTopic::edge(&self.group, verb, &self.node, None)
    }
}

/// `sparkplug` in an upstream's status.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EdgeStatus {
    pub group: String,
    pub node: String,
    pub branch: String,
    /// An NBIRTH of the current connection was published.
    pub online: bool,
    /// The bdSeq of the current (or last) connection.
    pub bd_seq: Option<u64>,
    /// Metrics of the last NBIRTH, `bdSeq` and `Node Control/Rebirth` included.
    pub metrics: usize,
    pub births: u64,
    pub data_messages: u64,
    pub commands: u64,
    pub writes: u64,
    pub last_problem: Option<String>,
}

/// One upstream's edge node, across its connections and the changes of its record.
pub struct Edge {
    pub config: EdgeConfig,
    /// The bdSeq of the next connection; kept by the supervisor per upstream, so a changed
    /// record does not start over at 0 (a restart of svc does: Sparkplug allows it, as long
    /// as each NBIRTH carries the bdSeq of its connection's will).
    next_bd_seq: Arc<AtomicU64>,
    status: Mutex<EdgeStatus>,
}

impl Edge {
    pub fn new(config: EdgeConfig, next_bd_seq: Arc<AtomicU64>) -> Edge {
        let status = EdgeStatus {
            group: config.group.clone(),
            node: config.node.clone(),
            branch: config.branch.clone(),
            ..EdgeStatus::default()
        };
        Edge {
            config,
            next_bd_seq,
            status: Mutex::new(status),
        }
    }

    /// The bdSeq the next connection's will and NBIRTH carry.
    fn bd_seq(&self) -> u64 {
        self.next_bd_seq.load(Ordering::Relaxed) % BD_SEQ_MODULO
    }

    /// A connection with `bd_seq` was accepted: the next one carries the following number (a
    /// refused CONNECT started no session, so its number is used again).
    fn connected(&self, bd_seq: u64) {
        self.next_bd_seq
            .store((bd_seq + 1) % BD_SEQ_MODULO, Ordering::Relaxed);
        self.update(|s| s.bd_seq = Some(bd_seq));
    }

    fn update(&self, change: impl FnOnce(&mut EdgeStatus)) {
        change(&mut self.lock());
    }

    fn lock(&self) -> MutexGuard<'_, EdgeStatus> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Something the node could not do or read: logged and kept as `last_problem`.
    fn problem(&self, text: String) {
        tracing::warn!(
            group = self.config.group,
            node = self.config.node,
            problem = text,
            "Sparkplug edge node"
        );
        self.update(|s| s.last_problem = Some(text));
    }

    pub fn status(&self) -> EdgeStatus {
        self.lock().clone()
    }
}
