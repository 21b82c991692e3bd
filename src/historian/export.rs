//! CSV export (`POST /svc/historian/export` and, through `aggregated.rs`, the SDK's
//! `/export/aggregated`): several topics over one window, raw or resampled into buckets, merged
//! into one gzipped CSV with a `Timestamp` column (RFC 3339 with milliseconds, UTC unless the
//! plan names a zone) and one column per topic (its name from `mapping`, else the topic). There is
//! one row per distinct timestamp; a cell is empty where the topic has no value at that time
//! (or the value is null), numbers and bools are written plainly, strings raw, arrays and
//! objects as JSON. When a topic holds several values at one timestamp its last one is used.

use super::window::{check_bucket_count, parse_span, parse_time};
use super::zone::format_in_zone;
use super::{Aggregation, HistoryPoint};
use crate::store::{Store, StoreError, StoreResult};
use chrono_tz::Tz;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io;

/// Body of `POST /svc/historian/export`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ExportRequest {
    pub topics: Vec<String>,
    #[serde(rename = "startDate")]
    pub start_date: String,
    #[serde(rename = "endDate")]
    pub end_date: String,
    #[serde(rename = "sampleRate")]
    pub sample_rate: Option<String>,
    pub aggregation: Option<String>,
    pub mapping: Option<HashMap<String, String>>,
}

/// One CSV column: the topic it reads and its header name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportColumn {
    pub topic: String,
    pub name: String,
    /// False for a tag that does not historize: its column stays empty (the server decides).
    pub historized: bool,
}

/// A validated export: `start_ms <= ts < end_ms`, one column per topic in request order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPlan {
    pub start_ms: i64,
    pub end_ms: i64,
    pub columns: Vec<ExportColumn>,
    /// How values are resampled, if they are, and the aggregation of each bucket.
    pub bucket: Option<(Buckets, Aggregation)>,
    /// The zone the `Timestamp` column is written in.
    pub zone: Tz,
}

/// Where the buckets of a resampled export start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Buckets {
    /// This many milliseconds each, the first starting at the window start.
    Every(i64),
    /// Bucket `i` covers `[edges[i], edges[i + 1])` (within the window) and is stamped
    /// `edges[i]`: the local midnights of day buckets, which are not all of one length.
    Edges(Vec<i64>),
}

/// The parts every export shares, checked: the window and the columns.
pub(super) struct Frame {
    pub start_ms: i64,
    pub end_ms: i64,
    pub columns: Vec<ExportColumn>,
}

/// Checks the topics, the dates and the mapping of an export request.
pub(super) fn resolve_frame(req: &ExportRequest) -> Result<Frame, String> {
    if req.topics.is_empty() {
        return Err("`topics` must name at least one topic".into());
    }
    let mut seen = HashSet::new();
    for topic in &req.topics {
        if topic.trim().is_empty() {
            return Err("`topics` holds an empty topic".into());
        }
        if !seen.insert(topic.as_str()) {
            return Err(format!("`topics` lists `{topic}` twice"));
        }
    }
    let start_ms = parse_time("startDate", req.start_date.trim())?;
    let end_ms = parse_time("endDate", req.end_date.trim())?;
    if end_ms <= start_ms {
        return Err("`endDate` must be after `startDate`".into());
    }
    let columns = req
        .topics
        .iter()
        .map(|topic| {
            let name = req
                .mapping
                .as_ref()
                .and_then(|m| m.get(topic))
                .filter(|n| !n.trim().is_empty())
                .unwrap_or(topic);
            ExportColumn {
                topic: topic.clone(),
                name: name.clone(),
                historized: true,
            }
        })
        .collect();
    Ok(Frame {
        start_ms,
        end_ms,
        columns,
    })
}

/// An optional member, with an empty string counted as absent.
pub(super) fn present(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|t| !t.is_empty())
}

