//! Where the historian records how far its journal has been folded into the series: values
//! and the mark are written in one transaction (see `sqlite/hist_journal.rs` for why).

use super::historian::{InsertError, PointColumns};
use super::PgStore;
use crate::store::interface::HistorianJournal;
use crate::store::types::*;
use crate::store::{StoreError, StoreResult};
use std::collections::HashMap;

impl HistorianJournal for PgStore {
    /// The sequence number of the last journal entry of this instance already in the points.
    fn journal_folded(&self) -> StoreResult<u64> {
        Ok(self
            .query_opt(
                "SELECT folded FROM hist_journal WHERE instance = $1",
                &[&self.instance],
            )?
            .map_or(0, |row| u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)))
    }

    /// Writes values into their series in one transaction and, when they include journal
    /// entries, raises this instance's mark to `journaled_upto` in that same transaction.
    /// Every value becomes a row: instances sharing the database may fold into one series at
    /// once, so "newer than everything the series holds", which a burst straight into blocks
    /// needs (`store::history::bursts`), would need a lock on the series across them.
    fn fold_history(
        &self,
        values: &[HistoryWrite],
        journaled_upto: Option<u64>,
    ) -> StoreResult<Vec<StraightToBlocks>> {
        self.ensure_partitions(values.iter().map(|w| w.ts_ms))?;
        let keys: Vec<(&str, &str)> = values
            .iter()
            .map(|w| (w.domain.as_str(), w.topic.as_str()))
            .collect();
        let ids = self.series_ids(&keys)?;
        // Values of one series at one timestamp keep their arrival order: the n-th of them in
        // this batch goes n after what the table already holds there.
        let mut ordinal: HashMap<(i64, i64), i32> = HashMap::new();
        let (mut series, mut ts, mut ord, mut num, mut text, mut quality) = (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        for w in values {
            let key = (w.domain.clone(), w.topic.clone());
            let Some(id) = ids.get(&key).copied() else {
                return Err(StoreError::Internal(format!(
                    "no series for {} {}",
                    w.domain, w.topic
                )));
            };
            let n = ordinal.entry((id, w.ts_ms)).or_insert(0);
            series.push(id);
            ts.push(w.ts_ms);
            ord.push(*n);
            *n += 1;
            num.push(numeric(&w.value));
            text.push(w.value.to_string());
            quality.push(i64::from(w.quality.0));
        }
        let upto = journaled_upto.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let columns = PointColumns {
            series,
            ts,
            ord,
            num,
            text,
            quality,
        };
        match self.insert_points(&columns, upto) {
            // Another instance's retention dropped a partition this one still believed in:
            // forget them all, create what the values need, and try once more.
            Err(InsertError::NoPartition) => {
                if let Ok(mut known) = self.known_partitions.lock() {
                    known.clear();
                }
                self.ensure_partitions(values.iter().map(|w| w.ts_ms))?;
                self.insert_points(&columns, upto)
                    .map_err(StoreError::from)?;
            }
            other => other.map_err(StoreError::from)?,
        }
        Ok(Vec::new())
    }

    /// Several instances may share one PostgreSQL database.
    fn read_by_other_instances(&self) -> bool {
        true
    }
}
