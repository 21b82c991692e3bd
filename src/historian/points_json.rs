//! The wire shape of query answers, `[{"timestamp": "<RFC 3339>", "value": …}]`, with
//! `"quality"` (and `"status"` for a specific code) on points that are not good: a point
//! without one is good, so answers of good points keep the SDK's shape.
//!
//! Written straight into bytes, because a raw range read spends most of its time here: a
//! timestamp is written from a cached day prefix and digit pairs (a million points share a
//! dozen days) instead of a `String` through chrono per point, and values go through
//! serde_json's own writer. The bytes are exactly what serializing the points with serde_json
//! gave before (the tests compare them over random points).

use super::format_ms;
use crate::store::{HistoryPoint, Quality};

/// Points as the read routes answer them.
pub struct PointsJson(pub Vec<HistoryPoint>);

impl PointsJson {
    /// The JSON array of the points.
    pub fn to_bytes(&self) -> Vec<u8> {
        // About 55 bytes a point for a float tag: one allocation for most answers.
        let mut out = Vec::with_capacity(2 + self.0.len() * 56);
        let mut stamps = Stamps::default();
        out.push(b'[');
        for (i, point) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"timestamp\":\"");
            stamps.write(point.ts_ms, &mut out);
            out.extend_from_slice(b"\",\"value\":");
            // Writing a Value into a Vec cannot fail (only a map with non-string keys could,
            // and a Value's keys are strings).
            let _ = serde_json::to_writer(&mut out, &point.value);
            write_quality(point.quality, &mut out);
            out.push(b'}');
        }
        out.push(b']');
        out
    }
}

/// `"quality"` and `"status"` members of a point that is not good.
fn write_quality(quality: Quality, out: &mut Vec<u8>) {
    if quality == Quality::GOOD {
        return;
    }
    out.extend_from_slice(b",\"quality\":\"");
    out.extend_from_slice(quality.label().as_bytes());
    out.push(b'"');
    if let Some(status) = quality.status() {
        out.extend_from_slice(b",\"status\":");
        out.extend_from_slice(status.to_string().as_bytes());
    }
}

const MS_PER_DAY: i64 = 86_400_000;
/// 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z in epoch milliseconds: inside, chrono writes
/// the plain `YYYY-MM-DDTHH:MM:SS.mmmZ` this module writes; outside, [`format_ms`] does.
const FIRST_FAST_MS: i64 = -62_167_219_200_000;
const END_FAST_MS: i64 = 253_402_300_800_000;

/// Writes timestamps as [`format_ms`] does, keeping the date of the last one written.
#[derive(Default)]
struct Stamps {
    day: Option<i64>,
    /// `YYYY-MM-DDT` of `day`.
    prefix: [u8; 11],
}

impl Stamps {
    fn write(&mut self, ts_ms: i64, out: &mut Vec<u8>) {
        if !(FIRST_FAST_MS..END_FAST_MS).contains(&ts_ms) {
            out.extend_from_slice(format_ms(ts_ms).as_bytes());
            return;
        }
        let day = ts_ms.div_euclid(MS_PER_DAY);
        if self.day != Some(day) {
            self.prefix = date_prefix(day);
            self.day = Some(day);
        }
        let ms = ts_ms.rem_euclid(MS_PER_DAY);
        let secs = ms / 1000;
        let mut time = *b"00:00:00.000Z";
        two_digits(&mut time[0..2], secs / 3600);
        two_digits(&mut time[3..5], secs / 60 % 60);
        two_digits(&mut time[6..8], secs % 60);
        let millis = ms % 1000;
        time[9] = b'0' + (millis / 100) as u8;
        two_digits(&mut time[10..12], millis % 100);
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(&time);
    }
}

fn two_digits(slot: &mut [u8], n: i64) {
    slot[0] = b'0' + (n / 10) as u8;
    slot[1] = b'0' + (n % 10) as u8;
}

