//! CSV export (`POST /svc/historian/export` and, through `aggregated.rs`, the SDK's
//! `/export/aggregated`): several topics over one window, raw or resampled into buckets, merged
//! into one gzipped CSV with a `Timestamp` column (RFC 3339 with milliseconds, UTC unless the
//! plan names a zone) and one column per topic (its name from `mapping`, else the topic). There is
//! one row per distinct timestamp; a cell is empty where the topic has no value at that time
//! (or the value is null), numbers and bools are written plainly, strings raw, arrays and
//! objects as JSON. When a topic holds several values at one timestamp its last one is used.

use super::window::{check_bucket_count, parse_span, parse_time};
use super::Aggregation;
use chrono_tz::Tz;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};

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
    /// Adds a `<name> quality` column after each topic's column.
    #[serde(default)]
    pub quality: bool,
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
    /// Each column is followed by its values' quality.
    pub quality: bool,
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
    pub quality: bool,
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
        quality: req.quality,
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
        quality: frame.quality,
    })
}

/// The whole gzipped CSV of a plan, in memory (the server streams it with
/// [`super::export_writer::write_export`]). The tests read exports whole through it.
#[cfg(test)]
pub fn export_csv_gz(
    store: &crate::store::Store,
    domain: &str,
    plan: &ExportPlan,
) -> crate::store::StoreResult<Vec<u8>> {
    let mut out = Vec::new();
    super::export_writer::write_export(store, domain, plan, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

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
}
