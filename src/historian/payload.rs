//! From an MQTT payload to the historized point (SPEC 7): the payload is JSON when it parses as
//! JSON, otherwise its text (lossy for invalid UTF-8) as a JSON string. The point's time is the
//! payload object's `timestamp` member when that is an RFC 3339 string or a number of epoch
//! milliseconds (years 1 to 9999), else the broker's receive time; the point's value is the
//! object's `value` member when the payload is an object that has one, else the whole payload.
//! An object with a `value` may also carry a `quality` (`good`, `uncertain`, `bad`, or an OPC UA
//! StatusCode number); without one, or with one that is neither, the point is good.

use crate::store::Quality;
use serde_json::Value;

/// The message of a tag value that svc publishes itself (a connector's reading, a Sparkplug
/// metric): `{"value", "timestamp", "quality"}`, written straight from its parts, the shape
/// [`point_from_payload`] reads without building a map.
#[derive(serde::Serialize)]
pub struct TagMessage<'a> {
    value: &'a Value,
    timestamp: String,
    quality: QualityMember,
}

/// A status code, or the quality's name when it has none beyond its severity.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum QualityMember {
    Code(u32),
    Label(&'static str),
}

impl<'a> TagMessage<'a> {
    pub fn new(value: &'a Value, ts_ms: i64, quality: Quality) -> TagMessage<'a> {
        TagMessage {
            value,
            timestamp: crate::historian::format_ms(ts_ms),
            quality: match quality.status() {
                Some(code) => QualityMember::Code(code),
                None => QualityMember::Label(quality.label()),
            },
        }
    }

    pub fn to_bytes(&self) -> bytes::Bytes {
        bytes::Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}

/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in epoch milliseconds.
const MIN_MS: i64 = -62_135_596_800_000;
const MAX_MS: i64 = 253_402_300_799_999;

/// A payload as a JSON value: parsed when it is JSON, else its (lossy) text.
pub fn decode_payload(payload: &[u8]) -> Value {
    serde_json::from_slice::<Value>(payload)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(payload).into_owned()))
}

/// The (epoch ms, value, quality) to historize for a payload received at `received_ms`.
pub fn point_from_payload(payload: &[u8], received_ms: i64) -> (i64, Value, Quality) {
    // The shape svc's connectors and the SDK publish, read without building a map for it (an
    // object only: serde would also read a struct from an array of its fields).
    let is_object = payload.trim_ascii_start().first() == Some(&b'{');
    if let Some(object) = is_object
        .then(|| serde_json::from_slice::<ValueObject>(payload).ok())
        .flatten()
    {
        let ts = object
            .timestamp
            .as_ref()
            .and_then(timestamp_ms)
            .unwrap_or(received_ms);
        let quality = object.quality.as_ref().and_then(Quality::from_json);
        return (ts, object.value, quality.unwrap_or_default());
    }
    match decode_payload(payload) {
        Value::Object(mut members) => {
            let ts = members
                .get("timestamp")
                .and_then(timestamp_ms)
                .unwrap_or(received_ms);
            match members.remove("value") {
                Some(value) => {
                    let quality = members.get("quality").and_then(Quality::from_json);
                    (ts, value, quality.unwrap_or_default())
                }
                None => (ts, Value::Object(members), Quality::GOOD),
            }
        }
        other => (received_ms, other, Quality::GOOD),
    }
}

/// An object with a `value` and perhaps a `timestamp` and a `quality`, each once (a member
/// twice, or no `value`, and the payload takes the general path of [`decode_payload`]). Other
/// members are skipped without being kept (a device's padding or metadata): the general path
/// would read the same three members from them.
#[derive(serde::Deserialize)]
struct ValueObject {
    value: Value,
    #[serde(default)]
    timestamp: Option<Value>,
    #[serde(default)]
    quality: Option<Value>,
}

