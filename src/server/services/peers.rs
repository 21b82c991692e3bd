//! Instances sharing one store (several `svc serve` on one PostgreSQL) as one platform. Every
//! message this instance accepts reaches the MQTT subscribers, retained messages and last
//! values of the others, and a change to a domain's system table (tags, namespaces, upstreams,
//! functions, flows) here is brought in step there. Both travel as the store's notices (on
//! PostgreSQL a row and a `NOTIFY`), because the instances share nothing else; an engine with
//! one instance (SQLite) has no peers, and nothing is sent.
//!
//! A relayed message is the sender's to store and act on: it was historized, handed to
//! automation and carried upstream where it was published, so a peer only delivers it.
//!
//! Last values live in each instance's memory (they change too often to write each one): a
//! starting instance asks the others for theirs and keeps, per topic, the newest it hears.

use crate::broker::Message;
use crate::server::services::alarms;
use crate::server::services::system_tables::{self, SystemTable};
use crate::server::AppState;
use crate::store::interface::Cluster;
use crate::store::{on_blocking_pool, Leadership, PeerNotice, StoreResult};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The kind of a notice carrying accepted messages.
const MESSAGES: &str = "messages";
/// The kind of a notice saying a system table changed.
const CHANGED: &str = "changed";
/// The kind of a notice a starting instance sends: "tell me the last values you have".
const ASK_LAST_VALUES: &str = "ask-last-values";
/// The kind of the answer: every last value the sender has, as relayed messages.
const LAST_VALUES: &str = "last-values";
/// Messages waiting to be sent before new ones are dropped (and counted).
const OUTBOX: usize = 100_000;
/// Messages sent in one notice, at most.
const BATCH: usize = 1_000;

/// A message as it travels to the other instances.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Relayed {
    #[serde(rename = "t")]
    topic: String,
    /// The payload, base64 (notices are JSON).
    #[serde(rename = "p")]
    payload: String,
    #[serde(rename = "q")]
    qos: u8,
    #[serde(rename = "r")]
    retain: bool,
    #[serde(rename = "ms")]
    received_ms: i64,
}

impl Relayed {
    fn new(topic: String, payload: &[u8], qos: u8, retain: bool, received_ms: i64) -> Relayed {
        Relayed {
            topic,
            payload: BASE64.encode(payload),
            qos,
            retain,
            received_ms,
        }
    }

    /// The payload as it was published; `None` when the sender's base64 is unreadable.
    fn payload(&self) -> Option<Bytes> {
        BASE64.decode(&self.payload).ok().map(Bytes::from)
    }
}

/// Which system table of which domain changed.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Changed {
    domain: String,
    table: String,
}

/// This instance's side of talking to its peers.
pub struct Peers {
    cluster: Arc<dyn Cluster + Send + Sync>,
    outbox: mpsc::Sender<Relayed>,
    dropped: Arc<AtomicU64>,
}

impl Peers {
    /// Starts the task that sends accepted messages on, in batches.
    pub fn start(cluster: Arc<dyn Cluster + Send + Sync>) -> Peers {
        let (outbox, queue) = mpsc::channel(OUTBOX);
        let dropped = Arc::new(AtomicU64::new(0));
        tokio::spawn(send_messages(cluster.clone(), queue, dropped.clone()));
        Peers {
            cluster,
            outbox,
            dropped,
        }
    }

    /// Queues accepted messages for the other instances' subscribers (nothing when there are
    /// none). `$` topics are each broker's own and stay here.
    pub fn relay(&self, messages: &[Message]) {
        if !self.cluster.has_peers() {
            return;
        }
        for message in messages.iter().filter(|m| !m.topic.starts_with('$')) {
            let relayed = Relayed::new(
                message.topic.clone(),
                &message.payload,
                message.qos,
                message.retain,
                message.received_ms,
            );
            if self.outbox.try_send(relayed).is_err()
                && self.dropped.fetch_add(1, Ordering::Relaxed) == 0
            {
                tracing::warn!("the other instances fall behind; messages for them are dropped");
            }
        }
    }

