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
    /// Silent for one and a half keep-alive periods (MQTT §3.1.2.10).
    KeepAliveTimeout,
}

/// The connection a session is attached to.
pub struct Link {
    pub id: u64,
    pub outbox: Outbox,
    /// The client's Receive Maximum.
    pub receive_max: u16,
    /// The client's Maximum Packet Size (0: no limit).
    pub max_packet: u32,
    /// What a bridge (another svc) announced in its CONNECT; `None` for every other client.
    pub bridge: Option<Box<super::Bridge>>,
    /// Peer, transport, version and the like, for the list of connected clients.
    pub info: super::clients::LinkInfo,
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
    /// Shared with the connection's reader: one allocation per client, not two.
    pub principal: Arc<Principal>,
    pub link: Option<Link>,
    /// By filter. A B-tree (24 bytes) rather than a hash map (48): most sessions hold a few
    /// filters, and every quiet client's session is resident (see
    /// docs/decisions/broker-and-tags.md).
    pub subscriptions: BTreeMap<String, SubOptions>,
    /// 0 for a session that ends with its connection.
    pub expiry_secs: u32,
    pub disconnected_at_ms: Option<i64>,
    /// Counts attachments, so a delayed will knows whether its client came back (compared
    /// for equality only, so it may wrap; 32 bits, next to `expiry_secs`, keep the session in
    /// the allocator's 192-byte class).
    pub epoch: u32,
    /// Made at first use, given back when empty while the client is quiet: most sessions of
    /// a plant have nothing in motion most of the time.
    traffic: Option<Box<Traffic>>,
    next_seq: i64,
    /// Receive decisions, made at the first delivery.
    authz: Option<Box<AuthzCache>>,
}

/// What a session has in motion.
#[derive(Default)]
struct Traffic {
    /// Packet ids of QoS 2 publishes received and not yet released.
    inbound_qos2: HashSet<u16>,
    inflight: BTreeMap<u16, InFlight>,
    queue: VecDeque<Waiting>,
    /// 0 until the first delivery (ids start at 1).
    next_packet_id: u16,
    /// Deliveries dropped since the traffic began (logged at each power of two).
    dropped: u64,
}

/// The platform's receive decisions per topic, valid for one authorization generation.
#[derive(Default)]
struct AuthzCache {
    decisions: HashMap<ByteString, bool>,
    generation: u64,
}

pub struct Session {
    /// `<user key>|<client id>`: a session belongs to the user who connected with the client
    /// id, so the same client id under another user is another session. It names the session
    /// in the store and in logs, and is the sender No Local compares.
    pub key: Arc<str>,
    online: AtomicBool,
    state: Mutex<SessionState>,
}

/// A session as a key of the subscription index (identity, not contents).
#[derive(Clone)]
pub struct SessionKey(pub Arc<Session>);

impl PartialEq for SessionKey {
    fn eq(&self, other: &SessionKey) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for SessionKey {}
impl std::hash::Hash for SessionKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as usize).hash(state);
    }
}

/// A session in the hub's set of sessions, found by its key: the set holds one pointer per
/// session instead of a second copy of the key's pointer next to it.
pub struct ByKey(pub Arc<Session>);

impl std::borrow::Borrow<str> for ByKey {
    fn borrow(&self) -> &str {
        &self.0.key
    }
}

impl PartialEq for ByKey {
    fn eq(&self, other: &ByKey) -> bool {
        self.0.key == other.0.key
    }
}
impl Eq for ByKey {}

impl std::hash::Hash for ByKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As `str` hashes: lookups by `&str` must land on the same bucket.
        (*self.0.key).hash(state);
    }
}

/// Decisions cached per session before the cache starts over.
const AUTHZ_CACHE: usize = 10_000;

