//! `svc serve`: opens the store, bootstraps the first administrator, binds every listener,
//! announces them on the `ready` line, and serves until SIGINT/SIGTERM.

mod error;
pub mod settings;

mod http;
mod routes;
mod services;
mod systemd_notify;

use crate::broker::{Broker, BrokerConfig, TlsListeners};
use crate::historian::writer::HistorianWriter;
use crate::store::{Store, StoreResult};
use anyhow::{Context, Result};
use axum::http::StatusCode;
pub use services::backups::lock_data_dir;
use services::credentials::Jwt;
use services::identity::Identities;
use settings::{ServeArgs, Settings};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use tokio::net::TcpListener;

/// Everything a handler may need; one allocation shared by every request.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

pub struct Shared {
    pub store: Store,
    pub settings: Arc<Settings>,
    /// Who a credential belongs to, and what they may do (JWTs, API keys, passwords, grants).
    pub identities: Arc<Identities>,
    pub http_addr: SocketAddr,
    /// Tags, their latest values and their history, as every accepted message meets them.
    pub uns: services::uns::Uns,
    /// Set once the broker is up; the broker's policy needs the state first.
    pub broker: Arc<OnceLock<Broker>>,
    pub automation: services::automation::Automation,
    /// The other instances sharing the store (none on SQLite).
    pub peers: services::peers::Peers,
    pub upstreams: Arc<crate::upstream::supervisor::Supervisor>,
    /// The devices (OPC UA, Modbus) read into tags and written back.
    pub connectors: Arc<crate::connectors::supervisor::Supervisor>,
    /// The Sparkplug host: edge nodes' metrics as tags.
    pub sparkplug: services::sparkplug::Sparkplug,
    /// Alarms: every domain's alarms evaluated on the values they watch.
    pub alarms: services::alarms::AlarmService,
    /// The alarm notification pipelines (webhooks, e-mail).
    pub notifier: services::notifications::Notifier,
    /// REST record writes, committed in groups (see [`services::record_writer::RecordWriter`]).
    pub records: services::record_writer::RecordWriter,
    /// Recent requests for `GET /svc/logs`.
    pub request_log: Arc<http::request_log::RequestLog>,
    /// The newest snapshot of the store, for `GET /svc/`.
    pub backups: Arc<services::backups::Backups>,
}

impl AppState {
    /// Every domain's name, `svc_admin` included, in order.
    pub async fn domain_names(&self) -> StoreResult<Vec<String>> {
        let mut domains: Vec<String> = self
            .store
            .run(|s| s.list_domains())
            .await?
            .into_iter()
            .map(|d| d.name)
            .collect();
        domains.push(crate::ids::ADMIN_DOMAIN.to_string());
        domains.sort();
        domains.dedup();
        Ok(domains)
    }

    /// Changes whenever who may see or write what could have changed: grants, users, keys,
    /// tag ownership. Caches of authorization decisions start over when it does.
    pub fn authz_generation(&self) -> u64 {
        self.identities.generation() + self.uns.tags.generation()
    }

    pub fn broker(&self) -> error::ApiResult<&Broker> {
        self.broker.get().ok_or_else(|| {
            error::ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the MQTT broker is not running",
            )
        })
    }
}

pub fn run(args: ServeArgs) -> Result<()> {
    let _log_flush = init_logging();
    let settings = Settings::resolve(args)?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(crate::memory::collect_when_idle)
        .build()
        .context("cannot start the async runtime")?
        .block_on(serve(settings))
}

