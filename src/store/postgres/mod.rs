//! The PostgreSQL engine: for sites that outgrow one box, and for several `svc serve`
//! instances sharing one database. tokio-postgres connections in a deadpool pool, driven by a
//! small runtime of the engine's own so that the storage interface stays synchronous (callers
//! run it on the blocking pool, as with SQLite); the hot reads are also futures
//! ([`AsyncReads`](crate::store::interface::AsyncReads), `async_reads.rs`) that the server
//! awaits on its own workers, while the connections stay on the engine's runtime (`connect.rs`).
//! The schema is the versioned files of `migrations/`, applied at open.

mod alarms;
mod async_reads;
mod audit;
mod auth;
mod auth_groups;
mod auth_profiles;
mod automation;
mod cluster;
mod connect;
mod connector_secrets;
mod filter_sql;
mod hist_blocks;
mod hist_journal;
mod hist_reads;
mod historian;
mod import;
mod instances;
mod leadership;
mod migrations;
mod mqtt_state;
pub(super) mod names;
mod record_reads;
mod record_writes;
mod records;
mod report;
mod report_historian;
mod tags;
mod upstream_queue;
mod upstream_secrets;

use super::location::PostgresTarget;
use super::record_cache::RecordCache;
use super::{StoreError, StoreResult};
use crate::store::interface::Maintenance;
use crate::store::types::StorageDescription;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Connections kept open to the server.
const POOL_SIZE: usize = 16;
/// How long opening a connection may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Parameters of a statement, as tokio-postgres takes them.
pub(super) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

pub struct PgStore {
    pool: Pool,
    /// Drives the pool's connections; its own, so the interface can block on it from any
    /// thread that is not one of its workers. Always `Some` until dropped.
    runtime: Option<tokio::runtime::Runtime>,
    target: PostgresTarget,
    /// How to connect (the target's, with svc's options), for the connections outside the pool.
    config: tokio_postgres::Config,
    /// TLS as the URL's `sslmode` and `sslrootcert` ask (unused with `sslmode=disable`).
    tls: MakeRustlsConnect,
    /// Where this instance's local files go (its journals): `svc-postgres` in its data
    /// directory, as a name to put suffixes on.
    local_path: PathBuf,
    /// This instance's id (kept in its data directory), which keys its journal mark.
    instance: String,
    server_version: String,
    /// Record tables this instance created or found, so writes skip `CREATE … IF NOT EXISTS`.
    /// Tables are never dropped, so what another instance does cannot make this wrong.
    known_tables: Mutex<HashSet<String>>,
    /// Starts of the historian partitions known to exist.
    known_partitions: Mutex<HashSet<(historian::Partitioned, i64)>>,
    /// Historian series ids by (domain, topic); series are never deleted.
    series: Mutex<HashMap<(String, String), i64>>,
    /// Who hears what other instances say.
    listeners: Arc<instances::Listeners>,
    /// Records read by id, as on SQLite (see [`PgStore::cached_record_text`]).
    record_cache: Arc<RecordCache>,
    /// Whether this instance leads (holds the leader's advisory lock).
    leads: Arc<watch::Sender<bool>>,
    /// Whether another instance was seen alive in the last seconds.
    peers_present: Arc<AtomicBool>,
    /// How many async reads may be at the server at once (see [`read_slots`]).
    read_slots: tokio::sync::Semaphore,
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(err: tokio_postgres::Error) -> StoreError {
        match err.code() {
            Some(code) if *code == SqlState::UNIQUE_VIOLATION => {
                StoreError::Conflict("the record conflicts with an existing one".into())
            }
            Some(code) if *code == SqlState::QUERY_CANCELED => {
                StoreError::Unprocessable("the query ran longer than its time limit".into())
            }
            Some(code) if *code == SqlState::READ_ONLY_SQL_TRANSACTION => {
                StoreError::Invalid("the query must only read".into())
            }
            // Class 22, data exceptions: a value the request carried that PostgreSQL cannot
            // hold (text with a NUL character, a number beyond `numeric`), the caller's to fix.
            Some(code) if code.code().starts_with("22") => StoreError::Invalid(format!(
                "the database cannot store a value of this request: {}",
                db_message(&err)
            )),
            Some(_) => StoreError::Internal(db_message(&err)),
            None => StoreError::Unavailable(format!(
                "the database is unreachable: {}",
                with_causes(&err)
            )),
        }
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(err: deadpool_postgres::PoolError) -> StoreError {
        match err {
            deadpool_postgres::PoolError::Backend(err) => err.into(),
            other => StoreError::Unavailable(format!(
                "the database is unreachable: {}",
                with_causes(&other)
            )),
        }
    }
}

/// An error and what caused it, as one sentence: tokio-postgres says only "error performing
/// TLS handshake" where its cause says which certificate check failed.
fn with_causes(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(next) = cause {
        let said = next.to_string();
        if !text.ends_with(&said) {
            text = format!("{text}: {said}");
        }
        cause = next.source();
    }
    text
}

/// The server's own message for an error it reported (tokio-postgres' Display says only
/// "db error").
fn db_message(err: &tokio_postgres::Error) -> String {
    err.as_db_error()
        .map(|db| db.message().to_string())
        .unwrap_or_else(|| err.to_string())
}

impl PgStore {
    /// Connects, checks the server answers, and applies the migrations it lacks.
    pub fn open(target: &PostgresTarget, local_dir: &Path) -> StoreResult<PgStore> {
        // What can fail before the runtime exists, does: a runtime dropped on the caller's
        // async task would panic, so from here on only the store's own Drop may end it.
        let tls = tls_connector(target)?;
        let instance = instance_id(local_dir)?;
        let record_cache = Arc::new(RecordCache::default());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("svc-postgres")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Internal(format!("cannot start the database runtime: {e}")))?;
        let mut config = target.config.clone();
        // NOTICEs ("… already exists, skipping") are the expected answers of idempotent DDL,
        // not news for the log. Added to the URL's own `options` (`-c synchronous_commit=off`,
        // say), which stay the administrator's.
        let options = match target.config.get_options() {
            Some(own) if !own.trim().is_empty() => format!("{own} -c client_min_messages=warning"),
            _ => "-c client_min_messages=warning".to_string(),
        };
        config
            .connect_timeout(CONNECT_TIMEOUT)
            .application_name("svc")
            .options(&options);
        let manager = Manager::from_connect(
            config.clone(),
            connect::OnEngineRuntime::new(tls.clone(), runtime.handle().clone()),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = {
            let _entered = runtime.enter();
            Pool::builder(manager)
                .max_size(POOL_SIZE)
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(CONNECT_TIMEOUT))
                .create_timeout(Some(CONNECT_TIMEOUT))
                .build()
        };
        let pool = match pool {
            Ok(pool) => pool,
            Err(e) => {
                runtime.shutdown_background();
                return Err(StoreError::Internal(format!("cannot build the pool: {e}")));
            }
        };
        let mut store = PgStore {
            pool,
            runtime: Some(runtime),
            target: target.clone(),
            config,
            tls,
            local_path: local_dir.join("svc-postgres"),
            instance,
            server_version: String::new(),
            known_tables: Mutex::default(),
            known_partitions: Mutex::default(),
            series: Mutex::default(),
            listeners: Arc::new(instances::Listeners::new(record_cache.clone())),
            record_cache,
            leads: Arc::new(watch::channel(false).0),
            peers_present: Arc::default(),
            read_slots: tokio::sync::Semaphore::new(read_slots()),
        };
        store.server_version = store
            .query_one("SHOW server_version", &[])?
            .get::<_, String>(0);
        store.block(migrations::apply(&store.pool))?;
        store.start_listening();
        store.start_campaign();
        Ok(store)
    }

