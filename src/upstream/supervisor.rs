//! Every enabled upstream as a supervised task: one MQTT connection each (as its record
//! says), reconnected after any failure with capped exponential backoff and jitter; a ping
//! the upstream does not answer fails the connection like any other error. Each upstream has
//! a status the routes read: `disabled|connecting|connected|backoff|error` (`connected` once
//! the upstream acknowledged the incoming bindings' subscriptions, not at the CONNACK), since
//! when, the last error, attempts, next retry, and the traffic of its [`Relay`].
//!
//! The supervisor is also where the local broker hands every accepted message to the
//! upstreams that carry it out ([`Supervisor::carry_out`]): written to their durable queues
//! before the publisher is acknowledged.
//!
//! An upstream that stops (disabled, changed, deleted, or svc stopping) is asked to, and given
//! [`STOP_LIMIT`] to say goodbye (a Sparkplug edge node's NDEATH, a DISCONNECT) before its task
//! is aborted; a changed upstream connects again only after its old connection ended, so the
//! two never overlap under one client id.

use super::binding::Binding;
use super::connect::{Failure, Target};
use super::queue::{Limits, UpstreamMessage};
use super::queue_writer::QueueWriter;
use super::relay::{Local, Outbound, Outbox, Relay, Traffic};
use super::session::Open;
use super::sparkplug::{Edge, EdgeConfig};
use crate::backoff::Backoff;
use crate::store::Store;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long one connection attempt may take.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);
/// How long a stopping upstream may take to say goodbye before its task is aborted.
const STOP_LIMIT: Duration = Duration::from_secs(3);

pub use crate::model::LinkState as State;

/// The last failure: its cause (`dns|tcp|tls|auth|protocol|subscribe|timeout`) and the
/// sentence.
#[derive(Debug, Clone, Serialize)]
pub struct LastError {
    pub kind: &'static str,
    pub text: String,
    pub at: String,
}

/// `GET /svc/upstreams/{id}/status`.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub id: String,
    pub name: String,
    pub state: State,
    pub since: String,
    pub last_error: Option<LastError>,
    /// Connection attempts since the last successful one.
    pub attempts: u32,
    pub next_retry: Option<String>,
    #[serde(flatten)]
    pub traffic: Traffic,
}

impl Status {
    fn new(id: String, name: String, state: State) -> Status {
        Status {
            id,
            name,
            state,
            since: now(),
            last_error: None,
            attempts: 0,
            next_retry: None,
            traffic: Traffic::default(),
        }
    }

    fn enter(&mut self, state: State) {
        if self.state != state {
            self.state = state;
            self.since = now();
        }
    }
}

fn now() -> String {
    crate::historian::format_ms(crate::time::now_ms())
}

type Shared = Arc<Mutex<Status>>;

fn lock(status: &Shared) -> MutexGuard<'_, Status> {
    status.lock().unwrap_or_else(|e| e.into_inner())
}

/// The task of an enabled upstream, and how to ask it to stop.
struct Running {
    handle: JoinHandle<()>,
    stop: CancellationToken,
}

impl Running {
    /// Asks the task to stop and waits for it, at most [`STOP_LIMIT`] (then aborts it).
    async fn stop(mut self) {
        self.stop.cancel();
        if tokio::time::timeout(STOP_LIMIT, &mut self.handle)
            .await
            .is_err()
        {
            self.handle.abort();
        }
    }
}

/// Stops tasks, all at once.
async fn stop_all(tasks: Vec<Running>) {
    futures::future::join_all(tasks.into_iter().map(Running::stop)).await;
}

/// One upstream as the supervisor runs it.
struct Link {
    /// The record and password it runs with, to restart it when either changes.
    config: Value,
    status: Shared,
    relay: Arc<Relay>,
    task: Option<Running>,
}

impl Link {
    fn status(&self) -> Status {
        let mut status = lock(&self.status).clone();
        status.traffic = self.relay.traffic();
        status
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // Stopped gracefully before being dropped, unless the supervisor itself goes.
        if let Some(task) = self.task.take() {
            task.handle.abort();
        }
    }
}

