//! Instances sharing one store (several `svc serve` on one PostgreSQL) as one platform. Every
//! message this instance accepts reaches the MQTT subscribers, retained messages and last
//! values of the others, and a change to a domain's system table (tags, namespaces, upstreams,
//! functions, flows) here is brought in step there. Both travel as the store's notices (on
//! PostgreSQL a row and a `NOTIFY`), because the instances share nothing else; an engine with
//! one instance (SQLite) has no peers, and nothing is sent.
//!
//! A relayed message is the sender's to store and act on: it was historized, handed to
//! automation and carried upstream where it was published, so a peer only delivers it.

use super::system_tables::SystemTable;
use super::AppState;
use crate::broker::Message;
use crate::ids::ADMIN_DOMAIN;
use crate::store::{PeerNotice, Store};
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

/// Which system table of which domain changed.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Changed {
    domain: String,
    table: String,
}

/// This instance's side of talking to its peers.
pub struct Peers {
    store: Store,
    outbox: mpsc::Sender<Relayed>,
    dropped: Arc<AtomicU64>,
}

impl Peers {
    /// Starts the task that sends accepted messages on, in batches.
    pub fn start(store: Store) -> Peers {
        let (outbox, queue) = mpsc::channel(OUTBOX);
        let dropped = Arc::new(AtomicU64::new(0));
        tokio::spawn(send_messages(store.clone(), queue, dropped.clone()));
        Peers {
            store,
            outbox,
            dropped,
        }
    }

    /// Queues accepted messages for the other instances' subscribers (nothing when there are
    /// none). `$` topics are each broker's own and stay here.
    pub fn relay(&self, messages: &[Message]) {
        if !self.store.has_peers() {
            return;
        }
        for message in messages.iter().filter(|m| !m.topic.starts_with('$')) {
            let relayed = Relayed {
                topic: message.topic.clone(),
                payload: BASE64.encode(&message.payload),
                qos: message.qos,
                retain: message.retain,
                received_ms: message.received_ms,
            };
            if self.outbox.try_send(relayed).is_err()
                && self.dropped.fetch_add(1, Ordering::Relaxed) == 0
            {
                tracing::warn!("the other instances fall behind; messages for them are dropped");
            }
        }
    }

    /// Tells the other instances that `table` of `domain` changed, so they reload it.
    pub async fn changed(&self, domain: &str, table: SystemTable) {
        if !self.store.has_peers() {
            return;
        }
        let notice = Changed {
            domain: domain.to_string(),
            table: table.name().to_string(),
        };
        let Ok(body) = serde_json::to_vec(&notice) else {
            return;
        };
        if let Err(e) = self.store.run(move |s| s.tell_peers(CHANGED, &body)).await {
            tracing::warn!(error = %e, domain, "cannot tell the other instances of a change");
        }
    }
}

async fn send_messages(store: Store, mut queue: mpsc::Receiver<Relayed>, dropped: Arc<AtomicU64>) {
    let mut batch = Vec::with_capacity(BATCH);
    while queue.recv_many(&mut batch, BATCH).await > 0 {
        let body = serde_json::to_vec(&batch);
        let count = batch.len();
        batch.clear();
        let Ok(body) = body else { continue };
        match store.run(move |s| s.tell_peers(MESSAGES, &body)).await {
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
/// server runs.
pub fn listen(state: &AppState) {
    let (heard, mut notices) = mpsc::unbounded_channel();
    state.store.on_peer_notice(Arc::new(move |notice| {
        let _ = heard.send(notice);
    }));
    let state = state.clone();
    tokio::spawn(async move {
        while let Some(notice) = notices.recv().await {
            match notice {
                PeerNotice::Heard { kind, body } if kind == MESSAGES => {
                    deliver(&state, &body).await;
                }
                PeerNotice::Heard { kind, body } if kind == CHANGED => {
                    match serde_json::from_slice::<Changed>(&body) {
                        Ok(changed) => reload(&state, &changed).await,
                        Err(e) => tracing::warn!(error = %e, "an unreadable change notice"),
                    }
                }
                PeerNotice::Heard { kind, .. } => {
                    tracing::debug!(kind, "a notice of a kind this version does not know");
                }
                PeerNotice::MayHaveMissed => reload_everything(&state).await,
            }
        }
    });
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
        let Ok(payload) = BASE64.decode(&relayed.payload).map(Bytes::from) else {
            continue;
        };
        state
            .last_values
            .set(&relayed.topic, relayed.received_ms, payload.clone());
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
    let Some(table) = SystemTable::named(&changed.table) else {
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
    let mut domains: Vec<String> = match state.store.run(|s| s.list_domains()).await {
        Ok(domains) => domains.into_iter().map(|d| d.name).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot reload what other instances changed");
            return;
        }
    };
    domains.push(ADMIN_DOMAIN.to_string());
    domains.sort();
    domains.dedup();
    for domain in domains {
        for table in SystemTable::ALL {
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
        let sent = vec![Relayed {
            topic: "plant/line1/temp".into(),
            payload: BASE64.encode([0u8, 255, 10]),
            qos: 1,
            retain: true,
            received_ms: 1_700_000_000_000,
        }];
        let body = serde_json::to_vec(&sent).unwrap();
        let read: Vec<Relayed> = serde_json::from_slice(&body).unwrap();
        assert_eq!(read, sent);
        assert_eq!(BASE64.decode(&read[0].payload).unwrap(), [0u8, 255, 10]);
    }
}
