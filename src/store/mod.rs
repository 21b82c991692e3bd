//! The storage interface of the platform and the only code that speaks SQL. [`Store`] is one
//! handle over one of two engines: SQLite (`sqlite/`, embedded, the default) or PostgreSQL
//! (`postgres/`, for sites that outgrow one box). Nothing outside this module knows which one
//! runs: both implement the same traits, one per area ([`interface`]), and return the same
//! [`types`]. Calls are synchronous and meant to run on the blocking pool through [`Store::run`];
//! the hot reads go through [`Store::reads`], which awaits an engine's futures where it has
//! them (PostgreSQL) instead.

pub mod blocks;
mod collection_cache;
mod history;
pub mod interface;
mod location;
pub mod migrate;
mod postgres;
mod reads;
mod record_cache;
mod report_historian;
pub mod schema_release;
mod sqlite;
mod types;

#[cfg(test)]
pub use history::bursts::STRAIGHT_MIN_POINTS;
pub use history::merge::day_is_open;
pub use location::{Location, SQLITE_FILE};

pub use record_cache::DEFAULT_CAPACITY as DEFAULT_RECORD_CACHE_BYTES;
pub use sqlite::check_svc_database;
pub use types::*;

pub use interface::Engine;
use postgres::PgStore;
use sqlite::SqliteStore;
use std::ops::Deref;
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

/// Runs `work` on tokio's blocking pool: for calls that block on the store (or on its engine's
/// runtime) and for answers too long to make on a server worker.
pub async fn on_blocking_pool<R: Send + 'static>(
    work: impl FnOnce() -> R + Send + 'static,
) -> StoreResult<R> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::Internal(format!("store task failed: {e}")))
}

/// A handle on the platform's storage; cheap to clone (all clones share the engine). Every
/// call of the interface ([`interface`]) is made on it as on the engine it holds.
#[derive(Clone)]
pub struct Store {
    engine: Arc<dyn Engine>,
}

impl Deref for Store {
    type Target = dyn Engine;

    fn deref(&self) -> &(dyn Engine + 'static) {
        &*self.engine
    }
}

impl Store {
    /// The other instances on this store and which one leads (see [`interface::Cluster`]).
    pub fn cluster(&self) -> Arc<dyn interface::Cluster + Send + Sync> {
        self.engine.clone().cluster()
    }

    /// Opens (creating if needed) the SQLite database file and brings its schema up to date.
    #[cfg(test)]
    pub fn open(path: &Path) -> StoreResult<Store> {
        Ok(Store {
            engine: Arc::new(SqliteStore::open(path)?),
        })
    }

    /// Opens the store `location` names and brings its schema up to date. `local_dir` is the
    /// instance's own data directory (journals stay there whatever the engine).
    pub fn connect(location: &Location, local_dir: &Path) -> StoreResult<Store> {
        let engine: Arc<dyn Engine> = match location {
            Location::Sqlite(path) => Arc::new(SqliteStore::open(path)?),
            Location::Postgres(target) => Arc::new(PgStore::open(target, local_dir)?),
        };
        Ok(Store { engine })
    }

    /// Runs blocking store work on tokio's blocking pool.
    pub async fn run<R, F>(&self, work: F) -> StoreResult<R>
    where
        F: FnOnce(&Store) -> StoreResult<R> + Send + 'static,
        R: Send + 'static,
    {
        let store = self.clone();
        let started = std::time::Instant::now();
        let done = on_blocking_pool(move || work(&store)).await?;
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
        if self.engine.has_idle_connection() {
            let started = std::time::Instant::now();
            let done = work(self);
            crate::telemetry::get().store_call("read", started.elapsed());
            done
        } else {
            self.run(work).await
        }
    }
}
