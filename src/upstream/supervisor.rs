//! Every enabled upstream as a supervised task: one MQTT connection each (as its record
//! says), reconnected after any failure with capped exponential backoff and jitter; a ping
//! the upstream does not answer fails the connection like any other error. Each upstream has
//! a status the routes read: `disabled|connecting|connected|backoff|error`, since when, the
//! last error, attempts, next retry.

use super::connect::{Failure, Target};
use crate::duration::parse_duration;
use crate::store::Store;
use rand::Rng;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::task::JoinHandle;

/// How long one connection attempt may take.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// What an upstream's connection is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Disabled,
    Connecting,
    Connected,
    /// Waiting to try again after a failure that may pass (network, timeout).
    Backoff,
    /// Waiting to try again after a refusal that needs a change (credentials, TLS, protocol).
    Error,
}

/// The last failure: its cause (`dns|tcp|tls|auth|protocol|timeout`) and the sentence.
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

/// One upstream as the supervisor runs it.
struct Link {
    /// The record and password it runs with, to restart it when either changes.
    config: Value,
    status: Shared,
    task: Option<JoinHandle<()>>,
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Told of every status change (to publish it retained on `$SYS/svc/upstreams/<domain>/<name>/state`);
/// `None` when the upstream is gone.
pub type OnStatus = Arc<dyn Fn(&str, &str, Option<&Status>) + Send + Sync>;

pub struct Supervisor {
    store: Store,
    on_status: OnStatus,
    /// By (domain, record key).
    links: Mutex<HashMap<(String, String), Link>>,
}

impl Supervisor {
    pub fn new(store: Store, on_status: OnStatus) -> Arc<Supervisor> {
        Arc::new(Supervisor {
            store,
            on_status,
            links: Mutex::new(HashMap::new()),
        })
    }

    fn links(&self) -> MutexGuard<'_, HashMap<(String, String), Link>> {
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings a domain's running upstreams in step with its records: new and changed enabled
    /// ones (re)start, disabled ones stop, deleted ones go.
    pub async fn reload_domain(&self, domain: &str) {
        let (store, name) = (self.store.clone(), domain.to_string());
        let upstreams = match store.run(move |s| s.upstreams_of(&name)).await {
            Ok(upstreams) => upstreams,
            Err(e) => {
                tracing::warn!(domain, error = %e, "cannot read the domain's upstreams");
                return;
            }
        };
        let mut links = self.links();
        links.retain(|(d, key), link| {
            let kept = d != domain || upstreams.iter().any(|(k, ..)| k == key);
            if !kept {
                (self.on_status)(domain, &lock(&link.status).name, None);
            }
            kept
        });
        for (key, fields, password) in upstreams {
            let config = serde_json::json!({"record": fields, "password": password});
            let slot = (domain.to_string(), key.clone());
            if links.get(&slot).is_some_and(|link| link.config == config) {
                continue;
            }
            let id = format!("{domain}.{}:{key}", super::config::UPSTREAMS);
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
            let status: Shared = Arc::new(Mutex::new(Status::new(id, name.clone(), state)));
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
                    on_status: self.on_status.clone(),
                };
                tokio::spawn(run(Target::new(fields, password), backoff, report))
            });
            links.insert(
                slot,
                Link {
                    config,
                    status,
                    task,
                },
            );
        }
    }

    /// The status of every upstream of a domain, by name.
    pub fn statuses(&self, domain: &str) -> Vec<Status> {
        let mut statuses: Vec<Status> = self
            .links()
            .iter()
            .filter(|((d, _), _)| d == domain)
            .map(|(_, link)| lock(&link.status).clone())
            .collect();
        statuses.sort_by(|a, b| a.name.cmp(&b.name));
        statuses
    }

    pub fn status(&self, domain: &str, key: &str) -> Option<Status> {
        let links = self.links();
        let link = links.get(&(domain.to_string(), key.to_string()))?;
        let status = lock(&link.status).clone();
        Some(status)
    }

    /// Stops every connection (at shutdown).
    pub fn stop_all(&self) {
        self.links().clear();
    }
}

/// Reconnect delays: `initial` doubling up to `max`, each varied by ± `jitter` of itself so
/// that many edges do not reconnect in step after an outage.
struct Backoff {
    initial: Duration,
    max: Duration,
    jitter: f64,
}

impl Backoff {
    fn of(fields: &Map<String, Value>) -> Backoff {
        let reconnect = fields.get("reconnect");
        let duration = |name: &str, default: u64| {
            reconnect
                .and_then(|r| r.get(name))
                .and_then(Value::as_str)
                .and_then(|text| parse_duration(text).ok())
                .unwrap_or(Duration::from_secs(default))
        };
        Backoff {
            initial: duration("initial", 1),
            max: duration("max", 60),
            jitter: reconnect
                .and_then(|r| r.get("jitter"))
                .and_then(Value::as_f64)
                .unwrap_or(0.2),
        }
    }

    /// The delay after the `failures`-th failure in a row (1 = the first).
    fn delay(&self, failures: u32) -> Duration {
        let doubled = self
            .initial
            .saturating_mul(1u32 << failures.saturating_sub(1).min(20));
        let base = doubled.min(self.max).as_secs_f64();
        let spread = base * self.jitter;
        let varied = if spread > 0.0 {
            base + rand::thread_rng().gen_range(-spread..=spread)
        } else {
            base
        };
        Duration::from_secs_f64(varied.max(0.05))
    }
}

/// An upstream's status and where its changes are told.
struct Report {
    domain: String,
    status: Shared,
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
        (self.on_status)(&self.domain, &now.name, Some(&now));
    }
}

/// The supervised connection: connect, serve until it fails, wait, again.
async fn run(target: Target, backoff: Backoff, report: Report) {
    let report = Arc::new(report);
    let mut failures = 0;
    loop {
        report.update(|status| {
            status.attempts += 1;
            status.next_retry = None;
            status.enter(State::Connecting);
        });
        let connected = report.clone();
        let failure = target
            .hold(CONNECT_LIMIT, &mut move |_| {
                connected.update(|status| {
                    status.attempts = 0;
                    status.enter(State::Connected);
                });
            })
            .await;
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
                Failure::Auth(..) | Failure::Tls(_) | Failure::Protocol(_) => State::Error,
                Failure::Dns(_) | Failure::Tcp(_) | Failure::Timeout(_) => State::Backoff,
            };
            status.enter(state);
        });
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_within_the_jitter() {
        let backoff = Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(8),
            jitter: 0.0,
        };
        let delays: Vec<u64> = (1..=6).map(|n| backoff.delay(n).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 8, 8]);
        let jittered = Backoff {
            jitter: 0.5,
            ..backoff
        };
        for _ in 0..100 {
            let d = jittered.delay(3).as_secs_f64();
            assert!((2.0..=6.0).contains(&d), "{d}");
        }
        assert!(jittered.delay(u32::MAX) <= Duration::from_secs(12));
    }
}
