//! Alarm notifications: the domains' pipelines (the `alarm_notifications` system table) that
//! turn alarm events into webhook calls and e-mails. The alarm service hands every batch of
//! changes to [`Notifier::offer`] (on the leading instance), which passes them to one task
//! through a channel and returns at once; the task (`worker`) decides what goes when
//! (`schedule`: digests, rate limits, escalations; `matching`: which pipelines and recipients),
//! writes every job to the durable queue (`queue`) before acting on it, and delivers
//! (`webhook`, `email`), retrying with backoff until delivered. Only the leading instance
//! delivers; a new leader loads the queue where the last one left it.

mod email;
mod matching;
mod queue;
mod schedule;
mod webhook;
mod worker;

use crate::alarms::notify::{Pipeline, TABLE};
use crate::alarms::AlarmEvent;
use crate::server::error::ApiResult;
use crate::server::services::system_tables::{record_key, records_of};
use crate::server::AppState;
use matching::Pipelines;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

pub struct Notifier {
    inbox: mpsc::UnboundedSender<Vec<AlarmEvent>>,
    waiting: Mutex<Option<mpsc::UnboundedReceiver<Vec<AlarmEvent>>>>,
    pipelines: Arc<Pipelines>,
    /// Set once every domain's pipelines were read: until then every event is taken, so none
    /// raised while svc starts is missed.
    loaded: AtomicBool,
    stats: Stats,
}

/// What `/metrics` says of notifications.
#[derive(Default)]
struct Stats {
    sent: AtomicU64,
    failed: AtomicU64,
    queued: AtomicU64,
    held: AtomicU64,
}

/// Notification counts as `/metrics` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Messages delivered (webhook calls answered 2xx, mails the server accepted).
    pub sent: u64,
    /// Delivery attempts that failed (each is retried).
    pub failed: u64,
    /// Messages waiting in the queue to be delivered (or retried).
    pub queued: u64,
    /// Events held for a digest or by a rate limit.
    pub held: u64,
}

impl Default for Notifier {
    fn default() -> Notifier {
        // Unbounded: `offer` must never wait, and alarm changes are few next to values (the
        // alarm service's own inbox is where a flood of values is held back).
        let (inbox, waiting) = mpsc::unbounded_channel();
        Notifier {
            inbox,
            waiting: Mutex::new(Some(waiting)),
            pipelines: Arc::default(),
            loaded: AtomicBool::new(false),
            stats: Stats::default(),
        }
    }
}

impl Notifier {
    /// Starts the delivering task (once the state exists). It reads every domain's pipelines,
    /// then delivers whenever this instance leads.
    pub fn start(state: &AppState) {
        let taken = state
            .notifier
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(inbox) = taken {
            tokio::spawn(worker::run(state.clone(), inbox));
        }
    }

    /// Takes the events of one evaluation step, in order (called on the leading instance).
    /// Never waits: the events of domains with pipelines are handed to the task.
    pub fn offer(&self, events: &[AlarmEvent]) {
        let everything = !self.loaded.load(Ordering::Acquire);
        let wanted: Vec<AlarmEvent> = events
            .iter()
            .filter(|e| everything || self.pipelines.has(&e.domain))
            .cloned()
            .collect();
        if !wanted.is_empty() {
            // Closed only when the task ended, as svc stops.
            let _ = self.inbox.send(wanted);
        }
    }

    pub fn counts(&self) -> Counts {
        let read = |n: &AtomicU64| n.load(Ordering::Relaxed);
        Counts {
            sent: read(&self.stats.sent),
            failed: read(&self.stats.failed),
            queued: read(&self.stats.queued),
            held: read(&self.stats.held),
        }
    }
}

/// Re-reads `domain`'s notification pipelines.
pub async fn reload_domain(state: &AppState, domain: &str) -> ApiResult<()> {
    let records = records_of(state, domain, TABLE).await?;
    let pipelines: Vec<Pipeline> = records
        .iter()
        .filter_map(|record| Pipeline::from_record(&record_key(record).ok()?, record))
        .collect();
    state.notifier.pipelines.set(domain, pipelines);
    Ok(())
}