/// Told of every status change (to publish it retained on `$SYS/svc/upstreams/<domain>/<name>/state`);
/// `None` when the upstream is gone.
pub type OnStatus = Arc<dyn Fn(&str, &str, Option<&Status>) + Send + Sync>;

pub struct Supervisor {
    store: Store,
    writer: QueueWriter,
    /// The next sequence number of any upstream's queue.
    seqs: Arc<AtomicI64>,
    on_status: OnStatus,
    local: Arc<dyn Local>,
    /// By (domain, record key).
    links: Mutex<HashMap<(String, String), Link>>,
    /// The enabled upstreams with outgoing bindings, for [`Supervisor::carry_out`].
    routes: RwLock<Arc<[Arc<Relay>]>>,
    /// One reload at a time, so two record writes cannot interleave their reloads.
    reloading: tokio::sync::Mutex<()>,
    /// The bdSeq of each Sparkplug edge node's next connection, by (domain, record key): kept
    /// across changes of the record, forgotten when the upstream is deleted.
    bd_seqs: Mutex<HashMap<(String, String), Arc<AtomicU64>>>,
}

impl Supervisor {
    pub fn new(
        store: Store,
        on_status: OnStatus,
        local: Arc<dyn Local>,
    ) -> anyhow::Result<Arc<Supervisor>> {
        let last_seq = store.upstream_queue_last_seq()?;
        Ok(Arc::new(Supervisor {
            writer: QueueWriter::start(store.clone())?,
            seqs: Arc::new(AtomicI64::new(last_seq + 1)),
            store,
            on_status,
            local,
            links: Mutex::new(HashMap::new()),
            routes: RwLock::new(Arc::new([])),
            reloading: tokio::sync::Mutex::new(()),
            bd_seqs: Mutex::new(HashMap::new()),
        }))
    }

