//! The SQLite engine: the embedded default. One database file in the data directory, a pool
//! of connections in WAL mode, and the caches that spare hot reads a transaction (records by id,
//! collection definitions, the set of tables known to exist).

mod alarms;
mod audit;
mod auth;
mod auth_groups;
mod auth_profiles;
mod automation;
mod backup;
mod cluster;
mod connector_secrets;
mod filter_sql;
mod fulltext;
mod hist_blocks;
mod hist_journal;
mod historian;
mod migrations;
mod mqtt_state;
mod pool;
mod record_writes;
mod records;
mod report;
mod report_historian;
mod tags;
mod upstream_queue;
mod upstream_secrets;

pub use backup::check_svc_database;

use super::record_cache::RecordCache;
use super::types::*;
use super::{collection_cache, StoreError, StoreResult};
use crate::store::interface::Maintenance;
use pool::{Conn, Pool};
use r2d2_sqlite::SqliteConnectionManager;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> StoreError {
        if let rusqlite::Error::SqliteFailure(code, _) = &err {
            if code.code == rusqlite::ErrorCode::ConstraintViolation {
                return StoreError::Conflict(conflict_sentence(&err.to_string()));
            }
        }
        StoreError::Internal(err.to_string())
    }
}

impl From<r2d2::Error> for StoreError {
    fn from(err: r2d2::Error) -> StoreError {
        StoreError::Internal(format!("no database connection: {err}"))
    }
}

/// Turns SQLite's constraint text into a sentence that names what collided.
fn conflict_sentence(sqlite_text: &str) -> String {
    if let Some(idx) = sqlite_text.find("index '") {
        let rest = &sqlite_text[idx + 7..];
        let name = rest.split('\'').next().unwrap_or_default();
        if let Some((_, fields)) = name.split_once("__u__") {
            return format!(
                "a record with the same {} already exists",
                fields.replace("__", ", ")
            );
        }
    }
    if sqlite_text.contains(".key") {
        return "a record with this id already exists".into();
    }
    "the record conflicts with an existing one".into()
}

/// Pages the write-ahead log grows to before a commit checkpoints it (SQLite's default is
/// 1,000): 32 MiB of log at 4 KiB pages.
const WAL_AUTOCHECKPOINT_PAGES: u32 = 8192;

#[derive(Clone)]
pub struct SqliteStore {
    pool: Pool,
    path: Arc<Path>,
    /// Record tables known to exist, so writes skip `CREATE TABLE IF NOT EXISTS`, each with
    /// its fields that have a full-text index (which an insert must index).
    known_tables: Arc<Mutex<HashMap<String, Arc<[String]>>>>,
    collections: Arc<collection_cache::CollectionCache>,
    /// Records read by id (see [`RecordCache`]); every connection of `pool` invalidates it.
    record_cache: Arc<RecordCache>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and brings its system tables up to date.
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        let record_cache = Arc::new(RecordCache::default());
        let sqlite = SqliteConnectionManager::file(path).with_init(|c| {
            c.execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; \
                 PRAGMA busy_timeout=10000; PRAGMA foreign_keys=ON;",
            )?;
            // No memory-mapped reads (`mmap_size`, 0 by default): every page a mapping touches
            // stays in the process's resident memory (bench/connectors-history.md: 66 MB of a
            // gateway's 172 MB after a minute, up to the whole mapping on a plant's years), and
            // an I/O error on a mapped page (a failing SD card, a full thin volume) is a SIGBUS
            // that ends the server where a read would have returned an error.
            // A checkpoint copies every page the log holds back into the database once, however
            // often it was written since the last one. Writes spread over an index (records by
            // an indexed field, the historian by series) dirty the same pages again and again:
            // a longer log lets one checkpoint copy each of them once instead of many times.
            c.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)?;
            // rusqlite keeps 16 by default; the broker's batches alone use 14, and evicting
            // them for every other module's statements would re-prepare them per batch.
            c.set_prepared_statement_cache_capacity(64);
            fulltext::register(c)
        });
        let pool = r2d2::Pool::builder()
            .max_size(16)
            // A local file does not go stale; checking it on every checkout costs a query.
            .test_on_check_out(false)
            .build(pool::Manager::new(sqlite, record_cache.clone()))
            .map_err(|e| StoreError::Internal(format!("cannot open {}: {e}", path.display())))?;
        let store = SqliteStore {
            pool,
            path: Arc::from(path),
            known_tables: Arc::default(),
            collections: Arc::default(),
            record_cache,
        };
        let mut conn = store.conn()?;
        migrations::apply(&mut conn)?;
        drop(conn);
        Ok(store)
    }

    fn conn(&self) -> StoreResult<Conn> {
        Ok(Conn::new(self.pool.get()?))
    }
}

/// Quotes a validated identifier (it can hold no `"`) for SQL.
pub(super) fn quoted(name: &str) -> String {
    debug_assert!(!name.contains('"'));
    format!("\"{name}\"")
}

/// Prepares (and caches) a statement over a record table; `None` when the table was never
/// written, which reads as empty.
fn prepare_on_table<'c>(
    conn: &'c rusqlite::Connection,
    sql: &str,
) -> StoreResult<Option<rusqlite::CachedStatement<'c>>> {
    match conn.prepare_cached(sql) {
        Ok(stmt) => Ok(Some(stmt)),
        Err(e) if is_missing_table(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn is_missing_table(err: &rusqlite::Error) -> bool {
    err.to_string().starts_with("no such table")
}

impl crate::store::Engine for SqliteStore {
    fn cluster(self: Arc<Self>) -> Arc<dyn crate::store::interface::Cluster + Send + Sync> {
        self
    }
}

impl Maintenance for SqliteStore {
    fn describe(&self) -> StorageDescription {
        StorageDescription {
            engine: "sqlite",
            path: Some(self.path.display().to_string()),
            host: None,
            database: None,
            server_version: None,
        }
    }

    /// Bytes of record text kept in memory for reads by id; 0 keeps none.
    fn set_record_cache_capacity(&self, bytes: usize) {
        self.record_cache.set_capacity(bytes);
    }

    /// A trivial query, for the readiness check: the pool hands out a connection and SQLite
    /// answers.
    fn ping(&self) -> StoreResult<()> {
        self.conn()?.query_row("SELECT 1", [], |_| Ok(()))?;
        Ok(())
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes on disk: the database file plus its write-ahead log.
    fn size_bytes(&self) -> u64 {
        let wal = PathBuf::from(format!("{}-wal", self.path.display()));
        [&*self.path, wal.as_path()]
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    }

    /// Checkpoints the write-ahead log so the database file is complete on its own.
    fn close(&self) -> StoreResult<()> {
        self.conn()?
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
        Ok(())
    }

    /// Whether a pooled connection is idle, so a short read may run on the caller's thread.
    fn has_idle_connection(&self) -> bool {
        self.pool.state().idle_connections > 0
    }

    /// SQLite's online backup (`backup.rs`).
    fn snapshot_to(&self, dest: &Path) -> StoreResult<()> {
        self.online_backup(dest)
    }
}

#[cfg(test)]
mod tests;
