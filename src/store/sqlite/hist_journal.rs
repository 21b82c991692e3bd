//! Where the historian records how far its journal has been folded into the series.
//!
//! Acknowledged values are first appended to a journal file (see `historian::journal`); the
//! writer later inserts them into `hist_points` and, in the same transaction, raises the mark
//! below. A crash between that commit and the journal's truncation therefore moves nothing
//! twice: replay skips every journal entry at or below the mark.
//!
//! In PostgreSQL the same one-row table, with `folded bigint`.

use super::hist_blocks::Layout;
use super::historian::{insert_points, series_for_writing, PointRef};
use super::{HistoryWrite, SqliteStore, StoreResult};
use crate::store::history::bursts::{bursts, write_burst};
use crate::store::interface::HistorianJournal;
use crate::store::types::*;
use rusqlite::{OptionalExtension, TransactionBehavior};

impl HistorianJournal for SqliteStore {
    /// The sequence number of the last journal entry already in the series (0: none yet).
    fn journal_folded(&self) -> StoreResult<u64> {
        let folded: Option<i64> = self
            .conn()?
            .query_row("SELECT folded FROM hist_journal WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(folded.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
    }

    /// Writes values into their series in one transaction and, when they include journal
    /// entries, raises the mark to `journaled_upto` in that same transaction.
    fn fold_history(
        &self,
        values: &[HistoryWrite],
        journaled_upto: Option<u64>,
    ) -> StoreResult<Vec<StraightToBlocks>> {
        self.fold(values, journaled_upto, Bursts::StraightToBlocks)
    }
}

/// Where a fold writes a burst.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Bursts {
    /// Straight into blocks when it can (`store::history::bursts`).
    StraightToBlocks,
    /// Into rows like any value: the unit tests that compare rows with blocks need rows.
    #[cfg_attr(not(test), allow(dead_code))]
    AsRows,
}

impl SqliteStore {
    /// [`HistorianJournal::fold_history`], with bursts written where `bursts_to` says.
    pub(super) fn fold(
        &self,
        values: &[HistoryWrite],
        journaled_upto: Option<u64>,
        bursts_to: Bursts,
    ) -> StoreResult<Vec<StraightToBlocks>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut straight = Vec::new();
        let mut taken = vec![false; values.len()];
        let bursts = match bursts_to {
            Bursts::StraightToBlocks => bursts(values),
            Bursts::AsRows => Vec::new(),
        };
        for burst in bursts {
            let (series, sealed_upto) = series_for_writing(&tx, burst.domain, burst.topic)?;
            if let Some(done) = write_burst(&Layout(&tx), series, sealed_upto, values, &burst)? {
                for &at in &burst.positions {
                    taken[at] = true;
                }
                straight.push(done);
            }
        }
        let rows: Vec<(&HistoryWrite, String)> = values
            .iter()
            .zip(&taken)
            .filter(|(_, &taken)| !taken)
            .map(|(w, _)| (w, w.value.to_string()))
            .collect();
        insert_points(
            &tx,
            rows.iter().map(|(w, text)| PointRef {
                domain: &w.domain,
                topic: &w.topic,
                ts_ms: w.ts_ms,
                num: numeric(&w.value),
                text,
                quality: w.quality.0,
            }),
        )?;
        if let Some(upto) = journaled_upto {
            let upto = i64::try_from(upto).unwrap_or(i64::MAX);
            tx.execute(
                "INSERT INTO hist_journal (id, folded) VALUES (1, ?1) \
                 ON CONFLICT (id) DO UPDATE SET folded = max(folded, excluded.folded)",
                [upto],
            )?;
        }
        tx.commit()?;
        Ok(straight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::interface::*;

    use serde_json::json;

    #[test]
    fn the_mark_rises_with_the_values_it_covers_and_never_falls() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        assert_eq!(store.journal_folded().unwrap(), 0);
        let value = HistoryWrite {
            domain: "d".into(),
            topic: "t".into(),
            ts_ms: 5,
            value: json!(1.5),
            quality: Quality::GOOD,
        };
        store
            .fold_history(std::slice::from_ref(&value), Some(9))
            .unwrap();
        assert_eq!(store.journal_folded().unwrap(), 9);
        store.fold_history(&[value], Some(4)).unwrap();
        assert_eq!(store.journal_folded().unwrap(), 9);
        assert_eq!(store.history_range("d", "t", 0, 10, None).unwrap().len(), 2);
    }
}
