//! The plant data set's footprint on SQLite (issue 33's bytes goal), through the store as the
//! historian's writer uses it: the nine numeric signals of `examples/common/plant_data.rs`
//! (50,000 points each at 1 Hz, as `bench/historian.sh` publishes them) appended, closed into
//! blocks, then every `hist_*` table's pages counted with `dbstat` as the bench counts them.
//! The bench's figure includes MQTT ingest and the background writer; the blocks they close are
//! the same (a series' oldest hot rows, `MAX_POINTS` at a time, merged into one block in pages
//! once the series has no hot row left in their day), so this measures layout changes in
//! seconds.

use super::*;
use crate::store::HistoryWrite;
use crate::store::Quality;

#[path = "../../examples/common/plant_data.rs"]
mod plant_data;

const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z, where the bench starts
const PER_SIGNAL: usize = 50_000;

/// VictoriaMetrics 1.79 on the same 450,000 points: 208,444 bytes (bench/historian-results.md,
/// commit 7b0febf), the goal for svc on SQLite; printed beside what svc takes.
const VICTORIA_METRICS_BYTES: u64 = 208_444;

/// What svc takes at most (0.50 bytes a point; 225,280 measured with each signal's day merged
/// into one block in pages, 249,856 with 4,096-point blocks, 315,392 before decimal floats): a
/// codec or layout change that grows it fails here.
const MAX_BYTES: u64 = 228_000;

/// Pages of each `hist_*` table and index, by name.
fn pages(db: &std::path::Path) -> Vec<(String, u64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT d.name, sum(d.pgsize) FROM dbstat d JOIN sqlite_master m ON m.name = d.name \
             WHERE m.tbl_name LIKE 'hist\\_%' ESCAPE '\\' GROUP BY d.name ORDER BY d.name",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn the_plant_data_set_stays_within_its_measured_footprint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let store = Store::open(&db).unwrap();
    let signals: Vec<_> = plant_data::signals(5)
        .into_iter()
        .filter(|s| s.kind.numeric())
        .collect();
    for signal in &signals {
        let topic = signal.path("plant");
        let writes: Vec<HistoryWrite> = signal
            .values(PER_SIGNAL)
            .into_iter()
            .enumerate()
            .map(|(i, value)| HistoryWrite {
                domain: "default".into(),
                topic: topic.clone(),
                ts_ms: T0 + i as i64 * 1000,
                value,
                quality: Quality::GOOD,
            })
            .collect();
        for batch in writes.chunks(5_000) {
            store.append_history(batch).unwrap();
        }
        while store
            .seal_history("default", &topic, crate::store::blocks::MAX_POINTS)
            .unwrap()
            .points
            > 0
        {}
        assert_eq!(
            store
                .history_range("default", &topic, T0, i64::MAX, None)
                .unwrap()
                .len(),
            PER_SIGNAL
        );
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (blocks, data): (i64, i64) = conn
        .query_row(
            "SELECT count(*), sum(length(data)) FROM hist_blocks",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let pages = pages(&db);
    let total: u64 = pages.iter().map(|(_, b)| b).sum();
    let points = (signals.len() * PER_SIGNAL) as f64;
    eprintln!(
        "plant footprint: {total} bytes = {:.3} B/pt ({:.2}x VictoriaMetrics); {blocks} blocks, \
         data {data} bytes = {:.3} B/pt; pages {pages:?}",
        total as f64 / points,
        total as f64 / VICTORIA_METRICS_BYTES as f64,
        data as f64 / points
    );
    assert!(total <= MAX_BYTES, "{total} bytes, at most {MAX_BYTES}");
    // The nine signals' 50,000 points (14 hours of one day) closed in 4,096-point blocks, 13 a
    // signal, then merged: one block a signal.
    assert_eq!(blocks, 9);
}
