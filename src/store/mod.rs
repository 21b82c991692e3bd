//! The storage interface of the platform and the only code that speaks SQL. [`Store`] is one
//! handle over one of two engines: SQLite (`sqlite/`, embedded, the default) or PostgreSQL
//! (`postgres/`, for sites that outgrow one box). Nothing outside this module knows which one
//! runs: both take the same calls (listed once in [`engine_calls!`]) and return the same
//! [`types`]. Calls are synchronous and meant to run on the blocking pool through [`Store::run`].

pub mod blocks;
mod collection_cache;
mod history;
mod location;
pub mod migrate;
mod postgres;
mod record_cache;
mod report_historian;
mod sqlite;
mod types;

pub use history::merge::day_is_open;
pub use location::{Location, SQLITE_FILE};

pub use record_cache::DEFAULT_CAPACITY as DEFAULT_RECORD_CACHE_BYTES;
pub use sqlite::check_svc_database;
pub use types::*;

use crate::ids::TableRef;
use crate::model::{ApiKeyInfo, Domain, Grant, Group, NamedGrant, UserProfile};
use crate::query::{Filter, ListQuery};
use crate::report_sql::CheckedQuery;
use crate::schema::Collection;
// The historian's reads are provided methods of this trait on both engines.
use history::SeriesReads;
use postgres::PgStore;
use serde_json::{Map, Value};
use sqlite::SqliteStore;
use std::path::Path;
use std::sync::Arc;

