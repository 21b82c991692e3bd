//! What an upstream carries and how: its bindings, its durable out-queue (the [`Outbox`]),
//! its counters, and one connected session's data path: incoming bindings subscribed (No
//! Local), the queue sent in order with every acknowledgement deleting its message, messages
//! from the upstream published into the local broker and acknowledged only once published.
//!
//! Loops are cut three ways: a message that came from an upstream is never carried back to
//! it, MQTT 5 subscriptions ask No Local (what the bridge publishes does not come back; MQTT
//! 3.1.1 bridges drop the echo instead, see [`EchoGuard`]), and every bridged message carries
//! a hop count (`svc-hops`) that is dropped at [`MAX_HOPS`].
//!
//! An upstream may also be a Sparkplug edge node ([`Relay::edge`]); its traffic is produced
//! live by the connection (`upstream::sparkplug`), not queued.

use super::binding::Binding;
use super::echo::EchoGuard;
use super::queue::{Depth, Dropped, Limits, OutQueue, UpstreamMessage};
use super::queue_writer::QueueWriter;
use super::sparkplug::{Edge, EdgeStatus};
use crate::store::Store;
use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use serde::Serialize;
use serde_json::Value;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

mod bridge;

/// Bridges a message may cross; at this many it is dropped (counted as `loop`).
pub const MAX_HOPS: u8 = 8;
/// How often acknowledged and dropped messages are deleted from the store's copy.
const FORGET_EVERY: Duration = Duration::from_millis(100);

/// The local broker, as an upstream sees it.
#[async_trait]
pub trait Local: Send + Sync + 'static {
    /// Publishes a message that came from an upstream (`origin` names it) into the local
    /// broker, like any client's publish; `Ok` once it is stored and delivered.
    async fn publish(&self, origin: Arc<str>, incoming: Inbound) -> Result<(), String>;

    /// The tags of `domain` at or under `branch`, with their units and latest payloads (a
    /// Sparkplug edge node's metrics).
    fn tags(&self, domain: &str, branch: &str) -> Vec<LocalTag>;

    /// Every value a tag of `domain` at or under `branch` takes from now on, in order. Called
    /// just before [`Local::tags`], no value falls between the two.
    fn changes(&self, domain: &str, branch: &str) -> BoxStream<'static, TagChange>;

    /// A number that changes whenever tags may have been declared, changed or deleted (in any
    /// domain): the edge node reads its tags again then.
    fn tags_generation(&self) -> u64;

    /// Writes `value` to tag `tag` of `domain` for an upstream (`origin`, a Sparkplug NCMD):
    /// to its device when a connector reads the tag, else published on the tag's topic like a
    /// client's publish. `Ok` once the device took it or the broker stored it.
    async fn write_tag(
        &self,
        origin: Arc<str>,
        domain: &str,
        tag: &str,
        value: Value,
    ) -> Result<(), String>;
}

/// A tag as a Sparkplug edge node publishes it.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalTag {
    pub path: String,
    pub unit: Option<String>,
    /// The latest payload as published, and when it was received.
    pub last: Option<(i64, Bytes)>,
}

/// What [`Local::changes`] tells.
#[derive(Debug, Clone)]
pub enum TagChange {
    /// A tag took a value: its payload as published, and when it was received.
    Value {
        topic: String,
        received_ms: i64,
        payload: Bytes,
    },
    /// The watcher fell behind and missed values.
    Lagged,
}

/// A message from an upstream, its topic already the local one.
#[derive(Debug, Clone)]
pub struct Inbound {
    pub topic: String,
    pub payload: Bytes,
    pub qos: u8,
    pub retain: bool,
    pub hops: u8,
}

/// A message accepted by the local broker, as the bridges see it.
pub struct Outbound<'a> {
    pub topic: &'a str,
    pub payload: &'a Bytes,
    pub retain: bool,
    pub hops: u8,
    /// The upstream it came from, if it came from one.
    pub origin: Option<&'a str>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_ms() -> i64 {
    crate::time::now_ms()
}

