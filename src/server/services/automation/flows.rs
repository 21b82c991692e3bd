//! Running flows. Each deployed flow has one task that takes messages from its inbox and
//! carries each one through the graph breadth-first before taking the next, so messages keep
//! their order through every node. Delay and rate-limit nodes hand a message back to the
//! inbox later instead of holding the task; inject nodes have timers; tag-in nodes are fed by
//! the automation's MQTT dispatch. A manual execution carries a trace that collects debug
//! output and errors and tells when everything it caused has finished.

use super::host::{publish_value, user_table};
use super::{chain_origin, Automation, Tasks};
use crate::flows::graph::{DelayConfig, Flow, FunctionConfig, NodeKind};
use crate::flows::nodes::{apply_change, switch_ports, Msg};
use crate::flows::FlowExecution;
use crate::functions::engine::{self, Source};
use crate::functions::RunRecord;
use crate::server::services::checked_writes::insert_checked;
use crate::server::AppState;
use crate::store::RunOwner;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};

/// Messages waiting per flow before new ones are dropped (and logged).
const INBOX: usize = 10_000;
/// Longest a manual execution waits for what it caused.
const EXECUTE_WAIT: Duration = Duration::from_secs(60);

/// A flow record's graph and whether it should run; `None` when the record is not a valid
/// flow (it was checked when written, so only a manual edit of the database gets here).
/// Function nodes are not compiled again: that was done when the record was written, and a
/// reload (every write to the domain's functions or flows) would otherwise compile every
/// function node of every flow of the domain.
pub fn from_record(record: &Value) -> Option<(Flow, bool)> {
    let mut fields = record.as_object()?.clone();
    let running = fields
        .remove("running")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    for system in ["id", "created_dt", "updated_dt"] {
        fields.remove(system);
    }
    let flow = crate::flows::graph::parse(&Value::Object(fields), &|_| Ok(())).ok()?;
    Some((flow, running))
}

/// What a manual execution collects.
#[derive(Default)]
struct Trace {
    pending: AtomicUsize,
    finished: Notify,
    debug: Mutex<Vec<Value>>,
    errors: Mutex<Vec<String>>,
}

impl Trace {
    fn start(self: &Arc<Self>) {
        self.pending.fetch_add(1, Ordering::SeqCst);
    }

    fn finish(self: &Arc<Self>) {
        if self.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.finished.notify_waiters();
        }
    }
}

struct Delivery {
    node: String,
    msg: Msg,
    /// The node the message entered the flow at (the run log's trigger).
    source: String,
    /// Place in a chain of automations (see [`super::MAX_CHAIN`]).
    depth: u32,
    trace: Option<Arc<Trace>>,
}

/// Per rate-limit node: when the next message may pass.
#[derive(Default)]
struct RateState {
    window_start: Option<Instant>,
    passed: u64,
    next_free: Option<Instant>,
}

struct Context {
    state: AppState,
    domain: String,
    flow: Arc<Flow>,
    origin: Arc<str>,
    inbox: mpsc::Sender<Delivery>,
    rates: Mutex<HashMap<String, RateState>>,
}

pub struct Running {
    pub flow: Arc<Flow>,
    context: Arc<Context>,
    /// Held for their lifetime: dropping the flow stops them.
    _tasks: Tasks,
}

/// What a node does with one message.
enum Step {
    /// Messages per output port.
    Emit(Vec<(usize, Msg)>),
    /// The message continues on port 0 after a pause.
    Later(Duration, Msg),
}

impl Running {
    /// Starts a deployed flow: its message task and its inject timers.
    pub fn start(state: &AppState, domain: &str, flow: Flow) -> Running {
        Running::launch(state, domain, flow, true)
    }

    /// A flow run only for manual executions (it is stopped): no timers, no tag inputs.
    pub fn standalone(state: &AppState, domain: &str, flow: Flow) -> Running {
        Running::launch(state, domain, flow, false)
    }

