//! An upstream's out-queue as held in memory: the messages waiting to go out (in order),
//! those sent and not yet acknowledged (sent again after a reconnect), the buffer limits
//! (messages, bytes, age; `drop_oldest` or `reject` when full; `conflate` to keep only the
//! newest message per topic) and what was dropped and why.
//!
//! The queue decides; it does not store. Every message it holds has been written to the
//! store's copy of the queue before it arrives here, and every message it lets go (sent and
//! acknowledged, dropped) is listed in [`OutQueue::take_removed`] for the store to forget.

use crate::duration::parse_duration;
pub use crate::store::UpstreamMessage;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// The `buffer` settings of an upstream record.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub max_messages: usize,
    pub max_bytes: u64,
    pub max_age_ms: i64,
    /// When full: refuse the new message (else drop the oldest waiting one).
    pub reject: bool,
    /// Keep only the newest waiting message per topic.
    pub conflate: bool,
}

impl Limits {
    pub fn of(record: &Map<String, Value>) -> Limits {
        let buffer = record.get("buffer");
        let field = |name: &str| buffer.and_then(|b| b.get(name));
        Limits {
            max_messages: field("max_messages")
                .and_then(Value::as_u64)
                .map_or(100_000, |n| usize::try_from(n).unwrap_or(usize::MAX)),
            max_bytes: field("max_bytes")
                .and_then(Value::as_u64)
                .unwrap_or(64 << 20),
            max_age_ms: field("max_age")
                .and_then(Value::as_str)
                .and_then(|text| parse_duration(text).ok())
                .map_or(86_400_000, |d| {
                    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
                }),
            reject: field("overflow").and_then(Value::as_str) == Some("reject"),
            conflate: field("conflate").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

impl UpstreamMessage {
    fn size(&self) -> u64 {
        (self.topic.len() + self.payload.len()) as u64
    }
}

/// Messages dropped, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// At the hop limit, or echoed back by an upstream that cannot suppress echoes.
    #[serde(rename = "loop")]
    pub loops: u64,
    /// The buffer was full.
    pub overflow: u64,
    /// Older than `buffer.max_age` before it could be sent.
    pub expired: u64,
    /// Refused by the upstream (a negative acknowledgement).
    pub refused: u64,
    /// Replaced by a newer message of the same topic (`conflate`).
    pub conflated: u64,
}

/// The buffer as the status shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Depth {
    pub messages: usize,
    pub bytes: u64,
    pub oldest_age_ms: Option<i64>,
}

#[derive(Debug)]
pub struct OutQueue {
    limits: Limits,
    /// Waiting to be sent, by sequence number.
    pending: BTreeMap<i64, UpstreamMessage>,
    /// Sent on the current connection, not yet acknowledged.
    unacked: BTreeMap<i64, UpstreamMessage>,
    /// With `conflate`: the waiting message of each topic.
    latest: HashMap<String, i64>,
    bytes: u64,
    removed: Vec<i64>,
    pub dropped: Dropped,
}

impl OutQueue {
    /// A queue holding what the store kept (in sequence order).
    pub fn new(limits: Limits, stored: Vec<UpstreamMessage>) -> OutQueue {
        let mut queue = OutQueue {
            limits,
            pending: BTreeMap::new(),
            unacked: BTreeMap::new(),
            latest: HashMap::new(),
            bytes: 0,
            removed: Vec::new(),
            dropped: Dropped::default(),
        };
        for item in stored {
            queue.admit(item);
        }
        queue
    }

    pub fn set_limits(&mut self, limits: Limits) {
        if !limits.conflate {
            self.latest.clear();
        }
        self.limits = limits;
    }

    pub fn len(&self) -> usize {
        self.pending.len() + self.unacked.len()
    }

    /// Takes in a message the store now holds. Returns whether it was kept (`reject` refuses
    /// a message that does not fit).
    pub fn push(&mut self, item: UpstreamMessage, now_ms: i64) -> bool {
        self.expire(now_ms);
        self.admit(item)
    }

    fn admit(&mut self, item: UpstreamMessage) -> bool {
        if self.limits.conflate {
            if let Some(older) = self.latest.insert(item.topic.clone(), item.seq) {
                if let Some(old) = self.pending.remove(&older) {
                    self.forget(&old);
                    self.dropped.conflated += 1;
                }
            }
        }
        let size = item.size();
        while self.len() >= self.limits.max_messages
            || (self.bytes + size > self.limits.max_bytes && self.len() > 0)
        {
            if self.limits.reject || self.pending.is_empty() {
                self.dropped.overflow += 1;
                self.removed.push(item.seq);
                self.unlatest(&item);
                return false;
            }
            if let Some((_, oldest)) = self.pending.pop_first() {
                self.forget(&oldest);
                self.unlatest(&oldest);
                self.dropped.overflow += 1;
            }
        }
        self.bytes += size;
        self.pending.insert(item.seq, item);
        true
    }

    fn unlatest(&mut self, item: &UpstreamMessage) {
        if self.latest.get(&item.topic) == Some(&item.seq) {
            self.latest.remove(&item.topic);
        }
    }

    /// A message leaves the queue: its bytes are freed and the store is to forget it.
    fn forget(&mut self, item: &UpstreamMessage) {
        self.bytes = self.bytes.saturating_sub(item.size());
        self.removed.push(item.seq);
    }

    /// Drops waiting messages older than `max_age`.
    fn expire(&mut self, now_ms: i64) {
        let oldest_allowed = now_ms.saturating_sub(self.limits.max_age_ms);
        while let Some(entry) = self.pending.first_entry() {
            if entry.get().enqueued_ms >= oldest_allowed {
                break;
            }
            let item = entry.remove();
            self.forget(&item);
            self.unlatest(&item);
            self.dropped.expired += 1;
        }
    }

