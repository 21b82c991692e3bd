//! When timed work fires: fixed intervals (`{"value":5,"unit":"s"}`) and cron patterns (five
//! fields, minute first, or six with a leading seconds field), evaluated in UTC.

use chrono::{DateTime, Utc};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use std::time::Duration;

/// The shortest interval allowed: anything faster is a busy loop, not a schedule.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub enum Schedule {
    Interval(Duration),
    Cron(Box<Cron>),
}

impl Schedule {
    /// An interval of `value` `unit`s; units as in the duration grammar (`ms s m h d w`, or
    /// the words `second`, `minutes`, …).
    pub fn interval(value: u64, unit: &str) -> Result<Schedule, String> {
        let unit = unit.trim();
        let text = if unit.chars().all(|c| c.is_ascii_lowercase()) && unit.len() > 2 {
            format!("{value}_{unit}")
        } else {
            format!("{value}{unit}")
        };
        let every = crate::duration::parse_duration(&text)
            .map_err(|_| format!("interval unit `{unit}` is not one of ms, s, m, h, d, w"))?;
        if every < MIN_INTERVAL {
            return Err(format!(
                "an interval must be at least {} ms",
                MIN_INTERVAL.as_millis()
            ));
        }
        Ok(Schedule::Interval(every))
    }

    /// A cron pattern: `min hour day-of-month month day-of-week`, optionally preceded by
    /// seconds; `@hourly`-style nicknames too.
    pub fn cron(pattern: &str) -> Result<Schedule, String> {
        let fields = pattern.split_whitespace().count();
        if !pattern.trim().starts_with('@') && !(5..=6).contains(&fields) {
            return Err(format!(
                "cron pattern `{pattern}` must have 5 fields (or 6 with seconds first)"
            ));
        }
        CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(pattern)
            .map(|cron| Schedule::Cron(Box::new(cron)))
            .map_err(|e| format!("cron pattern `{pattern}`: {e}"))
    }

    /// The first firing strictly after `after`; `None` when a pattern never fires again.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Interval(every) => Some(after + chrono::Duration::from_std(*every).ok()?),
            Schedule::Cron(cron) => cron.find_next_occurrence(&after, false).ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 23, h, m, s).unwrap()
    }

    #[test]
    fn intervals() {
        let every = |v, u| match Schedule::interval(v, u) {
            Ok(Schedule::Interval(d)) => d,
            other => panic!("{v} {u}: {other:?}"),
        };
        assert_eq!(every(5, "s"), Duration::from_secs(5));
        assert_eq!(every(2, "minutes"), Duration::from_secs(120));
        assert_eq!(every(250, "ms"), Duration::from_millis(250));
        assert_eq!(every(1, "h"), Duration::from_secs(3600));
        assert!(Schedule::interval(5, "parsecs").is_err());
        assert!(Schedule::interval(10, "ms").is_err());
        assert!(Schedule::interval(0, "s").is_err());
        let next = Schedule::interval(90, "s").unwrap().next_after(at(1, 0, 0));
        assert_eq!(next, Some(at(1, 1, 30)));
    }

    #[test]
    fn cron_patterns() {
        let every_5_min = Schedule::cron("*/5 * * * *").unwrap();
        assert_eq!(every_5_min.next_after(at(1, 2, 3)), Some(at(1, 5, 0)));
        assert_eq!(every_5_min.next_after(at(1, 5, 0)), Some(at(1, 10, 0)));
        let every_2_s = Schedule::cron("*/2 * * * * *").unwrap();
        assert_eq!(every_2_s.next_after(at(1, 0, 1)), Some(at(1, 0, 2)));
        let shift_end = Schedule::cron("0 6,14,22 * * *").unwrap();
        assert_eq!(shift_end.next_after(at(7, 0, 0)), Some(at(14, 0, 0)));
        assert!(Schedule::cron("@hourly").is_ok());
        for bad in [
            "",
            "* * * *",
            "61 * * * *",
            "* * * * * * *",
            "a b c d e",
            "*/0 * * * *",
        ] {
            assert!(Schedule::cron(bad).is_err(), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    /// One cron field: `*`, a value, a range, a step or a list, within `lo..=hi`.
    fn field(lo: u32, hi: u32) -> impl Strategy<Value = String> {
        prop_oneof![
            Just("*".to_string()),
            (lo..=hi).prop_map(|v| v.to_string()),
            (lo..=hi, lo..=hi).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
            (1..=hi.max(1)).prop_map(|s| format!("*/{s}")),
            prop::collection::vec(lo..=hi, 1..4).prop_map(|v| v
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")),
        ]
    }

    proptest! {
        /// A valid pattern fires strictly after the instant asked about, and again after that.
        #[test]
        fn valid_patterns_fire_strictly_later(
            minute in field(0, 59), hour in field(0, 23), dom in field(1, 28),
            month in field(1, 12), dow in field(0, 6), secs in 0i64..4_000_000_000,
        ) {
            let pattern = format!("{minute} {hour} {dom} {month} {dow}");
            let schedule = Schedule::cron(&pattern).map_err(TestCaseError::fail)?;
            let Some(after) = DateTime::from_timestamp(secs, 0) else { return Ok(()) };
            if let Some(next) = schedule.next_after(after) {
                prop_assert!(next > after, "{}: {} then {}", pattern, after, next);
                if let Some(again) = schedule.next_after(next) {
                    prop_assert!(again > next);
                }
            }
        }

        #[test]
        fn any_text_never_panics(text in ".{0,40}", fields in prop::collection::vec("[0-9*/,-]{1,5}", 1..8)) {
            let _ = Schedule::cron(&text);
            if let Ok(s) = Schedule::cron(&fields.join(" ")) {
                let _ = s.next_after(Utc::now());
            }
        }
    }
}
