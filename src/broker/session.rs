//! A client's session: its subscriptions, the deliveries in flight to it and those waiting,
//! bounded by the session's window and queue limits. It outlives its connection when the
//! client asked for a persistent session; what must survive a restart is handed to the
//! store as writes the caller commits.

use super::publication::{qos_of, Delivery, Publication};
use super::writer::{Outbound, Outbox};
use super::Principal;
use crate::store::{MqttWrite, StoredMessage};
use bytestring::ByteString;
use rmqtt_codec::types::QoS;
use rmqtt_codec::v5::{Packet, PublishAck2};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::num::NonZeroU16;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// The broker's limits (settings `mqtt_max_inflight`, `mqtt_max_queue`, …).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Deliveries in flight per session, and the Receive Maximum the server announces.
    pub max_inflight: u16,
    /// Deliveries waiting per session (offline, or behind a full window).
    pub max_queue: usize,
    pub max_packet_size: u32,
    pub max_keepalive: u16,
    /// Expiry of MQTT 3.1.1 persistent sessions, and the most an MQTT 5 client may ask for.
    pub session_expiry_secs: u32,
    /// Topic aliases a client may use (Topic Alias Maximum in CONNACK).
    pub topic_alias_max: u16,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_inflight: 128,
            max_queue: 100_000,
            max_packet_size: 1024 * 1024,
            max_keepalive: 65_535,
            session_expiry_secs: 2 * 60 * 60,
            topic_alias_max: 64,
        }
    }
}

/// The key of the session `user_key` holds under `client_id` (user keys never contain `|`).
pub fn session_key(user_key: &str, client_id: &str) -> Arc<str> {
    format!("{user_key}|{client_id}").into()
}

/// A subscription's options, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubOptions {
    pub qos: u8,
    pub no_local: bool,
    pub retain_as_published: bool,
    pub retain_handling: u8,
    pub id: Option<u32>,
}

/// Why the server ends a connection.
#[derive(Debug, Clone, Copy)]
pub enum Kick {
    TakenOver,
    NotAuthorized,
    ShuttingDown,
}

/// The connection a session is attached to.
pub struct Link {
    pub id: u64,
    pub outbox: Outbox,
    /// The client's Receive Maximum.
    pub receive_max: u16,
    /// The client's Maximum Packet Size (0: no limit).
    pub max_packet: u32,
    pub kick: Option<oneshot::Sender<Kick>>,
    /// What a bridge (another svc) announced in its CONNECT; `None` for every other client.
    pub bridge: Option<Box<super::Bridge>>,
}

struct Waiting {
    delivery: Delivery,
    seq: i64,
}

struct InFlight {
    delivery: Delivery,
    seq: i64,
    /// QoS 2: PUBREC arrived, PUBREL sent, waiting for PUBCOMP.
    released: bool,
}

pub struct SessionState {
    pub principal: Principal,
    pub link: Option<Link>,
    pub subscriptions: HashMap<String, SubOptions>,
    /// 0 for a session that ends with its connection.
    pub expiry_secs: u32,
    pub disconnected_at_ms: Option<i64>,
    /// Counts attachments, so a delayed will knows whether its client came back.
    pub epoch: u64,
    /// Packet ids of QoS 2 publishes received and not yet released.
    pub inbound_qos2: HashSet<u16>,
    inflight: BTreeMap<u16, InFlight>,
    queue: VecDeque<Waiting>,
    next_packet_id: u16,
    next_seq: i64,
    authz: HashMap<ByteString, bool>,
    authz_generation: u64,
    dropped: u64,
}

pub struct Session {
    /// `<user key>|<client id>`: a session belongs to the user who connected with the client
    /// id, so the same client id under another user is another session. It names the session
    /// in the store and in logs, and is the sender No Local compares.
    pub key: Arc<str>,
    online: AtomicBool,
    state: Mutex<SessionState>,
}

/// Decisions cached per session before the cache starts over.
const AUTHZ_CACHE: usize = 10_000;