    fn launch(state: &AppState, domain: &str, flow: Flow, timers: bool) -> Running {
        let flow = Arc::new(flow);
        let (inbox, deliveries) = mpsc::channel(INBOX);
        let context = Arc::new(Context {
            state: state.clone(),
            domain: domain.to_string(),
            origin: Automation::flow_origin(domain, &flow.name).into(),
            flow: Arc::clone(&flow),
            inbox,
            rates: Mutex::default(),
        });
        let mut tasks = Tasks::default();
        tasks.spawn(process(Arc::clone(&context), deliveries));
        if timers {
            for node in &flow.nodes {
                if let NodeKind::Inject(config) = &node.kind {
                    if let Some(schedule) = config.schedule.clone() {
                        tasks.spawn(fire_inject(Arc::clone(&context), node.id.clone(), schedule));
                    }
                }
            }
        }
        Running {
            flow,
            context,
            _tasks: tasks,
        }
    }

    /// A message from a tag-in node's subscription.
    pub fn inject_tag(&self, node: &str, topic: &str, payload: Value, depth: u32) {
        let msg = message(Some(topic), payload);
        self.context.deliver(node, msg, node, depth, None);
    }

    /// Injects `input` at `node` (default: every inject node, else every tag-in node) and
    /// waits for all it causes to finish.
    pub async fn execute(&self, input: Value, node: Option<&str>) -> Result<FlowExecution, String> {
        let entries: Vec<&crate::flows::graph::Node> = match node {
            Some(id) => vec![self
                .flow
                .node(id)
                .ok_or_else(|| format!("flow `{}` has no node `{id}`", self.flow.name))?],
            None => {
                let injects: Vec<_> = self
                    .flow
                    .nodes
                    .iter()
                    .filter(|n| matches!(n.kind, NodeKind::Inject(_)))
                    .collect();
                if injects.is_empty() {
                    self.flow
                        .nodes
                        .iter()
                        .filter(|n| matches!(n.kind, NodeKind::TagIn(_)))
                        .collect()
                } else {
                    injects
                }
            }
        };
        if entries.is_empty() {
            return Err(format!(
                "flow `{}` has no inject or tag-in node; name the node to start at",
                self.flow.name
            ));
        }
        let started_dt = crate::time::now_rfc3339();
        let started = Instant::now();
        let trace = Arc::new(Trace::default());
        for entry in &entries {
            let topic = match &entry.kind {
                NodeKind::Inject(config) => config.topic.clone(),
                NodeKind::TagIn(config) => Some(config.topic.clone()),
                _ => None,
            };
            let msg = message(topic.as_deref(), input.clone());
            self.context
                .deliver(&entry.id, msg, "manual", 1, Some(&trace));
        }
        let finished = async {
            loop {
                let notified = trace.finished.notified();
                if trace.pending.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        };
        let timed_out = tokio::time::timeout(EXECUTE_WAIT, finished).await.is_err();
        let duration_ms = started.elapsed().as_millis() as u64;
        let debug = lock(&trace.debug).clone();
        let mut errors = lock(&trace.errors).clone();
        if timed_out {
            errors.push(format!("still running after {} s", EXECUTE_WAIT.as_secs()));
        }
        self.context
            .log_run(started_dt, "manual", duration_ms, &debug, &errors)
            .await;
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        Ok(FlowExecution {
            success: true,
            debug,
            duration_ms,
        })
    }
}

fn message(topic: Option<&str>, payload: Value) -> Msg {
    let mut msg = Msg::new();
    if let Some(topic) = topic {
        msg.insert("topic".into(), Value::String(topic.to_string()));
    }
    msg.insert("payload".into(), payload);
    msg
}

fn debug_line(entry: &Value) -> String {
    let label = entry["label"]
        .as_str()
        .or(entry["node"].as_str())
        .unwrap_or("debug");
    format!("{label}: {}", entry["msg"])
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Context {
    /// Queues a message for a node; a full inbox drops it (and says so in the log).
    fn deliver(&self, node: &str, msg: Msg, source: &str, depth: u32, trace: Option<&Arc<Trace>>) {
        if let Some(trace) = trace {
            trace.start();
        }
        let delivery = Delivery {
            node: node.to_string(),
            msg,
            source: source.to_string(),
            depth,
            trace: trace.cloned(),
        };
        if let Err(error) = self.inbox.try_send(delivery) {
            let delivery = match error {
                mpsc::error::TrySendError::Full(d) | mpsc::error::TrySendError::Closed(d) => d,
            };
            tracing::warn!(
                "flow `{}` of `{}` is {INBOX} messages behind; dropped one",
                self.flow.name,
                self.domain
            );
            if let Some(trace) = delivery.trace {
                lock(&trace.errors).push("the flow's inbox is full".into());
                trace.finish();
            }
        }
    }

    /// Logs one run: what reached debug nodes, and the node errors (none: a success).
    async fn log_run(
        &self,
        started_dt: String,
        trigger: &str,
        duration_ms: u64,
        debug: &[Value],
        errors: &[String],
    ) {
        let run = RunRecord {
            id: 0,
            name: self.flow.name.clone(),
            started_dt,
            trigger: trigger.to_string(),
            duration_ms,
            success: errors.is_empty(),
            error: (!errors.is_empty()).then(|| errors.join("; ")),
            logs: debug.iter().map(debug_line).collect(),
            output: None,
        };
        let logged = (self.domain.clone(), RunOwner::Flow, run);
        self.state.automation.run_log.send(logged);
    }

    /// Carries one delivery through the graph, breadth-first.
    async fn carry(self: &Arc<Self>, delivery: Delivery) {
        let started_dt = crate::time::now_rfc3339();
        let started = Instant::now();
        let trace = delivery.trace.clone();
        let origin = chain_origin(&self.origin, delivery.depth);
        let mut queue = VecDeque::from([(delivery.node, delivery.msg)]);
        let mut debug = Vec::new();
        let mut errors = Vec::new();
        while let Some((id, msg)) = queue.pop_front() {
            let Some(node) = self.flow.node(&id) else {
                continue;
            };
            match self.step(&id, &node.kind, msg, &origin, &mut debug).await {
                Ok(Step::Emit(outputs)) => {
                    for (port, msg) in outputs {
                        for target in node.wires.get(port).into_iter().flatten() {
                            queue.push_back((target.clone(), msg.clone()));
                        }
                    }
                }
                Ok(Step::Later(pause, msg)) => {
                    let targets: Vec<String> = node.wires.first().cloned().unwrap_or_default();
                    for target in targets {
                        self.deliver_later(
                            pause,
                            target,
                            msg.clone(),
                            &delivery.source,
                            delivery.depth,
                            trace.as_ref(),
                        );
                    }
                }
                Err(error) => errors.push(format!("node `{id}`: {error}")),
            }
        }
        // One carry of one message through the graph is one run, whether or not it is logged.
        crate::telemetry::get().run("flow", errors.is_empty(), started.elapsed());
        if let Some(trace) = &trace {
            lock(&trace.debug).extend(debug.iter().cloned());
            lock(&trace.errors).extend(errors.iter().cloned());
            trace.finish();
        } else if !debug.is_empty() || !errors.is_empty() {
            let duration_ms = started.elapsed().as_millis() as u64;
            self.log_run(started_dt, &delivery.source, duration_ms, &debug, &errors)
                .await;
        }
    }

    fn deliver_later(
        self: &Arc<Self>,
        pause: Duration,
        node: String,
        msg: Msg,
        source: &str,
        depth: u32,
        trace: Option<&Arc<Trace>>,
    ) {
        if let Some(trace) = trace {
            trace.start();
        }
        let (context, source, trace) = (Arc::clone(self), source.to_string(), trace.cloned());
        tokio::spawn(async move {
            tokio::time::sleep(pause).await;
            context.deliver(&node, msg, &source, depth, trace.as_ref());
            if let Some(trace) = trace {
                trace.finish();
            }
        });
    }

    async fn step(
        &self,
        id: &str,
        kind: &NodeKind,
        mut msg: Msg,
        origin: &Arc<str>,
        debug: &mut Vec<Value>,
    ) -> Result<Step, String> {
        let pass = |msg| Ok(Step::Emit(vec![(0, msg)]));
        match kind {
            NodeKind::TagIn(_) | NodeKind::Inject(_) => pass(msg),
            NodeKind::Switch(config) => Ok(Step::Emit(
                switch_ports(config, &msg)
                    .into_iter()
                    .map(|port| (port, msg.clone()))
                    .collect(),
            )),
            NodeKind::Change(config) => {
                apply_change(config, &mut msg)?;
                pass(msg)
            }
            NodeKind::Function(config) => {
                let output = self.run_js(config, msg.clone(), origin, debug, id).await?;
                Ok(Step::Emit(function_outputs(output, &msg)))
            }
            NodeKind::TagWrite(config) => {
                let topic = match (&config.topic, msg.get("topic")) {
                    (Some(topic), _) => topic.clone(),
                    (None, Some(Value::String(topic))) => topic.clone(),
                    _ => return Err("no topic: set `topic` in the node or in the message".into()),
                };
                let value = msg.get("payload").cloned().unwrap_or(Value::Null);
                publish_value(
                    &self.state,
                    &self.domain,
                    Arc::clone(origin),
                    &topic,
                    &value,
                    config.qos,
                    config.retain,
                )
                .await?;
                pass(msg)
            }
            NodeKind::RecordWrite(config) => {
                let table = user_table(&self.domain, &config.table)?;
                let fields = match msg.get("payload") {
                    Some(Value::Object(fields)) => fields.clone(),
                    other => {
                        let mut fields = serde_json::Map::new();
                        fields.insert("value".into(), other.cloned().unwrap_or(Value::Null));
                        if let Some(topic) = msg.get("topic") {
                            fields.insert("topic".into(), topic.clone());
                        }
                        fields
                    }
                };
                let record = insert_checked(&self.state, &table, crate::ids::new_key(), fields)
                    .await
                    .map_err(|e| e.message)?;
                msg.insert("payload".into(), record);
                pass(msg)
            }
            NodeKind::Delay(config) => Ok(self.delay(id, config, msg, debug)),
            NodeKind::Debug(config) => {
                debug.push(json!({"node": id, "label": config.label, "msg": Value::Object(msg)}));
                Ok(Step::Emit(Vec::new()))
            }
        }
    }

    fn delay(&self, id: &str, config: &DelayConfig, msg: Msg, debug: &mut Vec<Value>) -> Step {
        match config {
            DelayConfig::Delay { ms } => Step::Later(Duration::from_millis(*ms), msg),
            DelayConfig::Rate { count, per, drop } => {
                let now = Instant::now();
                let mut rates = lock(&self.rates);
                let rate = rates.entry(id.to_string()).or_default();
                if *drop {
                    let window_open = rate.window_start.is_some_and(|s| now < s + *per);
                    if !window_open {
                        rate.window_start = Some(now);
                        rate.passed = 0;
                    }
                    if rate.passed >= *count {
                        debug.push(json!({"node": id, "label": "dropped by rate limit", "msg": Value::Object(msg)}));
                        return Step::Emit(Vec::new());
                    }
                    rate.passed += 1;
                    Step::Emit(vec![(0, msg)])
                } else {
                    let slot = rate.next_free.map_or(now, |free| free.max(now));
                    rate.next_free = Some(slot + per.div_f64(*count as f64));
                    if slot <= now {
                        Step::Emit(vec![(0, msg)])
                    } else {
                        Step::Later(slot - now, msg)
                    }
                }
            }
        }
    }

    /// A function node: the message is the input; logs become debug output.
    async fn run_js(
        &self,
        config: &FunctionConfig,
        msg: Msg,
        origin: &Arc<str>,
        debug: &mut Vec<Value>,
        id: &str,
    ) -> Result<Value, String> {
        let limits = crate::functions::limits(config.timeout_ms, config.memory_mb);
        let _slot = self.state.automation.slots.acquire().await;
        let host = super::host::ServerHost::new(
            self.state.clone(),
            &self.domain,
            Arc::clone(origin),
            tokio::runtime::Handle::current(),
        );
        let code = config.code.clone();
        let result = super::run_blocking(super::RunPlace::InPlace, move || {
            engine::run(&Source::script(&code), &Value::Object(msg), &limits, &host)
                .map_err(|e| (e.explain(&limits), e.logs))
        })
        .await
        .map_err(|e| format!("the run was lost: {e}"))?;
        let (output, logs) = match result {
            Ok(outcome) => (Ok(outcome.output), outcome.logs),
            Err((error, logs)) => (Err(error), logs),
        };
        for line in logs {
            debug.push(json!({"node": id, "label": id, "msg": line}));
        }
        output
    }
}

/// A function node's result as messages per port: `null` → none; an object → port 0; an
/// array → one entry per port (each `null`, a message, or an array of messages); anything
/// else replaces the payload of the input message on port 0.
fn function_outputs(output: Value, input: &Msg) -> Vec<(usize, Msg)> {
    match output {
        Value::Null => Vec::new(),
        Value::Object(msg) => vec![(0, msg)],
        Value::Array(ports) => ports
            .into_iter()
            .enumerate()
            .flat_map(|(port, entry)| match entry {
                Value::Object(msg) => vec![(port, msg)],
                Value::Array(msgs) => msgs
                    .into_iter()
                    .filter_map(|m| match m {
                        Value::Object(msg) => Some((port, msg)),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .collect(),
        payload => {
            let mut msg = input.clone();
            msg.insert("payload".into(), payload);
            vec![(0, msg)]
        }
    }
}

async fn process(context: Arc<Context>, mut deliveries: mpsc::Receiver<Delivery>) {
    while let Some(delivery) = deliveries.recv().await {
        context.carry(delivery).await;
    }
}

async fn fire_inject(context: Arc<Context>, node: String, schedule: crate::schedule::Schedule) {
    let config = match context.flow.node(&node).map(|n| &n.kind) {
        Some(NodeKind::Inject(config)) => config.clone(),
        _ => return,
    };
    let leadership = context.state.peers.leadership();
    loop {
        let now = chrono::Utc::now();
        let Some(next) = schedule.next_after(now) else {
            return;
        };
        tokio::time::sleep((next - now).to_std().unwrap_or_default()).await;
        // One firing for all the instances sharing the store: the leader's.
        if !leadership.is_leader() {
            continue;
        }
        let payload = config
            .payload
            .clone()
            .unwrap_or_else(|| Value::String(crate::time::now_rfc3339()));
        let msg = message(config.topic.as_deref(), payload);
        context.deliver(&node, msg, &node, 1, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_results_become_messages_per_port() {
        let input: Msg = serde_json::from_value(json!({"topic": "t", "payload": 1})).unwrap();
        assert!(function_outputs(Value::Null, &input).is_empty());
        let out = function_outputs(json!(5), &input);
        assert_eq!(
            out,
            vec![(
                0,
                serde_json::from_value(json!({"topic": "t", "payload": 5})).unwrap()
            )]
        );
        let out = function_outputs(
            json!([null, {"payload": 2}, [{"payload": 3}, {"payload": 4}]]),
            &input,
        );
        let ports: Vec<usize> = out.iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [1, 2, 2]);
    }
}
