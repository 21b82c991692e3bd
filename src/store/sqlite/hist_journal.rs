//! Where the historian records how far its journal has been folded into the series.
//!
//! Acknowledged values are first appended to a journal file (see `historian::journal`); the
//! writer later inserts them into `hist_points` and, in the same transaction, raises the mark
//! below. A crash between that commit and the journal's truncation therefore moves nothing
//! twice: replay skips every journal entry at or below the mark.
//!
//! In PostgreSQL the same one-row table, with `folded bigint`.

use super::historian::{insert_points, PointRef};
use super::{HistoryWrite, SqliteStore, StoreResult};
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
    ) -> StoreResult<()> {
        let texts: Vec<String> = values.iter().map(|w| w.value.to_string()).collect();
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        insert_points(
            &tx,
            values.iter().zip(&texts).map(|(w, text)| PointRef {
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
        Ok(())
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
