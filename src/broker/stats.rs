//! The broker's traffic counters for `GET /metrics`: process-wide relaxed atomics, added to
//! once per read, per written batch or per dispatched batch (never once per message on the
//! delivery path), and read at scrape time. Gauges that the hub can count (connections,
//! sessions, subscriptions) are not kept here: [`super::Broker::census`] counts them when
//! asked, so connecting and subscribing pay nothing for them.

use rmqtt_codec::types::QoS;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a message for a subscriber was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropCause {
    /// A QoS 0 delivery to a connection that is too far behind.
    SlowConsumer,
    /// A QoS 1/2 delivery to a session whose queue is full.
    QueueFull,
    /// Larger than the subscriber's Maximum Packet Size.
    TooLarge,
    /// A publish refused by the publisher's grants.
    NotAuthorized,
}

impl DropCause {
    pub const ALL: [DropCause; 4] = [
        DropCause::SlowConsumer,
        DropCause::QueueFull,
        DropCause::TooLarge,
        DropCause::NotAuthorized,
    ];

    pub fn label(self) -> &'static str {
        match self {
            DropCause::SlowConsumer => "slow_consumer",
            DropCause::QueueFull => "queue_full",
            DropCause::TooLarge => "too_large",
            DropCause::NotAuthorized => "not_authorized",
        }
    }
}

struct Counters {
    received: [AtomicU64; 3],
    sent: [AtomicU64; 3],
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    drops: [AtomicU64; 4],
    connects: AtomicU64,
    refused: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);

static COUNTERS: Counters = Counters {
    received: [ZERO; 3],
    sent: [ZERO; 3],
    bytes_in: ZERO,
    bytes_out: ZERO,
    drops: [ZERO; 4],
    connects: ZERO,
    refused: ZERO,
};

fn add(counter: &AtomicU64, n: u64) {
    if n > 0 {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// Publishes accepted from clients, counted per QoS for one batch.
pub fn received(by_qos: [u64; 3]) {
    for (counter, n) in COUNTERS.received.iter().zip(by_qos) {
        add(counter, n);
    }
}

/// Publishes written to clients, counted per QoS for one batch.
pub fn sent(by_qos: [u64; 3]) {
    for (counter, n) in COUNTERS.sent.iter().zip(by_qos) {
        add(counter, n);
    }
}

pub fn bytes_in(n: usize) {
    add(&COUNTERS.bytes_in, n as u64);
}

pub fn bytes_out(n: usize) {
    add(&COUNTERS.bytes_out, n as u64);
}

pub fn dropped(why: DropCause) {
    add(&COUNTERS.drops[why as usize], 1);
}

/// A CONNECT was accepted (true) or refused (false).
pub fn connect(accepted: bool) {
    add(
        if accepted {
            &COUNTERS.connects
        } else {
            &COUNTERS.refused
        },
        1,
    );
}

pub fn qos_index(qos: QoS) -> usize {
    match qos {
        QoS::AtMostOnce => 0,
        QoS::AtLeastOnce => 1,
        QoS::ExactlyOnce => 2,
    }
}

/// The counters as read now (each on its own: the set is not one instant).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub received: [u64; 3],
    pub sent: [u64; 3],
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub drops: [(&'static str, u64); 4],
    pub connects: u64,
    pub refused: u64,
}

pub fn snapshot() -> Snapshot {
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    Snapshot {
        received: COUNTERS.received.each_ref().map(load),
        sent: COUNTERS.sent.each_ref().map(load),
        bytes_in: load(&COUNTERS.bytes_in),
        bytes_out: load(&COUNTERS.bytes_out),
        drops: DropCause::ALL.map(|d| (d.label(), load(&COUNTERS.drops[d as usize]))),
        connects: load(&COUNTERS.connects),
        refused: load(&COUNTERS.refused),
    }
}
