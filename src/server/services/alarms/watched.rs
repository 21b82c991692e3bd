//! The broker's fast path into alarms: which topics any alarm watches or is enabled by, looked
//! up for every accepted message. It keeps 64-bit hashes of the topics (with how many watched
//! topics share each), not their text: a lookup then touches only the table, where one on
//! `String` keys also read each candidate key's bytes from elsewhere on the heap (a cache miss
//! per watched message, with 10,000 alarms the largest cost alarms added to the broker's
//! fan-in). A topic that merely shares a watched topic's hash goes on to the engine, which
//! looks it up exactly and finds nothing.

use foldhash::fast::RandomState;
use std::hash::BuildHasher;
use std::sync::{RwLock, RwLockReadGuard};

#[derive(Default)]
pub(super) struct Watched {
    hasher: RandomState,
    counts: RwLock<foldhash::HashMap<u64, u32>>,
}

/// A read of the watched set, held while a batch of messages is looked up.
pub(super) struct Reader<'a> {
    hasher: &'a RandomState,
    counts: RwLockReadGuard<'a, foldhash::HashMap<u64, u32>>,
}

impl Reader<'_> {
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Whether an alarm may watch `topic` (exactly: the engine's to say).
    pub fn contains(&self, topic: &str) -> bool {
        self.counts.contains_key(&self.hasher.hash_one(topic))
    }
}

impl Watched {
    pub fn read(&self) -> Reader<'_> {
        Reader {
            hasher: &self.hasher,
            counts: self.counts.read().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Watches exactly `topics` (each once).
    pub fn reset<'a>(&self, topics: impl IntoIterator<Item = &'a str>) {
        let mut counts = foldhash::HashMap::default();
        for topic in topics {
            *counts.entry(self.hasher.hash_one(topic)).or_insert(0) += 1;
        }
        *self.counts.write().unwrap_or_else(|e| e.into_inner()) = counts;
    }

    /// A topic no alarm watched before is watched now.
    pub fn add(&self, topic: &str) {
        let hash = self.hasher.hash_one(topic);
        let mut counts = self.counts.write().unwrap_or_else(|e| e.into_inner());
        *counts.entry(hash).or_insert(0) += 1;
    }

    /// A topic an alarm watched is watched no more.
    pub fn remove(&self, topic: &str) {
        let hash = self.hasher.hash_one(topic);
        let mut counts = self.counts.write().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = counts.get_mut(&hash) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&hash);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_stays_watched_until_removed_as_often_as_added() {
        let watched = Watched::default();
        assert!(watched.read().is_empty());
        watched.reset(["a/b", "a/c"]);
        assert!(watched.read().contains("a/b") && watched.read().contains("a/c"));
        assert!(!watched.read().contains("a/d"));
        watched.add("a/d");
        watched.remove("a/b");
        let read = watched.read();
        assert!(!read.contains("a/b") && read.contains("a/c") && read.contains("a/d"));
        drop(read);
        watched.reset([]);
        assert!(watched.read().is_empty());
    }
}