    /// Writes every accepted message an enabled upstream carries out to that upstream's
    /// durable queue (committed with whatever else waits to be written), then queues it for
    /// sending. An error means
    /// nothing was queued: the publisher is not acknowledged and publishes again.
    pub async fn carry_out(&self, messages: &[Outbound<'_>]) -> Result<(), String> {
        let routes = self
            .routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if routes.is_empty() {
            return Ok(());
        }
        let mut entries: Vec<(usize, UpstreamMessage)> = Vec::new();
        for message in messages {
            for (route, relay) in routes.iter().enumerate() {
                entries.extend(relay.entry_for(message).map(|item| (route, item)));
            }
        }
        if entries.is_empty() {
            return Ok(());
        }
        let rows: Vec<(String, UpstreamMessage)> = entries
            .iter()
            .map(|(route, item)| (routes[*route].outbox.id.clone(), item.clone()))
            .collect();
        self.writer.append(rows).await?;
        for (route, relay) in routes.iter().enumerate() {
            relay.enqueue(
                entries
                    .iter()
                    .filter(|(r, _)| *r == route)
                    .map(|(_, item)| item.clone()),
            );
        }
        Ok(())
    }

    fn rebuild_routes(&self, links: &HashMap<(String, String), Link>) {
        let routes: Vec<Arc<Relay>> = links
            .values()
            .filter(|link| link.task.is_some() && link.relay.carries_out())
            .map(|link| link.relay.clone())
            .collect();
        *self.routes.write().unwrap_or_else(|e| e.into_inner()) = routes.into();
    }

    fn links(&self) -> MutexGuard<'_, HashMap<(String, String), Link>> {
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings a domain's running upstreams in step with its records: new and changed enabled
    /// ones (re)start, disabled ones stop, deleted ones go. Stopping ones end (gracefully, see
    /// [`STOP_LIMIT`]) before their replacements start.
    pub async fn reload_domain(&self, domain: &str) {
        let _one_at_a_time = self.reloading.lock().await;
        let (store, name) = (self.store.clone(), domain.to_string());
        let upstreams = match store.run(move |s| s.upstreams_of(&name)).await {
            Ok(upstreams) => upstreams,
            Err(e) => {
                tracing::warn!(domain, error = %e, "cannot read the domain's upstreams");
                return;
            }
        };
        // Queues live as long as their upstream, across changes of its record.
        let mut outboxes: HashMap<String, Arc<Outbox>> = self
            .links()
            .iter()
            .filter(|((d, _), _)| d == domain)
            .map(|((_, key), link)| (key.clone(), link.relay.outbox.clone()))
            .collect();
        for (key, fields, _) in &upstreams {
            if !outboxes.contains_key(key) {
                let id = record_id(domain, key);
                let seqs = self.seqs.clone();
                let outbox =
                    Outbox::load(&self.store, &self.writer, seqs, &id, Limits::of(fields)).await;
                outboxes.insert(key.clone(), outbox);
            }
        }
        let configs: Vec<Value> = upstreams
            .iter()
            .map(
                |(_, fields, password)| serde_json::json!({"record": fields, "password": password}),
            )
            .collect();
        // The tasks of deleted and changed upstreams stop first; their links (and routes) stay
        // until they have, then the deleted ones go and the changed ones are replaced.
        let mut stopping = Vec::new();
        let mut deleted = Vec::new();
        {
            let mut links = self.links();
            for ((d, key), link) in links.iter_mut() {
                if d == domain && !upstreams.iter().any(|(k, ..)| k == key) {
                    stopping.extend(link.task.take());
                    deleted.push(key.clone());
                }
            }
            for ((key, ..), config) in upstreams.iter().zip(&configs) {
                let slot = (domain.to_string(), key.clone());
                if let Some(link) = links.get_mut(&slot).filter(|l| l.config != *config) {
                    stopping.extend(link.task.take());
                }
            }
        }
        stop_all(stopping).await;
        let mut links = self.links();
        links.retain(|(d, key), link| {
            let gone = d == domain && deleted.contains(key);
            if gone {
                (self.on_status)(domain, &lock(&link.status).name, None);
                self.bd_seqs().remove(&(domain.to_string(), key.clone()));
                let (store, id) = (self.store.clone(), link.relay.outbox.id.clone());
                tokio::spawn(async move {
                    if let Err(e) = store.run(move |s| s.upstream_queue_clear(&id)).await {
                        tracing::warn!(error = %e, "cannot delete a deleted upstream's queue");
                    }
                });
            }
            !gone
        });
        for ((key, fields, password), config) in upstreams.into_iter().zip(configs) {
            let slot = (domain.to_string(), key.clone());
            if links.get(&slot).is_some_and(|link| link.config == config) {
                continue;
            }
            let Some(outbox) = outboxes.remove(&key) else {
                continue;
            };
            outbox.set_limits(Limits::of(&fields));
            let no_local = fields.get("mqtt_version").and_then(Value::as_str) != Some("3.1.1");
            let edge = EdgeConfig::of(domain, &fields).map(|config| {
                let bd_seq = self.bd_seqs().entry(slot.clone()).or_default().clone();
                Arc::new(Edge::new(config, bd_seq))
            });
            let relay = Arc::new(Relay::new(Binding::all_of(&fields), outbox, no_local, edge));
            let name = fields
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let enabled = fields.get("enabled") != Some(&Value::Bool(false));
            let state = if enabled {
                State::Connecting
            } else {
                State::Disabled
            };
            let status: Shared = Arc::new(Mutex::new(Status::new(
                record_id(domain, &key),
                name.clone(),
                state,
            )));
            if let Some(old) = links.get(&slot) {
                let old_name = lock(&old.status).name.clone();
                if old_name != name {
                    (self.on_status)(domain, &old_name, None);
                }
            }
            (self.on_status)(domain, &name, Some(&lock(&status)));
            let task = enabled.then(|| {
                tracing::info!(domain, upstream = name, "upstream connecting");
                let backoff = Backoff::of(&fields);
                let report = Report {
                    domain: domain.to_string(),
                    status: status.clone(),
                    relay: relay.clone(),
                    on_status: self.on_status.clone(),
                };
                let how = Open::plain(CONNECT_LIMIT, true, Some(format!("{domain}/{name}")));
                let target = Target::new(fields, password);
                let stop = CancellationToken::new();
                let handle = tokio::spawn(run(
                    target,
                    how,
                    backoff,
                    report,
                    self.local.clone(),
                    stop.clone(),
                ));
                Running { handle, stop }
            });
            links.insert(
                slot,
                Link {
                    config,
                    status,
                    relay,
                    task,
                },
            );
        }
        self.rebuild_routes(&links);
    }

    /// The status of every upstream of a domain, by name.
    pub fn statuses(&self, domain: &str) -> Vec<Status> {
        let mut statuses: Vec<Status> = self
            .links()
            .iter()
            .filter(|((d, _), _)| d == domain)
            .map(|(_, link)| link.status())
            .collect();
        statuses.sort_by(|a, b| a.name.cmp(&b.name));
        statuses
    }

    pub fn status(&self, domain: &str, key: &str) -> Option<Status> {
        let links = self.links();
        let link = links.get(&(domain.to_string(), key.to_string()))?;
        Some(link.status())
    }

    /// How many upstreams of every domain are in each state (every state listed, for
    /// GET /metrics).
    pub fn state_counts(&self) -> Vec<(&'static str, usize)> {
        State::tally(self.links().values().map(|link| lock(&link.status).state))
    }

    /// Stops every connection, each saying goodbye (at shutdown).
    pub async fn stop_all(&self) {
        let _one_at_a_time = self.reloading.lock().await;
        *self.routes.write().unwrap_or_else(|e| e.into_inner()) = Arc::new([]);
        let mut links: Vec<Link> = self.links().drain().map(|(_, link)| link).collect();
        stop_all(
            links
                .iter_mut()
                .filter_map(|link| link.task.take())
                .collect(),
        )
        .await;
    }

    fn bd_seqs(&self) -> MutexGuard<'_, HashMap<(String, String), Arc<AtomicU64>>> {
        self.bd_seqs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The record id of upstream `key` of `domain`: its status id and its queue's name.
fn record_id(domain: &str, key: &str) -> String {
    format!("{domain}.{}:{key}", super::config::UPSTREAMS)
}

/// An upstream's status and where its changes are told.
struct Report {
    domain: String,
    status: Shared,
    relay: Arc<Relay>,
    on_status: OnStatus,
}

impl Report {
    /// Changes the status, then tells of it (outside the lock).
    fn update(&self, change: impl FnOnce(&mut Status)) {
        let now = {
            let mut status = lock(&self.status);
            change(&mut status);
            status.clone()
        };
        let now = Status {
            traffic: self.relay.traffic(),
            ..now
        };
        (self.on_status)(&self.domain, &now.name, Some(&now));
    }
}

/// The supervised connection: connect, serve until it fails, wait, again; until `stop`.
async fn run(
    target: Target,
    how: Open,
    backoff: Backoff,
    report: Report,
    local: Arc<dyn Local>,
    stop: CancellationToken,
) {
    let report = Arc::new(report);
    let relay = report.relay.clone();
    let mut failures = 0;
    loop {
        report.update(|status| {
            status.attempts += 1;
            status.next_retry = None;
            status.enter(State::Connecting);
        });
        let connected = report.clone();
        let ended = relay
            .serve(&target, &how, local.clone(), &stop, &mut move |_| {
                connected.update(|status| {
                    status.attempts = 0;
                    status.enter(State::Connected);
                });
            })
            .await;
        let Some(failure) = ended else {
            return;
        };
        let was_connected = lock(&report.status).state == State::Connected;
        failures = if was_connected { 1 } else { failures + 1 };
        let delay = backoff.delay(failures);
        report.update(|status| {
            tracing::info!(upstream = status.name, error = %failure, "upstream connection failed");
            status.last_error = Some(LastError {
                kind: failure.kind(),
                text: failure.to_string(),
                at: now(),
            });
            status.next_retry = Some(crate::historian::format_ms(
                crate::time::now_ms() + i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
            ));
            let state = match failure {
                Failure::Auth(..)
                | Failure::Tls(_)
                | Failure::Protocol(_)
                | Failure::Subscribe(_) => State::Error,
                Failure::Dns(_) | Failure::Tcp(_) | Failure::Timeout(_) => State::Backoff,
            };
            status.enter(state);
        });
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stop.cancelled() => return,
        }
    }
}
