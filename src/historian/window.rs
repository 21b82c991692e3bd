//! Reading a historian query (`PATCH /svc/historian`) into a concrete window: start and end in
//! epoch milliseconds (half-open, `start <= ts < end`), an optional limit and an optional
//! bucket with its aggregation. Errors are short phrases naming the field; the server answers
//! them with 400.
//!
//! Rules: `start_time` and `end_time` are RFC 3339; `range` and `bucket` use the duration
//! grammar of [`crate::duration`] (`15m`, `1h30m`, `5_second`). The window is
//! `start_time .. start_time + range`, or `start_time .. end_time`, or `start_time .. now`, or
//! `now - range .. now`; `range` and `end_time` together are refused. An empty string counts as
//! an absent member.

use super::Aggregation;
use crate::duration::parse_duration;
use serde::Deserialize;

/// Largest `limit` of a window query.
pub const LIMIT_MAX: u64 = 100_000;
/// Largest `limit` of a last-N query.
pub const LAST_LIMIT_MAX: u64 = 100;
/// Most buckets one aggregate query may span.
pub const MAX_BUCKETS: i64 = 100_000;

/// Body of `PATCH /svc/historian`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct QueryRequest {
    pub topic: String,
    pub start_time: Option<String>,
    pub range: Option<String>,
    pub end_time: Option<String>,
    pub limit: Option<u64>,
    pub bucket: Option<String>,
    pub aggregation: Option<String>,
}

/// A resolved query: `start_ms <= ts < end_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_ms: i64,
    pub end_ms: i64,
    pub limit: Option<u64>,
    /// Bucket length in milliseconds and how each bucket is reduced.
    pub bucket: Option<(i64, Aggregation)>,
}

/// Resolves a query against the current time `now_ms`.
pub fn resolve_window(req: &QueryRequest, now_ms: i64) -> Result<Window, String> {
    if req.topic.trim().is_empty() {
        return Err("`topic` is required".into());
    }
    let start = present(&req.start_time)
        .map(|t| parse_time("start_time", t))
        .transpose()?;
    let range = present(&req.range)
        .map(|t| parse_span("range", t))
        .transpose()?;
    let end = present(&req.end_time)
        .map(|t| parse_time("end_time", t))
        .transpose()?;
    let too_long = || "`range` is too long".to_string();
    let (start_ms, end_ms) = match (start, range, end) {
        (_, Some(_), Some(_)) => return Err("give `range` or `end_time`, not both".into()),
        (Some(s), Some(r), None) => (s, s.checked_add(r).ok_or_else(too_long)?),
        (Some(s), None, Some(e)) => (s, e),
        (Some(s), None, None) => (s, now_ms),
        (None, Some(r), None) => (now_ms.checked_sub(r).ok_or_else(too_long)?, now_ms),
        (None, None, _) => return Err("`start_time` is required unless `range` is given".into()),
    };
    if end_ms <= start_ms {
        return Err(if end.is_some() {
            "`end_time` must be after `start_time`".into()
        } else {
            "`start_time` must be before now".into()
        });
    }
    let limit = match req.limit {
        Some(n) if !(1..=LIMIT_MAX).contains(&n) => {
            return Err(format!("`limit` must be between 1 and {LIMIT_MAX}"))
        }
        other => other,
    };
    let bucket =
        match (present(&req.bucket), present(&req.aggregation)) {
            (None, None) => None,
            (Some(_), None) => return Err(
                "`bucket` needs `aggregation` (mean, sum, min, max, median, count, first, last)"
                    .into(),
            ),
            (None, Some(_)) => return Err("`aggregation` needs `bucket`".into()),
            (Some(text), Some(agg)) => {
                let bucket_ms = parse_span("bucket", text)?;
                let agg: Aggregation = agg.parse()?;
                check_bucket_count("bucket", text, start_ms, end_ms, bucket_ms)?;
                Some((bucket_ms, agg))
            }
        };
    Ok(Window {
        start_ms,
        end_ms,
        limit,
        bucket,
    })
}

/// The `limit` of a last-N query (`PATCH /svc/historian/last`): 1 when absent, at most 100.
pub fn resolve_last_limit(limit: Option<u64>) -> Result<u64, String> {
    match limit.unwrap_or(1) {
        n @ 1..=LAST_LIMIT_MAX => Ok(n),
        _ => Err(format!("`limit` must be between 1 and {LAST_LIMIT_MAX}")),
    }
}