    /// Runs `work` to completion on the engine's runtime. From a tokio worker thread (a caller
    /// that did not go through the blocking pool) the worker is handed over first, so the call
    /// blocks only itself.
    pub(super) fn block<T>(&self, work: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
        let on_worker = tokio::runtime::Handle::try_current().is_ok_and(|handle| {
            handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        });
        let Some(runtime) = &self.runtime else {
            return Err(StoreError::Unavailable("the store is closed".into()));
        };
        if on_worker {
            tokio::task::block_in_place(|| runtime.block_on(work))
        } else {
            runtime.block_on(work)
        }
    }

    pub(super) async fn client(&self) -> StoreResult<deadpool_postgres::Client> {
        Ok(self.pool.get().await?)
    }

    /// Every row of one statement.
    pub(super) fn query(&self, sql: &str, params: Params) -> StoreResult<Vec<Row>> {
        self.block(self.query_async(sql, params))
    }

    /// [`PgStore::query`] as a future, awaited on whichever runtime the caller runs.
    pub(super) async fn query_async(&self, sql: &str, params: Params<'_>) -> StoreResult<Vec<Row>> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await?;
        Ok(client.query(&statement, params).await?)
    }

    /// The row of a statement that returns exactly one.
    pub(super) fn query_one(&self, sql: &str, params: Params) -> StoreResult<Row> {
        self.block(async {
            let client = self.client().await?;
            let statement = client.prepare_cached(sql).await?;
            Ok(client.query_one(&statement, params).await?)
        })
    }

    /// The row of a statement that returns at most one.
    pub(super) fn query_opt(&self, sql: &str, params: Params) -> StoreResult<Option<Row>> {
        self.block(self.query_opt_async(sql, params))
    }

    /// [`PgStore::query_opt`] as a future, awaited on whichever runtime the caller runs.
    pub(super) async fn query_opt_async(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> StoreResult<Option<Row>> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await?;
        Ok(client.query_opt(&statement, params).await?)
    }