    /// Whether another instance is alive on this store.
    pub fn has_peers(&self) -> bool {
        self.cluster.has_peers()
    }

    /// Sends a notice of another service (`kind` its own, such as `alarm-changes`) to the
    /// other instances.
    pub async fn notify(&self, kind: &'static str, body: Vec<u8>) -> StoreResult<()> {
        tell(&self.cluster, kind, body).await
    }

    /// Whether this instance is the one that runs what must run once for all instances.
    pub fn leadership(&self) -> Leadership {
        self.cluster.leadership()
    }

    /// Tells the other instances that `table` of `domain` changed, so they reload it. Sent
    /// whether or not another instance was seen yet: one that started a moment ago may not
    /// have been, and a change it misses stays missed. Changes are rare; the notice is cheap.
    pub async fn changed(&self, domain: &str, table: &dyn SystemTable) {
        let notice = Changed {
            domain: domain.to_string(),
            table: table.name().to_string(),
        };
        let Ok(body) = serde_json::to_vec(&notice) else {
            return;
        };
        if let Err(e) = tell(&self.cluster, CHANGED, body).await {
            tracing::warn!(error = %e, domain, "cannot tell the other instances of a change");
        }
    }
}

/// Sends a notice to the other instances, off the async threads (on PostgreSQL it is a
/// statement).
async fn tell(
    cluster: &Arc<dyn Cluster + Send + Sync>,
    kind: &'static str,
    body: Vec<u8>,
) -> StoreResult<()> {
    let cluster = cluster.clone();
    on_blocking_pool(move || cluster.tell_peers(kind, &body)).await?
}

async fn send_messages(
    cluster: Arc<dyn Cluster + Send + Sync>,
    mut queue: mpsc::Receiver<Relayed>,
    dropped: Arc<AtomicU64>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while queue.recv_many(&mut batch, BATCH).await > 0 {
        let body = serde_json::to_vec(&batch);
        let count = batch.len();
        batch.clear();
        let Ok(body) = body else { continue };
        match tell(&cluster, MESSAGES, body).await {
            Ok(()) => {
                let lost = dropped.swap(0, Ordering::Relaxed);
                if lost > 0 {
                    tracing::warn!(lost, "the other instances are reached again");
                }
            }
            Err(e) => {
                if dropped.fetch_add(count as u64, Ordering::Relaxed) == 0 {
                    tracing::warn!(error = %e, "cannot reach the other instances; messages for them are dropped");
                }
            }
        }
    }
}

/// Acts on what the other instances say, in the order they said it, for as long as the
/// server runs; asks them for the last values they have, which also tells them this instance
/// is there before it says it is ready.
pub async fn listen(state: &AppState) {
    let (heard, mut notices) = mpsc::unbounded_channel();
    state.peers.cluster.on_peer_notice(Arc::new(move |notice| {
        let _ = heard.send(notice);
    }));
    let acting = state.clone();
    tokio::spawn(async move {
        let state = acting;
        while let Some(notice) = notices.recv().await {
            match notice {
                PeerNotice::Heard { kind, body } if kind == MESSAGES => {
                    deliver(&state, &body).await;
                }
                PeerNotice::Heard { kind, .. } if kind == ASK_LAST_VALUES => {
                    tell_last_values(&state).await;
                }
                PeerNotice::Heard { kind, body } if kind == LAST_VALUES => {
                    take_last_values(&state, &body);
                }
                PeerNotice::Heard { kind, body } if kind == CHANGED => {
                    match serde_json::from_slice::<Changed>(&body) {
                        Ok(changed) => reload(&state, &changed).await,
                        Err(e) => tracing::warn!(error = %e, "an unreadable change notice"),
                    }
                }
                PeerNotice::Heard { kind, body }
                    if alarms::on_peer_notice(&state, &kind, &body).await => {}
                PeerNotice::Heard { kind, .. } => {
                    tracing::debug!(kind, "a notice of a kind this version does not know");
                }
                PeerNotice::MayHaveMissed => reload_everything(&state).await,
            }
        }
    });
    // Whoever is there answers; an instance alone (or on SQLite) hears nothing back.
    if let Err(e) = tell(&state.peers.cluster, ASK_LAST_VALUES, Vec::new()).await {
        tracing::warn!(error = %e, "cannot ask the other instances for their last values");
    }
}

