//! Records read by id, kept in memory as the JSON text a read answers with, so a repeated
//! `GET /svc/<domain>.<table>:<key>` costs no SQLite read transaction (whose file locks were a
//! sixth of such a request's CPU time).
//!
//! Correctness does not depend on any write path remembering the cache: SQLite's update hook,
//! set on every connection of the store, reports each row written to a record table (whatever
//! code wrote it), and a table's cached records are dropped twice for every write:
//! - when the row is written (before its commit), so that no read that started earlier can put
//!   the old text back, and
//! - when the connection that wrote it goes back to the pool, by which time its transaction is
//!   committed or rolled back, so that a read which saw the old row while the write was not yet
//!   committed cannot keep it either.
//!
//! A read puts what it read in only if its table's generation did not move while it read (see
//! [`RecordCache::begin_read`]). Invalidation is per table: a table written all the time gains
//! nothing, and loses nothing either.
//!
//! The cache holds at most its capacity in bytes of keys and texts; when an entry would not fit,
//! everything is dropped and it fills again from the reads that follow.

use foldhash::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};

/// What [`RecordCache`] holds by default: 64 MiB of record text.
pub const DEFAULT_CAPACITY: usize = 64 * 1024 * 1024;

/// Bytes an entry is charged on top of its key and text (map slot, `Arc` header, strings).
const ENTRY_OVERHEAD: usize = 96;

#[derive(Default)]
struct TableRecords {
    /// Moves on every invalidation of the table.
    generation: u64,
    records: HashMap<String, std::sync::Arc<str>>,
}

/// Shards of the cache, each under its own lock: every read takes a read lock, and one lock
/// word shared by all worker threads would bounce between their cores on every request.
const SHARDS: usize = 16;

/// Record text by table and key, sharded by key.
pub struct RecordCache {
    capacity: AtomicUsize,
    used: AtomicUsize,
    shards: [RwLock<HashMap<String, TableRecords>>; SHARDS],
    pick: foldhash::fast::RandomState,
}

/// A read in progress: the generation its table had when the read began.
pub struct PendingRead {
    generation: u64,
}

impl Default for RecordCache {
    fn default() -> RecordCache {
        RecordCache::new(DEFAULT_CAPACITY)
    }
}

impl RecordCache {
    pub fn new(capacity: usize) -> RecordCache {
        RecordCache {
            capacity: AtomicUsize::new(capacity),
            used: AtomicUsize::new(0),
            shards: std::array::from_fn(|_| RwLock::default()),
            pick: foldhash::fast::RandomState::default(),
        }
    }

    /// The shard holding `key` of any table.
    fn shard(&self, key: &str) -> &RwLock<HashMap<String, TableRecords>> {
        let hash = std::hash::BuildHasher::hash_one(&self.pick, key);
        &self.shards[hash as usize % SHARDS]
    }

    /// Changes the capacity; 0 turns the cache off. What is held is dropped.
    pub fn set_capacity(&self, bytes: usize) {
        self.capacity.store(bytes, Ordering::Relaxed);
        self.clear();
    }

    fn enabled(&self) -> bool {
        self.capacity.load(Ordering::Relaxed) > 0
    }

    /// The cached text of `table`'s record `key`.
    pub fn get(&self, table: &str, key: &str) -> Option<std::sync::Arc<str>> {
        if !self.enabled() {
            return None;
        }
        let tables = self.shard(key).read().ok()?;
        tables.get(table)?.records.get(key).cloned()
    }

    /// Notes the generation of `table` (in `key`'s shard) before its record `key` is read from
    /// the database.
    pub fn begin_read(&self, table: &str, key: &str) -> Option<PendingRead> {
        if !self.enabled() {
            return None;
        }
        let shard = self.shard(key);
        if let Some(records) = shard.read().ok()?.get(table) {
            return Some(PendingRead {
                generation: records.generation,
            });
        }
        let mut tables = shard.write().ok()?;
        let records = tables.entry(table.to_string()).or_default();
        Some(PendingRead {
            generation: records.generation,
        })
    }