/// Checks a `POST /svc/historian/export` request; errors are short phrases naming the field
/// (400). Its `sampleRate` is any duration, from the window start, and defaults to `mean`.
pub fn resolve_export(req: &ExportRequest) -> Result<ExportPlan, String> {
    let frame = resolve_frame(req)?;
    let bucket = match (present(&req.sample_rate), present(&req.aggregation)) {
        (None, None) => None,
        (None, Some(_)) => return Err("`aggregation` needs `sampleRate`".into()),
        (Some(rate), agg) => {
            let bucket_ms = parse_span("sampleRate", rate)?;
            let agg = match agg {
                Some(agg) => agg.parse()?,
                None => Aggregation::Mean,
            };
            check_bucket_count("sampleRate", rate, frame.start_ms, frame.end_ms, bucket_ms)?;
            Some((Buckets::Every(bucket_ms), agg))
        }
    };
    Ok(ExportPlan {
        start_ms: frame.start_ms,
        end_ms: frame.end_ms,
        columns: frame.columns,
        bucket,
        zone: Tz::UTC,
    })
}

/// Reads every column of the plan from the store and writes the gzipped CSV.
pub fn export_csv_gz(store: &Store, domain: &str, plan: &ExportPlan) -> StoreResult<Vec<u8>> {
    let (start, end) = (plan.start_ms, plan.end_ms);
    let mut columns = Vec::with_capacity(plan.columns.len());
    for column in &plan.columns {
        let topic = column.topic.as_str();
        let points = match &plan.bucket {
            _ if !column.historized => Vec::new(),
            None => store.history_range(domain, topic, start, end, None)?,
            Some((Buckets::Every(bucket_ms), agg)) => {
                store.history_buckets(domain, topic, start, end, *bucket_ms, *agg)?
            }
            Some((Buckets::Edges(edges), agg)) => {
                store.history_buckets_between(domain, topic, start, end, edges, *agg)?
            }
        };
        columns.push((column.name.clone(), points));
    }
    write_csv_gz(&columns, plan.zone)
        .map_err(|e| StoreError::Internal(format!("cannot write the CSV export: {e}")))
}