/// Logs go to stderr in batches written by a background thread, so a request never waits on the
/// terminal or a pipe; the returned guard writes what is left when dropped.
fn init_logging() -> services::log_writer::FlushGuard {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("SVC_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let (writer, guard) = services::log_writer::batched_stderr();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    guard
}

async fn serve(settings: Settings) -> Result<()> {
    crate::memory::spawn_allocator_upkeep();
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("cannot create data dir {}", settings.data_dir.display()))?;
    // Held until the process ends: `svc restore` refuses a directory a server is using.
    let _data_dir_lock = services::backups::lock_data_dir(&settings.data_dir)?;
    let store = Store::connect(&settings.database, &settings.data_dir)
        .with_context(|| format!("cannot open the database {}", settings.database.describe()))?;
    store.set_record_cache_capacity(settings.record_cache_size);
    bootstrap_admin(&store, &settings)?;
    // A configured secret, else the one instances sharing the store share, else this data
    // directory's own.
    let secret = match &settings.jwt_secret {
        Some(secret) => secret.as_bytes().to_vec(),
        None => match store
            .cluster()
            .shared_jwt_secret()
            .context("cannot read the shared JWT secret")?
        {
            Some(shared) => shared,
            None => services::credentials::load_or_create_secret(&settings.data_dir)?,
        },
    };
    let jwt = Arc::new(Jwt::new(&secret, settings.token_ttl));

    let http = TcpListener::bind((settings.bind, settings.http_port))
        .await
        .with_context(|| format!("cannot listen on {}:{}", settings.bind, settings.http_port))?;
    let broker_config = BrokerConfig {
        bind: settings.bind,
        mqtt_port: settings.mqtt_port,
        ws_port: settings.ws_port,
        tls: settings.tls.as_ref().map(|tls| TlsListeners {
            cert: tls.cert.clone(),
            key: tls.key.clone(),
            mqtts_port: settings.mqtts_port,
            wss_port: settings.wss_port,
        }),
        limits: settings.mqtt_limits,
        store: store.clone(),
    };
    let broker_cell: Arc<OnceLock<Broker>> = Arc::default();
    let seal_idle = settings.historian_seal_idle;
    let connectors = crate::connectors::supervisor::Supervisor::new(
        store.clone(),
        Arc::new(services::device_links::BrokerUns(broker_cell.clone())),
        services::link_status::status_publisher(broker_cell.clone(), "connectors"),
        settings.data_dir.clone(),
        &settings.device_name,
    );
    let tags = Arc::new(
        services::tag_registry::TagRegistry::load(&store).context("cannot load the tags")?,
    );
    let last_values: Arc<services::last_values::LastValues> = Arc::default();
    let local = services::upstream_links::LocalBroker {
        broker: broker_cell.clone(),
        tags: tags.clone(),
        last_values: last_values.clone(),
        connectors: connectors.clone(),
    };
    let alarm_rules = settings.alarm_health_rules();
    let state = AppState(Arc::new(Shared {
        identities: Arc::new(Identities::new(
            store.clone(),
            jwt,
            services::login_throttle::LoginThrottle::new(settings.login_limits),
        )),
        request_log: Arc::new(http::request_log::RequestLog::new(
            settings.request_log_size,
        )),
        backups: Arc::new(services::backups::Backups::new(&settings.data_dir)),
        store: store.clone(),
        settings: Arc::new(settings),
        http_addr: http.local_addr()?,
        uns: services::uns::Uns {
            tags,
            last_values,
            historian: HistorianWriter::start(store.clone(), seal_idle)
                .context("cannot start the historian writer")?,
            compressed: services::historize::Series::default(),
        },
        broker: broker_cell.clone(),
        automation: services::automation::Automation::new(store.clone())
            .context("cannot start the run log writer")?,
        peers: services::peers::Peers::start(store.cluster()),
        upstreams: crate::upstream::supervisor::Supervisor::new(
            store.clone(),
            services::link_status::status_publisher(broker_cell.clone(), "upstreams"),
            Arc::new(local),
        )
        .context("cannot start the upstreams")?,
        connectors,
        sparkplug: services::sparkplug::Sparkplug::default(),
        alarms: services::alarms::AlarmService::new(alarm_rules),
        notifier: services::notifications::Notifier::default(),
        records: services::record_writer::RecordWriter::start(store.clone())
            .context("cannot start the record writer")?,
    }));
    spawn_retention(&state);
    services::audit_retention::spawn_retention(&state);
    services::backups::spawn_schedule(&state);
    // Identity another instance changed must not be served from this one's cache.
    let identities = state.identities.clone();
    store
        .cluster()
        .on_identity_change(Arc::new(move || identities.clear()));
    let policy = Arc::new(services::mqtt_policy::PlatformPolicy::new(state.clone()));
    let broker = Broker::start(broker_config, policy).await?;
    let addrs = broker.addrs;
    let _ = state.broker.set(broker);
    crate::functions::engine::warm::configure(state.settings.process_warm);
    start_python(&state.settings).await;
    state.automation.load_all(&state).await.map_err(|e| {
        anyhow::anyhow!(
            "cannot deploy the stored functions and flows: {}",
            e.message
        )
    })?;
    services::sparkplug::Sparkplug::start(&state);
    services::alarms::AlarmService::start(&state)
        .await
        .map_err(|e| anyhow::anyhow!("cannot load the alarms: {}", e.message))?;
    services::notifications::Notifier::start(&state);
    // Once what the other instances' notices act on (the broker, the deployments) is up.
    services::peers::listen(&state).await;
    start_upstreams(&state).await?;
    let mut listeners = vec![
        ("http", state.http_addr),
        ("mqtt", addrs.mqtt),
        ("ws", addrs.ws),
    ];
    listeners.extend(addrs.mqtts.map(|a| ("mqtts", a)));
    listeners.extend(addrs.wss.map(|a| ("wss", a)));
    // Listened for before `ready`: a stop that comes right after it (systemd stopping the unit
    // it just started) is then a clean stop, not the signal's default action.
    let stop = shutdown_signal();
    announce_ready(&listeners);

    let stopping = state.clone();
    http::listener::serve(http, routes::router(state.clone()), async move {
        stop.await;
        tracing::info!("shutting down");
        services::sparkplug::withdraw_all(&stopping).await;
        if let Some(broker) = stopping.broker.get() {
            broker.shutdown().await;
        }
    })
    .await
    .context("HTTP server failed")?;
    state.upstreams.stop_all().await;
    state.connectors.stop_all();
    // The broker is closed: what the Sparkplug host took in is stored before the historian
    // stops.
    state
        .sparkplug
        .drain(std::time::Duration::from_secs(30))
        .await;
    state.alarms.drain(std::time::Duration::from_secs(10)).await;
    services::historize::close(&state).await;
    state.uns.historian.shutdown().await;
    store.close().context("cannot close the database cleanly")?;
    tracing::info!("stopped");
    Ok(())
}

