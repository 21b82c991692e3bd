//! A tag's `compression` member (issue 33): what a tag record may say, checked, and resolved to
//! engineering units and milliseconds for the filter. Absent or `null` means off: every value
//! is stored.
//!
//! ```json
//! {"deadband": 0.5}
//! {"deadband_percent": 1, "span": 100}
//! {"deviation": 0.1, "min_time": "1s", "max_time": "1h"}
//! {"deviation_percent": 0.1, "deadband_percent": 0.05, "span": 250, "max_time": "8h"}
//! ```

use crate::duration::parse_duration;
use serde_json::{Map, Value};

/// How long a flat tag goes without a stored point when `max_time` is not given: one shift,
/// PI's recommended compression maximum.
pub const DEFAULT_MAX_TIME: &str = "8h";

/// The members a `compression` object may hold.
const MEMBERS: [&str; 7] = [
    "deadband",
    "deadband_percent",
    "deviation",
    "deviation_percent",
    "span",
    "min_time",
    "max_time",
];

/// A tag's compression, resolved: absolute bands in the tag's unit, times in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Compression {
    /// Exception deadband: a value within this of the last one passed on is held back.
    pub deadband: Option<f64>,
    /// Swinging-door compression deviation.
    pub deviation: Option<f64>,
    /// Points arriving sooner than this after the last stored one are not tested.
    pub min_ms: i64,
    /// A point is stored at least this often while points arrive (the heartbeat).
    pub max_ms: i64,
}

impl Compression {
    /// Reads a tag record's `compression` member: `None` when it is absent or null, else the
    /// settings, or a sentence naming the member that is wrong.
    pub fn from_member(member: Option<&Value>) -> Result<Option<Compression>, String> {
        match member {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(members)) => Compression::from_object(members).map(Some),
            Some(_) => Err("field `compression` must be an object such as \
                 {\"deviation\": 0.1, \"max_time\": \"1h\"}, or null for none"
                .into()),
        }
    }

    fn from_object(members: &Map<String, Value>) -> Result<Compression, String> {
        if let Some(unknown) = members.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
            return Err(format!(
                "field `compression.{unknown}` is not one of {}",
                MEMBERS.join(", ")
            ));
        }
        let span = match number(members, "span")? {
            Some(span) if span <= 0.0 => {
                return Err("field `compression.span` must be a number above 0".into())
            }
            span => span,
        };
        let deadband = band(members, "deadband", span)?;
        let deviation = band(members, "deviation", span)?;
        if deadband.is_none() && deviation.is_none() {
            return Err("field `compression` needs `deadband`, `deadband_percent`, \
                        `deviation` or `deviation_percent`"
                .into());
        }
        let min_ms = duration(members, "min_time")?.unwrap_or(0);
        let max_ms = match duration(members, "max_time")? {
            Some(ms) => ms,
            None => parse_ms(DEFAULT_MAX_TIME).unwrap_or(i64::MAX),
        };
        if max_ms <= min_ms {
            return Err(format!(
                "field `compression.max_time` must be longer than `compression.min_time` \
                 ({} ms is not longer than {min_ms} ms)",
                max_ms
            ));
        }
        Ok(Compression {
            deadband,
            deviation,
            min_ms,
            max_ms,
        })
    }
}

/// `name` (absolute, 0 or more) or `name_percent` (0 to 100 of `span`), not both.
fn band(
    members: &Map<String, Value>,
    name: &str,
    span: Option<f64>,
) -> Result<Option<f64>, String> {
    let percent_name = format!("{name}_percent");
    let absolute = number(members, name)?;
    let percent = number(members, &percent_name)?;
    match (absolute, percent) {
        (Some(_), Some(_)) => Err(format!(
            "field `compression` takes `{name}` or `{percent_name}`, not both"
        )),
        (Some(x), None) if x < 0.0 => Err(format!(
            "field `compression.{name}` must be a number of 0 or more"
        )),
        (Some(x), None) => Ok(Some(x)),
        (None, Some(p)) if !(0.0..=100.0).contains(&p) => Err(format!(
            "field `compression.{percent_name}` must be a number from 0 to 100"
        )),
        (None, Some(p)) => match span {
            Some(span) => Ok(Some(p / 100.0 * span)),
            None => Err(format!(
                "field `compression.{percent_name}` needs `compression.span`, the tag's range \
                 (high minus low) in its unit"
            )),
        },
        (None, None) => Ok(None),
    }
}

