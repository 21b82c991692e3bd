//! Where a connector's readings go: the [`Sink`] every link reads into. A reading is scaled,
//! held back when the deadband says so, and published into the Unified Namespace as the tag's
//! value with the device's time and quality (`{"value", "timestamp", "quality"}`): the
//! historian keeps the source time and the quality, subscribers and the last-value store see
//! the same message. A point that fails, or a connector that goes down, turns its tags `bad`
//! once. Publishing happens on a task of its own, a batch at a time, so a link's callbacks
//! never wait for the store.

use super::kind::{Reading, Sink};
use super::point::Point;
use crate::historian::payload::TagMessage;
use crate::store::Quality;
use async_trait::async_trait;
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;

/// The broker's in-process publish, as the server gives it to connectors.
#[async_trait]
pub trait Uns: Send + Sync + 'static {
    /// Publishes tag values as svc's own messages (`origin` names the connector), stored and
    /// delivered like any publish; `Ok` once stored.
    async fn publish(&self, origin: Arc<str>, messages: Vec<(String, Bytes)>)
        -> Result<(), String>;
}

/// The most messages published in one batch.
const BATCH: usize = 4096;

/// What the feed knows of one point.
#[derive(Debug, Default, Clone)]
struct Seen {
    /// The last value published (engineering units).
    value: Option<Value>,
    quality: Option<Quality>,
    /// When the device last gave a value, epoch ms.
    at_ms: Option<i64>,
    error: Option<String>,
}

/// A point's part of the connector's status.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PointStatus {
    pub tag: String,
    pub last_value_time: Option<String>,
    /// `good`, `uncertain`, `bad`; `null` before the first value.
    pub quality: Option<&'static str>,
    pub error: Option<String>,
}

pub struct Feed {
    points: Vec<Point>,
    seen: Mutex<Vec<Seen>>,
    out: mpsc::UnboundedSender<(String, Bytes)>,
    values_in: AtomicU64,
}

impl Feed {
    /// A feed for `points`, publishing through `uns` as `origin` until the feed is dropped.
    pub fn start(points: Vec<Point>, uns: Arc<dyn Uns>, origin: Arc<str>) -> Arc<Feed> {
        let (out, messages) = mpsc::unbounded_channel();
        tokio::spawn(publish(messages, uns, origin));
        Arc::new(Feed {
            seen: Mutex::new(vec![Seen::default(); points.len()]),
            points,
            out,
            values_in: AtomicU64::new(0),
        })
    }

    pub fn points(&self) -> &[Point] {
        &self.points
    }

    fn seen(&self) -> MutexGuard<'_, Vec<Seen>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Values read from the device since the connector started.
    pub fn values_in(&self) -> u64 {
        self.values_in.load(Ordering::Relaxed)
    }

    /// Every point's tag turns `bad` (once: points already bad stay as they are), saying why.
    pub fn down(&self, why: &str) {
        let mut seen = self.seen();
        for (point, seen) in self.points.iter().zip(seen.iter_mut()) {
            self.turn_bad(point, seen, why);
        }
    }

    pub fn statuses(&self) -> Vec<PointStatus> {
        self.points
            .iter()
            .zip(self.seen().iter())
            .map(|(point, seen)| PointStatus {
                tag: point.tag.clone(),
                last_value_time: seen.at_ms.map(crate::historian::format_ms),
                quality: seen.quality.map(Quality::label),
                error: seen.error.clone(),
            })
            .collect()
    }

    fn turn_bad(&self, point: &Point, seen: &mut Seen, why: &str) {
        seen.error = Some(why.to_string());
        if seen.quality.is_some_and(|q| q.label() == "bad") {
            return;
        }
        seen.quality = Some(Quality::BAD);
        let value = seen.value.clone().unwrap_or(Value::Null);
        self.send(point, value, crate::time::now_ms(), Quality::BAD);
    }

    fn send(&self, point: &Point, value: Value, at_ms: i64, quality: Quality) {
        let bytes = TagMessage::new(&value, at_ms, quality).to_bytes();
        // A closed channel means the connector is stopping: nothing to publish to.
        let _ = self.out.send((point.tag.clone(), bytes));
    }
}

impl Sink for Feed {
    fn reading(&self, index: usize, reading: Reading) {
        let Some(point) = self.points.get(index) else {
            return;
        };
        self.values_in.fetch_add(1, Ordering::Relaxed);
        let value = point.engineering(reading.value);
        let at_ms = reading.source_ms.unwrap_or_else(crate::time::now_ms);
        let mut seen = self.seen();
        let seen = &mut seen[index];
        seen.at_ms = Some(at_ms);
        seen.error = None;
        let changed_quality = seen.quality != Some(reading.quality);
        if !changed_quality && !point.passes_deadband(seen.value.as_ref(), &value) {
            return;
        }
        seen.quality = Some(reading.quality);
        seen.value = Some(value.clone());
        self.send(point, value, at_ms, reading.quality);
    }

    fn point_failed(&self, index: usize, error: String) {
        let Some(point) = self.points.get(index) else {
            return;
        };
        let mut seen = self.seen();
        self.turn_bad(point, &mut seen[index], &error);
    }
}

/// Publishes what the feed sends, a batch at a time, until the feed is dropped.
async fn publish(
    mut messages: mpsc::UnboundedReceiver<(String, Bytes)>,
    uns: Arc<dyn Uns>,
    origin: Arc<str>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while messages.recv_many(&mut batch, BATCH).await > 0 {
        let sent = std::mem::take(&mut batch);
        if let Err(e) = uns.publish(origin.clone(), sent).await {
            tracing::warn!(connector = %origin, error = %e, "connector values were not stored");
        }
    }
}