/// Applies historian retention once a minute, and ends the compressed series whose tag went
/// away (one a message re-created while its tag was being deleted).
fn spawn_retention(state: &AppState) {
    let state = state.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            every.tick().await;
            services::tag_registry::sweep_retention(
                &state.store,
                &state.uns.tags,
                state.settings.historian_retention,
            )
            .await;
            services::historize::prune(&state).await;
        }
    });
}

/// Creates `admin` on an empty database; a generated password is printed once, to stderr.
fn bootstrap_admin(store: &Store, settings: &Settings) -> Result<()> {
    if store.user_count()? > 0 {
        return Ok(());
    }
    let (password, generated) = match &settings.admin_password {
        Some(p) if !p.is_empty() => (p.clone(), false),
        _ => (services::credentials::random_secret(20), true),
    };
    let hash = services::credentials::hash_password(&password)?;
    store.create_user("admin", &hash, true)?;
    if generated {
        eprintln!("svc: created user `admin` with password {password} (shown only this once)");
    }
    Ok(())
}

/// Starts the Python sandbox and says once what it could and could not fence in.
async fn start_python(settings: &Settings) {
    let (data_dir, interpreter) = (settings.data_dir.clone(), settings.python.clone());
    let report = tokio::task::spawn_blocking(move || {
        crate::functions::python::start(&data_dir, interpreter.as_deref())
    })
    .await
    .unwrap_or_else(|_| crate::functions::python::report());
    match (&report.reason, report.missing.is_empty()) {
        (Some(reason), _) => tracing::warn!("Python processes are unavailable: {reason}"),
        (None, true) => tracing::info!(
            "Python {} sandboxed ({})",
            report.version.as_deref().unwrap_or("?"),
            report.sandbox.join(", ")
        ),
        (None, false) => tracing::warn!(
            "Python {} runs without these fences, which this machine lacks: {}",
            report.version.as_deref().unwrap_or("?"),
            report.missing.join(", ")
        ),
    }
}

fn announce_ready(bound: &[(&str, SocketAddr)]) {
    let addrs: BTreeMap<&str, String> = bound.iter().map(|(k, v)| (*k, v.to_string())).collect();
    let json = serde_json::to_string(&addrs).unwrap_or_default();
    println!("ready {json}");
    // The same moment for systemd (`Type=notify` in the Debian package's unit).
    systemd_notify::ready();
}

/// Connects every enabled upstream and connector of every domain.
async fn start_upstreams(state: &AppState) -> Result<()> {
    let domains = state
        .store
        .run(|s| s.list_domains())
        .await
        .map_err(|e| anyhow::anyhow!("cannot list the domains: {e}"))?;
    for domain in domains {
        state.upstreams.reload_domain(&domain.name).await;
        state.connectors.reload_domain(&domain.name).await;
        if let Err(e) = services::sparkplug::reload_domain(state, &domain.name).await {
            tracing::warn!(domain = domain.name, error = %e.message, "cannot start the domain's Sparkplug hosts");
        }
    }
    Ok(())
}

/// Resolves at SIGTERM or SIGINT (Ctrl-C). On Unix the handlers are installed when this is
/// called, not when the future is first polled; elsewhere only Ctrl-C is listened for, from
/// the first poll.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        // Each on its own: one that cannot be listened for leaves the other working.
        let mut terminate = signal(SignalKind::terminate()).ok();
        let mut interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            async fn received(signal: Option<&mut tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                _ = received(terminate.as_mut()) => {},
                _ = received(interrupt.as_mut()) => {},
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
