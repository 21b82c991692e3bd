//! The server's last values, where the tree starts: the opening snapshot of
//! `GET /svc/tag/stream?topic=<filter>&payload=raw` (the latest value of every tag of the
//! caller's domain matching the filter, with the bytes as they were published), read up to its
//! `synced` event. MQTT alone cannot give them: only retained messages are replayed on
//! subscribe.

use anyhow::{anyhow, bail, Context};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use std::io::BufRead;
use std::time::Duration;

/// One tag's last value as the server holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct LastValue {
    pub topic: String,
    pub payload: Vec<u8>,
    /// How old the value was when read (0 when its timestamp is unreadable or ahead of us).
    pub age: Duration,
}

/// A `value` event of the stream.
#[derive(Deserialize)]
struct Streamed {
    topic: String,
    timestamp: String,
    #[serde(default)]
    value: Value,
    payload: Option<String>,
    payload_base64: Option<String>,
}

/// Reads the stream's events up to `synced`; `now_ms` (ms since the epoch) dates the values.
pub fn read(stream: impl BufRead, now_ms: i64) -> anyhow::Result<Vec<LastValue>> {
    let mut values = Vec::new();
    let mut event = String::new();
    let mut data = String::new();
    for line in stream.lines() {
        let line = line.context("reading the tag stream")?;
        if !line.is_empty() {
            // `field: value` (one optional space); lines starting with `:` are comments.
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => event = value.to_string(),
                "data" if data.is_empty() => data = value.to_string(),
                "data" => {
                    data.push('\n');
                    data.push_str(value);
                }
                _ => {}
            }
            continue;
        }
        match event.as_str() {
            "value" => values.push(last_value(&data, now_ms)?),
            "synced" => return Ok(values),
            "error" => bail!("the tag stream ended: {data}"),
            _ => {}
        }
        event.clear();
        data.clear();
    }
    Err(anyhow!("the tag stream ended before its snapshot did"))
}

fn last_value(data: &str, now_ms: i64) -> anyhow::Result<LastValue> {
    let streamed: Streamed =
        serde_json::from_str(data).with_context(|| format!("unexpected tag value `{data}`"))?;
    let payload = match (streamed.payload, streamed.payload_base64) {
        (Some(text), _) => text.into_bytes(),
        (None, Some(encoded)) => BASE64
            .decode(encoded)
            .with_context(|| format!("bad payload_base64 of `{}`", streamed.topic))?,
        // A server that does not send the bytes: the value it read from them.
        (None, None) => streamed.value.to_string().into_bytes(),
    };
    let age = chrono::DateTime::parse_from_rfc3339(&streamed.timestamp)
        .map(|at| now_ms.saturating_sub(at.timestamp_millis()))
        .map_or(Duration::ZERO, |ms| {
            Duration::from_millis(u64::try_from(ms).unwrap_or(0))
        });
    Ok(LastValue {
        topic: streamed.topic,
        payload,
        age,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

    #[test]
    fn reads_values_up_to_synced() {
        let stream = "\
event: value\n\
data: {\"timestamp\":\"2025-12-31T23:59:58.500Z\",\"topic\":\"a/t\",\"value\":21.5,\"payload\":\"21.5\"}\n\
\n\
: a comment\n\
event: value\n\
data: {\"timestamp\":\"2026-01-01T00:00:05Z\",\"topic\":\"a/raw\",\"value\":null,\"payload_base64\":\"3q2+7w==\"}\n\
\n\
event: value\n\
data: {\"timestamp\":\"bad\",\"topic\":\"a/old\",\"value\":{\"v\":1}}\n\
\n\
event: synced\n\
data: {\"count\":3}\n\
\n\
event: value\n\
data: not read\n\
\n";
        let values = read(stream.as_bytes(), NOW_MS).unwrap();
        assert_eq!(
            values,
            [
                LastValue {
                    topic: "a/t".into(),
                    payload: b"21.5".to_vec(),
                    age: Duration::from_millis(1500),
                },
                LastValue {
                    topic: "a/raw".into(),
                    payload: vec![0xde, 0xad, 0xbe, 0xef],
                    age: Duration::ZERO,
                },
                LastValue {
                    topic: "a/old".into(),
                    payload: br#"{"v":1}"#.to_vec(),
                    age: Duration::ZERO,
                },
            ]
        );
    }

    #[test]
    fn a_stream_that_ends_early_or_refuses_is_an_error() {
        let cut = "event: value\ndata: {\"timestamp\":\"x\",\"topic\":\"a\",\"payload\":\"1\"}\n\n";
        assert!(read(cut.as_bytes(), NOW_MS).is_err());
        let refused = "event: error\ndata: the API key was revoked\n\n";
        let error = read(refused.as_bytes(), NOW_MS).unwrap_err().to_string();
        assert!(error.contains("revoked"), "{error}");
        assert!(read("event: value\ndata: nope\n\n".as_bytes(), NOW_MS).is_err());
    }
}
