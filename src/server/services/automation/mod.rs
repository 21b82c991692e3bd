//! Automation: the functions and flows deployed in every domain, kept in step with their
//! records, and the dispatch of MQTT messages to `tag_change` triggers and `tag-in` nodes.
//! Nothing here blocks the broker: messages are handed to per-function queues and per-flow
//! tasks.

pub mod flows;
pub mod functions;
pub mod host;
mod process;

use crate::flows::graph::{Flow, NodeKind};
use crate::functions::{FunctionDef, Trigger, PROCESSES};
use crate::historian::decode_payload;
use crate::ids::ADMIN_DOMAIN;
use crate::server::error::ApiResult;
use crate::server::services::system_tables::{records_of, FLOWS};
use crate::server::services::tag_registry::TagOwner;
use crate::server::AppState;
use crate::store::{RunOwner, Store};
use crate::topic::filter_matches;
use functions::{Deployed, Job};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

type Key = (String, String);

/// The tasks serving a deployed function or a running flow: aborted when their owner is
/// dropped (redeployed, stopped or deleted).
#[derive(Default)]
pub struct Tasks(Vec<JoinHandle<()>>);

impl Tasks {
    pub fn spawn(&mut self, task: impl Future<Output = ()> + Send + 'static) {
        self.0.push(tokio::spawn(task));
    }
}

/// Where a run's code executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPlace {
    /// On the worker that serves the message that triggered it: the worker hands its other
    /// tasks to another thread for the time being (`block_in_place`) and runs the code itself,
    /// so the run costs no wake-up of a blocking thread and none of the caller's on the way
    /// back (on an idle VM each is tens of µs). For runs triggered one after another by
    /// messages, where latency counts.
    InPlace,
    /// On a blocking thread the caller waits for: for calls over HTTP, which come many at once.
    /// Under 8 concurrent calls, handing workers around for each run cost 8 to 17 % of a
    /// trivial JavaScript process's calls/s (`bench/functions.sh`, 5 rounds against a build
    /// that used the blocking pool).
    Pool,
}

