//! Timestamps as the platform writes them: RFC 3339, UTC, millisecond precision.

use chrono::{DateTime, SecondsFormat, Utc};

/// The current time in the wire format used for `created_dt`/`updated_dt`.
pub fn now_rfc3339() -> String {
    format_rfc3339(Utc::now())
}

pub fn format_rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses an RFC 3339 timestamp with any offset into UTC.
pub fn parse_rfc3339(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_millis_and_z() {
        let t = parse_rfc3339("2026-01-02T03:04:05.678+01:00").unwrap();
        assert_eq!(format_rfc3339(t), "2026-01-02T02:04:05.678Z");
    }

    #[test]
    fn rejects_non_rfc3339() {
        assert!(parse_rfc3339("yesterday").is_none());
        assert!(parse_rfc3339("2026-01-02").is_none());
    }
}
