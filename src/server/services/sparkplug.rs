//! The server's side of the Sparkplug host: the broker's policy hands it every accepted
//! `spBv1.0/…` message of a domain that runs a host, in order, and one task applies them and
//! carries out what the host asks: declare the metrics' tags, publish their values (stored,
//! historized and delivered like any publish), historize `is_historical` metrics only, ask
//! nodes to rebirth, and keep every BIRTH retained under `$sparkplug/certificates/` (the
//! Sparkplug-aware broker). Writes to a metric's tag become NCMD/DCMD. The primary host's
//! `spBv1.0/STATE/<host id>` is announced by the leading instance, and turned offline when
//! the host is disabled or svc stops.
//!
//! svc publishes its Sparkplug messages as the host's domain (a [`Principal`] of that domain),
//! so a command or state topic nobody owns yet registers there and the domain's edge nodes,
//! which hold rights in it, receive it.

use crate::broker::{Message, Principal};
use crate::ids::ADMIN_DOMAIN;
use crate::server::error::{ApiError, ApiResult};
use crate::server::services::system_tables::{records_of, tags::declare_missing};
use crate::server::AppState;
use crate::sparkplug::session::Update;
use crate::sparkplug::{
    CommandError, Handled, Host, HostConfig, SparkplugTopic, CERTIFICATES, NAMESPACE, TABLE,
};
use crate::store::HistoryWrite;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot};

/// The `origin` of what the host publishes: its own messages are not fed back to it.
const ORIGIN: &str = "sparkplug";
/// Messages waiting for the host's task before publishers wait (backpressure, not loss).
const INBOX: usize = 1024;
/// The most messages the task takes at once.
const BATCH: usize = 256;
/// The most metric values gathered before they are published and historized (so a batch of
/// large NDATA stays well under the historian's queue limits and its memory stays small).
const MAX_VALUES: usize = 16_384;
/// The suffix of a Sparkplug-derived tag's write topic.
const WRITE_SUFFIX: &str = "/set";

/// What the host's task takes: a message, or a request to finish what came before.
enum Incoming {
    Message(Received),
    /// Answered once every message sent before it is applied and carried out.
    Drain(oneshot::Sender<()>),
}

/// A message for the host.
struct Received {
    domain: String,
    topic: String,
    payload: Bytes,
    received_ms: i64,
}

pub struct Sparkplug {
    pub host: Arc<Host>,
    inbox: mpsc::Sender<Incoming>,
    waiting: Mutex<Option<mpsc::Receiver<Incoming>>>,
    /// The STATE each primary host announced online: (domain, host id) → its timestamp.
    announced: Mutex<BTreeMap<(String, String), u64>>,
}