/// Sends every last value this instance has to the others (one asked).
async fn tell_last_values(state: &AppState) {
    let values: Vec<Relayed> = state
        .uns
        .last_values
        .all()
        .into_iter()
        .map(|value| Relayed::new(value.topic, &value.payload, 0, false, value.received_ms))
        .collect();
    if values.is_empty() {
        return;
    }
    let Ok(body) = serde_json::to_vec(&values) else {
        return;
    };
    if let Err(e) = tell(&state.peers.cluster, LAST_VALUES, body).await {
        tracing::warn!(error = %e, "cannot send the last values to another instance");
    }
}

/// Keeps, of the last values another instance sent, those newer than this instance's.
fn take_last_values(state: &AppState, body: &[u8]) {
    let values: Vec<Relayed> = match serde_json::from_slice(body) {
        Ok(values) => values,
        Err(e) => {
            tracing::warn!(error = %e, "unreadable last values of another instance");
            return;
        }
    };
    for value in values {
        if let Some(payload) = value.payload() {
            state
                .uns
                .last_values
                .offer(&value.topic, value.received_ms, payload);
        }
    }
}

/// Hands messages another instance accepted to this instance's subscribers and last values.
async fn deliver(state: &AppState, body: &[u8]) {
    let batch: Vec<Relayed> = match serde_json::from_slice(body) {
        Ok(batch) => batch,
        Err(e) => {
            tracing::warn!(error = %e, "an unreadable message notice");
            return;
        }
    };
    let Ok(broker) = state.broker() else { return };
    for relayed in batch {
        let Some(payload) = relayed.payload() else {
            continue;
        };
        state
            .uns
            .last_values
            .set(&relayed.topic, relayed.received_ms, payload.clone());
        state
            .alarms
            .offer_relayed(state, &relayed.topic, &payload, relayed.received_ms);
        let delivered = broker
            .deliver_from_peer(
                &relayed.topic,
                payload,
                relayed.qos,
                relayed.retain,
                relayed.received_ms,
            )
            .await;
        if let Err(e) = delivered {
            tracing::warn!(topic = relayed.topic, error = %e, "cannot deliver a message of another instance");
        }
    }
}

async fn reload(state: &AppState, changed: &Changed) {
    let Some(table) = system_tables::named(&changed.table) else {
        return;
    };
    if let Err(e) = table.reload(state, &changed.domain).await {
        tracing::warn!(
            domain = changed.domain,
            error = e.message,
            "cannot reload what another instance changed"
        );
    }
}

/// Reloads every domain's system tables: what changed while notices went unheard.
async fn reload_everything(state: &AppState) {
    let domains = match state.domain_names().await {
        Ok(domains) => domains,
        Err(e) => {
            tracing::warn!(error = %e, "cannot reload what other instances changed");
            return;
        }
    };
    for domain in domains {
        for table in system_tables::ALL {
            if let Err(e) = table.reload(state, &domain).await {
                tracing::warn!(
                    domain,
                    error = e.message,
                    "cannot reload a domain's system table"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relayed_messages_read_back_as_sent() {
        let sent = vec![Relayed::new(
            "plant/line1/temp".into(),
            &[0, 255, 10],
            1,
            true,
            1_700_000_000_000,
        )];
        let body = serde_json::to_vec(&sent).unwrap();
        let read: Vec<Relayed> = serde_json::from_slice(&body).unwrap();
        assert_eq!(read, sent);
        assert_eq!(
            read[0].payload().unwrap(),
            Bytes::from_static(&[0, 255, 10])
        );
    }
}
