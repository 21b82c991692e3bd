//! The series whose folds went straight into blocks (`store::history::bursts`), kept by the
//! historian's writer thread beside the hot tails (`sealer.rs`). Each such fold leaves a small
//! block; a series' run of them is compacted into one once it holds a block's worth
//! (`blocks::MAX_POINTS`, as rows close into a block), or once the tag has had no new value for
//! the idle time, when the run's last day is merged too (as an idle tail's is). Each time a
//! merged block's worth has been written, the day's complete groups of blocks are merged as
//! well, so a fast tag's day is merged as it goes rather than all at midnight. A run the
//! writer forgets (a restart) leaves more blocks in its day than merging would: the startup
//! listing of days to merge finds them.

use super::sealer::IdleAfter;
use crate::store::blocks;
use crate::store::{Store, StoreResult, StraightCompaction, StraightToBlocks};
use foldhash::HashMap;
use std::time::{Duration, Instant};

/// What the writer knows of one series' blocks written straight since they were compacted.
#[derive(Debug, Clone)]
struct Run {
    points: u64,
    /// Where the first of them starts.
    from_ms: i64,
    last_write: Instant,
}

pub struct StraightRuns {
    runs: HashMap<(String, String), Run>,
    /// Points written since a series' day was last merged, kept across its runs.
    unmerged: HashMap<(String, String), u64>,
    idle: IdleAfter,
}

impl StraightRuns {
    pub fn new(idle: Duration) -> StraightRuns {
        StraightRuns {
            runs: HashMap::default(),
            unmerged: HashMap::default(),
            idle: IdleAfter(idle),
        }
    }

    /// Counts what one fold wrote straight into blocks.
    pub fn note(&mut self, straight: &[StraightToBlocks]) {
        let now = Instant::now();
        for written in straight {
            let run = self
                .runs
                .entry((written.domain.clone(), written.topic.clone()))
                .or_insert(Run {
                    points: 0,
                    from_ms: written.first_ms,
                    last_write: now,
                });
            run.points += written.points;
            *self
                .unmerged
                .entry((written.domain.clone(), written.topic.clone()))
                .or_default() += written.points;
            run.from_ms = run.from_ms.min(written.first_ms);
            run.last_write = now;
        }
    }

    fn is_idle(&self, run: &Run, now: Instant) -> bool {
        self.idle.reached(run.last_write, now)
    }

    fn is_due(&self, run: &Run, now: Instant) -> bool {
        run.points >= blocks::MAX_POINTS as u64 || self.is_idle(run, now)
    }

    /// Whether some run is due for compacting now.
    pub fn has_due(&self) -> bool {
        let now = Instant::now();
        self.runs.values().any(|run| self.is_due(run, now))
    }

    /// When the next run falls idle, if there is one.
    pub fn next_idle(&self) -> Option<Instant> {
        self.runs
            .values()
            .map(|run| self.idle.falls_at(run.last_write))
            .min()
    }

    /// Compacts due runs, up to `budget` blocks' worth (`blocks::MAX_POINTS` each) of rewritten
    /// points; how many it wrote.
    pub fn compact_some(&mut self, store: &Store, budget: usize) -> StoreResult<usize> {
        let now = Instant::now();
        let due: Vec<((String, String), Run)> = self
            .runs
            .iter()
            .filter(|(_, run)| self.is_due(run, now))
            .map(|(key, run)| (key.clone(), run.clone()))
            .collect();
        let mut written = 0;
        for (key, run) in due {
            if written >= budget {
                break;
            }
            let unmerged = self.unmerged.get(&key).copied().unwrap_or(0);
            let compaction = if self.is_idle(&run, now) {
                StraightCompaction::Idle
            } else if unmerged >= blocks::MERGED_MAX_POINTS as u64 {
                StraightCompaction::Day
            } else {
                StraightCompaction::Run
            };
            let rewritten = store.compact_straight(&key.0, &key.1, run.from_ms, compaction)?;
            self.runs.remove(&key);
            if compaction != StraightCompaction::Run {
                self.unmerged.remove(&key);
            }
            written += (rewritten as usize).div_ceil(blocks::MAX_POINTS).max(1);
        }
        Ok(written)
    }
}