impl Session {
    pub fn new(key: Arc<str>, principal: Arc<Principal>) -> Session {
        Session {
            key,
            online: AtomicBool::new(false),
            state: Mutex::new(SessionState {
                principal,
                link: None,
                subscriptions: BTreeMap::new(),
                expiry_secs: 0,
                disconnected_at_ms: None,
                epoch: 0,
                traffic: None,
                next_seq: 1,
                authz: None,
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
        let cache = state.authz.as_deref()?;
        if cache.generation != generation {
            return None;
        }
        cache.decisions.get(topic).copied()
    }

    pub fn remember_receive(&self, topic: &ByteString, generation: u64, allowed: bool) {
        let mut state = self.lock();
        let cache = state.authz.get_or_insert_default();
        if cache.generation != generation || cache.decisions.len() >= AUTHZ_CACHE {
            cache.decisions.clear();
            cache.generation = generation;
        }
        cache.decisions.insert(topic.clone(), allowed);
    }

    /// Hands a delivery to the session: straight to the client when it is online and its
    /// window has room, else to the queue. Persistent sessions record QoS 1/2 deliveries.
    pub fn deliver(&self, delivery: Delivery, limits: &Limits, writes: &mut Vec<MqttWrite>) {
        let mut state = self.lock();
        if let Some(link) = &state.link {
            if link.max_packet != 0
                && delivery.publication.encoded_size_estimate() > link.max_packet as usize
            {
                super::stats::dropped(super::stats::DropCause::TooLarge);
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
                    super::stats::dropped(super::stats::DropCause::SlowConsumer);
                    state.note_drop(&self.key, "its connection is too far behind");
                }
            }
            return;
        }
        if state.traffic().queue.len() >= limits.max_queue {
            super::stats::dropped(super::stats::DropCause::QueueFull);
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
        state.traffic().queue.push_back(Waiting { delivery, seq });
        state.pump(limits, &self.key, writes);
    }

    /// PUBACK (QoS 1) or PUBCOMP (QoS 2) from the client.
    pub fn completed(&self, packet_id: u16, limits: &Limits, writes: &mut Vec<MqttWrite>) {
        let mut state = self.lock();
        let done = state
            .traffic
            .as_mut()
            .and_then(|traffic| traffic.inflight.remove(&packet_id));
        if let Some(done) = done {
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
        let Some(flight) = state
            .traffic
            .as_mut()
            .and_then(|traffic| traffic.inflight.get_mut(&packet_id.get()))
        else {
            return false;
        };
        flight.released = true;
        let seq = flight.seq;
        if persistent {
            writes.push(MqttWrite::SetDelivery {
                client_id: self.key.to_string(),
                seq,
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
        if let (Some(link), Some(traffic)) = (&state.link, &state.traffic) {
            for (&id, flight) in &traffic.inflight {
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
                    state.traffic().inflight.insert(packet_id, flight);
                }
                None => state.traffic().queue.push_back(Waiting { delivery, seq }),
            }
        }
    }

    /// Forgets deliveries and subscriptions (a clean start over an old session).
    pub fn reset(state: &mut SessionState) {
        state.subscriptions.clear();
        state.traffic = None;
    }
}

impl SessionState {
    fn traffic(&mut self) -> &mut Traffic {
        self.traffic.get_or_insert_default()
    }

    /// Gives back the delivery state when nothing is in motion (the client went quiet).
    pub fn compact(&mut self) {
        if self.traffic.as_deref().is_some_and(Traffic::is_idle) {
            self.traffic = None;
        }
    }

    /// A QoS 2 publish with this packet id was received and not yet released.
    pub fn qos2_received(&self, packet_id: u16) -> bool {
        self.traffic
            .as_deref()
            .is_some_and(|traffic| traffic.inbound_qos2.contains(&packet_id))
    }

    /// QoS 2 publishes received and not yet released.
    pub fn qos2_unreleased(&self) -> usize {
        self.traffic
            .as_deref()
            .map_or(0, |traffic| traffic.inbound_qos2.len())
    }

    pub fn note_qos2_received(&mut self, packet_id: u16) {
        self.traffic().inbound_qos2.insert(packet_id);
    }

    pub fn note_qos2_released(&mut self, packet_id: u16) {
        if let Some(traffic) = self.traffic.as_mut() {
            traffic.inbound_qos2.remove(&packet_id);
        }
    }

    /// What a restart found stored: QoS 2 publishes received and not yet released.
    pub fn restore_qos2(&mut self, packet_ids: Vec<u16>) {
        if !packet_ids.is_empty() {
            self.traffic().inbound_qos2 = packet_ids.into_iter().collect();
        }
    }

    /// Moves waiting deliveries into the window while it has room and a client is attached.
    fn pump(&mut self, limits: &Limits, client_id: &str, writes: &mut Vec<MqttWrite>) {
        let Some(link) = &self.link else {
            return;
        };
        let window = usize::from(limits.max_inflight.min(link.receive_max).max(1));
        let persistent = Session::persistent(self);
        let Some(traffic) = self.traffic.as_deref_mut() else {
            return;
        };
        if traffic.inflight.len() >= window || traffic.queue.is_empty() {
            return;
        }
        let now_ms = crate::time::now_ms();
        while traffic.inflight.len() < window {
            let Some(waiting) = traffic.queue.pop_front() else {
                break;
            };
            if waiting.delivery.publication.expired(now_ms) {
                if persistent {
                    writes.push(MqttWrite::Dequeue {
                        client_id: client_id.to_string(),
                        seq: waiting.seq,
                    });
                }
                continue;
            }
            let Some(packet_id) = traffic.free_packet_id() else {
                traffic.queue.push_front(waiting);
                break;
            };
            link.outbox.send(Outbound::Deliver {
                delivery: waiting.delivery.clone(),
                packet_id: Some(packet_id),
                dup: false,
            });
            traffic.inflight.insert(
                packet_id.get(),
                InFlight {
                    delivery: waiting.delivery,
                    seq: waiting.seq,
                    released: false,
                },
            );
        }
    }

    fn note_drop(&mut self, client_id: &str, why: &str) {
        let traffic = self.traffic();
        traffic.dropped += 1;
        if traffic.dropped == 1 || traffic.dropped.is_power_of_two() {
            tracing::warn!(
                client_id,
                dropped = traffic.dropped,
                "a message for an MQTT session was dropped: {why}"
            );
        }
    }
}

impl Traffic {
    fn is_idle(&self) -> bool {
        self.inbound_qos2.is_empty() && self.inflight.is_empty() && self.queue.is_empty()
    }

    fn free_packet_id(&mut self) -> Option<NonZeroU16> {
        for _ in 0..u16::MAX {
            let id = self.next_packet_id.max(1);
            self.next_packet_id = id.checked_add(1).unwrap_or(1);
            if !self.inflight.contains_key(&id) {
                return NonZeroU16::new(id);
            }
        }
        None
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