impl Session {
    pub fn new(key: Arc<str>, principal: Principal) -> Session {
        Session {
            key,
            online: AtomicBool::new(false),
            state: Mutex::new(SessionState {
                principal,
                link: None,
                subscriptions: HashMap::new(),
                expiry_secs: 0,
                disconnected_at_ms: None,
                epoch: 0,
                inbound_qos2: HashSet::new(),
                inflight: BTreeMap::new(),
                queue: VecDeque::new(),
                next_packet_id: 1,
                next_seq: 1,
                authz: HashMap::new(),
                authz_generation: 0,
                dropped: 0,
            }),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn is_online(&self) -> bool {
        self.online.load(Ordering::Relaxed)
    }

    pub fn set_online(&self, online: bool) {
        self.online.store(online, Ordering::Relaxed);
    }

    pub fn persistent(state: &SessionState) -> bool {
        state.expiry_secs > 0
    }

    /// A cached authorization decision for receiving on `topic`.
    pub fn cached_receive(&self, topic: &ByteString, generation: u64) -> Option<bool> {
        let state = self.lock();
        if state.authz_generation != generation {
            return None;
        }
        state.authz.get(topic).copied()
    }

    pub fn remember_receive(&self, topic: &ByteString, generation: u64, allowed: bool) {
        let mut state = self.lock();
        if state.authz_generation != generation || state.authz.len() >= AUTHZ_CACHE {
            state.authz.clear();
            state.authz_generation = generation;
        }
        state.authz.insert(topic.clone(), allowed);
    }

    /// Hands a delivery to the session: straight to the client when it is online and its
    /// window has room, else to the queue. Persistent sessions record QoS 1/2 deliveries.
    pub fn deliver(&self, delivery: Delivery, limits: &Limits, writes: &mut Vec<MqttWrite>) {
        let mut state = self.lock();
        if let Some(link) = &state.link {
            if link.max_packet != 0
                && delivery.publication.encoded_size_estimate() > link.max_packet as usize
            {
                return;
            }
        }
        if delivery.qos == QoS::AtMostOnce {
            if let Some(link) = &state.link {
                if link.outbox.backlog() < limits.max_queue {
                    link.outbox.send(Outbound::Deliver {
                        delivery,
                        packet_id: None,
                        dup: false,
                    });
                } else {
                    state.note_drop(&self.key, "its connection is too far behind");
                }
            }
            return;
        }
        if state.queue.len() >= limits.max_queue {
            state.note_drop(&self.key, "its queue is full");
            return;
        }
        let seq = state.next_seq;
        state.next_seq += 1;
        if Session::persistent(&state) {
            writes.push(MqttWrite::Enqueue {
                client_id: self.key.to_string(),
                seq,
                message: stored(&delivery),
            });
        }
        state.queue.push_back(Waiting { delivery, seq });
        state.pump(limits, &self.key, writes);
    }

    /// PUBACK (QoS 1) or PUBCOMP (QoS 2) from the client.
    pub fn completed(&self, packet_id: u16, limits: &Limits, writes: &mut Vec<MqttWrite>) {
        let mut state = self.lock();
        if let Some(done) = state.inflight.remove(&packet_id) {
            if Session::persistent(&state) {
                writes.push(MqttWrite::Dequeue {
                    client_id: self.key.to_string(),
                    seq: done.seq,
                });
            }
        }
        state.pump(limits, &self.key, writes);
    }

    /// PUBREC from the client: answer PUBREL. False when the packet id is unknown. A
    /// persistent session records it, so after a restart it releases rather than resends.
    pub fn received(&self, packet_id: NonZeroU16, writes: &mut Vec<MqttWrite>) -> bool {
        let mut state = self.lock();
        let persistent = Session::persistent(&state);
        let Some(flight) = state.inflight.get_mut(&packet_id.get()) else {
            return false;
        };
        flight.released = true;
        if persistent {
            writes.push(MqttWrite::SetDelivery {
                client_id: self.key.to_string(),
                seq: flight.seq,
                packet_id: Some(packet_id.get()),
                state: 2,
            });
        }
        if let Some(link) = &state.link {
            link.outbox.send(release(packet_id));
        }
        true
    }

    /// After a (re)connect: resend what was in flight (DUP set, PUBREL for released QoS 2),
    /// then fill the window from the queue.
    pub fn resume(&self, limits: &Limits, writes: &mut Vec<MqttWrite>) {
        let mut state = self.lock();
        if let Some(link) = &state.link {
            for (&id, flight) in &state.inflight {
                let Some(packet_id) = NonZeroU16::new(id) else {
                    continue;
                };
                let item = if flight.released {
                    release(packet_id)
                } else {
                    Outbound::Deliver {
                        delivery: flight.delivery.clone(),
                        packet_id: Some(packet_id),
                        dup: true,
                    }
                };
                link.outbox.send(item);
            }
        }
        state.pump(limits, &self.key, writes);
    }

    /// Puts back what a restart found in the store: queued deliveries in order, and QoS 2
    /// deliveries the client had received (PUBREC) under their packet id.
    pub fn restore(&self, queued: Vec<(i64, Delivery, Option<u16>)>) {
        let mut state = self.lock();
        for (seq, delivery, released) in queued {
            state.next_seq = state.next_seq.max(seq + 1);
            match released {
                Some(packet_id) => {
                    let flight = InFlight {
                        delivery,
                        seq,
                        released: true,
                    };
                    state.inflight.insert(packet_id, flight);
                }
                None => state.queue.push_back(Waiting { delivery, seq }),
            }
        }
    }

    /// Forgets deliveries and subscriptions (a clean start over an old session).
    pub fn reset(state: &mut SessionState) {
        state.subscriptions.clear();
        state.inflight.clear();
        state.queue.clear();
        state.inbound_qos2.clear();
        state.next_packet_id = 1;
    }
}

impl SessionState {
    /// Moves waiting deliveries into the window while it has room and a client is attached.
    fn pump(&mut self, limits: &Limits, client_id: &str, writes: &mut Vec<MqttWrite>) {
        let Some(link) = &self.link else {
            return;
        };
        let window = usize::from(limits.max_inflight.min(link.receive_max).max(1));
        if self.inflight.len() >= window || self.queue.is_empty() {
            return;
        }
        let outbox = link.outbox.clone();
        let now_ms = crate::time::now_ms();
        while self.inflight.len() < window {
            let Some(waiting) = self.queue.pop_front() else {
                break;
            };
            if waiting.delivery.publication.expired(now_ms) {
                if self.expiry_secs > 0 {
                    writes.push(MqttWrite::Dequeue {
                        client_id: client_id.to_string(),
                        seq: waiting.seq,
                    });
                }
                continue;
            }
            let Some(packet_id) = self.free_packet_id() else {
                self.queue.push_front(waiting);
                break;
            };
            outbox.send(Outbound::Deliver {
                delivery: waiting.delivery.clone(),
                packet_id: Some(packet_id),
                dup: false,
            });
            self.inflight.insert(
                packet_id.get(),
                InFlight {
                    delivery: waiting.delivery,
                    seq: waiting.seq,
                    released: false,
                },
            );
        }
    }

    fn free_packet_id(&mut self) -> Option<NonZeroU16> {
        for _ in 0..u16::MAX {
            let id = self.next_packet_id;
            self.next_packet_id = self.next_packet_id.checked_add(1).unwrap_or(1);
            if !self.inflight.contains_key(&id) {
                return NonZeroU16::new(id);
            }
        }
        None
    }

    fn note_drop(&mut self, client_id: &str, why: &str) {
        self.dropped += 1;
        if self.dropped == 1 || self.dropped.is_power_of_two() {
            tracing::warn!(
                client_id,
                dropped = self.dropped,
                "a message for an MQTT session was dropped: {why}"
            );
        }
    }
}

/// PUBREL for a QoS 2 delivery the client has received.
fn release(packet_id: NonZeroU16) -> Outbound {
    Outbound::packet(Packet::PublishRelease(PublishAck2 {
        packet_id,
        ..PublishAck2::default()
    }))
}

/// A delivery as the store keeps it: subscription ids ride in the properties.
pub fn stored(delivery: &Delivery) -> StoredMessage {
    let p = &delivery.publication;
    let mut properties = p.properties.as_deref().cloned().unwrap_or_default();
    properties.subscription_ids = delivery.subscription_ids.clone();
    StoredMessage {
        topic: p.topic.to_string(),
        payload: p.payload.to_vec(),
        qos: delivery.qos.value(),
        retain: delivery.retain,
        properties: serde_json::to_vec(&properties).unwrap_or_default(),
        received_ms: p.received_ms,
        expires_at_ms: p.expires_at_ms(),
    }
}

/// The delivery a stored message describes.
pub fn from_stored(message: StoredMessage) -> Delivery {
    let mut properties: rmqtt_codec::v5::PublishProperties =
        serde_json::from_slice(&message.properties).unwrap_or_default();
    let subscription_ids = std::mem::take(&mut properties.subscription_ids);
    let qos = qos_of(message.qos);
    Delivery {
        publication: Arc::new(Publication {
            topic: message.topic.into(),
            payload: message.payload.into(),
            qos,
            retain: message.retain,
            properties: super::publication::forwarded(Some(properties)),
            received_ms: message.received_ms,
            sender: None,
        }),
        qos,
        retain: message.retain,
        subscription_ids,
    }
}
