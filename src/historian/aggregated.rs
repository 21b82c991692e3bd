//! The client SDK's export (`POST /svc/historian/export/aggregated`): the export of
//! `export.rs` with a time zone. The CSV's timestamps are written in that zone, and buckets of
//! a day or more start at its local midnights. This module reads the request into an
//! [`ExportPlan`]; errors are short phrases naming the field (400).
//!
//! `sampleRate` is empty (raw values) or one count and one unit, `<n>_<unit>` or `<n><unit>`:
//! `ms`/`millisecond(s)`, `s`/`second(s)`, `m`/`minute(s)`, `h`/`hour(s)` make buckets of that
//! fixed length from `startDate`; `d`/`day(s)` and `w`/`week(s)` (7 days) make buckets of that
//! many local days from the local midnight of the day holding `startDate`. `aggregation` is
//! empty or `none` (raw values, whatever the rate) or one of the historian's aggregations.

use super::export::{present, resolve_frame, Buckets, ExportPlan, ExportRequest};
use super::window::check_bucket_count;
use super::zone::{day_edges, parse_zone};
use super::Aggregation;
use serde::Deserialize;

/// Body of `POST /svc/historian/export/aggregated`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AggregatedExportRequest {
    #[serde(flatten)]
    pub export: ExportRequest,
    /// IANA zone name; absent or empty means UTC.
    pub timezone: Option<String>,
}

/// A parsed `sampleRate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rate {
    /// Fixed-length buckets of this many milliseconds.
    Millis(i64),
    /// Buckets of this many local days.
    Days(u64),
}

const UNITS: &str = "ms, s, m, h, d, w";

/// Checks an aggregated export request.
pub fn resolve_aggregated_export(req: &AggregatedExportRequest) -> Result<ExportPlan, String> {
    let frame = resolve_frame(&req.export)?;
    let zone = parse_zone(req.timezone.as_deref())?;
    let rate = present(&req.export.sample_rate)
        .map(|text| parse_rate(text).map(|rate| (text, rate)))
        .transpose()?;
    let aggregation = parse_aggregation(present(&req.export.aggregation))?;
    let bucket = match (rate, aggregation) {
        (_, None) => None,
        (None, Some(_)) => return Err("`aggregation` needs a `sampleRate`".into()),
        (Some((text, Rate::Millis(ms))), Some(agg)) => {
            check_bucket_count("sampleRate", text, frame.start_ms, frame.end_ms, ms)?;
            Some((Buckets::Every(ms), agg))
        }
        (Some((text, Rate::Days(days))), Some(agg)) => {
            let edges = day_edges(zone, frame.start_ms, frame.end_ms, days, text)?;
            Some((Buckets::Edges(edges), agg))
        }
    };
    Ok(ExportPlan {
        start_ms: frame.start_ms,
        end_ms: frame.end_ms,
        columns: frame.columns,
        bucket,
        zone,
        quality: frame.quality,
    })
}

/// `none` (or absent) is `None`: raw values.
fn parse_aggregation(text: Option<&str>) -> Result<Option<Aggregation>, String> {
    match text {
        None => Ok(None),
        Some(t) if t.eq_ignore_ascii_case("none") => Ok(None),
        Some(t) => t.parse().map(Some).map_err(|_| {
            format!(
                "`aggregation` `{t}` is not one of none, mean, sum, min, max, median, count, \
                 first, last"
            )
        }),
    }
}

