//! `svc tags list|create|publish|watch`: tag paths and declarations over REST, publishing
//! through `POST /svc/tag/write`, and watching live values as an MQTT subscriber of the broker
//! the server reports in `GET /svc/` (API key or JWT as the MQTT password).

use super::client::{Client, Credential};
use super::error::{CliError, CliResult};
use super::output;
use super::{OutputFormat, TagsCommand};
use crate::historian::decode_payload;
use crate::model::{DeviceInfo, NewTag, Success, TagWriteRequest};
use reqwest::Method;
use rumqttc::{ConnectionError, Event, MqttOptions, Packet, QoS, SubscribeReasonCode};
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

pub fn run(client: &Client, format: OutputFormat, command: TagsCommand) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        TagsCommand::List => {
            let paths: Vec<Value> = client.get("/svc/tag/list")?;
            output::rows(&mut out, format, &paths, "path")?;
        }
        TagsCommand::Create {
            path,
            historize,
            unit,
            description,
            retention,
            compression,
        } => {
            let tag = NewTag {
                path,
                historize,
                unit,
                description,
                retention,
                compression,
            };
            let record: Value = client.call(Method::POST, "/svc/tags", &tag)?;
            output::object(&mut out, format, &record)?;
        }
        TagsCommand::Publish {
            topic,
            value,
            string,
            qos,
            retain,
        } => {
            let value = publish_value(&value, string)?;
            let req = TagWriteRequest {
                topic: topic.clone(),
                value,
                qos,
                retain,
            };
            let _: Success = client.call(Method::POST, "/svc/tag/write", &req)?;
            match format {
                OutputFormat::Table => writeln!(out, "published to {topic}")?,
                _ => output::object(&mut out, format, &json!({"success": true, "topic": topic}))?,
            }
        }
        TagsCommand::Watch { filter, count } => {
            drop(out);
            return watch(client, format, &filter, count);
        }
    }
    out.flush()?;
    Ok(())
}

/// The value to publish: JSON, or the raw text with `--string`.
fn publish_value(text: &str, string: bool) -> CliResult<Value> {
    if string {
        return Ok(Value::String(text.to_string()));
    }
    serde_json::from_str(text).map_err(|e| {
        CliError::usage(format!(
            "the value `{text}` is not JSON ({e}); quote text as '\"{text}\"' or pass --string"
        ))
    })
}

/// The broker's host: the listener's, unless it is a wildcard address, then the REST host.
fn broker_host(listener: &str, base: &str) -> String {
    let unspecified = listener
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified());
    if !unspecified && !listener.is_empty() {
        return listener.to_string();
    }
    reqwest::Url::parse(base)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
        .unwrap_or_else(|| "127.0.0.1".into())
}

fn watch(client: &Client, format: OutputFormat, filter: &str, count: Option<u64>) -> CliResult<()> {
    let info: DeviceInfo = client.get("/svc/")?;
    let mqtt = &info.uns.bind.mqtt;
    if !mqtt.enabled {
        return Err(CliError::failed(
            "the server's MQTT listener is not enabled",
        ));
    }
    let host = broker_host(&mqtt.host, &client.base);
    let client_id = format!(
        "svc-cli-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let mut options = MqttOptions::new(client_id, host.clone(), mqtt.port);
    options.set_keep_alive(Duration::from_secs(30));
    options.set_max_packet_size(1 << 20, 1 << 20);
    match &client.credential {
        Credential::ApiKey(secret) | Credential::Token(secret) => {
            options.set_credentials("svc", secret.clone());
        }
        Credential::None => {}
    }
    let (mqtt_client, mut connection) = rumqttc::Client::new(options, 16);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if format == OutputFormat::Csv {
        writeln!(out, "timestamp,topic,value,retain")?;
        out.flush()?;
    }
    let mut connected = false;
    let mut subscribed = false;
    let mut seen = 0u64;
    for event in connection.iter() {
        match event {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                connected = true;
                mqtt_client
                    .try_subscribe(filter, QoS::AtLeastOnce)
                    .map_err(|e| {
                        CliError::usage(format!("invalid topic filter `{filter}`: {e}"))
                    })?;
            }
            Ok(Event::Incoming(Packet::SubAck(ack))) => {
                if ack
                    .return_codes
                    .iter()
                    .any(|c| matches!(c, SubscribeReasonCode::Failure))
                {
                    return Err(CliError::failed(format!(
                        "the broker refused the subscription to `{filter}`"
                    )));
                }
                if !subscribed {
                    eprintln!(
                        "watching {filter} on mqtt://{host}:{} (Ctrl-C to stop)",
                        mqtt.port
                    );
                    subscribed = true;
                }
            }
            Ok(Event::Incoming(Packet::Publish(p))) => {
                let value = decode_payload(&p.payload);
                let ts = crate::time::now_rfc3339();
                print_update(&mut out, format, &ts, &p.topic, &value, p.retain)?;
                seen += 1;
                if count.is_some_and(|c| seen >= c) {
                    let _ = mqtt_client.try_disconnect();
                    return Ok(());
                }
            }
            Ok(_) => {}
            Err(ConnectionError::ConnectionRefused(code)) => {
                return Err(CliError::failed(format!(
                    "the broker at {host}:{} refused the connection ({code:?}): log in again or check --api-key",
                    mqtt.port
                )));
            }
            Err(e) if !connected => {
                return Err(CliError::failed(format!(
                    "cannot connect to the broker at {host}:{}: {e}",
                    mqtt.port
                )));
            }
            Err(e) => {
                eprintln!("svc: connection to the broker lost ({e}); reconnecting");
                connected = false;
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
    Ok(())
}

fn print_update(
    out: &mut dyn Write,
    format: OutputFormat,
    ts: &str,
    topic: &str,
    value: &Value,
    retain: bool,
) -> CliResult<()> {
    match format {
        OutputFormat::Table => writeln!(out, "{ts}  {topic}  {}", output::cell(value, usize::MAX))?,
        OutputFormat::Json | OutputFormat::Jsonl => {
            let line = json!({"timestamp": ts, "topic": topic, "value": value, "retain": retain});
            writeln!(out, "{line}")?;
        }
        OutputFormat::Csv => {
            let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
            let cell = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            w.write_record([ts, topic, &cell, if retain { "true" } else { "false" }])
                .map_err(output::csv_io)?;
            let bytes = w
                .into_inner()
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            out.write_all(&bytes)?;
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_values() {
        assert_eq!(publish_value("21.5", false).unwrap(), json!(21.5));
        assert_eq!(publish_value("{\"a\":1}", false).unwrap(), json!({"a": 1}));
        assert_eq!(publish_value("hello", false).unwrap_err().exit_code(), 2);
        assert_eq!(publish_value("hello", true).unwrap(), json!("hello"));
    }

    #[test]
    fn payloads_and_hosts() {
        assert_eq!(decode_payload(b"1.5"), json!(1.5));
        assert_eq!(decode_payload(b"on"), json!("on"));
        assert_eq!(broker_host("0.0.0.0", "http://10.1.2.3:6188"), "10.1.2.3");
        assert_eq!(broker_host("::", "http://[::1]:6188"), "::1");
        assert_eq!(broker_host("127.0.0.1", "http://example:1"), "127.0.0.1");
    }
}