/// A finite number member, if present (null counts as absent).
fn number(members: &Map<String, Value>, name: &str) -> Result<Option<f64>, String> {
    match members.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(format!(
                "field `compression.{name}` must be a finite number"
            )),
        },
        Some(_) => Err(format!("field `compression.{name}` must be a number")),
    }
}

/// A duration member (the platform's grammar: `1s`, `15m`, `1h30m`), in milliseconds.
fn duration(members: &Map<String, Value>, name: &str) -> Result<Option<i64>, String> {
    match members.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => parse_ms(text)
            .map(Some)
            .map_err(|e| format!("field `compression.{name}`: {e}")),
        Some(_) => Err(format!(
            "field `compression.{name}` must be a duration such as \"1s\" or \"1h\""
        )),
    }
}

fn parse_ms(text: &str) -> Result<i64, String> {
    let duration = parse_duration(text)?;
    i64::try_from(duration.as_millis()).map_err(|_| format!("`{text}` is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(member: Value) -> Result<Option<Compression>, String> {
        Compression::from_member(Some(&member))
    }

    fn ok(member: Value) -> Compression {
        parse(member.clone())
            .unwrap_or_else(|e| panic!("{member}: {e}"))
            .unwrap_or_else(|| panic!("{member} is off"))
    }

    #[test]
    fn absent_and_null_are_off() {
        assert_eq!(Compression::from_member(None), Ok(None));
        assert_eq!(parse(Value::Null), Ok(None));
    }

    #[test]
    fn absolute_and_percent_bands_resolve_to_units() {
        let c = ok(json!({"deadband": 0.5}));
        assert_eq!(
            c,
            Compression {
                deadband: Some(0.5),
                deviation: None,
                min_ms: 0,
                max_ms: 8 * 3_600_000,
            }
        );
        let c = ok(json!({"deadband_percent": 1, "span": 250, "deviation_percent": 0.1}));
        assert_eq!(c.deadband, Some(2.5));
        assert!((c.deviation.unwrap() - 0.25).abs() < 1e-12);
        let c = ok(json!({"deviation": 0, "min_time": "1s", "max_time": "1h", "span": null}));
        assert_eq!(
            (c.deviation, c.min_ms, c.max_ms),
            (Some(0.0), 1_000, 3_600_000)
        );
        // A span alone is kept for later: the record stays valid while switching modes.
        assert_eq!(ok(json!({"deadband": 1, "span": 10})).deadband, Some(1.0));
    }

    #[test]
    fn every_bad_member_is_named() {
        for (member, words) in [
            (json!(0.5), "field `compression` must be an object"),
            (json!({}), "needs `deadband`"),
            (json!({"max_time": "1h"}), "needs `deadband`"),
            (
                json!({"deadband": -1}),
                "`compression.deadband` must be a number of 0 or more",
            ),
            (
                json!({"deadband": "1"}),
                "`compression.deadband` must be a number",
            ),
            (
                json!({"deviation": true}),
                "`compression.deviation` must be a number",
            ),
            (
                json!({"deadband": 1, "deadband_percent": 1, "span": 5}),
                "takes `deadband` or `deadband_percent`, not both",
            ),
            (
                json!({"deviation_percent": 1}),
                "`compression.deviation_percent` needs `compression.span`",
            ),
            (
                json!({"deviation_percent": 101, "span": 5}),
                "`compression.deviation_percent` must be a number from 0 to 100",
            ),
            (
                json!({"deadband": 1, "span": 0}),
                "`compression.span` must be a number above 0",
            ),
            (
                json!({"deadband": 1, "span": -2}),
                "`compression.span` must be a number above 0",
            ),
            (
                json!({"deadband": 1, "min_time": "soon"}),
                "field `compression.min_time`: ",
            ),
            (
                json!({"deadband": 1, "max_time": 60}),
                "`compression.max_time` must be a duration",
            ),
            (
                json!({"deadband": 1, "min_time": "1h", "max_time": "1h"}),
                "`compression.max_time` must be longer than `compression.min_time`",
            ),
            (
                json!({"deadband": 1, "max_time": "0s"}),
                "must be longer than",
            ),
            (
                json!({"deadband": 1, "dev": 2}),
                "field `compression.dev` is not one of deadband",
            ),
        ] {
            let err = parse(member.clone()).expect_err(&member.to_string());
            assert!(err.contains(words), "{member}: {err}");
        }
    }
}
