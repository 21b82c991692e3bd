//! Every enabled connector as a supervised task: connect, read until the link fails or its
//! watchdog fires, turn the tags `bad` once, wait (capped exponential backoff with jitter),
//! again, forever, including when the device is down at start. The supervisor keeps each
//! connector's status, lists server certificates a domain does not trust yet, and routes
//! writes (from `POST /svc/tag/write` and from MQTT write topics) to the link that owns the
//! point.

use super::feed::{Feed, Uns};
use super::kind::{
    BrowseEntry, Failure, FailureKind, Identity, Kind, PointAddress, Target, Write, WriteError,
};
use super::point::Point;
use super::status::{State, Status};
use super::supervised::{lock, note_certificate, thumbprint, write_through, Shared, Supervised};
use crate::backoff::Backoff;
use crate::store::Store;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long a test or a browse may take.
pub const TEST_LIMIT: Duration = Duration::from_secs(10);
/// Writes waiting for a link, per connector.
const WRITE_QUEUE: usize = 256;

/// Told of every status change (to publish it retained on
/// `$SYS/svc/connectors/<domain>/<name>/state`); `None` when the connector is gone.
pub type OnStatus = Arc<dyn Fn(&str, &str, Option<&Status>) + Send + Sync>;

/// The record, password and trusted certificates a connector runs with, to restart it when
/// any changes. The record is kept as its JSON text: a connector of 10,000 points held as a map
/// took 12.6 MB, as text 1.1 MB (bench/connectors-history.md).
#[derive(PartialEq)]
struct RunConfig {
    record: String,
    password: Option<String>,
    /// The thumbprints of the trusted server certificates.
    trusted: Vec<String>,
}

impl RunConfig {
    fn record(&self) -> Map<String, Value> {
        serde_json::from_str(&self.record).unwrap_or_default()
    }
}

/// One connector as the supervisor runs it.
struct Running {
    config: Arc<RunConfig>,
    shared: Arc<Shared>,
    writes: mpsc::Sender<Write>,
    task: Option<JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Where writes go: by (domain, tag) the connector key and point index; by write topic the
/// (domain, tag).
#[derive(Default)]
struct WriteRoutes {
    by_tag: HashMap<(String, String), (String, usize)>,
    by_topic: HashMap<String, (String, String)>,
}

pub struct Supervisor {
    store: Store,
    uns: Arc<dyn Uns>,
    on_status: OnStatus,
    /// `<data dir>/connectors`: each connector's scratch directory lies under it.
    scratch: PathBuf,
    /// This installation's OPC UA application URI.
    application_uri: String,
    running: Mutex<HashMap<(String, String), Running>>,
    routes: RwLock<Arc<WriteRoutes>>,
    /// Whether any point has a write topic: every accepted MQTT message asks
    /// [`Supervisor::write_topic`], which costs nothing while none has.
    any_write_topic: AtomicBool,
    /// One reload at a time, so two record writes cannot interleave their reloads.
    reloading: tokio::sync::Mutex<()>,
}

impl Supervisor {
    pub fn new(
        store: Store,
        uns: Arc<dyn Uns>,
        on_status: OnStatus,
        data_dir: PathBuf,
        device_name: &str,
    ) -> Arc<Supervisor> {
        Arc::new(Supervisor {
            store,
            uns,
            on_status,
            scratch: data_dir.join("connectors"),
            application_uri: format!("urn:svc:{device_name}"),
            running: Mutex::new(HashMap::new()),
            routes: RwLock::new(Arc::default()),
            any_write_topic: AtomicBool::new(false),
            reloading: tokio::sync::Mutex::new(()),
        })
    }

    fn running(&self) -> MutexGuard<'_, HashMap<(String, String), Running>> {
        lock(&self.running)
    }

