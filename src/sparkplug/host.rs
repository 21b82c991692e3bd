//! svc as a Sparkplug host application: the domains' host records, the edge-node sessions of
//! each, and the two ways in: a message on a `spBv1.0/…` topic (decoded and applied to its
//! node's session) and a write to a Sparkplug-derived tag (turned into an NCMD or DCMD for that
//! metric). What the host asks for in return (publish, historize, declare, rebirth) is
//! carried out by the server, which owns the broker and the store.

use super::config::HostConfig;
use super::session::{Context, Metrics, NodeSession, NodeStatus, Outcome, REBIRTH};
use super::topic::{SparkplugTopic, Verb};
use super::value::from_json;
use prost::Message as _;
use serde_json::Value;
use srad_types::payload::{metric, DataType, Metric, Payload};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};
use std::time::Instant;

/// One edge node: the domain it is in, its group and its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeKey {
    pub domain: String,
    pub group: String,
    pub node: String,
}

/// What the host asks the server to do about one message.
#[derive(Debug)]
pub struct Handled {
    pub outcome: Outcome,
    /// The NCMD asking the node to rebirth, when `outcome.rebirth`: (topic, payload).
    pub rebirth: Option<(String, Vec<u8>)>,
}

/// Why a write to a Sparkplug-derived tag was not sent.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandError {
    /// The value does not fit the metric's datatype (400).
    Invalid(String),
    /// The node or device is offline (503).
    Offline(String),
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Invalid(why) | CommandError::Offline(why) => f.write_str(why),
        }
    }
}

/// Where a Sparkplug-derived tag's writes go.
#[derive(Debug, Clone)]
struct Target {
    node: NodeKey,
    device: Option<String>,
    metric: String,
}

/// What the host counted since svc started, for `/metrics`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Counts {
    /// Sparkplug messages applied to a node's session.
    pub messages: u64,
    /// Metrics or payloads that could not be read.
    pub problems: u64,
    pub rebirths_requested: u64,
    pub nodes_online: u64,
    pub nodes_offline: u64,
}

#[derive(Default)]
pub struct Host {
    configs: RwLock<HashMap<String, Vec<HostConfig>>>,
    messages: AtomicU64,
    problems: AtomicU64,
    rebirths: AtomicU64,
    sessions: Mutex<BTreeMap<NodeKey, NodeSession>>,
    /// Every tag a BIRTH declared, by (domain, tag).
    targets: RwLock<HashMap<(String, String), Target>>,
}