    /// Keeps what a read found, unless `table` was written since [`RecordCache::begin_read`].
    pub fn finish_read(&self, read: PendingRead, table: &str, key: &str, text: &str) {
        let cost = key.len() + text.len() + ENTRY_OVERHEAD;
        let capacity = self.capacity.load(Ordering::Relaxed);
        if cost > capacity {
            return;
        }
        if self.used.load(Ordering::Relaxed) + cost > capacity {
            self.clear();
        }
        let Ok(mut tables) = self.shard(key).write() else {
            return;
        };
        let Some(records) = tables.get_mut(table) else {
            return;
        };
        if records.generation != read.generation {
            return;
        }
        if records
            .records
            .insert(key.to_string(), std::sync::Arc::from(text))
            .is_none()
        {
            self.used.fetch_add(cost, Ordering::Relaxed);
        }
    }

    /// Drops what is held of `table` and fails the reads of it in progress.
    pub fn invalidate(&self, table: &str) {
        for shard in &self.shards {
            let Ok(mut tables) = shard.write() else {
                continue;
            };
            if let Some(records) = tables.get_mut(table) {
                records.generation += 1;
                let freed: usize = records
                    .records
                    .drain()
                    .map(|(key, text)| key.len() + text.len() + ENTRY_OVERHEAD)
                    .sum();
                let _ = self
                    .used
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                        Some(used.saturating_sub(freed))
                    });
            }
        }
    }

    /// Drops everything, failing every read in progress.
    pub fn clear(&self) {
        for shard in &self.shards {
            let Ok(mut tables) = shard.write() else {
                continue;
            };
            for records in tables.values_mut() {
                records.generation += 1;
                records.records.clear();
            }
        }
        self.used.store(0, Ordering::Relaxed);
    }
}

/// The record tables one pooled connection wrote since it was taken from the pool (filled by
/// its update hook, emptied when it goes back).
#[derive(Default)]
pub struct Written(Mutex<Vec<String>>);

impl Written {
    /// Notes `table`; true the first time since the connection left the pool.
    pub fn note(&self, table: &str) -> bool {
        let Ok(mut tables) = self.0.lock() else {
            return true;
        };
        if tables.iter().any(|t| t == table) {
            return false;
        }
        tables.push(table.to_string());
        true
    }

    pub fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut tables| std::mem::take(&mut *tables))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(cache: &RecordCache, table: &str, key: &str, text: &str) {
        let read = cache.begin_read(table, key).expect("enabled");
        cache.finish_read(read, table, key, text);
    }

    #[test]
    fn a_read_is_kept_and_a_write_drops_its_table_only() {
        let cache = RecordCache::default();
        cached(&cache, "acme.items", "a", r#"{"id":"a"}"#);
        cached(&cache, "acme.other", "b", r#"{"id":"b"}"#);
        assert_eq!(
            cache.get("acme.items", "a").as_deref(),
            Some(r#"{"id":"a"}"#)
        );
        cache.invalidate("acme.items");
        assert_eq!(cache.get("acme.items", "a"), None);
        assert_eq!(
            cache.get("acme.other", "b").as_deref(),
            Some(r#"{"id":"b"}"#)
        );
    }

    #[test]
    fn a_read_overtaken_by_a_write_is_not_kept() {
        let cache = RecordCache::default();
        let read = cache.begin_read("acme.items", "a").expect("enabled");
        // The write lands between the read's start and its end: what it read may be old.
        cache.invalidate("acme.items");
        cache.finish_read(read, "acme.items", "a", "old");
        assert_eq!(cache.get("acme.items", "a"), None);
        cached(&cache, "acme.items", "a", "new");
        assert_eq!(cache.get("acme.items", "a").as_deref(), Some("new"));
    }

    #[test]
    fn it_stays_within_its_capacity_and_can_be_off() {
        let cache = RecordCache::new(3 * (ENTRY_OVERHEAD + 10));
        for n in 0..10 {
            cached(&cache, "t", &format!("k{n}"), "12345678");
            assert!(cache.used.load(Ordering::Relaxed) <= 3 * (ENTRY_OVERHEAD + 10));
        }
        assert!(cache.get("t", "k9").is_some(), "the newest read is kept");
        cache.set_capacity(0);
        assert!(cache.begin_read("t", "k9").is_none());
        assert_eq!(cache.get("t", "k9"), None);
    }

    #[test]
    fn written_tables_are_noted_once_and_taken_once() {
        let written = Written::default();
        assert!(written.note("a.t"));
        assert!(!written.note("a.t"));
        assert!(written.note("b.t"));
        assert_eq!(written.take(), ["a.t", "b.t"]);
        assert!(written.take().is_empty());
    }
}
