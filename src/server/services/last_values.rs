//! The latest payload of every topic since the server started (or, with other instances on the
//! same store, since the first of them started: a starting instance takes theirs), and a
//! channel that tells watchers (the tag stream) each new one as it is set.

use crate::historian::point_from_payload;
use bytes::Bytes;
use serde_json::Value;
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast;

/// Updates a watcher may fall behind by before it misses some (and starts over from a
/// snapshot of the latest values, which it never misses).
const WATCH_BUFFER: usize = 4096;

/// One value as it was set.
#[derive(Debug)]
pub struct LiveValue {
    pub topic: String,
    pub received_ms: i64,
    pub payload: Bytes,
}

impl LiveValue {
    /// (timestamp, value) by the historian's payload rules.
    pub fn point(&self) -> (i64, Value) {
        let (ts_ms, value, _) = point_from_payload(&self.payload, self.received_ms);
        (ts_ms, value)
    }
}

/// Kept raw: a payload is decoded only when someone reads it, not on every message.
pub struct LastValues {
    /// foldhash: looked up on every message; seeded per map.
    values: RwLock<foldhash::HashMap<String, (i64, Bytes)>>,
    watchers: broadcast::Sender<Arc<LiveValue>>,
}

impl Default for LastValues {
    fn default() -> LastValues {
        LastValues {
            values: RwLock::default(),
            watchers: broadcast::channel(WATCH_BUFFER).0,
        }
    }
}

impl LastValues {
    pub fn set(&self, topic: &str, received_ms: i64, payload: Bytes) {
        self.tell_watchers(topic, received_ms, &payload);
        if let Ok(mut values) = self.values.write() {
            match values.get_mut(topic) {
                Some(slot) => *slot = (received_ms, payload),
                None => {
                    values.insert(topic.to_string(), (received_ms, payload));
                }
            }
        }
    }

    /// The latest (timestamp, value) of a topic, by the historian's payload rules.
    pub fn get(&self, topic: &str) -> Option<(i64, Value)> {
        self.latest(topic).map(|value| value.point())
    }

    /// The latest payload of a topic as it was set.
    pub fn latest(&self, topic: &str) -> Option<LiveValue> {
        let (received_ms, payload) = self.values.read().ok()?.get(topic).cloned()?;
        Some(LiveValue {
            topic: topic.to_string(),
            received_ms,
            payload,
        })
    }

    /// Every topic's latest payload, as it was set.
    pub fn all(&self) -> Vec<LiveValue> {
        let Ok(values) = self.values.read() else {
            return Vec::new();
        };
        values
            .iter()
            .map(|(topic, (received_ms, payload))| LiveValue {
                topic: topic.clone(),
                received_ms: *received_ms,
                payload: payload.clone(),
            })
            .collect()
    }

    /// Takes a value another instance had, unless a value received as late or later is here
    /// already; true when it was taken.
    pub fn offer(&self, topic: &str, received_ms: i64, payload: Bytes) -> bool {
        {
            let Ok(mut values) = self.values.write() else {
                return false;
            };
            if values.get(topic).is_some_and(|(ms, _)| *ms >= received_ms) {
                return false;
            }
            values.insert(topic.to_string(), (received_ms, payload.clone()));
        }
        self.tell_watchers(topic, received_ms, &payload);
        true
    }

    /// Hands a new value to the watchers, if any watch.
    fn tell_watchers(&self, topic: &str, received_ms: i64, payload: &Bytes) {
        if self.watchers.receiver_count() > 0 {
            let _ = self.watchers.send(Arc::new(LiveValue {
                topic: topic.to_string(),
                received_ms,
                payload: payload.clone(),
            }));
        }
    }

    /// Every value set from now on (a receiver that falls more than [`WATCH_BUFFER`] behind
    /// is told it lagged).
    pub fn watch(&self) -> broadcast::Receiver<Arc<LiveValue>> {
        self.watchers.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchers_see_every_value_set_after_they_start() {
        let values = LastValues::default();
        values.set("a", 1, Bytes::from_static(b"1"));
        let mut watch = values.watch();
        values.set("a", 2, Bytes::from_static(b"2"));
        values.set("b", 3, Bytes::from_static(b"\"x\""));
        let first = watch.try_recv().unwrap();
        assert_eq!(
            (first.topic.as_str(), first.point().1),
            ("a", Value::from(2))
        );
        let second = watch.try_recv().unwrap();
        assert_eq!(second.point(), (3, Value::from("x")));
        assert!(watch.try_recv().is_err());
        assert_eq!(values.get("a"), Some((2, Value::from(2))));
    }

    #[test]
    fn an_offered_value_never_replaces_a_newer_one() {
        let values = LastValues::default();
        values.set("a", 10, Bytes::from_static(b"10"));
        assert!(!values.offer("a", 5, Bytes::from_static(b"5")));
        assert!(!values.offer("a", 10, Bytes::from_static(b"11")));
        assert!(values.offer("a", 12, Bytes::from_static(b"12")));
        assert!(values.offer("b", 1, Bytes::from_static(b"1")));
        assert_eq!(values.get("a"), Some((12, Value::from(12))));
        let mut all: Vec<String> = values.all().into_iter().map(|v| v.topic).collect();
        all.sort();
        assert_eq!(all, ["a", "b"]);
    }
}