    /// Up to `max` waiting messages to send now, oldest first; they wait for their
    /// acknowledgement in the queue.
    pub fn take(&mut self, max: usize, now_ms: i64) -> Vec<UpstreamMessage> {
        self.expire(now_ms);
        let mut out = Vec::with_capacity(max.min(self.pending.len()));
        while out.len() < max {
            let Some((seq, item)) = self.pending.pop_first() else {
                break;
            };
            self.unlatest(&item);
            self.unacked.insert(seq, item.clone());
            out.push(item);
        }
        out
    }

    /// The upstream acknowledged (or, with `refused`, refused) a sent message.
    pub fn acked(&mut self, seq: i64, refused: bool) -> Option<UpstreamMessage> {
        let item = self.unacked.remove(&seq)?;
        self.forget(&item);
        if refused {
            self.dropped.refused += 1;
        }
        Some(item)
    }

    /// The connection ended: what was sent and not acknowledged waits again, ahead of the rest.
    pub fn requeue(&mut self) {
        let unacked = std::mem::take(&mut self.unacked);
        self.pending.extend(unacked);
    }

    /// Sequence numbers the store is to delete, since the last call.
    pub fn take_removed(&mut self) -> Vec<i64> {
        std::mem::take(&mut self.removed)
    }

    pub fn depth(&self, now_ms: i64) -> Depth {
        let oldest = self
            .unacked
            .values()
            .next()
            .into_iter()
            .chain(self.pending.values().next())
            .map(|item| item.enqueued_ms)
            .min();
        Depth {
            messages: self.len(),
            bytes: self.bytes,
            oldest_age_ms: oldest.map(|at| (now_ms - at).max(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn limits(max_messages: usize) -> Limits {
        Limits {
            max_messages,
            max_bytes: 1 << 20,
            max_age_ms: 60_000,
            reject: false,
            conflate: false,
        }
    }

    fn item(seq: i64, topic: &str, at: i64) -> UpstreamMessage {
        UpstreamMessage {
            seq,
            topic: topic.into(),
            payload: Bytes::from(seq.to_string()),
            qos: 1,
            retain: false,
            hops: 0,
            enqueued_ms: at,
            binding: 0,
        }
    }

    fn seqs(items: &[UpstreamMessage]) -> Vec<i64> {
        items.iter().map(|i| i.seq).collect()
    }

    #[test]
    fn full_drops_the_oldest_waiting_message_and_counts_it() {
        let mut q = OutQueue::new(limits(3), Vec::new());
        for seq in 1..=5 {
            assert!(q.push(item(seq, "t", 0), 0));
        }
        assert_eq!(q.dropped.overflow, 2);
        assert_eq!(q.take_removed(), [1, 2]);
        assert_eq!(seqs(&q.take(10, 0)), [3, 4, 5]);
    }

    #[test]
    fn reject_refuses_the_new_message_instead() {
        let mut q = OutQueue::new(
            Limits {
                reject: true,
                ..limits(2)
            },
            Vec::new(),
        );
        assert!(q.push(item(1, "t", 0), 0));
        assert!(q.push(item(2, "t", 0), 0));
        assert!(!q.push(item(3, "t", 0), 0));
        assert_eq!(q.dropped.overflow, 1);
        assert_eq!(q.take_removed(), [3]);
        assert_eq!(seqs(&q.take(10, 0)), [1, 2]);
    }

    #[test]
    fn conflate_keeps_the_newest_waiting_message_per_topic() {
        let mut q = OutQueue::new(
            Limits {
                conflate: true,
                ..limits(100)
            },
            Vec::new(),
        );
        q.push(item(1, "a", 0), 0);
        q.push(item(2, "b", 0), 0);
        q.push(item(3, "a", 0), 0);
        let sent = q.take(1, 0);
        assert_eq!(seqs(&sent), [2]);
        // A sent message is not replaced: the next one of its topic waits behind it.
        q.push(item(4, "b", 0), 0);
        assert_eq!(seqs(&q.take(10, 0)), [3, 4]);
        assert_eq!(q.dropped.conflated, 1);
        assert_eq!(q.take_removed(), [1]);
    }

    #[test]
    fn unacknowledged_messages_go_again_first_after_a_reconnect() {
        let mut q = OutQueue::new(limits(100), Vec::new());
        for seq in 1..=4 {
            q.push(item(seq, "t", 0), 0);
        }
        assert_eq!(seqs(&q.take(3, 0)), [1, 2, 3]);
        q.acked(1, false);
        q.requeue();
        assert_eq!(seqs(&q.take(10, 0)), [2, 3, 4]);
        q.acked(2, false);
        q.acked(3, true);
        assert_eq!(q.dropped.refused, 1);
        assert_eq!(q.take_removed(), [1, 2, 3]);
        assert_eq!(q.depth(0).messages, 1);
    }

    #[test]
    fn messages_older_than_max_age_expire_before_they_are_sent() {
        let mut q = OutQueue::new(limits(100), vec![item(1, "t", 0), item(2, "t", 50_000)]);
        assert_eq!(seqs(&q.take(10, 70_000)), [2]);
        assert_eq!(q.dropped.expired, 1);
        assert_eq!(q.depth(70_000).oldest_age_ms, Some(20_000));
    }

    #[test]
    fn bytes_are_bounded_too() {
        let mut q = OutQueue::new(
            Limits {
                max_bytes: 10,
                ..limits(100)
            },
            Vec::new(),
        );
        for seq in 1..=4 {
            q.push(item(seq, "tt", 0), 0); // 3 bytes each
        }
        assert_eq!(q.depth(0).messages, 3);
        assert_eq!(q.depth(0).bytes, 9);
    }
}
