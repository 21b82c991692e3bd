//! Where the historian's journal is folded into the series: acknowledged values are first
//! appended to a journal file (`historian::journal`), then written here in batches with the
//! mark of how far the journal has been folded, in the same transaction.

use crate::store::types::{HistoryWrite, StraightToBlocks};
use crate::store::StoreResult;

/// Folding the historian's journal into the series.
pub trait HistorianJournal {
    /// The sequence number of the last journal entry already in the series (0: none yet).
    fn journal_folded(&self) -> StoreResult<u64>;
    /// Writes values into their series in one transaction and, when they include journal
    /// entries, raises the mark to `journaled_upto` in that same transaction. What it wrote
    /// straight into blocks (`store::history::bursts`), per series: the writer compacts those
    /// blocks later ([`HistorianBlocks::compact_straight`](super::HistorianBlocks)).
    fn fold_history(
        &self,
        values: &[HistoryWrite],
        journaled_upto: Option<u64>,
    ) -> StoreResult<Vec<StraightToBlocks>>;
    /// Whether other svc instances read these series. A reader settles only its own
    /// instance's writer, so what another instance holds back before folding is not yet
    /// readable here: such a store gets every value folded within the short cadence.
    fn read_by_other_instances(&self) -> bool {
        false
    }
}
