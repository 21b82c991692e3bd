//! Which series' hot rows are due to close into a block, kept by the historian's writer thread
//! between folds. A tail is due once it holds a full block (`blocks::MAX_POINTS` points and
//! [`KEEP_HOT`] newer rows to stay hot, or `blocks::MAX_SPAN_MS` of time), or once its tag has
//! had no new value for the idle time, so a tag that stopped does not keep its last values as
//! rows forever. At start every series' tail is loaded from the store: a data dir written
//! before blocks existed is all tail, and is converted by this same rule, a block at a time,
//! in the background; a crash in between loses nothing (each block and the removal of its
//! rows commit together) and the next start goes on where it stopped. Series whose folds went
//! straight into blocks (`store::history::bursts`) are compacted beside the tails
//! (`straight_runs.rs`), within the same budget.

use super::straight_runs::StraightRuns;
use crate::store::blocks::{self, MERGED_MAX_POINTS};
use crate::store::{day_is_open, DayToMerge, HistoryWrite, Store, StoreResult, StraightToBlocks};
use foldhash::HashMap;
use std::sync::mpsc::{channel, Receiver};
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

/// How long a tag goes without a new value before its hot tail (or its run of blocks written
/// straight) counts as idle (`historian_seal_idle`).
#[derive(Debug, Clone, Copy)]
pub struct IdleAfter(pub Duration);

impl IdleAfter {
    /// Whether a tag last written at `last_write` is idle at `now`.
    pub fn reached(self, last_write: Instant, now: Instant) -> bool {
        now.saturating_duration_since(last_write) >= self.0
    }

    /// When a tag last written at `last_write` falls idle.
    pub fn falls_at(self, last_write: Instant) -> Instant {
        last_write + self.0
    }
}

pub struct Sealer {
    tails: HashMap<(String, String), Tail>,
    idle: IdleAfter,
    loaded: bool,
    /// Blocks closed since the store last gave back the space of their rows.
    uncompacted: usize,
    last_compact: Option<Instant>,
    /// Days whose blocks an earlier version (or a crash between sealing and merging) left
    /// unmerged, listed once at start on a thread of their own (the listing reads every
    /// block's summary, which must not hold up the folds), then merged a few at a time
    /// between folds like blocks are closed.
    listing: Option<Receiver<Vec<DayToMerge>>>,
    to_merge: Vec<DayToMerge>,
    /// Series whose folds went straight into blocks, to compact.
    runs: StraightRuns,
}

/// How often at most the store is asked to give back the space of closed rows.
const COMPACT_EVERY: Duration = Duration::from_secs(60);
/// How soon the store is asked again once every tail is closed (after a backlog, or when the
/// store found the space busy: PostgreSQL's folds held the table past its lock wait).
const COMPACT_AGAIN: Duration = Duration::from_secs(5);