/// A `timestamp` member as epoch milliseconds, if it is one of the accepted forms.
fn timestamp_ms(member: &Value) -> Option<i64> {
    let ms = match member {
        Value::String(text) => crate::time::parse_rfc3339(text)?.timestamp_millis(),
        Value::Number(n) => match n.as_i64() {
            Some(ms) => ms,
            None => {
                let x = n.as_f64()?.round();
                if !(MIN_MS as f64..=MAX_MS as f64).contains(&x) {
                    return None;
                }
                x as i64
            }
        },
        _ => return None,
    };
    (MIN_MS..=MAX_MS).contains(&ms).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RECEIVED: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

    fn point(payload: &[u8]) -> (i64, Value) {
        let (ts, value, _) = point_from_payload(payload, RECEIVED);
        (ts, value)
    }

    #[test]
    fn quality_comes_from_the_quality_member_of_a_value_object() {
        let quality = |payload: &str| point_from_payload(payload.as_bytes(), RECEIVED).2;
        assert_eq!(quality(r#"{"value": 1, "quality": "bad"}"#), Quality::BAD);
        assert_eq!(
            quality(r#"{"value": 1, "quality": "Uncertain"}"#),
            Quality::UNCERTAIN
        );
        assert_eq!(
            quality(r#"{"value": 1, "quality": 2150891520}"#),
            Quality(0x8034_0000)
        );
        for good in [
            r#"{"value": 1}"#,
            r#"{"value": 1, "quality": "fine"}"#,
            r#"{"value": 1, "quality": -1}"#,
            r#"{"value": 1, "quality": 4294967296}"#,
            r#"{"quality": "bad"}"#,
            "7",
        ] {
            assert_eq!(quality(good), Quality::GOOD, "{good}");
        }
    }

    #[test]
    fn other_members_are_skipped_as_the_general_path_would_read_them() {
        let general = |payload: &str| match decode_payload(payload.as_bytes()) {
            Value::Object(mut members) => (
                members
                    .get("timestamp")
                    .and_then(timestamp_ms)
                    .unwrap_or(RECEIVED),
                members.remove("value").unwrap_or(Value::Object(members)),
            ),
            other => (RECEIVED, other),
        };
        for payload in [
            r#"{"value": 5, "pad": "xxxx"}"#,
            r#"{"pad": [1, {"a": null}], "value": 5, "timestamp": 1767225500000}"#,
            r#"{"value": 5, "value": 6}"#,
            r#"{"value": 5, "timestamp": 1, "timestamp": 1767225500000}"#,
            r#"{"pad": "no value here"}"#,
        ] {
            assert_eq!(point(payload.as_bytes()), general(payload), "{payload}");
        }
        assert_eq!(
            point_from_payload(br#"{"value": 1, "unit": "C", "quality": "bad"}"#, RECEIVED).2,
            Quality::BAD
        );
    }

    #[test]
    fn plain_json_values_use_receive_time() {
        assert_eq!(point(b"21.5"), (RECEIVED, json!(21.5)));
        assert_eq!(point(b" -3 "), (RECEIVED, json!(-3)));
        assert_eq!(point(b"true"), (RECEIVED, json!(true)));
        assert_eq!(point(b"\"running\""), (RECEIVED, json!("running")));
        assert_eq!(point(b"[1,2]"), (RECEIVED, json!([1, 2])));
    }

    #[test]
    fn object_with_value_and_rfc3339_timestamp() {
        let (ts, value) =
            point(br#"{"value": 7.25, "timestamp": "2025-12-31T23:00:00.250+00:00"}"#);
        assert_eq!((ts, value), (RECEIVED - 3_600_000 + 250, json!(7.25)));
        let (ts, _) = point(br#"{"value": 1, "timestamp": "2026-01-01T01:00:00+01:00"}"#);
        assert_eq!(ts, RECEIVED);
    }

    #[test]
    fn object_with_epoch_millis_timestamp() {
        assert_eq!(
            point(br#"{"value": {"a": 1}, "timestamp": 1767225500000}"#),
            (1_767_225_500_000, json!({"a": 1}))
        );
        assert_eq!(
            point(br#"{"value": 2, "timestamp": 1767225500000.4}"#),
            (1_767_225_500_000, json!(2))
        );
    }

    #[test]
    fn unusable_timestamps_fall_back_to_receive_time() {
        for payload in [
            r#"{"value": 1, "timestamp": "yesterday"}"#,
            r#"{"value": 1, "timestamp": "1767225500000"}"#,
            r#"{"value": 1, "timestamp": true}"#,
            r#"{"value": 1, "timestamp": 1e30}"#,
            r#"{"value": 1, "timestamp": 9223372036854775807}"#,
        ] {
            assert_eq!(point(payload.as_bytes()), (RECEIVED, json!(1)), "{payload}");
        }
    }

    #[test]
    fn a_value_object_with_more_members_or_a_member_twice_reads_as_a_map_does() {
        let read = |payload: &str| point_from_payload(payload.as_bytes(), RECEIVED);
        assert_eq!(
            read(r#"{"value": 1, "unit": "bar", "quality": "bad"}"#),
            (RECEIVED, json!(1), Quality::BAD)
        );
        // A map keeps the last of a member given twice.
        assert_eq!(
            read(r#"{"value": 1, "value": 2, "timestamp": 1767225500000}"#),
            (1_767_225_500_000, json!(2), Quality::GOOD)
        );
        assert_eq!(
            read(r#"{"value": null, "timestamp": null, "quality": null}"#),
            (RECEIVED, Value::Null, Quality::GOOD)
        );
        assert_eq!(
            read(r#"{"timestamp": "2026-01-01T00:00:01Z", "quality": 0, "value": [1]}"#),
            (RECEIVED + 1000, json!([1]), Quality(0))
        );
    }

    #[test]
    fn object_without_value_is_kept_whole() {
        let payload = br#"{"temp": 20, "timestamp": 1767225500000}"#;
        assert_eq!(
            point(payload),
            (
                1_767_225_500_000,
                json!({"temp": 20, "timestamp": 1767225500000_i64})
            )
        );
        assert_eq!(point(br#"{"value": null}"#), (RECEIVED, Value::Null));
    }

    #[test]
    fn non_json_is_kept_as_a_string() {
        assert_eq!(point(b"hello world"), (RECEIVED, json!("hello world")));
        assert_eq!(point(b"21.5 C"), (RECEIVED, json!("21.5 C")));
        assert_eq!(point(b"{broken"), (RECEIVED, json!("{broken")));
        assert_eq!(point(b""), (RECEIVED, json!("")));
    }

    #[test]
    fn binary_is_kept_lossily() {
        assert_eq!(
            point(&[0x41, 0xff, 0xfe, 0x42]),
            (RECEIVED, json!("A\u{fffd}\u{fffd}B"))
        );
    }
}
