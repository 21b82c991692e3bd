//! The server's side of alarms. The broker's policy hands over every batch of accepted
//! messages, from MQTT, REST writes, flows, processes, upstreams, connectors and Sparkplug
//! alike, and peers hand over what the other instances accepted. With no alarm defined that
//! costs one atomic load; else a message costs one lookup of its topic in the engine's index,
//! and a watched value is evaluated at once, on the publisher's own task, under the engine's
//! lock (no hand-off to another thread per value). What changed is queued under the same lock,
//! so changes keep the engine's order, and one task wakes to carry them out:
//! `$SYS/svc/alarms/<domain>/<alarm>` (retained while the alarm is not normal), the
//! Server-Sent Events stream and the notification pipelines at once, then the journal and the
//! states through the journal writer. The same task runs the alarms' timers and the operators'
//! actions.
//!
//! With several instances on one PostgreSQL the leading instance evaluates every alarm, once:
//! it sees every value (its own and those its peers relay), keeps every state in the store,
//! and tells the others each change, which they mirror for their readers. An operator's action
//! on another instance is sent to the leader and answered from the change it makes. A new
//! leader loads the states the last one kept.

mod evaluate;
mod journal;
mod mirror;
mod publish;

use crate::alarms::condition::Sample;
use crate::alarms::engine::{ActError, Change, Engine, Watchers};
use crate::alarms::health::{Health, HealthRules};
use crate::alarms::state::{Action, AlarmState};
use crate::alarms::{AlarmEvent, AlarmStatus, Definition, TABLE};
use crate::broker::Message;
use crate::historian::payload::point_from_payload;
use crate::ids::RecordId;
use crate::server::error::{ApiError, ApiResult};
use crate::server::services::system_tables::records_of;
use crate::server::services::tag_registry::TagOwner;
use crate::server::AppState;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{broadcast, mpsc, oneshot};

pub use mirror::on_peer_notice;

/// Actions, reloads and drains waiting for the evaluating task.
const INBOX: usize = 1024;
/// Changes buffered for each Server-Sent Events client.
const STREAM_BUFFER: usize = 4096;

/// What the evaluating task takes besides the queued changes.
enum Input {
    /// An operator's action, answered once it is journaled and announced.
    Act(
        Box<ActRequest>,
        oneshot::Sender<Result<AlarmStatus, ActError>>,
    ),
    /// Answered once everything sent before it is carried out.
    Drain(oneshot::Sender<()>),
    /// A domain's definitions changed (on another instance, or while notices went unheard):
    /// read them all again.
    Reload(String, oneshot::Sender<ApiResult<()>>),
    /// One record of a domain's definitions (its id) was written or deleted here: apply it.
    Refresh(String, String, oneshot::Sender<ApiResult<()>>),
}

/// An operator's action on an alarm.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ActRequest {
    pub domain: String,
    pub alarm: String,
    pub action: ActionWire,
    pub who: String,
    pub comment: Option<String>,
}

/// [`Action`] as it travels to the leading instance.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum ActionWire {
    Acknowledge,
    Shelve { until_ms: i64, reason: String },
    Unshelve,
    OutOfService,
    InService,
}

impl ActionWire {
    fn action(&self) -> Action {
        match self {
            ActionWire::Acknowledge => Action::Acknowledge,
            ActionWire::Shelve { until_ms, reason } => Action::Shelve {
                until_ms: *until_ms,
                reason: reason.clone(),
            },
            ActionWire::Unshelve => Action::Unshelve,
            ActionWire::OutOfService => Action::OutOfService,
            ActionWire::InService => Action::InService,
        }
    }
}

/// The engine and the changes it made that are not carried out yet, under one lock.
struct Core {
    engine: Engine,
    pending: Vec<Change>,
}

pub struct AlarmService {
    /// Written by the publishers' tasks (values), the evaluating task (timers, actions,
    /// reloads) and, on a follower, the leader's notices; read by the routes.
    core: Mutex<Core>,
    /// Wakes the evaluating task: changes are pending, or a timer moved earlier.
    wake: tokio::sync::Notify,
    /// Whether any alarm is defined: the broker's fast path when none is.
    any: AtomicBool,
    inbox: mpsc::Sender<Input>,
    waiting: Mutex<Option<mpsc::Receiver<Input>>>,
    changes: broadcast::Sender<Arc<AlarmEvent>>,
    /// Actions sent to the leading instance, waiting for its answer.
    forwarded: Mutex<HashMap<u64, oneshot::Sender<Result<AlarmStatus, ApiError>>>>,
}

