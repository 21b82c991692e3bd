//! The server's side of alarms. The broker's policy hands over every accepted value whose
//! topic an alarm watches (one set lookup for the rest), from MQTT, REST writes, flows,
//! processes, upstreams, connectors and Sparkplug alike, and peers hand over what the other
//! instances accepted; one task evaluates them in order, runs the alarms' timers, and carries
//! out each change: journal and state in one transaction, then `$SYS/svc/alarms/<domain>/<alarm>`
//! (retained while the alarm is not normal), the Server-Sent Events stream and the
//! notification pipelines.
//!
//! With several instances on one PostgreSQL the leading instance evaluates every alarm, once:
//! it sees every value (its own and those its peers relay), keeps every state in the store,
//! and tells the others each change, which they mirror for their readers. An operator's action
//! on another instance is sent to the leader and answered from the change it makes. A new
//! leader loads the states the last one kept.

mod evaluate;
mod mirror;
mod publish;

use crate::alarms::engine::{ActError, Engine};
use crate::alarms::health::{Health, HealthRules};
use crate::alarms::state::{Action, AlarmState};
use crate::alarms::{AlarmEvent, AlarmStatus, Definition, TABLE};
use crate::broker::Message;
use crate::server::error::{ApiError, ApiResult};
use crate::server::services::system_tables::records_of;
use crate::server::AppState;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use tokio::sync::{broadcast, mpsc, oneshot};

pub use mirror::on_peer_notice;

/// Batches of values waiting for the evaluating task before publishers wait (backpressure,
/// not loss).
const INBOX: usize = 1024;
/// Changes buffered for each Server-Sent Events client.
const STREAM_BUFFER: usize = 4096;

/// What the evaluating task takes.
enum Input {
    Values(Vec<Value>),
    /// An operator's action, answered once it is journaled and announced.
    Act(
        Box<ActRequest>,
        oneshot::Sender<Result<AlarmStatus, ActError>>,
    ),
    /// Answered once everything sent before it is carried out.
    Drain(oneshot::Sender<()>),
    /// A domain's definitions changed: read them again.
    Reload(String, oneshot::Sender<ApiResult<()>>),
}

/// A value of a watched topic.
struct Value {
    topic: String,
    payload: Bytes,
    received_ms: i64,
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

pub struct AlarmService {
    /// The engine: written by the evaluating task (or, on a follower, by the leader's
    /// notices), read by the routes.
    engine: Mutex<Engine>,
    /// Every topic an alarm watches or is enabled by: the broker's fast path (foldhash: looked
    /// up for every accepted message).
    watched: RwLock<Arc<foldhash::HashSet<String>>>,
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
            engine: Mutex::new(Engine::new(rules)),
            watched: RwLock::default(),
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
        tokio::spawn(evaluate::run(state.clone(), inbox));
        Ok(())
    }

    /// Hands the values among `messages` that an alarm watches to the evaluating task; waits
    /// while it is behind.
    pub async fn offer(&self, messages: &[Message]) {
        let values = {
            let watched = self.watched.read().unwrap_or_else(|e| e.into_inner());
            if watched.is_empty() {
                return;
            }
            messages
                .iter()
                .filter(|m| watched.contains(&m.topic))
                .map(|m| Value {
                    topic: m.topic.clone(),
                    payload: m.payload.clone(),
                    received_ms: m.received_ms,
                })
                .collect::<Vec<_>>()
        };
        if !values.is_empty() {
            // Closed only when the server stops.
            let _ = self.inbox.send(Input::Values(values)).await;
        }
    }

    /// [`AlarmService::offer`] for one message another instance accepted.
    pub async fn offer_relayed(&self, topic: &str, payload: &Bytes, received_ms: i64) {
        let wanted = {
            let watched = self.watched.read().unwrap_or_else(|e| e.into_inner());
            watched.contains(topic)
        };
        if wanted {
            let value = Value {
                topic: topic.to_string(),
                payload: payload.clone(),
                received_ms,
            };
            let _ = self.inbox.send(Input::Values(vec![value])).await;
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
        lock(&self.engine).standing(domain)
    }

    pub fn health(&self, domain: &str) -> Health {
        lock(&self.engine).health(domain, crate::time::now_ms())
    }

    /// Every domain with alarms, with its health (for `/metrics`).
    pub fn all_health(&self) -> Vec<(String, Health)> {
        let engine = lock(&self.engine);
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

    fn refresh_watched(&self, engine: &Engine) {
        let topics: foldhash::HashSet<String> = engine.topics().map(str::to_string).collect();
        *self.watched.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(topics);
    }
}

/// Re-reads `domain`'s `alarms` records into the engine (on the leading instance, through the
/// evaluating task, so the changes that brings are journaled and announced in order).
pub async fn reload_domain(state: &AppState, domain: &str) -> ApiResult<()> {
    let (done, reloaded) = oneshot::channel();
    if lock(&state.alarms.waiting).is_some() {
        return Ok(()); // not started yet: the start loads every domain
    }
    state
        .alarms
        .inbox
        .send(Input::Reload(domain.to_string(), done))
        .await
        .map_err(|_| ApiError::unavailable("svc is stopping"))?;
    reloaded
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
