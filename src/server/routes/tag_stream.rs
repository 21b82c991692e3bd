//! `GET /svc/tag/stream?topic=<filter>`: live tag values as Server-Sent Events, for the web
//! console and for anyone with `curl -N` or an HTTP-only integration.
//!
//! The stream opens with the latest value of every tag of the caller's domain that matches the
//! filter (`event: value`), then `event: synced` (`{"count": N}`), then each new value as the
//! broker accepts it. A client that falls too far behind gets a fresh snapshot followed by
//! `synced` instead of what it missed, so the latest value of every tag always arrives. A
//! comment line every 15 s keeps proxies from closing a quiet stream. It needs `tags` read
//! access in the domain, like `GET /svc/tag/values`; it shows only tags of that domain,
//! whatever the filter. When grants, keys or tag ownership change, the credential is checked
//! again: a revoked one ends the stream with `event: error` and a sentence.
//!
//! With `payload=raw` each value also carries the payload's bytes as they were published
//! (`payload` when they are UTF-8 text, else `payload_base64`), for inspecting what a device
//! really sent rather than the value svc read from it.

use crate::historian::format_ms;
use crate::model::TagValue;
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller, Recheck};
use crate::server::services::last_values::LiveValue;
use crate::server::services::system_tables::TAGS_FEATURE;
use crate::server::AppState;
use crate::topic::{filter_matches, validate_topic_filter};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;
use utoipa_axum::{router::OpenApiRouter, routes};

/// How often a quiet stream gets a comment line (and its credential a look).
const HEARTBEAT: Duration = Duration::from_secs(15);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(stream))
}

#[derive(Deserialize)]
struct StreamQuery {
    topic: Option<String>,
    payload: Option<String>,
}

/// A value event: the tag value, and with `payload=raw` the bytes it was read from.
#[derive(Serialize)]
struct StreamedValue {
    #[serde(flatten)]
    value: TagValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_base64: Option<String>,
}

#[utoipa::path(get, path = "/svc/tag/stream", tag = "tags",
    params(("topic" = Option<String>, Query, description = "A topic filter (MQTT wildcards allowed)"),
        ("payload" = Option<String>, Query, description = "`raw`: also send the payload as published")),
    responses((status = 200, description = "Server-sent events: one per value", content_type = "text/event-stream", body = String),
        (status = 503, description = "The MQTT broker is not running")))]
async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Query(query): Query<StreamQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    caller
        .require(&state, TAGS_FEATURE, "*", Access::Read)
        .await?;
    let filter = query.topic.unwrap_or_else(|| "#".into());
    validate_topic_filter(&filter).map_err(|e| ApiError::bad_request(format!("`topic`: {e}")))?;
    let raw = match query.payload.as_deref() {
        None => false,
        Some("raw") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "`payload` must be `raw` (the published bytes with each value), not `{other}`"
            )))
        }
    };
    // Watching starts before the snapshot is taken, so nothing set in between is missed.
    let watch = state.uns.last_values.watch();
    let mut feed = Feed {
        recheck: Recheck::new(&state, headers, TAGS_FEATURE),
        state,
        caller,
        filter,
        raw,
        watch,
        pending: VecDeque::new(),
        ended: false,
    };
    feed.pending = feed.snapshot();
    let events = futures::stream::unfold(feed, Feed::next);
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(HEARTBEAT)))
}

/// One client's stream.
struct Feed {
    state: AppState,
    caller: Caller,
    /// The request's credential, checked again when grants or keys change.
    recheck: Recheck,
    filter: String,
    /// Whether events carry the published bytes too.
    raw: bool,
    watch: Receiver<Arc<LiveValue>>,
    /// Events ready to send (a snapshot).
    pending: VecDeque<Event>,
    ended: bool,
}

impl Feed {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Feed)> {
        loop {
            if self.ended {
                return None;
            }
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(event), self));
            }
            let update = tokio::time::timeout(HEARTBEAT, self.watch.recv()).await;
            if let Err(refused) = self
                .recheck
                .still_allowed(&self.state, &mut self.caller)
                .await
            {
                self.ended = true;
                return Some((Ok(Event::default().event("error").data(refused)), self));
            }
            match update {
                Err(_quiet) => {}
                Ok(Ok(value)) => {
                    if let Some(event) = self.event_of(&value) {
                        return Some((Ok(event), self));
                    }
                }
                Ok(Err(RecvError::Lagged(_))) => self.pending = self.snapshot(),
                Ok(Err(RecvError::Closed)) => return None,
            }
        }
    }

    /// A live value, if it belongs to the caller's domain and matches the filter.
    fn event_of(&self, value: &LiveValue) -> Option<Event> {
        let wanted = filter_matches(&self.filter, &value.topic)
            && self
                .state
                .uns
                .tags
                .is_owner(&value.topic, &self.caller.domain);
        wanted.then(|| value_event(value, self.raw))
    }

    /// The latest value of each matching tag of the domain, then `synced`.
    fn snapshot(&self) -> VecDeque<Event> {
        let mut events: VecDeque<Event> = self
            .state
            .uns
            .tags
            .paths(&self.caller.domain, false)
            .into_iter()
            .filter(|topic| filter_matches(&self.filter, topic))
            .filter_map(|topic| {
                let value = self.state.uns.last_values.latest(&topic)?;
                Some(value_event(&value, self.raw))
            })
            .collect();
        let synced = json!({ "count": events.len() }).to_string();
        events.push_back(Event::default().event("synced").data(synced));
        events
    }
}

fn value_event(live: &LiveValue, raw: bool) -> Event {
    let (ts_ms, value) = live.point();
    let (payload, payload_base64) = match (raw, std::str::from_utf8(&live.payload)) {
        (false, _) => (None, None),
        (true, Ok(text)) => (Some(text.to_string()), None),
        (true, Err(_)) => (None, Some(BASE64.encode(&live.payload))),
    };
    let event = StreamedValue {
        value: TagValue {
            timestamp: format_ms(ts_ms),
            topic: live.topic.clone(),
            value,
        },
        payload,
        payload_base64,
    };
    let data = serde_json::to_string(&event).unwrap_or_default();
    Event::default().event("value").data(data)
}