impl Default for Sparkplug {
    fn default() -> Sparkplug {
        let (inbox, waiting) = mpsc::channel(INBOX);
        Sparkplug {
            host: Arc::default(),
            inbox,
            waiting: Mutex::new(Some(waiting)),
            announced: Mutex::default(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sparkplug {
    /// Starts the task that applies the messages (once the state exists).
    pub fn start(state: &AppState) {
        let Some(inbox) = lock(&state.sparkplug.waiting).take() else {
            return;
        };
        tokio::spawn(apply_all(state.clone(), inbox));
        let state = state.clone();
        // The leading instance announces the primary hosts; a new leader does it again.
        tokio::spawn(async move {
            let leadership = state.peers.leadership();
            loop {
                leadership.until(true).await;
                announce(&state).await;
                leadership.until(false).await;
                lock(&state.sparkplug.announced).clear();
            }
        });
    }

    /// Hands `message` to the host when it is a Sparkplug message of a domain that runs one
    /// (`domain`: the topic's owner, else its publisher's), or a BIRTH of any domain (the
    /// Sparkplug-aware broker keeps them all). Waits while the host is behind.
    pub async fn offer(&self, domain: Option<&str>, message: &Message) {
        if !message.topic.starts_with(NAMESPACE) || message.origin.as_deref() == Some(ORIGIN) {
            return;
        }
        let domain = domain
            .or_else(|| message.publisher.as_ref()?.domain.as_deref())
            .unwrap_or(ADMIN_DOMAIN);
        if !self.host.serves(domain) && !is_birth(&message.topic) {
            return;
        }
        let incoming = Incoming::Message(Received {
            domain: domain.to_string(),
            topic: message.topic.clone(),
            payload: message.payload.clone(),
            received_ms: message.received_ms,
        });
        // Closed only when the server stops.
        let _ = self.inbox.send(incoming).await;
    }

    /// Waits (at most `within`) until every message handed to the host so far is applied and
    /// its values stored: svc stopping calls it once the broker is closed, before the
    /// historian stops, so nothing the edge nodes sent is dropped on the way.
    pub async fn drain(&self, within: std::time::Duration) {
        if lock(&self.waiting).is_some() {
            return; // never started: nothing to drain
        }
        let (done, drained) = oneshot::channel();
        let asked = self.inbox.send(Incoming::Drain(done));
        if tokio::time::timeout(within, async {
            if asked.await.is_ok() {
                let _ = drained.await;
            }
        })
        .await
        .is_err()
        {
            tracing::warn!("the Sparkplug host did not finish its messages before svc stopped");
        }
    }

    /// The tag a write topic (`<tag>/set`) writes to, when that tag is a metric's.
    pub fn write_topic(&self, domain: &str, topic: &str) -> Option<String> {
        let tag = topic.strip_suffix(WRITE_SUFFIX)?;
        self.host.writes_to(domain, tag).then(|| tag.to_string())
    }
}

/// Re-reads `domain`'s `sparkplug` records into the host and announces or withdraws its
/// primary hosts' STATE.
pub async fn reload_domain(state: &AppState, domain: &str) -> ApiResult<()> {
    let configs: Vec<HostConfig> = records_of(state, domain, TABLE)
        .await?
        .iter()
        .filter_map(|record| HostConfig::from_record(domain, record))
        .collect();
    state.sparkplug.host.set_domain(domain, configs);
    if state.peers.leadership().is_leader() {
        announce(state).await;
    }
    Ok(())
}

/// Publishes STATE online for every enabled primary host not announced yet, and offline for
/// those announced that are gone, disabled or renamed.
async fn announce(state: &AppState) {
    let wanted: BTreeMap<(String, String), ()> = state
        .sparkplug
        .host
        .configs()
        .into_iter()
        .filter_map(|c| Some(((c.domain.clone(), c.host_id.clone()?), ())))
        .collect();
    let (online, offline) = {
        let mut announced = lock(&state.sparkplug.announced);
        let offline: Vec<((String, String), u64)> = announced
            .iter()
            .filter(|(key, _)| !wanted.contains_key(*key))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        for (key, _) in &offline {
            announced.remove(key);
        }
        let now = u64::try_from(crate::time::now_ms()).unwrap_or(0);
        let online: Vec<((String, String), u64)> = wanted
            .keys()
            .filter(|key| !announced.contains_key(*key))
            .map(|key| (key.clone(), now))
            .collect();
        announced.extend(online.iter().cloned());
        (online, offline)
    };
    for ((domain, host_id), at) in offline {
        publish_state(state, &domain, &host_id, false, at).await;
    }
    for ((domain, host_id), at) in online {
        publish_state(state, &domain, &host_id, true, at).await;
    }
}

/// Publishes STATE offline for every announced primary host (svc is stopping): what a will
/// would say, said while subscribers are still connected.
pub async fn withdraw_all(state: &AppState) {
    let announced = std::mem::take(&mut *lock(&state.sparkplug.announced));
    for ((domain, host_id), at) in announced {
        publish_state(state, &domain, &host_id, false, at).await;
    }
}

/// Sparkplug 3.0's STATE: retained, QoS 1, `{"online", "timestamp"}`; the offline message
/// carries the timestamp of the online one it ends.
async fn publish_state(state: &AppState, domain: &str, host_id: &str, online: bool, at: u64) {
    let payload = json!({"online": online, "timestamp": at}).to_string();
    let topic = SparkplugTopic::state(host_id);
    if let Err(e) = publish(state, domain, &topic, payload.into_bytes(), 1, true).await {
        tracing::warn!(domain, host_id, error = %e, "cannot publish the Sparkplug host's STATE");
    }
}

/// Publishes one of the host's own messages as `domain`.
async fn publish(
    state: &AppState,
    domain: &str,
    topic: &str,
    payload: Vec<u8>,
    qos: u8,
    retain: bool,
) -> Result<(), String> {
    let broker = state.broker.get().ok_or("the MQTT broker is not running")?;
    let publisher = Arc::new(Principal {
        user_key: String::new(),
        admin: false,
        api_key_id: None,
        domain: Some(domain.to_string()),
    });
    broker
        .publish_as(ORIGIN.into(), publisher, topic, payload.into(), qos, retain)
        .await
        .map_err(|e| e.to_string())
}

/// Sends `value` to the metric behind `tag` of `domain` as an NCMD or DCMD; `None` when no
/// BIRTH declared that tag. 400 when the value does not fit the metric's datatype, 503 when
/// the node or device is offline (Sparkplug commands are not acknowledged: 200 means sent).
pub async fn write(
    state: &AppState,
    domain: &str,
    tag: &str,
    value: &Value,
) -> Option<ApiResult<()>> {
    let command = state.sparkplug.host.command(domain, tag, value)?;
    Some(match command {
        Ok((topic, payload)) => publish(state, domain, &topic, payload, 0, false)
            .await
            .map_err(ApiError::unavailable),
        Err(CommandError::Invalid(why)) => Err(ApiError::bad_request(why)),
        Err(CommandError::Offline(why)) => Err(ApiError::unavailable(why)),
    })
}

/// Applies the messages as they come, a batch at a time, until the server stops. What a
/// batch asks for is carried out every [`MAX_VALUES`] values (an NDATA may hold thousands of
/// metrics: a batch of messages is no measure of its size), and when a drain asks.
async fn apply_all(state: AppState, mut inbox: mpsc::Receiver<Incoming>) {
    let mut batch = Vec::with_capacity(BATCH);
    while inbox.recv_many(&mut batch, BATCH).await > 0 {
        let mut work = Work::default();
        for incoming in batch.drain(..) {
            let incoming = match incoming {
                Incoming::Message(message) => message,
                Incoming::Drain(done) => {
                    std::mem::take(&mut work).carry_out(&state).await;
                    let _ = done.send(());
                    continue;
                }
            };
            if is_birth(&incoming.topic) {
                work.certify(&incoming);
            }
            let handled = state.sparkplug.host.handle(
                &incoming.domain,
                &incoming.topic,
                &incoming.payload,
                incoming.received_ms,
            );
            if let Some(handled) = handled {
                work.add(&incoming, handled);
            }
            if work.values.len() + work.historical.len() >= MAX_VALUES {
                std::mem::take(&mut work).carry_out(&state).await;
            }
        }
        work.carry_out(&state).await;
    }
}

/// What a batch of messages asks for, gathered so each kind is one call.
#[derive(Default)]
struct Work {
    declarations: HashMap<String, Vec<Map<String, Value>>>,
    /// Live values by domain, in arrival order.
    values: Vec<Update>,
    historical: Vec<HistoryWrite>,
    /// (domain, topic, payload, qos, retain)
    publishes: Vec<(String, String, Vec<u8>, u8, bool)>,
}

impl Work {
    /// Keeps a BIRTH retained under `$sparkplug/certificates/` (its owner's to read, as the
    /// BIRTH is).
    fn certify(&mut self, incoming: &Received) {
        let copy = format!("{CERTIFICATES}{}", incoming.topic);
        let payload = incoming.payload.to_vec();
        self.publishes
            .push((incoming.domain.clone(), copy, payload, 1, true));
    }

    fn add(&mut self, incoming: &Received, handled: Handled) {
        let Handled { outcome, rebirth } = handled;
        let domain = &incoming.domain;
        for declaration in outcome.declarations {
            let mut fields = Map::new();
            fields.insert("path".into(), json!(declaration.tag));
            fields.insert("historize".into(), json!(declaration.historize));
            fields.insert("description".into(), json!(declaration.description));
            if let Some(unit) = declaration.unit {
                fields.insert("unit".into(), json!(unit));
            }
            self.declarations
                .entry(domain.clone())
                .or_default()
                .push(fields);
        }
        for update in outcome.updates {
            if update.historical {
                self.historical.push(HistoryWrite {
                    domain: domain.clone(),
                    topic: update.tag,
                    ts_ms: update.ts_ms,
                    value: update.value,
                    quality: update.quality,
                });
            } else {
                self.values.push(update);
            }
        }
        if let Some((topic, payload)) = rebirth {
            self.publishes
                .push((domain.clone(), topic, payload, 0, false));
        }
        for problem in outcome.problems {
            tracing::debug!(
                domain,
                topic = incoming.topic,
                problem,
                "a Sparkplug message was not read whole"
            );
        }
    }

    async fn carry_out(self, state: &AppState) {
        for (domain, tags) in self.declarations {
            if let Err(e) = declare_missing(state, &domain, tags).await {
                tracing::warn!(domain, error = %e.message, "cannot declare Sparkplug metrics' tags");
            }
        }
        if !self.values.is_empty() {
            publish_values(state, self.values).await;
        }
        let historical: Vec<HistoryWrite> = self
            .historical
            .into_iter()
            .filter(|w| {
                state
                    .uns
                    .tags
                    .owner(&w.topic)
                    .is_some_and(|o| o.historize && *o.domain == *w.domain)
            })
            .collect();
        if !historical.is_empty() {
            if let Err(e) = state.uns.historian.commit_many(historical).await {
                tracing::warn!(error = %e, "cannot historize Sparkplug historical metrics");
            }
        }
        for (domain, topic, payload, qos, retain) in self.publishes {
            if let Err(e) = publish(state, &domain, &topic, payload, qos, retain).await {
                tracing::warn!(domain, topic, error = %e, "cannot publish for the Sparkplug host");
            }
        }
    }
}

fn is_birth(topic: &str) -> bool {
    matches!(
        SparkplugTopic::parse(topic),
        Some(SparkplugTopic::Edge {
            verb: crate::sparkplug::topic::Verb::NBirth | crate::sparkplug::topic::Verb::DBirth,
            ..
        })
    )
}

/// Publishes metric values as their tags' messages `{"value","timestamp","quality"}`, QoS 1
/// (historized ones are stored before the call returns), in one batch.
async fn publish_values(state: &AppState, values: Vec<Update>) {
    let Some(broker) = state.broker.get() else {
        return;
    };
    let messages: Vec<(String, Bytes)> = values
        .into_iter()
        .map(|update| {
            let payload = crate::historian::payload::TagMessage::new(
                &update.value,
                update.ts_ms,
                update.quality,
            );
            (update.tag, payload.to_bytes())
        })
        .collect();
    if let Err(e) = broker
        .publish_batch(Some(ORIGIN.into()), messages, 1, false)
        .await
    {
        tracing::warn!(error = %e, "Sparkplug metrics' values were not stored");
    }
}