/// Merges per-column point lists (each ascending by time) into a gzipped CSV whose timestamps
/// are written in `zone`.
pub fn write_csv_gz(columns: &[(String, Vec<HistoryPoint>)], zone: Tz) -> io::Result<Vec<u8>> {
    let mut csv = csv::Writer::from_writer(GzEncoder::new(Vec::new(), Compression::default()));
    let header = std::iter::once("Timestamp").chain(columns.iter().map(|(name, _)| name.as_str()));
    csv.write_record(header)?;
    let mut cursors = vec![0usize; columns.len()];
    let mut row: Vec<String> = vec![String::new(); columns.len() + 1];
    loop {
        let next_ts = columns
            .iter()
            .zip(&cursors)
            .filter_map(|((_, points), &at)| points.get(at).map(|p| p.ts_ms))
            .min();
        let Some(ts) = next_ts else { break };
        row[0] = format_in_zone(ts, zone);
        for (i, (_, points)) in columns.iter().enumerate() {
            let mut last = None;
            while let Some(p) = points.get(cursors[i]).filter(|p| p.ts_ms == ts) {
                last = Some(&p.value);
                cursors[i] += 1;
            }
            row[i + 1] = last.map(cell).unwrap_or_default();
        }
        csv.write_record(&row)?;
    }
    let gz = csv
        .into_inner()
        .map_err(|e| io::Error::other(e.to_string()))?;
    gz.finish()
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
    use serde_json::json;

    fn request(body: Value) -> ExportRequest {
        serde_json::from_value(body).unwrap()
    }

    fn base() -> Value {
        json!({
            "topics": ["a/temp", "a/state"],
            "startDate": "2026-01-01T00:00:00Z",
            "endDate": "2026-01-01T01:00:00Z",
        })
    }

    #[test]
    fn plan_with_mapping_and_default_aggregation() {
        let mut body = base();
        body["sampleRate"] = json!("5m");
        body["mapping"] = json!({"a/temp": "Temperature", "other": "x"});
        let plan = resolve_export(&request(body)).unwrap();
        assert_eq!(plan.start_ms, 1_767_225_600_000);
        assert_eq!(plan.end_ms, 1_767_225_600_000 + 3_600_000);
        let columns: Vec<(&str, &str, bool)> = plan
            .columns
            .iter()
            .map(|c| (c.topic.as_str(), c.name.as_str(), c.historized))
            .collect();
        assert_eq!(
            columns,
            [
                ("a/temp", "Temperature", true),
                ("a/state", "a/state", true)
            ]
        );
        assert_eq!(
            plan.bucket,
            Some((Buckets::Every(300_000), Aggregation::Mean))
        );
        let mut body = base();
        body["sampleRate"] = json!("1_minute");
        body["aggregation"] = json!("max");
        let plan = resolve_export(&request(body)).unwrap();
        assert_eq!(
            plan.bucket,
            Some((Buckets::Every(60_000), Aggregation::Max))
        );
        assert_eq!(resolve_export(&request(base())).unwrap().bucket, None);
    }

    #[test]
    fn plan_errors() {
        let cases: Vec<(&str, Value, &str)> = vec![
            ("topics", json!([]), "`topics` must name at least one topic"),
            ("topics", json!(["a", ""]), "`topics` holds an empty topic"),
            ("topics", json!(["a", "a"]), "`topics` lists `a` twice"),
            (
                "startDate",
                json!("today"),
                "`startDate` `today` is not an RFC 3339 time like 2026-01-01T00:00:00Z",
            ),
            (
                "endDate",
                json!("2026-01-01"),
                "`endDate` `2026-01-01` is not an RFC 3339 time like 2026-01-01T00:00:00Z",
            ),
            (
                "endDate",
                json!("2026-01-01T00:00:00Z"),
                "`endDate` must be after `startDate`",
            ),
            (
                "aggregation",
                json!("mean"),
                "`aggregation` needs `sampleRate`",
            ),
            (
                "sampleRate",
                json!("fast"),
                "`sampleRate` `fast` is not a duration like 15m or 1h30m",
            ),
            (
                "sampleRate",
                json!("1ms"),
                "`sampleRate` `1ms` makes more than 100000 buckets in the window",
            ),
        ];
        for (field, value, expected) in cases {
            let mut body = base();
            body[field] = value;
            assert_eq!(
                resolve_export(&request(body)).unwrap_err(),
                expected,
                "{field}"
            );
        }
        let mut body = base();
        body["sampleRate"] = json!("1m");
        body["aggregation"] = json!("avg");
        assert!(resolve_export(&request(body))
            .unwrap_err()
            .starts_with("`aggregation` `avg` is not one of"));
    }

    fn read_gz_csv(bytes: &[u8]) -> Vec<Vec<String>> {
        let text = io::read_to_string(flate2::read::GzDecoder::new(bytes)).unwrap();
        csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes())
            .records()
            .map(|r| r.unwrap().iter().map(str::to_string).collect())
            .collect()
    }

    fn p(ts_ms: i64, value: Value) -> HistoryPoint {
        HistoryPoint::good(ts_ms, value)
    }

    #[test]
    fn merges_columns_by_timestamp() {
        let t0 = 1_767_225_600_000;
        let columns = vec![
            (
                "Temp".to_string(),
                vec![
                    p(t0, json!(20.5)),
                    p(t0 + 1000, json!(21)),
                    p(t0 + 1000, json!(22)),
                ],
            ),
            (
                "State".to_string(),
                vec![
                    p(t0 + 500, json!("run, \"fast\"")),
                    p(t0 + 1000, json!({"a": [1, true]})),
                    p(t0 + 2000, Value::Null),
                    p(t0 + 3000, json!(false)),
                ],
            ),
            ("Empty".to_string(), vec![]),
        ];
        let rows = read_gz_csv(&write_csv_gz(&columns, Tz::UTC).unwrap());
        let expected: Vec<Vec<&str>> = vec![
            vec!["Timestamp", "Temp", "State", "Empty"],
            vec!["2026-01-01T00:00:00.000Z", "20.5", "", ""],
            vec!["2026-01-01T00:00:00.500Z", "", "run, \"fast\"", ""],
            vec!["2026-01-01T00:00:01.000Z", "22", r#"{"a":[1,true]}"#, ""],
            vec!["2026-01-01T00:00:02.000Z", "", "", ""],
            vec!["2026-01-01T00:00:03.000Z", "", "false", ""],
        ];
        assert_eq!(rows, expected);
    }

    #[test]
    fn header_only_when_nothing_stored() {
        let rows = read_gz_csv(&write_csv_gz(&[("x".to_string(), vec![])], Tz::UTC).unwrap());
        assert_eq!(rows, vec![vec!["Timestamp", "x"]]);
    }
}