impl Sealer {
    pub fn new(idle: Duration) -> Sealer {
        Sealer {
            tails: HashMap::default(),
            idle: IdleAfter(idle),
            loaded: false,
            uncompacted: 0,
            last_compact: None,
            listing: None,
            to_merge: Vec::new(),
            runs: StraightRuns::new(idle),
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
                self.list_days_to_merge(store);
            }
            Err(e) => tracing::warn!(error = %e, "cannot list the historian's hot rows yet"),
        }
    }

    /// Merges listed days, up to `budget` blocks' worth; how many it wrote. A day that still
    /// has hot rows waits: the sealer merges it when it closes.
    fn merge_some(&mut self, store: &Store, budget: usize) -> StoreResult<usize> {
        self.receive_days_to_merge();
        let mut written = 0;
        while written < budget {
            let Some(day) = self.to_merge.pop() else {
                break;
            };
            let key = (day.domain, day.topic);
            let hot_first = self
                .tails
                .get(&key)
                .filter(|t| t.count > 0)
                .map(|t| t.first_ms);
            if !day_is_open(day.day_ms, hot_first) {
                let points = store.merge_history_day(&key.0, &key.1, day.day_ms)?;
                written += (points as usize).div_ceil(blocks::MAX_POINTS);
            }
        }
        Ok(written)
    }

    /// Starts listing the days to merge in the background.
    fn list_days_to_merge(&mut self, store: &Store) {
        let (send, receive) = channel();
        let store = store.clone();
        let listing = std::thread::Builder::new()
            .name("historian-days".into())
            .spawn(move || match store.history_days_to_merge() {
                Ok(days) => {
                    let _ = send.send(days);
                }
                Err(e) => tracing::warn!(error = %e, "cannot list the historian's days to merge"),
            });
        match listing {
            Ok(_) => self.listing = Some(receive),
            Err(e) => tracing::warn!(error = %e, "cannot start listing the days to merge"),
        }
    }

    /// Takes the listed days to merge once the listing is done.
    fn receive_days_to_merge(&mut self) {
        let Some(listing) = &self.listing else {
            return;
        };
        match listing.try_recv() {
            Ok(mut days) => {
                // Popped from the end: oldest first.
                days.reverse();
                self.to_merge = days;
                self.listing = None;
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => {}
            Err(std::sync::mpsc::TryRecvError::Disconnected) => self.listing = None,
        }
    }

    /// Counts values just folded: into their series' tails, or, for the series in `straight`,
    /// into blocks at once (a series' values of one fold all go one way). The batch is summed
    /// per series first, under borrowed names, so a fold of thousands of values copies each
    /// series' name once, not once a value.
    pub fn note(&mut self, values: &[HistoryWrite], straight: &[StraightToBlocks]) {
        self.runs.note(straight);
        let now = Instant::now();
        let mut batch: HashMap<(&str, &str), (u64, i64, i64)> = HashMap::default();
        for value in values {
            let key = (value.domain.as_str(), value.topic.as_str());
            let seen = batch.entry(key).or_insert((0, value.ts_ms, value.ts_ms));
            seen.0 += 1;
            seen.1 = seen.1.min(value.ts_ms);
            seen.2 = seen.2.max(value.ts_ms);
        }
        for written in straight {
            batch.remove(&(written.domain.as_str(), written.topic.as_str()));
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
            } else if self.idle.reached(tail.last_write, now) {
                idle.push(key.clone());
            }
        }
        full.extend(idle);
        full
    }

    /// Whether some series is due now, a day waits to be merged, or the store is owed the
    /// space of closed rows.
    pub fn has_due(&self) -> bool {
        let now = Instant::now();
        !self.to_merge.is_empty()
            || self.runs.has_due()
            || self.compact_due_at().is_some_and(|at| at <= now)
            || self
                .tails
                .values()
                .any(|t| t.count > 0 && (t.full() || self.idle.reached(t.last_write, now)))
    }

    /// When the next tail falls idle, if one holds rows (or soon, while days to merge are
    /// still being listed), or when the store is next owed the space of closed rows: without
    /// that wake-up, rows closed by the last round before a silence kept their space.
    pub fn next_idle(&self) -> Option<Instant> {
        let listing = self
            .listing
            .as_ref()
            .map(|_| Instant::now() + Duration::from_secs(1));
        self.tails
            .values()
            .filter(|t| t.count > 0)
            .map(|t| self.idle.falls_at(t.last_write))
            .chain(listing)
            .chain(self.compact_due_at())
            .chain(self.runs.next_idle())
            .min()
    }

    /// When the store should next be asked to give back the space of closed rows, if it is owed
    /// some: at once the first time, then [`COMPACT_AGAIN`] after the last ask once every tail
    /// is closed, else [`COMPACT_EVERY`] after it.
    fn compact_due_at(&self) -> Option<Instant> {
        if self.uncompacted == 0 {
            return None;
        }
        let Some(last) = self.last_compact else {
            return Some(Instant::now());
        };
        let all_closed = self.tails.values().all(|t| t.count == 0);
        let wait = if all_closed {
            COMPACT_AGAIN
        } else {
            COMPACT_EVERY
        };
        Some(last + wait)
    }

    /// Closes up to `budget` blocks' worth (`blocks::MAX_POINTS` each) of due series; how many
    /// it wrote. A tail still receiving closes a block at a time; an idle one closes up to a
    /// merged block's worth at once, straight into a block in pages (`store::history::merge`),
    /// so a tag that went quiet does not make small blocks only to merge them.
    pub fn seal_some(&mut self, store: &Store, budget: usize) -> StoreResult<usize> {
        let mut written = self.runs.compact_some(store, budget)?;
        for key in self.due() {
            while written < budget {
                let idle = self
                    .tails
                    .get(&key)
                    .is_some_and(|t| self.idle.reached(t.last_write, Instant::now()));
                let max_points = if idle {
                    MERGED_MAX_POINTS
                } else {
                    blocks::MAX_POINTS
                };
                let sealed = store.seal_history(&key.0, &key.1, max_points)?;
                let Some(tail) = self.tails.get_mut(&key) else {
                    break;
                };
                // A merge of the day this closed counts as the blocks' worth it rewrote.
                written += ((sealed.points + sealed.merged) as usize).div_ceil(blocks::MAX_POINTS);
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
                    if !self.idle.reached(tail.last_write, Instant::now()) {
                        break;
                    }
                }
            }
            if written >= budget {
                break;
            }
        }
        written += self.merge_some(store, budget.saturating_sub(written))?;
        self.uncompacted += written;
        // Once the backlog is done, the store gives back what the closed rows held.
        let due = self.compact_due_at().is_some_and(|at| at <= Instant::now());
        if due && written < budget {
            self.last_compact = Some(Instant::now());
            if store.history_compact()? {
                self.uncompacted = 0;
            }
        }
        Ok(written)
    }
}
