//! The delivering task: while this instance leads, it loads the durable queue, takes the
//! events `offer` hands over, lets the scheduler turn them into jobs, writes every change to
//! the store before acting on it, and runs the deliveries due (a few at a time), each failed
//! one again after a backoff from 1 s doubling to 5 min. When leadership goes, it stops and
//! forgets what it held in memory: the queue in the store is the next leader's.

use super::queue::{Item, Job, Queue};
use super::schedule::Scheduler;
use super::{email, reload_domain, webhook, Notifier};
use crate::alarms::AlarmEvent;
use crate::backoff::Backoff;
use crate::server::AppState;
use crate::store::Leadership;
use serde_json::json;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;

/// Deliveries attempted at once (a slow server holds up only its own messages).
const IN_FLIGHT: usize = 8;
/// How soon a failed write of the queue is tried again.
const WRITE_RETRY_MS: i64 = 1000;
/// The longest sleep with nothing due (the loop wakes for events anyway).
const IDLE: Duration = Duration::from_secs(3600);

type Done = (i64, Result<(), String>);

pub(super) async fn run(state: AppState, mut inbox: mpsc::UnboundedReceiver<Vec<AlarmEvent>>) {
    load_pipelines(&state).await;
    state.notifier.loaded.store(true, Ordering::Release);
    let leadership = state.peers.leadership();
    loop {
        tokio::select! {
            _ = leadership.until(true) => {}
            events = inbox.recv() => {
                // Handed over while following: the leader has them too, and sends them.
                if events.is_none() {
                    return;
                }
                continue;
            }
        }
        if !lead(&state, &mut inbox, &leadership).await {
            return;
        }
    }
}

/// Every domain's pipelines, read once at start (later through `reload_domain`).
async fn load_pipelines(state: &AppState) {
    let domains = match state.domain_names().await {
        Ok(domains) => domains,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the domains; notification pipelines load as they are written");
            return;
        }
    };
    for domain in domains {
        if let Err(e) = reload_domain(state, &domain).await {
            tracing::warn!(domain, error = %e.message, "cannot read the notification pipelines");
        }
    }
}

/// Delivers while this instance leads; false once the inbox closed (svc stops).
async fn lead(
    state: &AppState,
    inbox: &mut mpsc::UnboundedReceiver<Vec<AlarmEvent>>,
    leadership: &Leadership,
) -> bool {
    let Some(mut queue) = load_queue(state, leadership).await else {
        return true;
    };
    let notifier: &Notifier = &state.notifier;
    let mut scheduler = Scheduler::default();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let mut in_flight: HashSet<i64> = HashSet::new();
    let http = webhook::client();
    let retry = json!({"reconnect": {"initial": "1s", "max": "5m", "jitter": 0.1}});
    let backoff = Backoff::of(retry.as_object().expect("an object"));
    loop {
        let now = crate::time::now_ms();
        let find = |domain: &str, key: &str| notifier.pipelines.find(domain, key);
        let unacknowledged = |event: &AlarmEvent| {
            // Only when an escalation is due: the domain's standing alarms, read once.
            state
                .alarms
                .standing(&event.domain)
                .iter()
                .any(|s| s.name == event.alarm && s.state.needs_acknowledgement())
        };
        let due = scheduler.on_due(&mut queue, &find, &unacknowledged, now);
        let written = write(state, &mut queue).await;
        for id in due {
            if in_flight.len() >= IN_FLIGHT {
                break;
            }
            if in_flight.contains(&id) || !queue.is_written(id) {
                continue;
            }
            let Some(item) = queue.get(id).cloned() else {
                continue;
            };
            in_flight.insert(id);
            let (state, http, done) = (state.clone(), http.clone(), done_tx.clone());
            tokio::spawn(async move {
                let result = attempt(&state, &http, &item).await;
                let _ = done.send((item.id, result));
            });
        }
        let (queued, held) = queue.counts();
        notifier.stats.queued.store(queued, Ordering::Relaxed);
        notifier.stats.held.store(held, Ordering::Relaxed);
        let wake = if !written {
            Some(now + WRITE_RETRY_MS)
        } else if in_flight.len() >= IN_FLIGHT {
            None
        } else {
            queue.next_due(&in_flight)
        };
        let sleep = wake.map_or(IDLE, |at| Duration::from_millis((at - now).max(0) as u64));
        tokio::select! {
            _ = leadership.until(false) => {
                tracing::info!("no longer leading: alarm notifications are the new leader's to send");
                return true;
            }
            events = inbox.recv() => {
                let Some(events) = events else { return false };
                let now = crate::time::now_ms();
                for event in &events {
                    let pipelines = notifier.pipelines.of(&event.domain);
                    scheduler.on_event(&mut queue, &pipelines, event, now);
                }
            }
            Some((id, result)) = done_rx.recv() => {
                in_flight.remove(&id);
                finished(state, &mut queue, &backoff, id, result);
            }
            _ = tokio::time::sleep(sleep) => {}
        }
    }
}