impl Default for AlarmService {
    fn default() -> AlarmService {
        AlarmService::new(HealthRules::default())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl AlarmService {
    pub fn new(rules: HealthRules) -> AlarmService {
        let (inbox, waiting) = mpsc::channel(INBOX);
        AlarmService {
            core: Mutex::new(Core {
                engine: Engine::new(rules),
                pending: Vec::new(),
            }),
            wake: tokio::sync::Notify::new(),
            any: AtomicBool::new(false),
            inbox,
            waiting: Mutex::new(Some(waiting)),
            changes: broadcast::channel(STREAM_BUFFER).0,
            forwarded: Mutex::default(),
        }
    }

    /// Loads every domain's alarms and their kept states, and starts the evaluating task.
    pub async fn start(state: &AppState) -> ApiResult<()> {
        let Some(inbox) = lock(&state.alarms.waiting).take() else {
            return Ok(());
        };
        evaluate::load_all(state).await?;
        let journal = journal::start(state.clone());
        tokio::spawn(evaluate::run(state.clone(), inbox, journal));
        Ok(())
    }

    /// Evaluates the values among `messages` that an alarm watches (on the leading instance);
    /// `owners` are their topics' owners, as the policy looked them up. The watched ones are
    /// found under the engine's lock, read with the lock let go (other publishers evaluate
    /// meanwhile), and evaluated under it again with the alarms found the first time.
    pub fn offer(&self, state: &AppState, messages: &[Message], owners: &[Option<TagOwner>]) {
        if !self.any.load(Ordering::Relaxed) {
            return;
        }
        let (generation, found) = {
            let core = lock(&self.core);
            let found: Vec<(usize, Watchers)> = messages
                .iter()
                .enumerate()
                .filter_map(|(i, m)| Some((i, core.engine.watchers(&m.topic)?)))
                .collect();
            (core.engine.generation(), found)
        };
        if found.is_empty() || !state.peers.leadership().is_leader() {
            return;
        }
        let values = found
            .into_iter()
            .filter_map(|(i, watchers)| {
                let m = &messages[i];
                let owner = owners.get(i).and_then(Option::as_ref);
                Some(Watched {
                    domain: state.uns.tags.domain_given(&m.topic, owner)?,
                    topic: &m.topic,
                    watchers: Some(watchers),
                    sample: sample_of(&m.payload, m.received_ms),
                })
            })
            .collect();
        self.evaluate(Some(generation), values);
    }

    /// [`AlarmService::offer`] for one message another instance accepted.
    pub fn offer_relayed(&self, state: &AppState, topic: &str, payload: &Bytes, received_ms: i64) {
        if !self.any.load(Ordering::Relaxed) || !state.peers.leadership().is_leader() {
            return;
        }
        if let Some(domain) = state.uns.tags.domain_of(topic) {
            let value = Watched {
                domain,
                topic,
                watchers: None,
                sample: sample_of(payload, received_ms),
            };
            self.evaluate(None, vec![value]);
        }
    }

    /// Evaluates `values`; their watchers hold if the engine is still at `generation`, else
    /// each is looked up again.
    fn evaluate(&self, generation: Option<u64>, values: Vec<Watched<'_>>) {
        let now = crate::time::now_ms();
        let mut core = lock(&self.core);
        let due = core.engine.next_due();
        let queued = core.pending.len();
        let current = generation == Some(core.engine.generation());
        for value in values {
            let changes = match (&value.watchers, current) {
                (Some(watchers), true) => {
                    core.engine
                        .on_watched(&value.domain, watchers, &value.sample, now)
                }
                _ => core
                    .engine
                    .on_value(&value.domain, value.topic, &value.sample, now),
            };
            core.pending.extend(changes);
        }
        let sooner = match (core.engine.next_due(), due) {
            (Some(after), Some(before)) => after < before,
            (after, before) => after.is_some() && before.is_none(),
        };
        let wake = core.pending.len() > queued || sooner;
        drop(core);
        if wake {
            self.wake.notify_one();
        }
    }

    /// Waits (at most `within`) until every value handed over so far is evaluated and its
    /// changes carried out.
    pub async fn drain(&self, within: std::time::Duration) {
        if lock(&self.waiting).is_some() {
            return;
        }
        let (done, drained) = oneshot::channel();
        let _ = tokio::time::timeout(within, async {
            if self.inbox.send(Input::Drain(done)).await.is_ok() {
                let _ = drained.await;
            }
        })
        .await;
    }

    /// Carries out an operator's action: on the leading instance here, else on the leader.
    pub async fn act(&self, state: &AppState, request: ActRequest) -> ApiResult<AlarmStatus> {
        if !state.peers.leadership().is_leader() {
            return mirror::forward(state, request).await;
        }
        let (answer, answered) = oneshot::channel();
        self.inbox
            .send(Input::Act(Box::new(request.clone()), answer))
            .await
            .map_err(|_| ApiError::unavailable("svc is stopping"))?;
        let result = answered
            .await
            .map_err(|_| ApiError::unavailable("svc is stopping"))?;
        result.map_err(|e| act_error(&request.alarm, e))
    }

    /// The alarms of `domain` that are not normal, most urgent and newest first.
    pub fn standing(&self, domain: &str) -> Vec<AlarmStatus> {
        lock(&self.core).engine.standing(domain)
    }

    pub fn health(&self, domain: &str) -> Health {
        lock(&self.core)
            .engine
            .health(domain, crate::time::now_ms())
    }

    /// Every domain with alarms, with its health (for `/metrics`).
    pub fn all_health(&self) -> Vec<(String, Health)> {
        let core = lock(&self.core);
        let engine = &core.engine;
        let now = crate::time::now_ms();
        engine
            .domains()
            .into_iter()
            .map(|d| {
                let health = engine.health(&d, now);
                (d, health)
            })
            .collect()
    }

    /// Alarm changes as they happen (every domain's; readers filter).
    pub fn watch(&self) -> broadcast::Receiver<Arc<AlarmEvent>> {
        self.changes.subscribe()
    }

    /// Keeps the fast path in step after the engine's alarms changed.
    fn engine_changed(&self, engine: &Engine) {
        self.any.store(!engine.is_empty(), Ordering::Relaxed);
    }
}

/// Re-reads `domain`'s `alarms` records into the engine (on the leading instance, through the
/// evaluating task, so the changes that brings are journaled and announced in order).
pub async fn reload_domain(state: &AppState, domain: &str) -> ApiResult<()> {
    ask(state, |done| Input::Reload(domain.to_string(), done)).await
}

/// Applies the `alarms` record `record` of `domain` just written or deleted (its id), as
/// [`reload_domain`] does the whole table.
pub async fn refresh_record(state: &AppState, domain: &str, record: &str) -> ApiResult<()> {
    ask(state, |done| {
        Input::Refresh(domain.to_string(), record.to_string(), done)
    })
    .await
}

/// Hands the evaluating task an input and waits for its answer (none before it started: the
/// start reads every domain).
async fn ask(
    state: &AppState,
    input: impl FnOnce(oneshot::Sender<ApiResult<()>>) -> Input,
) -> ApiResult<()> {
    if lock(&state.alarms.waiting).is_some() {
        return Ok(());
    }
    let (done, answered) = oneshot::channel();
    state
        .alarms
        .inbox
        .send(input(done))
        .await
        .map_err(|_| ApiError::unavailable("svc is stopping"))?;
    answered
        .await
        .map_err(|_| ApiError::unavailable("svc is stopping"))?
}

/// `domain`'s enabled and disabled alarm definitions, each with its tag's unit.
async fn definitions(
    state: &AppState,
    domain: &str,
) -> ApiResult<Vec<(Definition, Option<String>)>> {
    let units: HashMap<String, String> = state
        .uns
        .tags
        .tags(domain)
        .into_iter()
        .filter_map(|t| Some((t.path, t.unit?)))
        .collect();
    Ok(records_of(state, domain, TABLE)
        .await?
        .iter()
        .filter_map(Definition::from_record)
        .map(|d| {
            let unit = units.get(&d.tag).cloned();
            (d, unit)
        })
        .collect())
}

/// The definition stored as record `record` (an id) of `domain`, with its tag's unit; `None`
/// once deleted.
async fn definition(
    state: &AppState,
    domain: &str,
    record: &str,
) -> ApiResult<Option<(Definition, Option<String>)>> {
    let id = RecordId::parse(record).map_err(ApiError::internal)?;
    let stored = state.store.reads().get_record(&id.table, &id.key).await?;
    let Some(alarm) = stored.as_ref().and_then(Definition::from_record) else {
        return Ok(None);
    };
    let unit = state.uns.tags.unit_of(domain, &alarm.tag);
    Ok(Some((alarm, unit)))
}

/// A value an alarm watches, with the alarms found for its topic (`None`: look them up).
struct Watched<'a> {
    domain: Arc<str>,
    topic: &'a str,
    watchers: Option<Watchers>,
    sample: Sample,
}

/// A watched value as the engine takes it.
fn sample_of(payload: &[u8], received_ms: i64) -> Sample {
    let (ts_ms, value, quality) = point_from_payload(payload, received_ms);
    Sample {
        ts_ms,
        value,
        quality,
    }
}

/// The kept states of every alarm, by domain and name.
async fn stored_states(
    state: &AppState,
) -> ApiResult<HashMap<String, HashMap<String, AlarmState>>> {
    let rows = state.store.run(|s| s.alarm_states_load()).await?;
    let mut out: HashMap<String, HashMap<String, AlarmState>> = HashMap::new();
    for row in rows {
        let Some(parsed) = row
            .state
            .as_deref()
            .and_then(|s| serde_json::from_str::<AlarmState>(s).ok())
        else {
            tracing::warn!(
                domain = row.domain,
                alarm = row.alarm,
                "an unreadable alarm state is ignored"
            );
            continue;
        };
        out.entry(row.domain).or_default().insert(row.alarm, parsed);
    }
    Ok(out)
}

fn act_error(alarm: &str, error: ActError) -> ApiError {
    match error {
        ActError::NotFound => {
            ApiError::not_found(format!("no enabled alarm `{alarm}` in this domain"))
        }
        ActError::Conflict(why) => ApiError::conflict(why),
    }
}