    /// Runs one statement; the rows it changed.
    pub(super) fn execute(&self, sql: &str, params: Params) -> StoreResult<u64> {
        self.block(async {
            let client = self.client().await?;
            let statement = client.prepare_cached(sql).await?;
            Ok(client.execute(&statement, params).await?)
        })
    }

    /// Whether the cache may answer: only while the connection that hears other instances'
    /// writes is up.
    pub(super) fn cache_listening(&self) -> bool {
        self.listeners.records_heard()
    }

    pub fn server_version(&self) -> &str {
        &self.server_version
    }
}

impl Drop for PgStore {
    /// Lets the runtime's threads wind down on their own: the last handle may be dropped on an
    /// async task, where waiting for them is not allowed.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Async reads in flight at once: twice the cores. Under a load of many clients the machine's
/// cores, not the pool, are the limit; more statements at the server at once only make more
/// PostgreSQL backends share them, and a request then waits in the kernel's run queue behind
/// all of them (the filtered list's p99, issue 34). Waiting for a slot here is first come,
/// first served, and the pool's other connections stay free for writes and the historian.
fn read_slots() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()) * 2
}

/// The TLS side of connections to `target`.
fn tls_connector(target: &PostgresTarget) -> StoreResult<MakeRustlsConnect> {
    let ca = match &target.root_cert {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
            StoreError::Invalid(format!("cannot read sslrootcert {}: {e}", path.display()))
        })?),
        None => None,
    };
    let config = crate::tls_client::client_config(&crate::tls_client::ClientTls {
        ca: ca.as_deref().map(|pem| (pem, "sslrootcert")),
        verify: target.verify,
        server_name: None,
        client_cert: None,
    })
    .map_err(StoreError::Invalid)?;
    Ok(MakeRustlsConnect::new(config))
}

/// The id of the instance whose data directory is `local_dir`: read from its `instance.id`,
/// written there (random) on the first start.
fn instance_id(local_dir: &Path) -> StoreResult<String> {
    let file = local_dir.join("instance.id");
    if let Ok(id) = std::fs::read_to_string(&file) {
        if !id.trim().is_empty() {
            return Ok(id.trim().to_string());
        }
    }
    let id = crate::ids::new_key();
    std::fs::create_dir_all(local_dir)
        .and_then(|()| std::fs::write(&file, &id))
        .map_err(|e| StoreError::Internal(format!("cannot write {}: {e}", file.display())))?;
    Ok(id)
}

/// A sentence for a conflict on one of the identity tables' unique keys.
pub(super) fn conflict_as(err: StoreError, sentence: impl FnOnce() -> String) -> StoreError {
    match err {
        StoreError::Conflict(_) => StoreError::Conflict(sentence()),
        other => other,
    }
}

impl crate::store::Engine for PgStore {
    fn cluster(self: Arc<Self>) -> Arc<dyn crate::store::interface::Cluster + Send + Sync> {
        self
    }
}

impl Maintenance for PgStore {
    fn describe(&self) -> StorageDescription {
        StorageDescription {
            engine: "postgres",
            path: None,
            host: Some(format!("{}:{}", self.target.host(), self.target.port())),
            database: Some(self.target.database().to_string()),
            server_version: Some(self.server_version().to_string()),
        }
    }

    /// Bytes of record text kept in memory for reads by id; 0 keeps none.
    fn set_record_cache_capacity(&self, bytes: usize) {
        self.record_cache.set_capacity(bytes);
    }

    fn ping(&self) -> StoreResult<()> {
        self.query_one("SELECT 1", &[]).map(|_| ())
    }

    /// The name in the instance's data directory that its local journals are named after.
    fn path(&self) -> &Path {
        &self.local_path
    }

    fn size_bytes(&self) -> u64 {
        self.query_one("SELECT pg_database_size(current_database())", &[])
            .map(|row| row.get::<_, i64>(0).max(0) as u64)
            .unwrap_or(0)
    }

    /// Nothing to leave consistent: every commit already is.
    fn close(&self) -> StoreResult<()> {
        Ok(())
    }

    /// Whether a call may run on the caller's own thread: never, every call waits on the
    /// network.
    fn has_idle_connection(&self) -> bool {
        false
    }

    /// The hot reads as futures: they wait on the network, not on a thread.
    fn async_reads(&self) -> Option<&dyn crate::store::interface::AsyncReads> {
        Some(self)
    }

    /// A snapshot of a shared PostgreSQL database is the database administrator's (pg_dump,
    /// base backups): one instance of several cannot take it consistently for all.
    fn snapshot_to(&self, _dest: &Path) -> StoreResult<()> {
        Err(StoreError::Invalid(
            "snapshots are taken of the SQLite store only; back PostgreSQL up with pg_dump or \
             base backups"
                .into(),
        ))
    }
}
