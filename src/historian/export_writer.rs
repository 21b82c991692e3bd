//! Writes an export plan as gzipped CSV into any writer, streaming: raw columns are read a page
//! of [`PAGE`] points at a time and merged row by row, so a year of a 1 Hz tag goes out in
//! constant memory; resampled columns are at most `MAX_BUCKETS` points and are read whole.
//! With `quality`, each column is followed by `<name> quality`, the quality of the value in
//! the cell (`good`, `uncertain` or `bad`).

use super::export::{Buckets, ExportPlan};
use super::zone::format_in_zone;
use super::HistoryPoint;
use crate::store::{Store, StoreError, StoreResult};
use flate2::write::GzEncoder;
use flate2::Compression;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::Write;

/// Points read per column at a time.
const PAGE: u64 = 10_000;

/// One column's points in time order.
struct Column<'s> {
    store: &'s Store,
    domain: &'s str,
    topic: &'s str,
    end_ms: i64,
    /// Where the next page starts; None once every page is read.
    next_start: Option<i64>,
    points: VecDeque<HistoryPoint>,
}

impl Column<'_> {
    /// The time of the next point, reading a page if needed.
    fn peek(&mut self) -> StoreResult<Option<i64>> {
        while self.points.is_empty() {
            let Some(start) = self.next_start else {
                return Ok(None);
            };
            self.read_page(start)?;
        }
        Ok(self.points.front().map(|p| p.ts_ms))
    }

    /// Reads the next page. Its last timestamp may continue into the page after, so the page
    /// ends before it and the next one starts there; a page of one timestamp is read whole.
    fn read_page(&mut self, start: i64) -> StoreResult<()> {
        let (store, domain, topic, end) = (self.store, self.domain, self.topic, self.end_ms);
        let mut page = store.history_range(domain, topic, start, end, Some(PAGE))?;
        self.next_start = None;
        if page.len() as u64 == PAGE {
            let last_ts = page[page.len() - 1].ts_ms;
            let cut = page.iter().position(|p| p.ts_ms == last_ts).unwrap_or(0);
            if cut == 0 {
                page = store.history_range(domain, topic, last_ts, last_ts + 1, None)?;
                self.next_start = Some(last_ts + 1).filter(|next| *next < end);
            } else {
                page.truncate(cut);
                self.next_start = Some(last_ts);
            }
        }
        self.points.extend(page);
        Ok(())
    }

    /// The last of the points at `ts` (several share a time: the last one is the cell).
    fn take_at(&mut self, ts: i64) -> StoreResult<Option<HistoryPoint>> {
        let mut last = None;
        while self.peek()? == Some(ts) {
            last = self.points.pop_front();
        }
        Ok(last)
    }
}

/// Reads every column of the plan from the store and writes the gzipped CSV into `out`.
pub fn write_export(
    store: &Store,
    domain: &str,
    plan: &ExportPlan,
    out: impl Write,
) -> StoreResult<()> {
    let (start, end) = (plan.start_ms, plan.end_ms);
    let mut columns = Vec::with_capacity(plan.columns.len());
    for column in &plan.columns {
        let topic = column.topic.as_str();
        let loaded = match &plan.bucket {
            _ if !column.historized => Some(Vec::new()),
            None => None,
            Some((Buckets::Every(bucket_ms), agg)) => {
                Some(store.history_buckets(domain, topic, start, end, *bucket_ms, *agg)?)
            }
            Some((Buckets::Edges(edges), agg)) => {
                Some(store.history_buckets_between(domain, topic, start, end, edges, *agg)?)
            }
        };
        columns.push(Column {
            store,
            domain,
            topic,
            end_ms: end,
            next_start: loaded.is_none().then_some(start),
            points: loaded.unwrap_or_default().into(),
        });
    }
    let names: Vec<&str> = plan.columns.iter().map(|c| c.name.as_str()).collect();
    write_rows(&mut columns, &names, plan, out)
        .map_err(|e| StoreError::Internal(format!("cannot write the CSV export: {e}")))?
}