/// `YYYY-MM-DDT` of a day since the epoch (years 0 to 9999), by the civil-from-days algorithm
/// of Howard Hinnant's date library.
fn date_prefix(days: i64) -> [u8; 11] {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let mut prefix = *b"0000-00-00T";
    two_digits(&mut prefix[0..2], y / 100);
    two_digits(&mut prefix[2..4], y % 100);
    two_digits(&mut prefix[5..7], m);
    two_digits(&mut prefix[8..10], d);
    prefix
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// The answer as serde_json wrote it before: a map per point, members in this order.
    fn reference(points: &[HistoryPoint]) -> String {
        let items: Vec<String> = points
            .iter()
            .map(|p| {
                let mut item = format!(
                    "{{\"timestamp\":{},\"value\":{}",
                    serde_json::to_string(&format_ms(p.ts_ms)).unwrap(),
                    serde_json::to_string(&p.value).unwrap()
                );
                if p.quality != Quality::GOOD {
                    item += &format!(",\"quality\":\"{}\"", p.quality.label());
                }
                if let Some(status) = p.quality.status() {
                    item += &format!(",\"status\":{status}");
                }
                item + "}"
            })
            .collect();
        format!("[{}]", items.join(","))
    }

    fn written(points: Vec<HistoryPoint>) -> String {
        String::from_utf8(PointsJson(points).to_bytes()).unwrap()
    }

    #[test]
    fn uses_rfc3339_millis_and_quality() {
        let points = vec![
            HistoryPoint::good(1_767_225_600_123, json!(21.5)),
            HistoryPoint {
                ts_ms: 1_767_225_600_124,
                value: json!(3),
                quality: Quality(0x8034_0000),
            },
            HistoryPoint {
                ts_ms: 1_767_225_600_125,
                value: json!("on"),
                quality: Quality::UNCERTAIN,
            },
        ];
        let text = written(points);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!([
                {"timestamp": "2026-01-01T00:00:00.123Z", "value": 21.5},
                {"timestamp": "2026-01-01T00:00:00.124Z", "value": 3, "quality": "bad",
                 "status": 0x8034_0000_u32},
                {"timestamp": "2026-01-01T00:00:00.125Z", "value": "on", "quality": "uncertain"},
            ])
        );
        assert!(text.starts_with(r#"[{"timestamp":"2026-01-01T00:00:00.123Z","value":21.5}"#));
        assert_eq!(written(Vec::new()), "[]");
    }

    #[test]
    fn timestamps_at_the_edges_match_chrono() {
        let edges = [
            i64::MIN,
            FIRST_FAST_MS - 1,
            FIRST_FAST_MS,
            -86_400_001,
            -1,
            0,
            951_782_400_000,   // 2000-02-29
            4_107_542_399_999, // 2100-02-28T23:59:59.999
            END_FAST_MS - 1,
            END_FAST_MS,
            i64::MAX,
        ];
        let points: Vec<HistoryPoint> = edges
            .iter()
            .map(|&ts| HistoryPoint::good(ts, Value::Null))
            .collect();
        assert_eq!(written(points.clone()), reference(&points));
    }

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<f64>()
                .prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<bool>().prop_map(Value::Bool),
            ".{0,8}".prop_map(Value::String),
            Just(json!({"a": [1, "b\"", null]})),
        ]
    }

    proptest! {
        #[test]
        fn bytes_match_serde_json(
            points in prop::collection::vec(
                (
                    prop_oneof![any::<i64>(), FIRST_FAST_MS - 10..END_FAST_MS + 10,
                                1_700_000_000_000i64..1_800_000_000_000],
                    value(),
                    prop_oneof![Just(0u32), any::<u32>()],
                ),
                0..40,
            ),
        ) {
            let points: Vec<HistoryPoint> = points
                .into_iter()
                .map(|(ts_ms, value, q)| HistoryPoint { ts_ms, value, quality: Quality(q) })
                .collect();
            prop_assert_eq!(written(points.clone()), reference(&points));
        }
    }
}
