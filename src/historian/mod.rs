//! The historian's rules without transport: how a query window is read from a request, how an
//! MQTT payload becomes a (timestamp, value) point, the aggregations, and the CSV exports (UTC,
//! or in a time zone for the SDK's aggregated export). The SQL lives in the store: each engine's
//! `historian.rs`, `hist_blocks.rs` (and on SQLite `hist_journal.rs`) under `store::sqlite` and
//! `store::postgres`, with the reads both engines share in `store::history` and the block codec
//! in `store::blocks`; HTTP and MQTT wiring live in the server and broker modules.

mod aggregated;
pub mod compression;
mod export;
mod export_writer;
mod journal;
pub mod payload;
mod points_json;
mod sealer;
mod straight_runs;
mod window;
pub mod writer;
mod zone;

#[cfg(test)]
mod block_store_tests;
#[cfg(test)]
mod burst_tests;
#[cfg(test)]
mod footprint_tests;
#[cfg(test)]
mod store_tests;

pub use crate::store::HistoryPoint;
pub use aggregated::{resolve_aggregated_export, AggregatedExportRequest};
#[cfg(test)]
pub use export::export_csv_gz;
pub use export::{resolve_export, ExportPlan, ExportRequest};
pub use export_writer::write_export;
pub use payload::{decode_payload, point_from_payload};
pub use points_json::PointsJson;
pub use window::{resolve_last_limit, resolve_window, QueryRequest, Window};

use crate::store::{Store, StoreResult};

pub use crate::store::Aggregation;

/// Runs a resolved query window: raw values oldest first, or one point per non-empty bucket
/// (then `limit` caps the number of buckets returned).
pub fn run_query(
    store: &Store,
    domain: &str,
    topic: &str,
    window: &Window,
) -> StoreResult<Vec<HistoryPoint>> {
    match window.bucket {
        None => store.history_range(domain, topic, window.start_ms, window.end_ms, window.limit),
        Some((bucket_ms, agg)) => {
            let mut points = store.history_buckets(
                domain,
                topic,
                window.start_ms,
                window.end_ms,
                bucket_ms,
                agg,
            )?;
            if let Some(limit) = window.limit {
                points.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            }
            Ok(points)
        }
    }
}

/// Epoch milliseconds as the platform's RFC 3339 form (UTC, millisecond precision).
pub fn format_ms(ts_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ts_ms)
        .map(crate::time::format_rfc3339)
        .unwrap_or_else(|| ts_ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregation_names_round_trip() {
        for agg in Aggregation::ALL {
            assert_eq!(agg.as_str().parse::<Aggregation>(), Ok(agg));
            assert_eq!(agg.to_string(), agg.as_str());
        }
        assert_eq!("MEAN".parse::<Aggregation>(), Ok(Aggregation::Mean));
        let err = "avg".parse::<Aggregation>().unwrap_err();
        assert!(
            err.starts_with("`aggregation` `avg` is not one of mean"),
            "{err}"
        );
    }
}