/// The CSV itself; the outer error is the writer's, the inner one the store's.
fn write_rows(
    columns: &mut [Column<'_>],
    names: &[&str],
    plan: &ExportPlan,
    out: impl Write,
) -> std::io::Result<StoreResult<()>> {
    let mut csv = csv::Writer::from_writer(GzEncoder::new(out, Compression::default()));
    let mut header = vec!["Timestamp".to_string()];
    for name in names {
        header.push(name.to_string());
        if plan.quality {
            header.push(format!("{name} quality"));
        }
    }
    csv.write_record(&header)?;
    let mut row: Vec<String> = vec![String::new(); header.len()];
    loop {
        let mut next_ts = None;
        for column in columns.iter_mut() {
            match column.peek() {
                Ok(Some(ts)) => next_ts = Some(next_ts.map_or(ts, |n: i64| n.min(ts))),
                Ok(None) => {}
                Err(e) => return Ok(Err(e)),
            }
        }
        let Some(ts) = next_ts else { break };
        row[0] = format_in_zone(ts, plan.zone);
        let mut at = 1;
        for column in columns.iter_mut() {
            let point = match column.take_at(ts) {
                Ok(point) => point,
                Err(e) => return Ok(Err(e)),
            };
            row[at] = point.as_ref().map(|p| cell(&p.value)).unwrap_or_default();
            at += 1;
            if plan.quality {
                row[at] = point
                    .map(|p| p.quality.label().to_string())
                    .unwrap_or_default();
                at += 1;
            }
        }
        csv.write_record(&row)?;
    }
    let gz = csv
        .into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    gz.finish()?.flush()?;
    Ok(Ok(()))
}

/// How one value is written into a CSV cell.
fn cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{HistoryWrite, Quality};
    use chrono_tz::Tz;
    use serde_json::json;

    const T0: i64 = 1_767_225_600_000;

    fn rows(store: &Store, topics: &[&str], start: i64, end: i64) -> Vec<Vec<String>> {
        let plan = ExportPlan {
            start_ms: start,
            end_ms: end,
            columns: topics
                .iter()
                .map(|t| crate::historian::export::ExportColumn {
                    topic: t.to_string(),
                    name: t.to_string(),
                    historized: true,
                })
                .collect(),
            bucket: None,
            zone: Tz::UTC,
            quality: false,
        };
        let mut out = Vec::new();
        write_export(store, "d", &plan, &mut out).unwrap();
        let text = std::io::read_to_string(flate2::read::GzDecoder::new(&out[..])).unwrap();
        csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes())
            .records()
            .map(|r| r.unwrap().iter().map(str::to_string).collect())
            .collect()
    }

    fn store_with(points: &[(&str, i64, Value)]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let writes: Vec<HistoryWrite> = points
            .iter()
            .map(|(topic, ts_ms, value)| HistoryWrite {
                domain: "d".into(),
                topic: topic.to_string(),
                ts_ms: *ts_ms,
                value: value.clone(),
                quality: Quality::GOOD,
            })
            .collect();
        store.append_history(&writes).unwrap();
        (dir, store)
    }

    #[test]
    fn merges_columns_by_timestamp_with_the_last_value_of_a_time() {
        let (_dir, store) = store_with(&[
            ("Temp", T0, json!(20.5)),
            ("Temp", T0 + 1000, json!(21)),
            ("Temp", T0 + 1000, json!(22)),
            ("State", T0 + 500, json!("run, \"fast\"")),
            ("State", T0 + 1000, json!({"a": [1, true]})),
            ("State", T0 + 2000, Value::Null),
            ("State", T0 + 3000, json!(false)),
        ]);
        let expected: Vec<Vec<&str>> = vec![
            vec!["Timestamp", "Temp", "State", "Empty"],
            vec!["2026-01-01T00:00:00.000Z", "20.5", "", ""],
            vec!["2026-01-01T00:00:00.500Z", "", "run, \"fast\"", ""],
            vec!["2026-01-01T00:00:01.000Z", "22", r#"{"a":[1,true]}"#, ""],
            vec!["2026-01-01T00:00:02.000Z", "", "", ""],
            vec!["2026-01-01T00:00:03.000Z", "", "false", ""],
        ];
        assert_eq!(
            rows(&store, &["Temp", "State", "Empty"], T0, T0 + 10_000),
            expected
        );
        assert_eq!(
            rows(&store, &["Empty"], T0, T0 + 10_000),
            vec![vec!["Timestamp", "Empty"]]
        );
    }

    #[test]
    fn pages_cut_between_timestamps_not_inside_one() {
        // More than two pages, with runs of equal timestamps around each page boundary and
        // one timestamp holding more points than a page.
        let mut points = Vec::new();
        for i in 0..(2 * PAGE as i64 + 500) {
            points.push(("t", T0 + i / 3, json!(i)));
        }
        for i in 0..(PAGE as i64 + 7) {
            points.push(("t", T0 + 1_000_000, json!(-i)));
        }
        let (_dir, store) = store_with(&points);
        let got = rows(&store, &["t"], T0, T0 + 2_000_000);
        let mut want: Vec<(i64, String)> = Vec::new();
        for (_, ts, value) in &points {
            match want.last_mut() {
                Some(last) if last.0 == *ts => last.1 = value.to_string(),
                _ => want.push((*ts, value.to_string())),
            }
        }
        assert_eq!(got.len(), want.len() + 1);
        for (row, (ts, value)) in got[1..].iter().zip(&want) {
            assert_eq!(row[0], format_in_zone(*ts, Tz::UTC));
            assert_eq!(&row[1], value);
        }
    }
}