impl Host {
    /// Replaces `domain`'s host records (after a write to its `sparkplug` table); its nodes'
    /// sessions of groups no longer taken are forgotten.
    pub fn set_domain(&self, domain: &str, configs: Vec<HostConfig>) {
        let mut all = self.configs.write().unwrap_or_else(|e| e.into_inner());
        if configs.is_empty() {
            all.remove(domain);
        } else {
            all.insert(domain.to_string(), configs);
        }
        let taken = |key: &NodeKey| {
            all.get(&key.domain)
                .is_some_and(|c| c.iter().any(|c| c.takes(&key.group)))
        };
        self.sessions().retain(|key, _| taken(key));
        self.targets
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, target| taken(&target.node));
    }

    /// Whether any host of `domain` is enabled (so its Sparkplug messages are worth decoding).
    pub fn serves(&self, domain: &str) -> bool {
        self.configs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(domain)
            .is_some_and(|c| c.iter().any(|c| c.enabled))
    }

    /// Every enabled host record, of every domain.
    pub fn configs(&self) -> Vec<HostConfig> {
        let all = self.configs.read().unwrap_or_else(|e| e.into_inner());
        all.values()
            .flatten()
            .filter(|c| c.enabled)
            .cloned()
            .collect()
    }

    fn config_for(&self, domain: &str, group: &str) -> Option<HostConfig> {
        let all = self.configs.read().unwrap_or_else(|e| e.into_inner());
        all.get(domain)?.iter().find(|c| c.takes(group)).cloned()
    }

    fn sessions(&self) -> MutexGuard<'_, BTreeMap<NodeKey, NodeSession>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a message of `domain` on `topic`; `None` when no host of the domain takes it
    /// (not Sparkplug, a group it does not take, a STATE). A payload that is not a Sparkplug
    /// payload is a problem of its node, kept in its status.
    pub fn handle(
        &self,
        domain: &str,
        topic: &str,
        payload: &[u8],
        received_ms: i64,
    ) -> Option<Handled> {
        let SparkplugTopic::Edge {
            group,
            verb,
            node,
            device,
        } = SparkplugTopic::parse(topic)?
        else {
            return None;
        };
        let config = self.config_for(domain, &group)?;
        let key = NodeKey {
            domain: domain.to_string(),
            group: group.clone(),
            node: node.clone(),
        };
        let cx = Context {
            config: &config,
            group: &group,
            node: &node,
            received_ms,
            now: Instant::now(),
        };
        let mut sessions = self.sessions();
        let session = sessions.entry(key.clone()).or_default();
        self.messages.fetch_add(1, Ordering::Relaxed);
        let outcome = match Payload::decode(payload) {
            Ok(decoded) => session.apply(&cx, verb, device.as_deref(), &decoded),
            Err(e) => {
                session.last_problem =
                    Some(format!("a {verb} that is not a Sparkplug B payload: {e}"));
                self.problems.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        };
        drop(sessions);
        self.problems
            .fetch_add(outcome.problems.len() as u64, Ordering::Relaxed);
        if outcome.rebirth {
            self.rebirths.fetch_add(1, Ordering::Relaxed);
        }
        if matches!(verb, Verb::NBirth | Verb::DBirth) {
            self.remember_targets(&key, device.as_deref());
        }
        let rebirth = outcome.rebirth.then(|| rebirth_command(&group, &node));
        Some(Handled { outcome, rebirth })
    }

    /// Keeps where writes to the tags a BIRTH just declared go.
    fn remember_targets(&self, key: &NodeKey, device: Option<&str>) {
        let sessions = self.sessions();
        let Some(session) = sessions.get(key) else {
            return;
        };
        let metrics: &Metrics = match device {
            None => &session.metrics,
            Some(device) => match session.devices.get(device) {
                Some(d) => &d.metrics,
                None => return,
            },
        };
        let mut targets = self.targets.write().unwrap_or_else(|e| e.into_inner());
        for def in &metrics.defs {
            if let Some(tag) = &def.tag {
                targets.insert(
                    (key.domain.clone(), tag.clone()),
                    Target {
                        node: key.clone(),
                        device: device.map(str::to_string),
                        metric: def.name.clone(),
                    },
                );
            }
        }
    }

    /// The NCMD or DCMD that writes `value` to the metric behind `tag` of `domain`: (topic,
    /// payload). `None` when no BIRTH declared that tag.
    pub fn command(
        &self,
        domain: &str,
        tag: &str,
        value: &Value,
    ) -> Option<Result<(String, Vec<u8>), CommandError>> {
        let target = self
            .targets
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(domain.to_string(), tag.to_string()))
            .cloned()?;
        let sessions = self.sessions();
        let offline = || {
            CommandError::Offline(format!(
                "tag `{tag}` is a metric of Sparkplug edge node `{}/{}`{}, which is offline",
                target.node.group,
                target.node.node,
                target
                    .device
                    .as_deref()
                    .map(|d| format!(" device `{d}`"))
                    .unwrap_or_default()
            ))
        };
        let Some(session) = sessions.get(&target.node).filter(|s| s.online) else {
            return Some(Err(offline()));
        };
        let metrics = match &target.device {
            None => &session.metrics,
            Some(device) => match session.devices.get(device).filter(|d| d.online) {
                Some(d) => &d.metrics,
                None => return Some(Err(offline())),
            },
        };
        let Some(def) = metrics.named(&target.metric) else {
            return Some(Err(offline()));
        };
        let encoded = match from_json(def.datatype, value) {
            Ok(encoded) => encoded,
            Err(e) => return Some(Err(CommandError::Invalid(format!("tag `{tag}`: {e}")))),
        };
        let mut metric = Metric::new();
        match def.alias {
            Some(alias) => metric.set_alias(alias),
            None => metric.set_name(def.name.clone()),
        };
        metric
            .set_datatype(def.datatype)
            .set_timestamp(now_ms())
            .set_value(encoded);
        let verb = if target.device.is_some() {
            Verb::DCmd
        } else {
            Verb::NCmd
        };
        let topic = SparkplugTopic::edge(
            &target.node.group,
            verb,
            &target.node.node,
            target.device.as_deref(),
        );
        Some(Ok((topic, encode(vec![metric]))))
    }

    /// Whether `tag` of `domain` is a metric a BIRTH declared (writes to it are commands).
    pub fn writes_to(&self, domain: &str, tag: &str) -> bool {
        self.targets
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&(domain.to_string(), tag.to_string()))
    }

    /// What the host counted, and its nodes online and offline (of every domain).
    pub fn counts(&self) -> Counts {
        let sessions = self.sessions();
        let online = sessions.values().filter(|s| s.online).count() as u64;
        Counts {
            messages: self.messages.load(Ordering::Relaxed),
            problems: self.problems.load(Ordering::Relaxed),
            rebirths_requested: self.rebirths.load(Ordering::Relaxed),
            nodes_online: online,
            nodes_offline: sessions.len() as u64 - online,
        }
    }

    /// The status of every node of `domain`, by host, group and node.
    pub fn statuses(&self, domain: &str) -> Vec<NodeStatus> {
        let configs = self.configs.read().unwrap_or_else(|e| e.into_inner());
        let Some(hosts) = configs.get(domain) else {
            return Vec::new();
        };
        self.sessions()
            .iter()
            .filter(|(key, _)| key.domain == domain)
            .filter_map(|(key, session)| {
                let host = hosts.iter().find(|c| c.takes(&key.group))?;
                Some(session.status(host, &key.group, &key.node))
            })
            .collect()
    }
}

/// `Node Control/Rebirth = true` to `node` of `group`, by name (the host may not know the
/// node's aliases: that is why it asks).
pub fn rebirth_command(group: &str, node: &str) -> (String, Vec<u8>) {
    let mut metric = Metric::new();
    metric
        .set_name(REBIRTH.to_string())
        .set_datatype(DataType::Boolean)
        .set_timestamp(now_ms())
        .set_value(metric::Value::BooleanValue(true));
    (
        SparkplugTopic::edge(group, Verb::NCmd, node, None),
        encode(vec![metric]),
    )
}

fn encode(metrics: Vec<Metric>) -> Vec<u8> {
    Payload {
        timestamp: Some(now_ms()),
        metrics,
        seq: None,
        uuid: None,
        body: None,
    }
    .encode_to_vec()
}

fn now_ms() -> u64 {
    u64::try_from(crate::time::now_ms()).unwrap_or(0)
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
