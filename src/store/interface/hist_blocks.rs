//! Closing the historian's hot rows into compressed blocks, and merging a closed day's blocks
//! (`store::history`, `store::blocks`): the writer's background work.

use crate::store::types::{DayToMerge, HotTail, Sealed, StraightCompaction};
use crate::store::StoreResult;

/// The historian writer's block work.
pub trait HistorianBlocks {
    /// Every series' hot tail (rows not yet in blocks): how many rows and their time bounds.
    fn history_tails(&self) -> StoreResult<Vec<HotTail>>;
    /// Closes the oldest hot rows of a series (at most `max_points`, within one UTC day) into
    /// one block, removing them in the same transaction; merges the day when it closes it.
    fn seal_history(&self, domain: &str, topic: &str, max_points: usize) -> StoreResult<Sealed>;
    /// Compacts the run of blocks folds wrote straight into a series from `from_ms` on
    /// (`store::history::bursts::compact_from`), and as much of its last day as `compaction`
    /// says. How many points were rewritten.
    fn compact_straight(
        &self,
        domain: &str,
        topic: &str,
        from_ms: i64,
        compaction: StraightCompaction,
    ) -> StoreResult<u64>;
    /// Every series' day a merge would rewrite (`merge::DAYS_TO_MERGE`): the days closed before
    /// blocks were merged (a data dir of an earlier version), cut short by a crash, or left by
    /// a run of blocks the writer forgot in a restart.
    fn history_days_to_merge(&self) -> StoreResult<Vec<DayToMerge>>;
    /// Merges one day's blocks of a series whole (`merge::Groups::All`) in one transaction;
    /// how many points it rewrote
    /// (0: nothing to merge).
    fn merge_history_day(&self, domain: &str, topic: &str, day_ms: i64) -> StoreResult<u64>;
    /// Gives back the space of rows closed into blocks where the engine does not reuse it by
    /// itself (PostgreSQL: empty past partitions of `hist_points` are dropped); false when the
    /// space was busy and the writer should ask again soon.
    fn history_compact(&self) -> StoreResult<bool>;
}
