//! The server's side of the connectors: the broker's in-process publish as their way into the
//! Unified Namespace, and the writes that arrive as MQTT publishes on a writable point's
//! write topic (`<tag>/set` by default; never the tag itself, which subscribers would take
//! for a device value). An MQTT 5 publisher that gives a response topic gets the device's
//! answer there: `{"ok":true}`, or `{"ok":false,"status":422|503|400,"error":"…"}`.

use crate::broker::{Broker, Message};
use crate::connectors::feed::Uns;
use crate::connectors::kind::WriteError;
use crate::server::error::{ApiError, ApiResult};
use crate::server::services::sparkplug;
use crate::server::AppState;
use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::{Arc, OnceLock};

/// The broker as the connectors publish into it: a batch of tag values at a time, QoS 1 (the
/// historized ones are stored before the call returns), not retained.
pub struct BrokerUns(pub Arc<OnceLock<Broker>>);

#[async_trait::async_trait]
impl Uns for BrokerUns {
    async fn publish(
        &self,
        origin: Arc<str>,
        messages: Vec<(String, Bytes)>,
    ) -> Result<(), String> {
        let broker = self.0.get().ok_or("the MQTT broker is not running")?;
        broker
            .publish_batch(Some(origin), messages, 1, false)
            .await
            .map_err(|e| e.to_string())
    }
}

/// The HTTP status a failed device write answers with.
pub fn write_status(error: &WriteError) -> u16 {
    match error {
        WriteError::Invalid(_) => 400,
        WriteError::Refused(_) => 422,
        WriteError::Unreachable(_) => 503,
    }
}

/// Writes `value` to where tag `tag` of `domain` comes from, when it comes from a device (a
/// connector's point, a Sparkplug metric) and answers once the device took it (a connector)
/// or the command is sent (Sparkplug); `None` for any other tag. The error's status is 400,
/// 422 or 503.
pub async fn write_to_source(
    state: &AppState,
    domain: &str,
    tag: &str,
    value: Value,
) -> Option<ApiResult<()>> {
    if let Some(result) = state.connectors.write(domain, tag, value.clone()).await {
        return Some(result.map_err(|e| ApiError::with_code(write_status(&e), e.to_string())));
    }
    sparkplug::write(state, domain, tag, &value).await
}

/// The (domain, tag) a publish on `topic` writes to: a connector point's write topic, or
/// `<tag>/set` of a Sparkplug metric's tag.
fn write_target(state: &AppState, topic: &str) -> Option<(String, String)> {
    if let Some(target) = state.connectors.write_topic(topic) {
        return Some(target);
    }
    if !topic.ends_with("/set") {
        return None;
    }
    let domain = state.uns.tags.domain_of(topic)?;
    let tag = state.sparkplug.write_topic(&domain, topic)?;
    Some((domain.to_string(), tag))
}

/// Carries a publish on a write topic to the device, in the background (the publisher's
/// acknowledgement does not wait for the device); `false` when `message` is on no write topic.
pub fn write_from_mqtt(state: &AppState, message: &Message) -> bool {
    let Some((domain, tag)) = write_target(state, &message.topic) else {
        return false;
    };
    let value = match crate::historian::payload::decode_payload(&message.payload) {
        Value::Object(mut members) if members.contains_key("value") => {
            members.remove("value").unwrap_or(Value::Null)
        }
        other => other,
    };
    let state = state.clone();
    let response = message.response.clone();
    tokio::spawn(async move {
        let result = write_to_source(&state, &domain, &tag, value).await;
        let answer = match &result {
            Some(Ok(())) => json!({"ok": true}),
            Some(Err(e)) => {
                json!({"ok": false, "status": e.status.as_u16(), "error": e.message})
            }
            None => return,
        };
        if let Some(Err(e)) = &result {
            tracing::info!(domain, tag, error = %e.message, "a device write from MQTT failed");
        }
        let (Some(response), Some(broker)) = (response, state.broker.get()) else {
            return;
        };
        let payload = Bytes::from(serde_json::to_vec(&answer).unwrap_or_default());
        if let Err(e) = broker.publish_response(&response, payload).await {
            tracing::debug!(error = %e, "cannot answer a device write");
        }
    });
    true
}
