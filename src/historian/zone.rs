//! Time zones of the aggregated export: reading an IANA zone name, writing a timestamp in a
//! zone with its offset, and the local midnights that day buckets start on. A local day is 23
//! or 25 hours long across a DST change, so day buckets are edges computed here, not a fixed
//! length.

use super::format_ms;
use super::window::MAX_BUCKETS;
use chrono::{DateTime, Days, LocalResult, NaiveDate, NaiveDateTime, Offset, SecondsFormat};
use chrono::{TimeZone, Utc};
use chrono_tz::Tz;

/// The zone named by `timezone`; absent or empty means UTC.
pub fn parse_zone(text: Option<&str>) -> Result<Tz, String> {
    let text = text.map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return Ok(Tz::UTC);
    }
    text.parse::<Tz>().map_err(|_| {
        format!("`timezone` `{text}` is not an IANA time zone name like Europe/Berlin or UTC")
    })
}

/// Epoch milliseconds as RFC 3339 with milliseconds in `zone`: `…Z` in UTC, the zone's offset
/// otherwise (`+00:00` too, so every row of a zoned export has the same shape).
pub fn format_in_zone(ts_ms: i64, zone: Tz) -> String {
    if zone == Tz::UTC {
        return format_ms(ts_ms);
    }
    DateTime::from_timestamp_millis(ts_ms)
        .map(|t| {
            t.with_timezone(&zone)
                .to_rfc3339_opts(SecondsFormat::Millis, false)
        })
        .unwrap_or_else(|| ts_ms.to_string())
}

/// Bucket edges for buckets of `days` local days: the local midnight of the day holding
/// `start_ms`, then every `days` days until one reaches `end_ms`. Bucket `i` covers
/// `[edges[i], edges[i + 1])`; errors name `sampleRate` (`rate` is its text).
pub fn day_edges(
    zone: Tz,
    start_ms: i64,
    end_ms: i64,
    days: u64,
    rate: &str,
) -> Result<Vec<i64>, String> {
    let too_many =
        || format!("`sampleRate` `{rate}` makes more than {MAX_BUCKETS} buckets in the window");
    let out_of_range = || format!("`sampleRate` `{rate}` reaches beyond the supported dates");
    let start = DateTime::from_timestamp_millis(start_ms).ok_or_else(out_of_range)?;
    let mut day = start.with_timezone(&zone).date_naive();
    let mut edges = vec![day_start(zone, day).ok_or_else(out_of_range)?];
    while edges.last().is_some_and(|&edge| edge < end_ms) {
        if edges.len() > usize::try_from(MAX_BUCKETS).unwrap_or(usize::MAX) {
            return Err(too_many());
        }
        day = day
            .checked_add_days(Days::new(days))
            .ok_or_else(out_of_range)?;
        edges.push(day_start(zone, day).ok_or_else(out_of_range)?);
    }
    Ok(edges)
}