/// What went wrong in the store, in terms the API can turn into a status.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    /// Understood but refused by a limit (a report's time or row limit).
    #[error("{0}")]
    Unprocessable(String),
    #[error("storage failure: {0}")]
    Internal(String),
    /// The database cannot be reached (PostgreSQL down or out of connections); worth a retry.
    #[error("{0}")]
    Unavailable(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

impl StoreError {
    /// The same error, its message prefixed with `context`.
    pub fn in_context(self, context: &str) -> StoreError {
        match self {
            StoreError::Conflict(m) => StoreError::Conflict(format!("{context}: {m}")),
            StoreError::Invalid(m) => StoreError::Invalid(format!("{context}: {m}")),
            StoreError::Unprocessable(m) => StoreError::Unprocessable(format!("{context}: {m}")),
            StoreError::Internal(m) => StoreError::Internal(format!("{context}: {m}")),
            StoreError::Unavailable(m) => StoreError::Unavailable(format!("{context}: {m}")),
        }
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(err: serde_json::Error) -> StoreError {
        StoreError::Internal(format!("stored JSON is unreadable: {err}"))
    }
}

/// The engine behind a [`Store`].
enum Engine {
    Sqlite(SqliteStore),
    Postgres(Box<PgStore>),
}

/// A handle on the platform's storage; cheap to clone (all clones share the engine).
#[derive(Clone)]
pub struct Store {
    engine: Arc<Engine>,
}

/// Declares each call of the storage interface once and forwards it to the running engine,
/// which must have a method of the same name and signature (checked by the compiler).
macro_rules! engine_calls {
    ($( $(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty; )*) => {
        impl Store {
            $(
                $(#[$doc])*
                pub fn $name(&self $(, $arg: $ty)*) -> $ret {
                    match &*self.engine {
                        Engine::Sqlite(engine) => engine.$name($($arg),*),
                        Engine::Postgres(engine) => engine.$name($($arg),*),
                    }
                }
            )*
        }
    };
}

impl Store {
    /// Opens (creating if needed) the SQLite database file and brings its schema up to date.
    #[cfg(test)]
    pub fn open(path: &Path) -> StoreResult<Store> {
        Ok(Store {
            engine: Arc::new(Engine::Sqlite(SqliteStore::open(path)?)),
        })
    }

    /// Opens the store `location` names and brings its schema up to date. `local_dir` is the
    /// instance's own data directory (journals stay there whatever the engine).
    pub fn connect(location: &Location, local_dir: &Path) -> StoreResult<Store> {
        let engine = match location {
            Location::Sqlite(path) => Engine::Sqlite(SqliteStore::open(path)?),
            Location::Postgres(target) => {
                Engine::Postgres(Box::new(PgStore::open(target, local_dir)?))
            }
        };
        Ok(Store {
            engine: Arc::new(engine),
        })
    }

    /// Which engine runs, and where, as `GET /svc/` reports it (never a password).
    pub fn describe(&self) -> StorageDescription {
        match &*self.engine {
            Engine::Sqlite(engine) => StorageDescription {
                engine: "sqlite",
                path: Some(engine.path().display().to_string()),
                host: None,
                database: None,
                server_version: None,
            },
            Engine::Postgres(engine) => StorageDescription {
                engine: "postgres",
                path: None,
                host: Some(format!(
                    "{}:{}",
                    engine.target().host(),
                    engine.target().port()
                )),
                database: Some(engine.target().database().to_string()),
                server_version: Some(engine.server_version().to_string()),
            },
        }
    }

    /// Runs blocking store work on tokio's blocking pool.
    pub async fn run<R, F>(&self, work: F) -> StoreResult<R>
    where
        F: FnOnce(&Store) -> StoreResult<R> + Send + 'static,
        R: Send + 'static,
    {
        let store = self.clone();
        let started = std::time::Instant::now();
        let done = tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(|e| StoreError::Internal(format!("store task failed: {e}")))?;
        crate::telemetry::get().store_call("run", started.elapsed());
        done
    }

    /// Runs a short read (a lookup by key) right here when the engine can answer without
    /// waiting (an idle SQLite connection): that costs less than the hand-off to the blocking
    /// pool. Otherwise it goes to the blocking pool.
    pub async fn read<R, F>(&self, work: F) -> StoreResult<R>
    where
        F: FnOnce(&Store) -> StoreResult<R> + Send + 'static,
        R: Send + 'static,
    {
        let inline = match &*self.engine {
            Engine::Sqlite(engine) => engine.has_idle_connection(),
            Engine::Postgres(engine) => engine.has_idle_connection(),
        };
        if inline {
            let started = std::time::Instant::now();
            let done = work(self);
            crate::telemetry::get().store_call("read", started.elapsed());
            done
        } else {
            self.run(work).await
        }
    }
}

engine_calls! {
    // ---- the engine itself ----
    /// Bytes of record text kept in memory for reads by id; 0 keeps none.
    fn set_record_cache_capacity(&self, bytes: usize) -> ();
    /// A trivial query, for the readiness check.
    fn ping(&self) -> StoreResult<()>;
    /// The local file the store keeps (SQLite's database), next to which journals are kept.
    fn path(&self) -> &Path;
    /// Bytes the data takes on disk.
    fn size_bytes(&self) -> u64;
    /// Leaves the data complete and consistent on its own (SQLite: checkpoints the log).
    fn close(&self) -> StoreResult<()>;
    /// Copies a consistent snapshot of the whole database to `dest`.
    fn snapshot_to(&self, dest: &Path) -> StoreResult<()>;

    // ---- instances sharing the store ----
    /// The JWT secret every instance on this store signs with; `None` when the store has one
    /// instance only (SQLite), whose secret stays in its data directory.
    fn shared_jwt_secret(&self) -> StoreResult<Option<Vec<u8>>>;
    /// Calls `changed` when another instance may have changed identity data (users, keys,
    /// groups, grants), so cached identity must be dropped.
    fn on_identity_change(&self, changed: Arc<dyn Fn() + Send + Sync>) -> ();
    /// Calls `heard` with each notice another instance on this store sent, in order, starting
    /// with those heard since the store opened (so what the caller loaded before this call and
    /// what changed meanwhile cannot fall between the two).
    fn on_peer_notice(&self, heard: Arc<dyn Fn(PeerNotice) + Send + Sync>) -> ();
    /// Whether another instance is alive on this store (so messages have someone to reach): seen
    /// lately, or heard from lately.
    fn has_peers(&self) -> bool;
    /// Sends a notice (a kind and a body, both the caller's) to every other instance.
    fn tell_peers(&self, kind: &str, body: &[u8]) -> StoreResult<()>;
    /// Whether this instance is the one that runs what must run once for all instances.
    fn leadership(&self) -> Leadership;

    // ---- audit trail ----
    fn record_audit(&self, entry: &AuditEntry) -> StoreResult<()>;
    fn list_audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>>;
    fn delete_audit_before(&self, before: &str) -> StoreResult<usize>;

    // ---- identity: users, domains, groups, permissions, API keys ----
    fn user_count(&self) -> StoreResult<u64>;
    fn create_user(&self, username: &str, password_hash: &str, admin: bool) -> StoreResult<AuthUser>;
    fn user_by_key(&self, key: &str) -> StoreResult<Option<AuthUser>>;
    fn user_with_password(&self, username: &str) -> StoreResult<Option<(AuthUser, String)>>;
    fn list_users(&self) -> StoreResult<Vec<AuthUser>>;
    fn delete_user(&self, key: &str) -> StoreResult<bool>;
    fn create_domain(&self, name: &str) -> StoreResult<Domain>;
    fn list_domains(&self) -> StoreResult<Vec<Domain>>;
    fn create_group(&self, domain: &str, name: &str, grants: &[Grant]) -> StoreResult<Group>;
    fn list_groups(&self, domain: &str) -> StoreResult<Vec<Group>>;
    fn add_group_member(&self, domain: &str, group_key: &str, user_key: &str) -> StoreResult<bool>;
    fn grants_of(&self, user_key: &str, domain: &str) -> StoreResult<GrantSet>;
    fn add_permissions(&self, domain: &str, actions: &[(String, String)], scopes: &[String]) -> StoreResult<()>;
    fn custom_actions(&self, domain: &str, feature: &str) -> StoreResult<Vec<String>>;
    fn create_api_key(&self, user_key: &str, name: &str, prefix: &str, secret_hash: &str, domain: Option<&str>) -> StoreResult<ApiKeyInfo>;
    fn list_api_keys(&self, user_key: &str) -> StoreResult<Vec<ApiKeyInfo>>;
    fn delete_api_key(&self, user_key: &str, id: &str) -> StoreResult<bool>;
    fn api_key_owner(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyOwner>>;
    fn touch_api_key(&self, key: &str, when: &str) -> StoreResult<()>;
    fn set_group_grants(&self, domain: &str, group_key: &str, grants: &[Grant]) -> StoreResult<bool>;
    fn remove_group_member(&self, domain: &str, group_key: &str, user_key: &str) -> StoreResult<bool>;
    fn delete_group(&self, domain: &str, group_key: &str) -> StoreResult<bool>;
    fn set_user_profile(&self, user_key: &str, profile: &UserProfile) -> StoreResult<()>;
    fn user_profile(&self, user_key: &str) -> StoreResult<UserProfile>;
    fn user_group_ids(&self, user_key: &str, domain: Option<&str>) -> StoreResult<Vec<String>>;
    fn group_member_ids(&self, domain: &str, group_key: &str) -> StoreResult<Vec<String>>;
    fn admin_permissions(&self, domain: &str) -> StoreResult<Vec<NamedGrant>>;
    fn api_keys_of_users(&self, domain: Option<&str>) -> StoreResult<Vec<ApiKeyInfo>>;
    fn api_key_user(&self, id: &str) -> StoreResult<Option<String>>;
    fn group_exists(&self, domain: &str, group_key: &str) -> StoreResult<bool>;
    fn add_group_grants(&self, domain: &str, group_key: &str, grants: &[Grant]) -> StoreResult<bool>;

    // ---- records and collections ----
    fn write_records(&self, group: Vec<RecordWrite>) -> Vec<StoreResult<RecordWritten>>;
    fn insert_record(&self, table: &TableRef, key: &str, fields: &Map<String, Value>) -> StoreResult<Value>;
    fn get_record(&self, table: &TableRef, key: &str) -> StoreResult<Option<Value>>;
    fn get_record_text(&self, table: &TableRef, key: &str) -> StoreResult<Option<String>>;
    fn cached_record_text(&self, table: &TableRef, key: &str) -> Option<String>;
    fn record_by_field(&self, table: &TableRef, field: &str, value: &Value) -> StoreResult<Option<Value>>;
    fn list_records(&self, table: &TableRef, query: &ListQuery) -> StoreResult<Vec<Value>>;
    fn list_records_text(&self, table: &TableRef, query: &ListQuery) -> StoreResult<Vec<String>>;
    fn count_records(&self, table: &TableRef, filters: &[Filter], or_filters: &[Filter]) -> StoreResult<u64>;
    fn create_collection(&self, domain: &str, collection: &Collection) -> StoreResult<Value>;
    fn replace_collection(&self, domain: &str, collection: &Collection) -> StoreResult<Option<Value>>;
    fn delete_collection(&self, domain: &str, name: &str) -> StoreResult<bool>;
    fn collection(&self, table: &TableRef) -> StoreResult<Option<Arc<Collection>>>;

    // ---- tags and namespaces ----
    fn tags_of(&self, domain: &str) -> StoreResult<Vec<TagRow>>;
    fn namespaces_of(&self, domain: &str) -> StoreResult<Vec<String>>;

    // ---- upstream passwords ----
    fn set_upstream_password(&self, domain: &str, key: &str, password: Option<&str>) -> StoreResult<()>;
    fn upstreams_of(&self, domain: &str) -> StoreResult<Vec<StoredUpstream>>;
    fn upstream_password(&self, domain: &str, key: &str) -> StoreResult<Option<String>>;

    // ---- historian ----
    fn journal_folded(&self) -> StoreResult<u64>;
    fn fold_history(&self, values: &[HistoryWrite], journaled_upto: Option<u64>) -> StoreResult<()>;
    /// Writes a batch straight to the historian tables (the server goes through the journal).
    #[cfg(test)]
    fn append_history(&self, batch: &[HistoryWrite]) -> StoreResult<usize>;
    fn history_range(&self, domain: &str, topic: &str, start_ms: i64, end_ms: i64, limit: Option<u64>) -> StoreResult<Vec<HistoryPoint>>;
    fn history_last(&self, domain: &str, topic: &str, n: u64) -> StoreResult<Vec<HistoryPoint>>;
    fn history_buckets(&self, domain: &str, topic: &str, start_ms: i64, end_ms: i64, bucket_ms: i64, agg: Aggregation) -> StoreResult<Vec<HistoryPoint>>;
    fn history_buckets_between(&self, domain: &str, topic: &str, start_ms: i64, end_ms: i64, edges: &[i64], agg: Aggregation) -> StoreResult<Vec<HistoryPoint>>;
    /// Topics of a domain with stored values (tests check retention with it).
    #[cfg(test)]
    fn history_topics(&self, domain: &str) -> StoreResult<Vec<String>>;
    fn history_delete_before(&self, domain: Option<&str>, topic: Option<&str>, before_ms: i64) -> StoreResult<u64>;
    /// Every series' hot tail (rows not yet in blocks).
    fn history_tails(&self) -> StoreResult<Vec<HotTail>>;
    /// Closes the oldest hot rows of a series (at most `max_points`, within one UTC day) into
    /// one block.
    fn seal_history(&self, domain: &str, topic: &str, max_points: usize) -> StoreResult<Sealed>;
    /// Every series' day holding more blocks than merging would leave: the days closed before
    /// blocks were merged (a data dir of an earlier version), or cut short by a crash.
    fn history_days_to_merge(&self) -> StoreResult<Vec<DayToMerge>>;
    /// Merges one day's blocks of a series (`store::history::merge`); how many points it
    /// rewrote (0: nothing to merge).
    fn merge_history_day(&self, domain: &str, topic: &str, day_ms: i64) -> StoreResult<u64>;
    /// Gives back the space of rows closed into blocks where the engine does not reuse it by
    /// itself (PostgreSQL: empty past partitions of `hist_points` are dropped).
    fn history_compact(&self) -> StoreResult<()>;

    // ---- upstream bridges ----
    fn upstream_queue_write(&self, appends: &[(&str, &UpstreamMessage)], deletes: &[(&str, &[i64])]) -> StoreResult<()>;
    fn upstream_queue_load(&self, upstream: &str) -> StoreResult<Vec<UpstreamMessage>>;
    fn upstream_queue_last_seq(&self) -> StoreResult<i64>;
    fn upstream_queue_clear(&self, upstream: &str) -> StoreResult<()>;

    // ---- the broker's durable state ----
    fn mqtt_write(&self, writes: &[MqttWrite]) -> StoreResult<()>;
    fn mqtt_load(&self, now_ms: i64) -> StoreResult<(Vec<StoredMessage>, Vec<StoredSession>)>;

    // ---- functions and flows ----
    fn keep_code_version(&self, domain: &str, name: &str, version: &CodeVersion) -> StoreResult<()>;
    fn code_versions(&self, domain: &str, name: &str) -> StoreResult<Vec<CodeVersion>>;
    fn forget_function(&self, domain: &str, name: &str) -> StoreResult<()>;
    fn record_runs(&self, runs: &[(String, RunOwner, RunRecord)]) -> StoreResult<()>;
    fn runs(&self, domain: &str, owner: RunOwner, name: &str, limit: usize) -> StoreResult<Vec<RunRecord>>;

    // ---- reports (the read-only SQL route) ----
    fn report_relations(&self, domain: &str, query: &CheckedQuery) -> StoreResult<Vec<(String, ReportRelation)>>;
    fn run_report(&self, domain: &str, query: CheckedQuery, relations: &[(String, ReportRelation)], limits: ReportLimits) -> StoreResult<Vec<Map<String, Value>>>;
}
