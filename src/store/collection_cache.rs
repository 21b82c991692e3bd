//! Collection definitions remembered between requests: every record create and update checks
//! its table's schema, and reading it from the `collections` table cost a SQLite read per
//! write (12 % of the server's CPU when creating records). Every collection write clears it.
//!
//! A read that raced a write must not put the old definition back after the write cleared
//! the cache: a reader notes the generation before it reads the store, and its answer is
//! remembered only if no write has bumped the generation since.

use crate::schema::Collection;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Tables remembered at most; past it the cache starts over.
const MAX_TABLES: usize = 10_000;

/// A table's collection: `None` when the table has none.
pub type Definition = Option<Arc<Collection>>;

#[derive(Default)]
pub struct CollectionCache {
    generation: AtomicU64,
    /// By qualified table name (`<domain>.<table>`).
    tables: RwLock<HashMap<String, Definition>>,
}

impl CollectionCache {
    /// The remembered definition of a table, if it is remembered.
    pub fn get(&self, table: &str) -> Option<Definition> {
        self.tables
            .read()
            .ok()
            .and_then(|tables| tables.get(table).cloned())
    }

    /// The generation to hand to [`CollectionCache::remember`] after reading the store.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Remembers what the store said about `table`, unless a collection was written since
    /// `seen` (then what was read may be out of date already).
    pub fn remember(&self, table: String, definition: Definition, seen: u64) {
        let Ok(mut tables) = self.tables.write() else {
            return;
        };
        // Checked under the lock that `forget_all` takes after bumping: either the bump is
        // seen here, or the clear comes after this insert.
        if self.generation.load(Ordering::Acquire) != seen {
            return;
        }
        if tables.len() >= MAX_TABLES {
            tables.clear();
        }
        tables.insert(table, definition);
    }

    /// Called once a collection write is committed (or failed): nothing remembered is trusted.
    pub fn forget_all(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        if let Ok(mut tables) = self.tables.write() {
            tables.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition() -> Definition {
        let collection: Collection =
            serde_json::from_value(serde_json::json!({"name": "items", "fields": []}))
                .expect("a collection");
        Some(Arc::new(collection))
    }

    #[test]
    fn remembers_until_a_write_and_never_after_a_racing_one() {
        let cache = CollectionCache::default();
        assert!(cache.get("d.items").is_none());
        let seen = cache.generation();
        cache.remember("d.items".into(), definition(), seen);
        cache.remember("d.other".into(), None, seen);
        assert!(matches!(cache.get("d.items"), Some(Some(_))));
        assert!(matches!(cache.get("d.other"), Some(None)));

        // A write clears everything.
        cache.forget_all();
        assert!(cache.get("d.items").is_none());

        // A read that started before a write does not put its answer back.
        let seen = cache.generation();
        cache.forget_all();
        cache.remember("d.items".into(), definition(), seen);
        assert!(cache.get("d.items").is_none());
    }
}
