//! The historian's rules without transport: how a query window is read from a request, how an
//! MQTT payload becomes a (timestamp, value) point, the aggregations, and the CSV exports (UTC,
//! or in a time zone for the SDK's aggregated export). The SQL lives in `store::historian`; HTTP
//! and MQTT wiring live in the server and broker modules.

// wired into the server by the broker step
#![allow(dead_code)]

mod aggregated;
pub mod compression;
mod export;
mod export_writer;
mod journal;
mod payload;
mod sealer;
mod window;
pub mod writer;
mod zone;

#[cfg(test)]
mod block_store_tests;
#[cfg(test)]
mod footprint_tests;
#[cfg(test)]
mod store_tests;

// wired into the server by the broker step
#[allow(unused_imports)]
pub use crate::store::{HistoryPoint, HistoryWrite};
pub use aggregated::{resolve_aggregated_export, AggregatedExportRequest};
pub use export_writer::write_export;
// wired into the server by the broker step
#[allow(unused_imports)]
pub use export::{export_csv_gz, resolve_export, Buckets, ExportColumn, ExportPlan, ExportRequest};
// wired into the server by the broker step
#[allow(unused_imports)]
pub use payload::{decode_payload, point_from_payload};
// wired into the server by the broker step
#[allow(unused_imports)]
pub use window::{
    resolve_last_limit, resolve_window, QueryRequest, Window, LAST_LIMIT_MAX, LIMIT_MAX,
    MAX_BUCKETS,
};

use crate::store::{Store, StoreResult};
use std::fmt;
use std::str::FromStr;

/// How values of one bucket are reduced to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    Mean,
    Sum,
    Min,
    Max,
    Median,
    Count,
    First,
    Last,
}

impl Aggregation {
    pub const ALL: [Aggregation; 8] = [
        Aggregation::Mean,
        Aggregation::Sum,
        Aggregation::Min,
        Aggregation::Max,
        Aggregation::Median,
        Aggregation::Count,
        Aggregation::First,
        Aggregation::Last,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Aggregation::Mean => "mean",
            Aggregation::Sum => "sum",
            Aggregation::Min => "min",
            Aggregation::Max => "max",
            Aggregation::Median => "median",
            Aggregation::Count => "count",
            Aggregation::First => "first",
            Aggregation::Last => "last",
        }
    }
}

impl fmt::Display for Aggregation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Aggregation {
    type Err = String;

    /// Accepts the names in any letter case.
    fn from_str(text: &str) -> Result<Aggregation, String> {
        Aggregation::ALL
            .into_iter()
            .find(|a| a.as_str().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| {
                format!(
                    "`aggregation` `{text}` is not one of mean, sum, min, max, median, count, \
                     first, last"
                )
            })
    }
}

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

/// The wire shape of query answers, `[{"timestamp": "<RFC 3339>", "value": …}]`, with
/// `"quality"` (and `"status"` for a specific code) on points that are not good: a point
/// without one is good, so answers of good points keep the SDK's shape. Serialized straight
/// from the points, with no JSON tree built in between.
pub struct PointsJson(pub Vec<HistoryPoint>);

impl serde::Serialize for PointsJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Point<'p>(&'p HistoryPoint);
        impl serde::Serialize for Point<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let p = self.0;
                let good = p.quality == crate::store::Quality::GOOD;
                let status = p.quality.status();
                let len = 2 + usize::from(!good) + usize::from(status.is_some());
                let mut map = serializer.serialize_map(Some(len))?;
                map.serialize_entry("timestamp", &format_ms(p.ts_ms))?;
                map.serialize_entry("value", &p.value)?;
                if !good {
                    map.serialize_entry("quality", p.quality.label())?;
                }
                if let Some(status) = status {
                    map.serialize_entry("status", &status)?;
                }
                map.end()
            }
        }
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for point in &self.0 {
            seq.serialize_element(&Point(point))?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn points_json_uses_rfc3339_millis() {
        let points = [
            HistoryPoint::good(1_767_225_600_123, json!(21.5)),
            HistoryPoint {
                ts_ms: 1_767_225_600_124,
                value: json!(3),
                quality: crate::store::Quality(0x8034_0000),
            },
        ];
        assert_eq!(
            serde_json::to_value(PointsJson(points.to_vec())).unwrap(),
            json!([
                {"timestamp": "2026-01-01T00:00:00.123Z", "value": 21.5},
                {"timestamp": "2026-01-01T00:00:00.124Z", "value": 3, "quality": "bad",
                 "status": 0x8034_0000_u32},
            ])
        );
    }
}