/// An upstream's out-queue, kept across changes of its record: the messages, the next
/// sequence number, and the task that deletes what left the queue from the store.
pub struct Outbox {
    /// The store's name for the queue: the upstream's record id.
    pub id: String,
    queue: Mutex<OutQueue>,
    ready: Notify,
    next_seq: Arc<AtomicI64>,
    forgetter: JoinHandle<()>,
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.forgetter.abort();
    }
}

impl Outbox {
    /// The queue of upstream `id` as the store kept it.
    /// `seqs` hands out sequence numbers, unique across every queue.
    pub async fn load(
        store: &Store,
        writer: &QueueWriter,
        seqs: Arc<AtomicI64>,
        id: &str,
        limits: Limits,
    ) -> Arc<Outbox> {
        let key = id.to_string();
        let stored = store
            .run(move |s| s.upstream_queue_load(&key))
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(upstream = id, error = %e, "cannot read an upstream's queue");
                Vec::new()
            });
        Arc::new_cyclic(|outbox: &std::sync::Weak<Outbox>| Outbox {
            id: id.to_string(),
            queue: Mutex::new(OutQueue::new(limits, stored)),
            ready: Notify::new(),
            next_seq: seqs,
            forgetter: tokio::spawn(forget(outbox.clone(), writer.clone())),
        })
    }

    pub fn set_limits(&self, limits: Limits) {
        lock(&self.queue).set_limits(limits);
    }

    pub fn depth(&self) -> Depth {
        lock(&self.queue).depth(now_ms())
    }

    pub fn dropped(&self) -> Dropped {
        lock(&self.queue).dropped
    }

    fn next_seq(&self) -> i64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Takes in messages the store now holds.
    fn push(&self, items: impl Iterator<Item = UpstreamMessage>) {
        let now = now_ms();
        let mut queue = lock(&self.queue);
        for item in items {
            queue.push(item, now);
        }
        drop(queue);
        self.ready.notify_one();
    }
}

/// Deletes from the store what left the queue, in batches, while the outbox exists.
async fn forget(outbox: std::sync::Weak<Outbox>, writer: QueueWriter) {
    loop {
        tokio::time::sleep(FORGET_EVERY).await;
        let Some(outbox) = outbox.upgrade() else {
            return;
        };
        let removed = lock(&outbox.queue).take_removed();
        if !removed.is_empty() {
            writer.delete(&outbox.id, removed);
        }
    }
}

/// Counters of one binding.
#[derive(Debug, Default)]
struct BindingCounters {
    in_messages: AtomicU64,
    out_messages: AtomicU64,
}

/// Traffic since the record last changed (or the server started).
#[derive(Debug, Default)]
struct Counters {
    in_messages: AtomicU64,
    in_bytes: AtomicU64,
    out_messages: AtomicU64,
    out_bytes: AtomicU64,
    loops: AtomicU64,
    bindings: Vec<BindingCounters>,
}

/// `counters`, `dropped`, `buffer` and `bindings` of an upstream's status.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Traffic {
    pub counters: Totals,
    pub dropped: Dropped,
    pub buffer: Depth,
    pub bindings: Vec<BindingTraffic>,
    /// The Sparkplug edge node, when the upstream is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sparkplug: Option<EdgeStatus>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    pub in_messages: u64,
    pub in_bytes: u64,
    pub out_messages: u64,
    pub out_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BindingTraffic {
    pub direction: &'static str,
    pub local: String,
    pub remote: String,
    pub in_messages: u64,
    pub out_messages: u64,
}

/// An upstream as its record says now: bindings, the out-queue, counters.
pub struct Relay {
    /// Marks messages that came from this upstream (`upstream:<id>`).
    pub origin: Arc<str>,
    pub bindings: Vec<Binding>,
    pub outbox: Arc<Outbox>,
    /// The Sparkplug edge node the upstream is as well, if it is one.
    pub edge: Option<Arc<Edge>>,
    counters: Counters,
    /// For MQTT 3.1.1 upstreams carrying messages both ways (no No Local there).
    echoes: Option<Mutex<EchoGuard>>,
}