/// `<n>_<unit>` or `<n><unit>`, `n` at least 1.
fn parse_rate(text: &str) -> Result<Rate, String> {
    let malformed = || {
        format!("`sampleRate` `{text}` is not a rate like 30_s, 15_m, 1_h or 1_d (units {UNITS})")
    };
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (count, unit) = text.split_at(digits);
    let unit = unit.strip_prefix('_').unwrap_or(unit);
    let count: u64 = count.parse().map_err(|_| malformed())?;
    if count == 0 {
        return Err(format!("`sampleRate` `{text}` must be at least 1 {unit}"));
    }
    let too_long = || format!("`sampleRate` `{text}` is too long");
    let fixed = |unit_ms: u64| {
        count
            .checked_mul(unit_ms)
            .and_then(|ms| i64::try_from(ms).ok())
            .map(Rate::Millis)
            .ok_or_else(too_long)
    };
    match unit {
        "ms" | "millisecond" | "milliseconds" => fixed(1),
        "s" | "second" | "seconds" => fixed(1_000),
        "m" | "minute" | "minutes" => fixed(60_000),
        "h" | "hour" | "hours" => fixed(3_600_000),
        "d" | "day" | "days" => Ok(Rate::Days(count)),
        "w" | "week" | "weeks" => count.checked_mul(7).map(Rate::Days).ok_or_else(too_long),
        _ => Err(malformed()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::Tz;
    use serde_json::{json, Value};

    fn request(extra: Value) -> AggregatedExportRequest {
        let mut body = json!({
            "topics": ["a/temp", "a/state"],
            "startDate": "2026-03-28T00:00:00+01:00",
            "endDate": "2026-03-31T00:00:00+02:00",
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        serde_json::from_value(body).unwrap()
    }

    fn plan(extra: Value) -> ExportPlan {
        resolve_aggregated_export(&request(extra)).unwrap()
    }

    fn err(extra: Value) -> String {
        resolve_aggregated_export(&request(extra)).unwrap_err()
    }

    #[test]
    fn rates() {
        for (text, want) in [
            ("1_s", Rate::Millis(1_000)),
            ("30_seconds", Rate::Millis(30_000)),
            ("15m", Rate::Millis(900_000)),
            ("1_minute", Rate::Millis(60_000)),
            ("2_h", Rate::Millis(7_200_000)),
            ("24_hours", Rate::Millis(86_400_000)),
            ("250ms", Rate::Millis(250)),
            ("1_d", Rate::Days(1)),
            ("3days", Rate::Days(3)),
            ("1_week", Rate::Days(7)),
            ("2_w", Rate::Days(14)),
        ] {
            assert_eq!(parse_rate(text), Ok(want), "{text}");
        }
        let malformed = "is not a rate like 30_s, 15_m, 1_h or 1_d (units ms, s, m, h, d, w)";
        for bad in [
            "fast", "5", "5_x", "1h30m", "_5m", "m", "1.5_h", "5_M", "-1_d",
        ] {
            assert_eq!(
                parse_rate(bad).unwrap_err(),
                format!("`sampleRate` `{bad}` {malformed}")
            );
        }
        assert_eq!(
            parse_rate("0_m").unwrap_err(),
            "`sampleRate` `0_m` must be at least 1 m"
        );
        assert_eq!(
            parse_rate("99999999999999999_h").unwrap_err(),
            "`sampleRate` `99999999999999999_h` is too long"
        );
    }

    #[test]
    fn raw_unless_both_rate_and_aggregation() {
        let raw = plan(json!({}));
        assert_eq!((raw.bucket, raw.zone), (None, Tz::UTC));
        assert_eq!(
            plan(json!({"sampleRate": "", "aggregation": "", "timezone": ""})).bucket,
            None
        );
        assert_eq!(
            plan(json!({"sampleRate": "1_h", "aggregation": "None"})).bucket,
            None
        );
        assert_eq!(plan(json!({"sampleRate": "1_h"})).bucket, None);
        assert_eq!(
            plan(json!({"sampleRate": "15_m", "aggregation": "MAX"})).bucket,
            Some((Buckets::Every(900_000), Aggregation::Max))
        );
    }

    #[test]
    fn mapping_names_columns() {
        let p = plan(json!({"mapping": {"a/temp": "Temperature", "a/state": " ", "x": "y"}}));
        let names: Vec<&str> = p.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Temperature", "a/state"]);
    }

    #[test]
    fn day_buckets_start_at_local_midnight() {
        let p = plan(json!({"sampleRate": "1_d", "aggregation": "sum",
                            "timezone": "Europe/Berlin"}));
        assert_eq!(p.zone, Tz::Europe__Berlin);
        // 2026-03-28T00:00+01:00, 2026-03-29T00:00+01:00 (23 h), 2026-03-30T00:00+02:00, …
        let day = 86_400_000;
        let first = 1_774_652_400_000;
        let want = vec![
            first,
            first + day,
            first + 2 * day - 3_600_000,
            first + 3 * day - 3_600_000,
        ];
        assert_eq!(p.bucket, Some((Buckets::Edges(want), Aggregation::Sum)));
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (
                json!({"timezone": "Europe/Atlantis"}),
                "`timezone` `Europe/Atlantis` is not an IANA time zone name like Europe/Berlin \
                 or UTC",
            ),
            (
                json!({"sampleRate": "1h30m", "aggregation": "mean"}),
                "`sampleRate` `1h30m` is not a rate like 30_s, 15_m, 1_h or 1_d (units ms, s, \
                 m, h, d, w)",
            ),
            (
                json!({"sampleRate": "1h30m", "aggregation": "none"}),
                "`sampleRate` `1h30m` is not a rate like 30_s, 15_m, 1_h or 1_d (units ms, s, \
                 m, h, d, w)",
            ),
            (
                json!({"sampleRate": "1_h", "aggregation": "avg"}),
                "`aggregation` `avg` is not one of none, mean, sum, min, max, median, count, \
                 first, last",
            ),
            (
                json!({"aggregation": "mean"}),
                "`aggregation` needs a `sampleRate`",
            ),
            (
                json!({"endDate": "2026-03-27T00:00:00Z"}),
                "`endDate` must be after `startDate`",
            ),
            (
                json!({"sampleRate": "1_ms", "aggregation": "count"}),
                "`sampleRate` `1_ms` makes more than 100000 buckets in the window",
            ),
            (
                json!({"startDate": "2026-01-01T00:00:00Z", "endDate": "2500-01-01T00:00:00Z",
                       "sampleRate": "1_d", "aggregation": "count"}),
                "`sampleRate` `1_d` makes more than 100000 buckets in the window",
            ),
        ];
        for (extra, want) in cases {
            assert_eq!(err(extra.clone()), want, "{extra}");
        }
    }
}