/// When `date` begins in `zone`, in epoch milliseconds: its local midnight; the earlier one if
/// the clock passes midnight twice; the moment the clock jumps if a DST change skips midnight.
fn day_start(zone: Tz, date: NaiveDate) -> Option<i64> {
    let midnight: NaiveDateTime = date.and_hms_opt(0, 0, 0)?;
    let start = match zone.from_local_datetime(&midnight) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.with_timezone(&Utc),
        LocalResult::None => {
            // The jump happens at midnight read with the offset in force before it; a day
            // earlier is safely before the jump.
            let before = zone
                .offset_from_utc_datetime(&(midnight - chrono::Duration::days(1)))
                .fix();
            before.from_local_datetime(&midnight).single()?.to_utc()
        }
    };
    Some(start.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .timestamp_millis()
    }

    fn berlin() -> Tz {
        parse_zone(Some("Europe/Berlin")).unwrap()
    }

    #[test]
    fn zone_names() {
        assert_eq!(parse_zone(None), Ok(Tz::UTC));
        assert_eq!(parse_zone(Some(" ")), Ok(Tz::UTC));
        assert_eq!(parse_zone(Some("UTC")), Ok(Tz::UTC));
        assert_eq!(berlin(), Tz::Europe__Berlin);
        assert_eq!(
            parse_zone(Some("Mars/Olympus")).unwrap_err(),
            "`timezone` `Mars/Olympus` is not an IANA time zone name like Europe/Berlin or UTC"
        );
    }

    #[test]
    fn formats_with_the_offset_in_force() {
        let t = ms("2026-03-29T00:30:00.250Z");
        assert_eq!(format_in_zone(t, Tz::UTC), "2026-03-29T00:30:00.250Z");
        assert_eq!(format_in_zone(t, berlin()), "2026-03-29T01:30:00.250+01:00");
        let t = ms("2026-03-29T01:30:00Z");
        assert_eq!(format_in_zone(t, berlin()), "2026-03-29T03:30:00.000+02:00");
        let london = parse_zone(Some("Europe/London")).unwrap();
        assert_eq!(format_in_zone(t, london), "2026-03-29T02:30:00.000+01:00");
        let winter = ms("2026-01-01T12:00:00Z");
        assert_eq!(
            format_in_zone(winter, london),
            "2026-01-01T12:00:00.000+00:00"
        );
    }

    #[test]
    fn day_edges_follow_local_midnight_across_dst() {
        // Spring forward on 2026-03-29: that day has 23 hours; fall back on 2026-10-25: 25.
        let edges = day_edges(
            berlin(),
            ms("2026-03-28T10:00:00+01:00"),
            ms("2026-03-30T00:00:00+02:00"),
            1,
            "1_d",
        )
        .unwrap();
        assert_eq!(
            edges,
            [
                ms("2026-03-28T00:00:00+01:00"),
                ms("2026-03-29T00:00:00+01:00"),
                ms("2026-03-30T00:00:00+02:00"),
            ]
        );
        assert_eq!(edges[2] - edges[1], 23 * 3_600_000);
        let edges = day_edges(
            berlin(),
            ms("2026-10-25T00:00:00+02:00"),
            ms("2026-10-25T00:00:01+02:00"),
            1,
            "1_d",
        )
        .unwrap();
        assert_eq!(edges[1] - edges[0], 25 * 3_600_000);
        // Several days per bucket, in UTC.
        let edges = day_edges(
            Tz::UTC,
            ms("2026-01-01T06:00:00Z"),
            ms("2026-01-15T00:00:00Z"),
            7,
            "1_w",
        )
        .unwrap();
        assert_eq!(
            edges,
            [
                ms("2026-01-01T00:00:00Z"),
                ms("2026-01-08T00:00:00Z"),
                ms("2026-01-15T00:00:00Z"),
            ]
        );
    }

    #[test]
    fn a_day_whose_midnight_is_skipped_or_doubled() {
        // Havana springs forward at midnight: 2026-03-08 00:00 CST becomes 01:00 CDT.
        let havana = parse_zone(Some("America/Havana")).unwrap();
        let date = NaiveDate::from_ymd_opt(2026, 3, 8).unwrap();
        assert_eq!(
            day_start(havana, date),
            Some(ms("2026-03-08T01:00:00-04:00"))
        );
        assert_eq!(
            format_in_zone(ms("2026-03-08T05:00:00Z"), havana),
            "2026-03-08T01:00:00.000-04:00"
        );
        // It falls back at 01:00 CDT to 00:00 CST on 2026-11-01: midnight happens twice and
        // the day starts at the first.
        let date = NaiveDate::from_ymd_opt(2026, 11, 1).unwrap();
        assert_eq!(
            day_start(havana, date),
            Some(ms("2026-11-01T00:00:00-04:00"))
        );
    }

    #[test]
    fn too_many_day_buckets() {
        let err = day_edges(Tz::UTC, 0, 400 * 365 * 86_400_000, 1, "1_d").unwrap_err();
        assert_eq!(
            err,
            "`sampleRate` `1_d` makes more than 100000 buckets in the window"
        );
    }
}
