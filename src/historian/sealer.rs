//! Which series' hot rows are due to close into a block, kept by the historian's writer thread
//! between folds. A tail is due once it holds a full block (`blocks::MAX_POINTS` points and
//! [`KEEP_HOT`] newer rows to stay hot, or `blocks::MAX_SPAN_MS` of time), or once its tag has
//! had no new value for the idle time, so a tag that stopped does not keep its last values as
//! rows forever. At start every series' tail is loaded from the store: a data dir written
//! before blocks existed is all tail, and is converted by this same rule, a block at a time,
//! in the background; a crash in between loses nothing (each block and the removal of its
//! rows commit together) and the next start goes on where it stopped.

use crate::store::blocks;
use crate::store::{HistoryWrite, Store, StoreResult};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What the writer knows of one series' hot rows.
#[derive(Debug, Clone)]
struct Tail {
    count: u64,
    first_ms: i64,
    last_ms: i64,
    last_write: Instant,
}

/// Rows a tail that is still receiving keeps beyond a full block. A block closes the oldest
/// rows, so the newest stay rows for a while: a tag's points from several connections, or a
/// gateway's burst sent out of order, then land among rows and not behind a block just
/// closed, where each costs a decode of that block and later a block of its own that overlaps
/// it. (The bench's four publishers on one tag ran up to hundreds of points apart.)
const KEEP_HOT: u64 = 1_024;

impl Tail {
    fn full(&self) -> bool {
        self.count >= blocks::MAX_POINTS as u64 + KEEP_HOT
            || self.last_ms.saturating_sub(self.first_ms) >= blocks::MAX_SPAN_MS
    }
}

pub struct Sealer {
    tails: HashMap<(String, String), Tail>,
    idle: Duration,
    loaded: bool,
    /// Blocks closed since the store last gave back the space of their rows.
    uncompacted: usize,
    last_compact: Option<Instant>,
}

/// How often at most the store is asked to give back the space of closed rows.
const COMPACT_EVERY: Duration = Duration::from_secs(60);

impl Sealer {
    pub fn new(idle: Duration) -> Sealer {
        Sealer {
            tails: HashMap::new(),
            idle,
            loaded: false,
            uncompacted: 0,
            last_compact: None,
        }
    }

    /// Loads every series' tail from the store, once (until it succeeds).
    pub fn load(&mut self, store: &Store) {
        if self.loaded {
            return;
        }
        match store.history_tails() {
            Ok(tails) => {
                let now = Instant::now();
                for tail in tails {
                    let entry = self.tails.entry((tail.domain, tail.topic));
                    let known = entry.or_insert(Tail {
                        count: 0,
                        first_ms: tail.first_ms,
                        last_ms: tail.last_ms,
                        last_write: now,
                    });
                    known.count = known.count.max(tail.count);
                    known.first_ms = known.first_ms.min(tail.first_ms);
                    known.last_ms = known.last_ms.max(tail.last_ms);
                }
                self.loaded = true;
            }
            Err(e) => tracing::warn!(error = %e, "cannot list the historian's hot rows yet"),
        }
    }

    /// Counts values just folded into their series' tails. The batch is summed per series
    /// first, under borrowed names, so a fold of thousands of values copies each series' name
    /// once, not once a value.
    pub fn note(&mut self, values: &[HistoryWrite]) {
        let now = Instant::now();
        let mut batch: HashMap<(&str, &str), (u64, i64, i64)> = HashMap::new();
        for value in values {
            let key = (value.domain.as_str(), value.topic.as_str());
            let seen = batch.entry(key).or_insert((0, value.ts_ms, value.ts_ms));
            seen.0 += 1;
            seen.1 = seen.1.min(value.ts_ms);
            seen.2 = seen.2.max(value.ts_ms);
        }
        for ((domain, topic), (count, first_ms, last_ms)) in batch {
            let tail = self
                .tails
                .entry((domain.to_owned(), topic.to_owned()))
                .or_insert(Tail {
                    count: 0,
                    first_ms,
                    last_ms,
                    last_write: now,
                });
            tail.count += count;
            tail.first_ms = tail.first_ms.min(first_ms);
            tail.last_ms = tail.last_ms.max(last_ms);
            tail.last_write = now;
        }
    }

    /// The series due now: full ones first, then idle ones.
    fn due(&self) -> Vec<(String, String)> {
        let now = Instant::now();
        let mut full = Vec::new();
        let mut idle = Vec::new();
        for (key, tail) in &self.tails {
            if tail.count == 0 {
                continue;
            }
            if tail.full() {
                full.push(key.clone());
            } else if now.duration_since(tail.last_write) >= self.idle {
                idle.push(key.clone());
            }
        }
        full.extend(idle);
        full
    }

    /// Whether some series is due now.
    pub fn has_due(&self) -> bool {
        let now = Instant::now();
        self.tails
            .values()
            .any(|t| t.count > 0 && (t.full() || now.duration_since(t.last_write) >= self.idle))
    }

    /// When the next tail falls idle, if one holds rows.
    pub fn next_idle(&self) -> Option<Instant> {
        self.tails
            .values()
            .filter(|t| t.count > 0)
            .map(|t| t.last_write + self.idle)
            .min()
    }

    /// Closes up to `budget` blocks of due series; how many it wrote.
    pub fn seal_some(&mut self, store: &Store, budget: usize) -> StoreResult<usize> {
        let mut written = 0;
        for key in self.due() {
            while written < budget {
                let sealed = store.seal_history(&key.0, &key.1)?;
                let Some(tail) = self.tails.get_mut(&key) else {
                    break;
                };
                if sealed.points > 0 {
                    written += 1;
                }
                tail.count = tail.count.saturating_sub(sealed.points);
                match sealed.next_first_ms {
                    Some(first) if sealed.points > 0 => tail.first_ms = first,
                    _ => {
                        // Empty now (or emptied by retention): forget it until it grows.
                        self.tails.remove(&key);
                        break;
                    }
                }
                if !tail.full() {
                    // What is left waits for more values, or for the tag to fall idle again.
                    if Instant::now().duration_since(tail.last_write) < self.idle {
                        break;
                    }
                }
            }
            if written >= budget {
                break;
            }
        }
        self.uncompacted += written;
        // Once the backlog is done, the store gives back what the closed rows held.
        let all_closed = self.tails.values().all(|t| t.count == 0);
        let due = all_closed
            || self
                .last_compact
                .is_none_or(|at| at.elapsed() >= COMPACT_EVERY);
        if self.uncompacted > 0 && written < budget && due {
            self.uncompacted = 0;
            self.last_compact = Some(Instant::now());
            store.history_compact()?;
        }
        Ok(written)
    }
}