    /// Brings a domain's running connectors in step with its records and trust list: new
    /// and changed ones (re)start, disabled ones stop, deleted ones go.
    pub async fn reload_domain(&self, domain: &str) {
        let _one_at_a_time = self.reloading.lock().await;
        let name = domain.to_string();
        let read = self
            .store
            .run(move |s| Ok((s.connectors_of(&name)?, s.server_certificates(&name)?)))
            .await;
        let (connectors, certificates) = match read {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!(domain, error = %e, "cannot read the domain's connectors");
                return;
            }
        };
        let trusted: Vec<Vec<u8>> = certificates
            .into_iter()
            .filter(|c| c.state == "trusted")
            .map(|c| c.der)
            .collect();
        let mut targets = Vec::new();
        for (key, fields, password) in connectors {
            let Some(kind) = fields
                .get("kind")
                .and_then(Value::as_str)
                .and_then(super::kind)
            else {
                continue;
            };
            let identity = if kind.uses_certificates() {
                match self.identity(kind).await {
                    Ok(identity) => Some(identity),
                    Err(e) => {
                        tracing::warn!(domain, error = %e, "cannot make svc's OPC UA certificate");
                        None
                    }
                }
            } else {
                None
            };
            let trusted = if kind.uses_certificates() {
                trusted.clone()
            } else {
                Vec::new()
            };
            let config = Arc::new(RunConfig {
                record: Value::Object(fields.clone()).to_string(),
                password: password.clone(),
                trusted: trusted.iter().map(|der| thumbprint(der)).collect(),
            });
            targets.push((key, kind, fields, password, identity, trusted, config));
        }
        let mut running = self.running();
        running.retain(|(d, key), run| {
            let kept = d != domain || targets.iter().any(|t| t.0 == *key);
            if !kept {
                (self.on_status)(domain, &lock(&run.shared.status).name, None);
            }
            kept
        });
        for (key, kind, fields, password, identity, trusted, config) in targets {
            let slot = (domain.to_string(), key.clone());
            if running.get(&slot).is_some_and(|run| run.config == config) {
                continue;
            }
            if let Some(old) = running.remove(&slot) {
                let old_name = lock(&old.shared.status).name.clone();
                if Some(old_name.as_str()) != fields.get("name").and_then(Value::as_str) {
                    (self.on_status)(domain, &old_name, None);
                }
            }
            let run = self.start(
                domain, &key, kind, fields, password, identity, trusted, config,
            );
            running.insert(slot, run);
        }
        self.rebuild_routes(&running);
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        domain: &str,
        key: &str,
        kind: &'static dyn Kind,
        fields: Map<String, Value>,
        password: Option<String>,
        identity: Option<Identity>,
        trusted: Vec<Vec<u8>>,
        config: Arc<RunConfig>,
    ) -> Running {
        let name = fields
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let enabled = fields.get("enabled") != Some(&Value::Bool(false));
        let points: Vec<Map<String, Value>> = fields
            .get("points")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_object().cloned())
            .collect();
        let origin: Arc<str> = format!("connector:{domain}/{name}").into();
        let feed = Feed::start(
            points.iter().map(Point::of).collect(),
            self.uns.clone(),
            origin,
        );
        let state = if enabled {
            State::Connecting
        } else {
            State::Disabled
        };
        let shared = Arc::new(Shared {
            domain: domain.to_string(),
            status: Mutex::new(Status::new(
                record_id(domain, key),
                name.clone(),
                kind.name().to_string(),
                state,
            )),
            feed,
            writes: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            on_status: self.on_status.clone(),
        });
        shared.update(|_| {});
        let (writes, queue) = mpsc::channel(WRITE_QUEUE);
        let task = enabled.then(|| {
            tracing::info!(domain, connector = name, "connector connecting");
            let target = self.target(
                domain,
                &fields,
                password,
                identity,
                trusted,
                self.scratch.join(domain).join(key),
            );
            let supervised = Supervised {
                kind,
                target,
                backoff: Backoff::of(&fields),
                shared: shared.clone(),
                store: self.store.clone(),
                leadership: self.store.cluster().leadership(),
            };
            tokio::spawn(supervised.run(queue))
        });
        Running {
            config,
            shared,
            writes,
            task,
        }
    }

    /// A connector's target: its checked record, password and security.
    fn target(
        &self,
        domain: &str,
        fields: &Map<String, Value>,
        password: Option<String>,
        identity: Option<Identity>,
        trusted: Vec<Vec<u8>>,
        scratch: PathBuf,
    ) -> Target {
        let text = |value: Option<&Value>| {
            value
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Target {
            domain: domain.to_string(),
            name: text(fields.get("name")),
            settings: fields
                .get("settings")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            password,
            points: fields
                .get("points")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|p| {
                    PointAddress::new(
                        text(p.get("tag")),
                        p.get("address")
                            .and_then(Value::as_object)
                            .unwrap_or(&Map::new()),
                        p.get("writable") == Some(&Value::Bool(true)),
                    )
                })
                .collect(),
            identity,
            trusted,
            scratch,
        }
    }

    /// svc's identity and the domain's trusted server certificates, for a kind that uses
    /// certificates (nothing otherwise).
    async fn security(
        &self,
        kind: &'static dyn Kind,
        domain: &str,
    ) -> Result<(Option<Identity>, Vec<Vec<u8>>), Failure> {
        if !kind.uses_certificates() {
            return Ok((None, Vec::new()));
        }
        let fail = |e: String| Failure::new(FailureKind::Security, e);
        let identity = self.identity(kind).await.map_err(fail)?;
        let name = domain.to_string();
        let certificates = self
            .store
            .run(move |s| s.server_certificates(&name))
            .await
            .map_err(|e| fail(e.to_string()))?;
        let trusted = certificates
            .into_iter()
            .filter(|c| c.state == "trusted")
            .map(|c| c.der)
            .collect();
        Ok((Some(identity), trusted))
    }

    /// Connects an unsaved, checked connector record of `domain` once
    /// (`POST /svc/connectors/test`): what the device says of itself, or why it cannot be
    /// reached within [`TEST_LIMIT`] (a certificate the domain does not trust yet is listed).
    pub async fn test(
        &self,
        domain: &str,
        fields: &Map<String, Value>,
        password: Option<String>,
    ) -> Result<Value, Failure> {
        let kind = kind_of(fields)?;
        let (identity, trusted) = self.security(kind, domain).await?;
        let scratch = self
            .scratch
            .join(domain)
            .join(format!("test-{}", crate::ids::new_key()));
        let target = self.target(domain, fields, password, identity, trusted, scratch.clone());
        let _ = std::fs::create_dir_all(&scratch);
        let connected = tokio::time::timeout(TEST_LIMIT, kind.connect(&target)).await;
        let _ = std::fs::remove_dir_all(&scratch);
        let failure = match connected {
            Ok(Ok(link)) => return Ok(link.description()),
            Ok(Err(failure)) => failure,
            Err(_) => Failure::new(
                FailureKind::Timeout,
                format!("no answer within {} s", TEST_LIMIT.as_secs()),
            ),
        };
        note_certificate(&self.store, domain, &failure).await;
        Err(failure)
    }

    /// [`Supervisor::test`] of the stored connector `key` of `domain`, with its stored
    /// password; `None` when the domain has no such connector.
    pub async fn test_stored(&self, domain: &str, key: &str) -> Option<Result<Value, Failure>> {
        let (fields, password) = self.stored(domain, key)?;
        Some(self.test(domain, &fields, password).await)
    }

    /// The record and password connector `key` of `domain` runs with.
    fn stored(&self, domain: &str, key: &str) -> Option<(Map<String, Value>, Option<String>)> {
        let running = self.running();
        let config = &running.get(&(domain.to_string(), key.to_string()))?.config;
        Some((config.record(), config.password.clone()))
    }

    /// One level of the address space of connector `key` of `domain` under `node`; `None`
    /// when the domain has no such connector.
    pub async fn browse(
        &self,
        domain: &str,
        key: &str,
        node: Option<&str>,
    ) -> Option<Result<Vec<BrowseEntry>, Failure>> {
        let (fields, password) = self.stored(domain, key)?;
        Some(
            async {
                let kind = kind_of(&fields)?;
                let (identity, trusted) = self.security(kind, domain).await?;
                let scratch = self.scratch.join(domain).join(key).join("browse");
                let _ = std::fs::create_dir_all(&scratch);
                let target = self.target(domain, &fields, password, identity, trusted, scratch);
                let browsed = tokio::time::timeout(TEST_LIMIT, kind.browse(&target, node)).await;
                let result = browsed.unwrap_or_else(|_| {
                    Err(Failure::new(
                        FailureKind::Timeout,
                        format!("no answer within {} s", TEST_LIMIT.as_secs()),
                    ))
                });
                if let Err(failure) = &result {
                    note_certificate(&self.store, domain, failure).await;
                }
                result
            }
            .await,
        )
    }

    fn rebuild_routes(&self, running: &HashMap<(String, String), Running>) {
        let mut routes = WriteRoutes::default();
        for ((domain, key), run) in running {
            for (index, point) in run.shared.feed.points().iter().enumerate() {
                routes
                    .by_tag
                    .insert((domain.clone(), point.tag.clone()), (key.clone(), index));
                if let Some(topic) = &point.write_topic {
                    routes
                        .by_topic
                        .insert(topic.clone(), (domain.clone(), point.tag.clone()));
                }
            }
        }
        self.any_write_topic
            .store(!routes.by_topic.is_empty(), Ordering::Relaxed);
        *self.routes.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(routes);
    }

    fn routes(&self) -> Arc<WriteRoutes> {
        self.routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// svc's own certificate: the one in the store, or a new one the kind makes (kept in the
    /// store first, so every instance uses the same).
    async fn identity(&self, kind: &'static dyn Kind) -> Result<Identity, String> {
        let kept = self
            .store
            .run(|s| s.connector_identity())
            .await
            .map_err(|e| e.to_string())?;
        let (certificate, private_key) = match kept {
            Some(kept) => kept,
            None => {
                let uri = self.application_uri.clone();
                let made = tokio::task::spawn_blocking(move || kind.new_identity(&uri))
                    .await
                    .map_err(|e| e.to_string())??;
                self.store
                    .run(move |s| s.keep_connector_identity(&made.certificate, &made.private_key))
                    .await
                    .map_err(|e| e.to_string())?
            }
        };
        Ok(Identity {
            certificate,
            private_key,
        })
    }

    /// The (domain, tag) whose write topic `topic` is, if it is one.
    pub fn write_topic(&self, topic: &str) -> Option<(String, String)> {
        if !self.any_write_topic.load(Ordering::Relaxed) {
            return None;
        }
        self.routes().by_topic.get(topic).cloned()
    }

    /// Writes `value` (in the tag's units) to the device behind tag `tag` of `domain`, and
    /// answers once the device did. `None` when no connector of the domain reads that tag.
    pub async fn write(
        &self,
        domain: &str,
        tag: &str,
        value: Value,
    ) -> Option<Result<(), WriteError>> {
        let (key, index) = self
            .routes()
            .by_tag
            .get(&(domain.to_string(), tag.to_string()))
            .cloned()?;
        let (shared, writes) = {
            let running = self.running();
            let run = running.get(&(domain.to_string(), key))?;
            (run.shared.clone(), run.writes.clone())
        };
        let point = &shared.feed.points()[index];
        let name = lock(&shared.status).name.clone();
        if !point.writable {
            return Some(Err(WriteError::Invalid(format!(
                "tag `{tag}` is read from connector `{name}`, whose point is not writable"
            ))));
        }
        let result = write_through(&shared, &writes, &name, index, point.raw(value)).await;
        let counter = if result.is_ok() {
            &shared.writes
        } else {
            &shared.write_errors
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Some(result)
    }

    /// The status of every connector of a domain, by name.
    pub fn statuses(&self, domain: &str) -> Vec<Status> {
        let mut statuses: Vec<Status> = self
            .running()
            .iter()
            .filter(|((d, _), _)| d == domain)
            .map(|(_, run)| run.shared.status())
            .collect();
        statuses.sort_by(|a, b| a.name.cmp(&b.name));
        statuses
    }

    pub fn status(&self, domain: &str, key: &str) -> Option<Status> {
        let running = self.running();
        Some(
            running
                .get(&(domain.to_string(), key.to_string()))?
                .shared
                .status(),
        )
    }

    /// How many connectors of every domain are in each state (for GET /metrics).
    pub fn state_counts(&self) -> Vec<(&'static str, usize)> {
        State::tally(self.running().values().map(|run| run.shared.state()))
    }

    /// Stops every connector (at shutdown).
    pub fn stop_all(&self) {
        self.running().clear();
        self.any_write_topic.store(false, Ordering::Relaxed);
        *self.routes.write().unwrap_or_else(|e| e.into_inner()) = Arc::default();
    }
}

/// The record id of connector `key` of `domain` (its status id).
fn record_id(domain: &str, key: &str) -> String {
    format!("{domain}.{}:{key}", crate::store::CONNECTORS)
}

/// The kind a checked record names.
fn kind_of(fields: &Map<String, Value>) -> Result<&'static dyn Kind, Failure> {
    let name = fields
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    super::kind(name)
        .ok_or_else(|| Failure::new(FailureKind::Protocol, format!("no connector kind `{name}`")))
}
