//! Whether a tag's value puts an alarm's condition in alarm. Setpoint kinds use the deadband
//! as ISA-18.2 does: a high alarm is raised above the setpoint and clears only below the
//! setpoint minus the deadband, so a value hovering at the limit does not chatter. A value the
//! kind cannot judge (text for a high alarm, a bad value for anything but a quality alarm)
//! leaves the condition as it was.

use super::definition::{Definition, Kind};
use crate::store::Quality;
use serde_json::Value;

/// One value of the watched tag.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub ts_ms: i64,
    pub value: Value,
    pub quality: Quality,
}

/// The number a value stands for: a number, or a boolean as 1 or 0.
pub fn numeric(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// Whether `alarm`'s condition holds after `sample`; `was` is whether it held before, and
/// `previous` the last numeric value with its time (for the rate of change). `None`: the
/// sample says nothing (keep the condition as it was). Stale alarms are judged by time
/// elsewhere: any value clears them.
pub fn judge(
    alarm: &Definition,
    sample: &Sample,
    was: bool,
    previous: Option<(i64, f64)>,
) -> Option<bool> {
    let bad = sample.quality.label() == "bad";
    match alarm.kind {
        Kind::Bad => return Some(bad),
        Kind::Stale => return Some(false),
        _ if bad => return None,
        _ => {}
    }
    let setpoint = alarm.setpoint_number();
    let band = alarm.deadband;
    match alarm.kind {
        Kind::High | Kind::HighHigh => {
            let v = numeric(&sample.value)?;
            Some(if was {
                v > setpoint - band
            } else {
                v > setpoint
            })
        }
        Kind::Low | Kind::LowLow => {
            let v = numeric(&sample.value)?;
            Some(if was {
                v < setpoint + band
            } else {
                v < setpoint
            })
        }
        Kind::Equal => Some(equal(&sample.value, &alarm.setpoint)),
        Kind::NotEqual => Some(!equal(&sample.value, &alarm.setpoint)),
        Kind::True => numeric(&sample.value).map(|v| v != 0.0),
        Kind::False => numeric(&sample.value).map(|v| v == 0.0),
        Kind::RateOfChange => {
            let v = numeric(&sample.value)?;
            let (at, before) = previous?;
            let seconds = (sample.ts_ms - at) as f64 / 1000.0;
            if seconds <= 0.0 {
                return None;
            }
            let rate = ((v - before) / seconds).abs();
            Some(if was {
                rate > setpoint - band
            } else {
                rate > setpoint
            })
        }
        Kind::Bad | Kind::Stale => None,
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
pub fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn alarm(kind: &str, setpoint: Value, deadband: f64) -> Definition {
        Definition::from_record(&json!({"name": "a", "tag": "t", "kind": kind,
            "setpoint": setpoint, "deadband": deadband}))
        .unwrap()
    }

    fn at(ts_ms: i64, value: Value) -> Sample {
        Sample {
            ts_ms,
            value,
            quality: Quality::GOOD,
        }
    }

    #[test]
    fn a_high_alarm_clears_below_the_deadband_only() {
        let high = alarm("high", json!(80), 2.0);
        assert_eq!(judge(&high, &at(0, json!(80)), false, None), Some(false));
        assert_eq!(judge(&high, &at(0, json!(80.1)), false, None), Some(true));
        assert_eq!(judge(&high, &at(0, json!(79)), true, None), Some(true));
        assert_eq!(judge(&high, &at(0, json!(77.9)), true, None), Some(false));
        assert_eq!(judge(&high, &at(0, json!("hot")), true, None), None);
    }

    #[test]
    fn a_low_alarm_clears_above_the_deadband_only() {
        let low = alarm("low_low", json!(10), 1.0);
        assert_eq!(judge(&low, &at(0, json!(9)), false, None), Some(true));
        assert_eq!(judge(&low, &at(0, json!(10.5)), true, None), Some(true));
        assert_eq!(judge(&low, &at(0, json!(11.5)), true, None), Some(false));
    }

    #[test]
    fn rate_of_change_is_per_second_either_way() {
        let roc = alarm("rate_of_change", json!(5), 0.0);
        assert_eq!(
            judge(&roc, &at(2000, json!(20)), false, Some((0, 0.0))),
            Some(true)
        );
        assert_eq!(
            judge(&roc, &at(2000, json!(-4)), false, Some((0, 0.0))),
            Some(false)
        );
        assert_eq!(
            judge(&roc, &at(1000, json!(-6)), false, Some((0, 0.0))),
            Some(true)
        );
        assert_eq!(judge(&roc, &at(1000, json!(1)), false, None), None);
    }

    #[test]
    fn quality_equality_and_booleans() {
        let bad = alarm("bad", Value::Null, 0.0);
        let mut sample = at(0, json!(1));
        assert_eq!(judge(&bad, &sample, false, None), Some(false));
        sample.quality = Quality::BAD;
        assert_eq!(judge(&bad, &sample, false, None), Some(true));
        assert_eq!(
            judge(&alarm("high", json!(0), 0.0), &sample, false, None),
            None
        );
        let eq = alarm("equal", json!("FAULT"), 0.0);
        assert_eq!(judge(&eq, &at(0, json!("FAULT")), false, None), Some(true));
        assert_eq!(
            judge(
                &alarm("equal", json!(1), 0.0),
                &at(0, json!(1.0)),
                false,
                None
            ),
            Some(true)
        );
        assert_eq!(
            judge(
                &alarm("true", Value::Null, 0.0),
                &at(0, json!(true)),
                false,
                None
            ),
            Some(true)
        );
        assert_eq!(
            judge(
                &alarm("false", Value::Null, 0.0),
                &at(0, json!(1)),
                false,
                None
            ),
            Some(false)
        );
    }
}