/// The queue as the store kept it, tried until it can be read (or leadership goes).
async fn load_queue(state: &AppState, leadership: &Leadership) -> Option<Queue> {
    loop {
        match state.store.run(|s| s.notification_queue_load()).await {
            Ok(rows) => return Some(Queue::load(rows, crate::time::now_ms())),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the notification queue; trying again");
                tokio::select! {
                    _ = leadership.until(false) => return None,
                    _ = tokio::time::sleep(Duration::from_millis(WRITE_RETRY_MS as u64)) => {}
                }
            }
        }
    }
}

/// Writes the queue's changes in one transaction; false (the changes kept for the next try)
/// when the store did not take them.
async fn write(state: &AppState, queue: &mut Queue) -> bool {
    if !queue.has_writes() {
        return true;
    }
    let (upserts, deletes) = queue.writes();
    let (rows, ids) = (upserts.clone(), deletes.clone());
    match state
        .store
        .run(move |s| s.notification_queue_write(&rows, &ids))
        .await
    {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, "cannot write the notification queue; nothing new is sent until it can");
            queue.unwritten(&upserts, &deletes);
            false
        }
    }
}

/// One attempt at a delivery.
async fn attempt(state: &AppState, http: &reqwest::Client, item: &Item) -> Result<(), String> {
    match &item.job {
        Job::Webhook { url, headers, body } => webhook::post(http, url, headers, body).await,
        Job::Email { to, mail } => {
            let pipeline = state
                .notifier
                .pipelines
                .find(&item.domain, &item.pipeline)
                .ok_or("its pipeline was deleted")?;
            let server = pipeline.email.ok_or("its pipeline no longer has `email`")?;
            let (domain, key) = (item.domain.clone(), item.pipeline.clone());
            let password = state
                .store
                .run(move |s| s.notification_password(&domain, &key))
                .await
                .map_err(|e| format!("cannot read the SMTP password: {e}"))?;
            email::send(&server, password, &hello_name(state), to, mail).await
        }
        Job::Held { .. } | Job::Escalation { .. } => Ok(()),
    }
}

/// The name svc gives itself in SMTP's EHLO: the device name when it is a host name.
fn hello_name(state: &AppState) -> String {
    let name = &state.settings.device_name;
    let host_like = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if host_like {
        name.clone()
    } else {
        "svc".to_string()
    }
}

/// Settles an attempt: a delivered item leaves the queue, a failed one is due again later.
fn finished(
    state: &AppState,
    queue: &mut Queue,
    backoff: &Backoff,
    id: i64,
    result: Result<(), String>,
) {
    let stats = &state.notifier.stats;
    match result {
        Ok(()) => {
            queue.remove(id);
            stats.sent.fetch_add(1, Ordering::Relaxed);
        }
        Err(why) => {
            stats.failed.fetch_add(1, Ordering::Relaxed);
            let now = crate::time::now_ms();
            queue.update(id, |item| {
                item.attempts += 1;
                let delay = backoff.delay(u32::try_from(item.attempts).unwrap_or(u32::MAX));
                item.due_ms = now + delay.as_millis() as i64;
                tracing::warn!(
                    domain = item.domain,
                    pipeline = item.pipeline,
                    attempts = item.attempts,
                    retry_in_ms = item.due_ms - now,
                    error = why,
                    "an alarm notification was not delivered; it will be retried"
                );
            });
        }
    }
}