/// Runs `run`, user code that may take up to its time limit, where `place` says. A
/// current-thread runtime (some unit tests) cannot hand its worker around: there the run
/// always goes to a blocking thread.
pub async fn run_blocking<T: Send + 'static>(
    place: RunPlace,
    run: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if place == RunPlace::InPlace
        && Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread
    {
        Ok(tokio::task::block_in_place(run))
    } else {
        tokio::task::spawn_blocking(run).await
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Where a matching message goes.
#[derive(Debug, Clone)]
enum Target {
    Function(String),
    Flow { name: String, node: String },
}

#[derive(Debug, Clone)]
struct TagSubscription {
    domain: String,
    filter: String,
    target: Target,
}

pub struct Automation {
    functions: RwLock<HashMap<Key, Arc<Deployed>>>,
    flows: RwLock<HashMap<Key, Arc<flows::Running>>>,
    subscriptions: RwLock<Vec<TagSubscription>>,
    /// Sandboxed runs at once, server-wide; the rest wait their turn.
    pub slots: Arc<Semaphore>,
    /// The run log of functions and flows, written by groups (see [`RunLog`]).
    pub run_log: RunLog,
}

/// Runs of functions and flows (domain, owner, run), written by one thread in groups.
pub type RunLog = crate::group_commit::GroupCommit<(String, RunOwner, crate::functions::RunRecord)>;

impl Automation {
    /// Nothing deployed yet; runs are logged to `store` in groups.
    pub fn new(store: Store) -> std::io::Result<Automation> {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        // Callers send and forget: the log's reader waits for `settled` instead, so a run is
        // listed once its call has returned without the call waiting for a commit. The writer
        // lingers so that thousands of runs a second cost a few transactions, not thousands.
        let linger = std::time::Duration::from_millis(5);
        let run_log = crate::group_commit::GroupCommit::start_lingering(
            "svc-run-log",
            512,
            linger,
            move |runs| {
                store.record_runs(runs).map_err(|e| {
                    tracing::warn!("cannot log {} runs of functions or flows: {e}", runs.len());
                    e.to_string()
                })
            },
        )?;
        Ok(Automation {
            functions: RwLock::default(),
            flows: RwLock::default(),
            subscriptions: RwLock::default(),
            slots: Arc::new(Semaphore::new((cores * 2).max(4))),
            run_log,
        })
    }
}

/// How many functions and flows a message may pass through, each triggered by a tag the one
/// before wrote, before svc stops the chain: two automations that trigger each other would
/// otherwise loop for ever.
pub const MAX_CHAIN: u32 = 8;

/// The origin an automation's writes carry: who wrote (`function:domain/name`) and how deep in
/// a chain of automations the write is (`#2`: written by an automation that a write of another
/// automation triggered).
pub fn chain_origin(writer: &str, depth: u32) -> Arc<str> {
    format!("{writer}#{depth}").into()
}

/// The writer and chain depth of a message's origin; a device's publish is depth 0.
pub fn parse_origin(origin: Option<&str>) -> (Option<&str>, u32) {
    match origin.and_then(|o| o.rsplit_once('#')) {
        Some((writer, depth)) => (Some(writer), depth.parse().unwrap_or(MAX_CHAIN)),
        None => (origin, 0),
    }
}

impl Automation {
    pub fn function_origin(domain: &str, name: &str) -> String {
        format!("function:{domain}/{name}")
    }

    pub fn flow_origin(domain: &str, name: &str) -> String {
        format!("flow:{domain}/{name}")
    }

    /// Deploys what every domain has stored (at startup).
    pub async fn load_all(&self, state: &AppState) -> ApiResult<()> {
        for domain in state.domain_names().await? {
            self.reload(state, &domain).await?;
        }
        Ok(())
    }

    /// Re-reads a domain's functions and flows; unchanged ones keep running undisturbed.
    pub async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()> {
        let defs: Vec<FunctionDef> = records_of(state, domain, PROCESSES)
            .await?
            .iter()
            .filter_map(|r| r.as_object())
            .filter_map(|f| FunctionDef::from_fields(f).ok())
            .collect();
        let stored_flows: Vec<(Flow, bool)> = records_of(state, domain, FLOWS)
            .await?
            .iter()
            .filter_map(flows::from_record)
            .collect();
        let mut subscriptions = Vec::new();
        {
            let mut deployed = write(&self.functions);
            let mut kept = HashMap::new();
            for def in defs {
                let key = (domain.to_string(), def.name.clone());
                let current = deployed.remove(&key).filter(|d| *d.def == def);
                if def.enabled {
                    for trigger in &def.triggers {
                        if let Trigger::TagChange { topic } = trigger {
                            subscriptions.push(TagSubscription {
                                domain: domain.to_string(),
                                filter: topic.clone(),
                                target: Target::Function(def.name.clone()),
                            });
                        }
                    }
                }
                let current =
                    current.unwrap_or_else(|| Arc::new(Deployed::start(state, domain, def)));
                kept.insert(key, current);
            }
            deployed.retain(|(d, _), _| d != domain);
            deployed.extend(kept);
        }
        {
            let mut running = write(&self.flows);
            let mut kept = HashMap::new();
            for (flow, run) in stored_flows {
                if !run {
                    continue;
                }
                let key = (domain.to_string(), flow.name.clone());
                for node in &flow.nodes {
                    if let NodeKind::TagIn(config) = &node.kind {
                        subscriptions.push(TagSubscription {
                            domain: domain.to_string(),
                            filter: config.topic.clone(),
                            target: Target::Flow {
                                name: flow.name.clone(),
                                node: node.id.clone(),
                            },
                        });
                    }
                }
                let current = running
                    .remove(&key)
                    .filter(|r| r.flow.to_json() == flow.to_json())
                    .unwrap_or_else(|| Arc::new(flows::Running::start(state, domain, flow)));
                kept.insert(key, current);
            }
            running.retain(|(d, _), _| d != domain);
            running.extend(kept);
        }
        let mut all = write(&self.subscriptions);
        all.retain(|s| s.domain != domain);
        all.extend(subscriptions);
        Ok(())
    }

    pub fn function(&self, domain: &str, name: &str) -> Option<Arc<Deployed>> {
        read(&self.functions)
            .get(&(domain.to_string(), name.to_string()))
            .cloned()
    }

    /// The function of `domain` serving the HTTP endpoint `endpoint`.
    pub fn function_at_endpoint(&self, domain: &str, endpoint: &str) -> Option<Arc<Deployed>> {
        read(&self.functions)
            .iter()
            .find(|((d, _), deployed)| {
                d == domain && deployed.def.endpoints().any(|e| e == endpoint)
            })
            .map(|(_, deployed)| deployed.clone())
    }

    pub fn flow(&self, domain: &str, name: &str) -> Option<Arc<flows::Running>> {
        read(&self.flows)
            .get(&(domain.to_string(), name.to_string()))
            .cloned()
    }

    /// A stopped flow, brought up only for a manual execution.
    pub fn standalone_flow(
        &self,
        state: &AppState,
        domain: &str,
        record: &Value,
    ) -> Option<Arc<flows::Running>> {
        let (flow, _) = flows::from_record(record)?;
        Some(Arc::new(flows::Running::standalone(state, domain, flow)))
    }

    /// Hands a published message to every trigger and flow input whose filter matches, in
    /// the domain that owns the topic (any topic for `svc_admin`). A writer's own messages do not
    /// re-trigger it, and a message [`MAX_CHAIN`] automations deep triggers nothing.
    pub fn on_message(
        &self,
        topic: &str,
        payload: &[u8],
        owner: Option<&TagOwner>,
        origin: Option<&str>,
    ) {
        let subscriptions = read(&self.subscriptions);
        if subscriptions.is_empty() {
            return;
        }
        let (writer, depth) = parse_origin(origin);
        let mut input: Option<Value> = None;
        let mut chain_cut = false;
        for sub in subscriptions.iter() {
            let visible =
                sub.domain == ADMIN_DOMAIN || owner.is_some_and(|o| *o.domain == *sub.domain);
            if !visible || !filter_matches(&sub.filter, topic) {
                continue;
            }
            if depth >= MAX_CHAIN {
                chain_cut = true;
                continue;
            }
            let value = input.get_or_insert_with(|| decode_payload(payload)).clone();
            match &sub.target {
                Target::Function(name) => {
                    if writer == Some(Self::function_origin(&sub.domain, name).as_str()) {
                        continue;
                    }
                    let Some(deployed) = self.function(&sub.domain, name) else {
                        continue;
                    };
                    let job = Job {
                        input: value,
                        depth: depth + 1,
                        trigger: "tag_change",
                        reply: None,
                    };
                    if !deployed.offer(job) {
                        tracing::warn!(
                            "function `{name}` of `{}` is {} events behind; dropped one",
                            sub.domain,
                            functions::QUEUE
                        );
                    }
                }
                Target::Flow { name, node } => {
                    if writer == Some(Self::flow_origin(&sub.domain, name).as_str()) {
                        continue;
                    }
                    if let Some(flow) = self.flow(&sub.domain, name) {
                        flow.inject_tag(node, topic, value, depth + 1);
                    }
                }
            }
        }
        if chain_cut {
            tracing::warn!(
                "`{topic}` was written by `{}` after {depth} automations triggered each other; \
                 not triggering more (a loop between functions or flows?)",
                writer.unwrap_or("?")
            );
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_carry_the_writer_and_the_chain_depth() {
        let origin = chain_origin(&Automation::function_origin("d", "f#1"), 3);
        assert_eq!(&*origin, "function:d/f#1#3");
        assert_eq!(parse_origin(Some(&origin)), (Some("function:d/f#1"), 3));
        assert_eq!(parse_origin(None), (None, 0));
        assert_eq!(parse_origin(Some("device")), (Some("device"), 0));
        assert_eq!(
            parse_origin(Some("flow:d/x#junk")),
            (Some("flow:d/x"), MAX_CHAIN)
        );
    }
}