impl Relay {
    /// `no_local`: the upstream speaks MQTT 5, whose subscriptions can refuse the bridge's
    /// own messages.
    pub fn new(
        bindings: Vec<Binding>,
        outbox: Arc<Outbox>,
        no_local: bool,
        edge: Option<Arc<Edge>>,
    ) -> Relay {
        let both_ways = bindings.iter().any(|b| b.incoming) && bindings.iter().any(|b| b.outgoing);
        Relay {
            echoes: (both_ways && !no_local).then(Mutex::default),
            origin: format!("upstream:{}", outbox.id).into(),
            counters: Counters {
                bindings: bindings
                    .iter()
                    .map(|_| BindingCounters::default())
                    .collect(),
                ..Counters::default()
            },
            bindings,
            outbox,
            edge,
        }
    }

    pub fn carries_out(&self) -> bool {
        self.bindings.iter().any(|b| b.outgoing)
    }

    /// The queue entry for a local message this upstream carries out, if it does; counts
    /// a message at the hop limit as a loop.
    pub fn entry_for(&self, message: &Outbound<'_>) -> Option<UpstreamMessage> {
        if message.origin == Some(&*self.origin) || message.topic.starts_with('$') {
            return None;
        }
        let (binding, remote) = self
            .bindings
            .iter()
            .enumerate()
            .find_map(|(i, b)| Some((i, b.to_remote(message.topic)?)))?;
        if message.hops >= MAX_HOPS {
            self.counters.loops.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let b = &self.bindings[binding];
        Some(UpstreamMessage {
            seq: self.outbox.next_seq(),
            topic: remote,
            payload: message.payload.clone(),
            qos: b.qos,
            retain: b.keep_retain && message.retain,
            hops: message.hops,
            enqueued_ms: now_ms(),
            binding,
        })
    }

    /// Takes in entries made by [`Relay::entry_for`] once the store holds them.
    pub fn enqueue(&self, items: impl Iterator<Item = UpstreamMessage>) {
        self.outbox.push(items);
    }

    pub fn traffic(&self) -> Traffic {
        let c = &self.counters;
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let mut dropped = self.outbox.dropped();
        dropped.loops += get(&c.loops);
        Traffic {
            counters: Totals {
                in_messages: get(&c.in_messages),
                in_bytes: get(&c.in_bytes),
                out_messages: get(&c.out_messages),
                out_bytes: get(&c.out_bytes),
            },
            dropped,
            buffer: self.outbox.depth(),
            bindings: self
                .bindings
                .iter()
                .zip(&c.bindings)
                .map(|(b, n)| BindingTraffic {
                    direction: match (b.incoming, b.outgoing) {
                        (true, true) => "both",
                        (true, false) => "in",
                        _ => "out",
                    },
                    local: b.local.clone(),
                    remote: b.remote.clone(),
                    in_messages: get(&n.in_messages),
                    out_messages: get(&n.out_messages),
                })
                .collect(),
            sparkplug: self.edge.as_ref().map(|edge| edge.status()),
        }
    }

    fn count_out(&self, item: &UpstreamMessage) {
        let c = &self.counters;
        c.out_messages.fetch_add(1, Ordering::Relaxed);
        c.out_bytes
            .fetch_add(item.payload.len() as u64, Ordering::Relaxed);
        if let Some(b) = c.bindings.get(item.binding) {
            b.out_messages.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The local topic and binding of a message from the upstream.
    fn local_of(&self, remote_topic: &str) -> Option<(usize, String)> {
        self.bindings
            .iter()
            .enumerate()
            .find_map(|(i, b)| Some((i, b.to_local(remote_topic)?)))
    }
}