/// An optional member, with an empty string counted as absent.
fn present(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|t| !t.is_empty())
}

/// An RFC 3339 time as epoch milliseconds.
pub(super) fn parse_time(field: &str, text: &str) -> Result<i64, String> {
    crate::time::parse_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .ok_or_else(|| {
            format!("`{field}` `{text}` is not an RFC 3339 time like 2026-01-01T00:00:00Z")
        })
}

/// A positive duration in milliseconds.
pub(super) fn parse_span(field: &str, text: &str) -> Result<i64, String> {
    let span = parse_duration(text).map_err(|e| format!("`{field}` {e}"))?;
    let ms =
        i64::try_from(span.as_millis()).map_err(|_| format!("`{field}` `{text}` is too long"))?;
    if ms < 1 {
        return Err(format!("`{field}` must be at least 1ms"));
    }
    Ok(ms)
}

/// Refuses a bucket length that would cut the window into more than [`MAX_BUCKETS`] buckets.
pub(super) fn check_bucket_count(
    field: &str,
    text: &str,
    start_ms: i64,
    end_ms: i64,
    bucket_ms: i64,
) -> Result<(), String> {
    let span = i128::from(end_ms) - i128::from(start_ms);
    let count = (span + i128::from(bucket_ms) - 1) / i128::from(bucket_ms);
    if count > i128::from(MAX_BUCKETS) {
        return Err(format!(
            "`{field}` `{text}` makes more than {MAX_BUCKETS} buckets in the window"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
    const MIN: i64 = 60_000;
    const HOUR: i64 = 60 * MIN;

    fn req(fields: &[(&str, &str)]) -> QueryRequest {
        let mut body = serde_json::json!({"topic": "plant/line1/temp"});
        for (k, v) in fields {
            body[*k] = if *k == "limit" {
                serde_json::json!(v.parse::<u64>().unwrap())
            } else {
                serde_json::json!(v)
            };
        }
        serde_json::from_value(body).unwrap()
    }

    fn ok(fields: &[(&str, &str)]) -> Window {
        resolve_window(&req(fields), NOW).unwrap()
    }

    fn err(fields: &[(&str, &str)]) -> String {
        resolve_window(&req(fields), NOW).unwrap_err()
    }

    #[test]
    fn start_plus_range() {
        let w = ok(&[("start_time", "2025-12-31T22:00:00Z"), ("range", "1h30m")]);
        assert_eq!(w.start_ms, NOW - 2 * HOUR);
        assert_eq!(w.end_ms, NOW - 30 * MIN);
        assert_eq!((w.limit, w.bucket), (None, None));
    }

    #[test]
    fn start_with_offset_and_simple_ranges() {
        let w = ok(&[
            ("start_time", "2026-01-01T01:00:00+01:00"),
            ("range", "15m"),
        ]);
        assert_eq!((w.start_ms, w.end_ms), (NOW, NOW + 15 * MIN));
        let w = ok(&[("start_time", "2025-12-31T00:00:00Z"), ("range", "24h")]);
        assert_eq!((w.start_ms, w.end_ms), (NOW - 24 * HOUR, NOW));
    }

    #[test]
    fn absent_range_ends_now() {
        let w = ok(&[("start_time", "2025-12-31T23:00:00Z")]);
        assert_eq!((w.start_ms, w.end_ms), (NOW - HOUR, NOW));
    }

    #[test]
    fn absent_start_is_now_minus_range() {
        let w = ok(&[("range", "15m")]);
        assert_eq!((w.start_ms, w.end_ms), (NOW - 15 * MIN, NOW));
    }

    #[test]
    fn start_and_end_time() {
        let w = ok(&[
            ("start_time", "2025-12-31T23:00:00Z"),
            ("end_time", "2025-12-31T23:30:00.500Z"),
        ]);
        assert_eq!((w.start_ms, w.end_ms), (NOW - HOUR, NOW - 30 * MIN + 500));
    }

    #[test]
    fn empty_strings_count_as_absent() {
        let w = ok(&[
            ("start_time", "2025-12-31T23:00:00Z"),
            ("range", ""),
            ("end_time", ""),
            ("bucket", ""),
            ("aggregation", ""),
        ]);
        assert_eq!((w.start_ms, w.end_ms, w.bucket), (NOW - HOUR, NOW, None));
    }

    #[test]
    fn limit_and_bucket() {
        let w = ok(&[
            ("start_time", "2025-12-31T23:00:00Z"),
            ("limit", "100000"),
            ("bucket", "5_second"),
            ("aggregation", "median"),
        ]);
        assert_eq!(w.limit, Some(100_000));
        assert_eq!(w.bucket, Some((5_000, Aggregation::Median)));
        let w = ok(&[
            ("range", "1h"),
            ("limit", "1"),
            ("bucket", "5m"),
            ("aggregation", "last"),
        ]);
        assert_eq!(
            (w.limit, w.bucket),
            (Some(1), Some((5 * MIN, Aggregation::Last)))
        );
        // Exactly MAX_BUCKETS buckets is allowed.
        let w = ok(&[
            ("range", "100s"),
            ("bucket", "1ms"),
            ("aggregation", "count"),
        ]);
        assert_eq!(w.bucket, Some((1, Aggregation::Count)));
    }

    #[test]
    fn every_error() {
        let start = ("start_time", "2025-12-31T23:00:00Z");
        let cases: Vec<(Vec<(&str, &str)>, &str)> =
            vec![
            (vec![], "`start_time` is required unless `range` is given"),
            (
                vec![("end_time", "2025-12-31T23:00:00Z")],
                "`start_time` is required unless `range` is given",
            ),
            (
                vec![("start_time", "yesterday")],
                "`start_time` `yesterday` is not an RFC 3339 time like 2026-01-01T00:00:00Z",
            ),
            (
                vec![start, ("end_time", "2026-01-01")],
                "`end_time` `2026-01-01` is not an RFC 3339 time like 2026-01-01T00:00:00Z",
            ),
            (
                vec![start, ("range", "abc")],
                "`range` `abc` is not a duration like 15m or 1h30m",
            ),
            (
                vec![start, ("range", "10")],
                "`range` `10` needs a unit (ms, s, m, h, d, w) after each number",
            ),
            (vec![start, ("range", "0m")], "`range` must be at least 1ms"),
            (vec![start, ("range", "9999999999999w")], "`range` `9999999999999w` is too long"),
            (vec![start, ("range", "9223372036854775807ms")], "`range` is too long"),
            (
                vec![start, ("range", "1h"), ("end_time", "2026-01-01T00:00:00Z")],
                "give `range` or `end_time`, not both",
            ),
            (
                vec![start, ("end_time", "2025-12-31T23:00:00Z")],
                "`end_time` must be after `start_time`",
            ),
            (vec![("start_time", "2026-01-01T00:00:00Z")], "`start_time` must be before now"),
            (vec![start, ("limit", "0")], "`limit` must be between 1 and 100000"),
            (vec![start, ("limit", "100001")], "`limit` must be between 1 and 100000"),
            (
                vec![start, ("bucket", "5m")],
                "`bucket` needs `aggregation` (mean, sum, min, max, median, count, first, last)",
            ),
            (vec![start, ("aggregation", "mean")], "`aggregation` needs `bucket`"),
            (
                vec![start, ("bucket", "5x"), ("aggregation", "mean")],
                "`bucket` `5x` needs a unit (ms, s, m, h, d, w) after each number",
            ),
            (
                vec![start, ("bucket", "0_second"), ("aggregation", "mean")],
                "`bucket` must be at least 1ms",
            ),
            (
                vec![start, ("bucket", "5m"), ("aggregation", "average")],
                "`aggregation` `average` is not one of mean, sum, min, max, median, count, \
                 first, last",
            ),
            (
                vec![start, ("bucket", "10ms"), ("aggregation", "mean")],
                "`bucket` `10ms` makes more than 100000 buckets in the window",
            ),
        ];
        for (fields, expected) in cases {
            assert_eq!(err(&fields), expected, "{fields:?}");
        }
        let mut blank = req(&[]);
        blank.topic = " ".into();
        assert_eq!(
            resolve_window(&blank, NOW).unwrap_err(),
            "`topic` is required"
        );
    }

    #[test]
    fn last_limit() {
        assert_eq!(resolve_last_limit(None), Ok(1));
        assert_eq!(resolve_last_limit(Some(100)), Ok(100));
        for bad in [0, 101] {
            assert_eq!(
                resolve_last_limit(Some(bad)).unwrap_err(),
                "`limit` must be between 1 and 100"
            );
        }
    }
}
