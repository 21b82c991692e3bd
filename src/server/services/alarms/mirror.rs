//! Alarms across instances on one PostgreSQL: the leader tells the others every change it
//! carries out (`alarm-changes`), which they mirror into their engines, streams and MQTT
//! subscribers; an action taken on a follower travels to the leader (`alarm-act`) and its
//! answer back (`alarm-acted`, matched by a random id).

use super::{lock, publish, ActRequest};
use crate::alarms::engine::Change;
use crate::alarms::state::AlarmState;
use crate::alarms::{AlarmEvent, AlarmStatus};
use crate::server::error::{ApiError, ApiResult};
use crate::server::AppState;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::sync::oneshot;

const CHANGES: &str = "alarm-changes";
const ACT: &str = "alarm-act";
const ACTED: &str = "alarm-acted";
/// How long a follower waits for the leader to answer an action.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

#[derive(Serialize, Deserialize)]
struct Mirrored {
    event: AlarmEvent,
    #[serde(default)]
    at_ms: i64,
    state: Option<AlarmState>,
}

#[derive(Serialize, Deserialize)]
struct Forwarded {
    id: u64,
    request: ActRequest,
}

#[derive(Serialize, Deserialize)]
struct Answer {
    id: u64,
    status: Option<AlarmStatus>,
    /// The refusal's HTTP status and sentence.
    error: Option<(u16, String)>,
}

/// Tells the other instances what the leader changed.
pub(super) async fn tell(state: &AppState, changes: &[Change]) {
    if !state.peers.has_peers() {
        return;
    }
    let mirrored: Vec<Mirrored> = changes
        .iter()
        .map(|c| Mirrored {
            event: c.event.clone(),
            at_ms: c.event.at_ms,
            state: c.state.clone(),
        })
        .collect();
    if let Ok(body) = serde_json::to_vec(&mirrored) {
        if let Err(e) = state.peers.notify(CHANGES, body).await {
            tracing::warn!(error = %e, "cannot tell the other instances of alarm changes");
        }
    }
}

/// Sends an action to the leading instance and waits for its answer.
pub(super) async fn forward(state: &AppState, request: ActRequest) -> ApiResult<AlarmStatus> {
    let id: u64 = rand::random();
    let (answer, answered) = oneshot::channel();
    lock(&state.alarms.forwarded).insert(id, answer);
    let body = serde_json::to_vec(&Forwarded { id, request })
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let sent = state.peers.notify(ACT, body).await;
    let result = match sent {
        Ok(()) => tokio::time::timeout(ANSWER_WITHIN, answered)
            .await
            .ok()
            .and_then(Result::ok),
        Err(_) => None,
    };
    lock(&state.alarms.forwarded).remove(&id);
    match result {
        Some(Ok(status)) => Ok(status),
        Some(Err(error)) => Err(error),
        None => Err(ApiError::unavailable(
            "the instance that evaluates the alarms did not answer; try again",
        )),
    }
}

/// Acts on an alarm notice of another instance; `false` when the kind is not one of these.
pub async fn on_peer_notice(state: &AppState, kind: &str, body: &[u8]) -> bool {
    match kind {
        CHANGES => mirror_changes(state, body).await,
        ACT => answer_action(state, body).await,
        ACTED => take_answer(state, body),
        _ => return false,
    }
    true
}

async fn mirror_changes(state: &AppState, body: &[u8]) {
    if state.peers.leadership().is_leader() {
        return;
    }
    let Ok(changes) = serde_json::from_slice::<Vec<Mirrored>>(body) else {
        tracing::warn!("an unreadable alarm notice");
        return;
    };
    {
        let mut core = lock(&state.alarms.core);
        for change in &changes {
            core.engine
                .mirror(&change.event, change.state.clone(), change.at_ms);
        }
    }
    for mut change in changes {
        change.event.at_ms = change.at_ms;
        // The follower's own copy: nothing here waits for it to be stored.
        let _ = publish::announce(state, &change.event).await;
    }
}

async fn answer_action(state: &AppState, body: &[u8]) {
    if !state.peers.leadership().is_leader() {
        return;
    }
    let Ok(forwarded) = serde_json::from_slice::<Forwarded>(body) else {
        return;
    };
    let alarms = &state.alarms;
    let answer = match alarms.act(state, forwarded.request).await {
        Ok(status) => Answer {
            id: forwarded.id,
            status: Some(status),
            error: None,
        },
        Err(e) => Answer {
            id: forwarded.id,
            status: None,
            error: Some((e.status.as_u16(), e.message)),
        },
    };
    if let Ok(body) = serde_json::to_vec(&answer) {
        let _ = state.peers.notify(ACTED, body).await;
    }
}

fn take_answer(state: &AppState, body: &[u8]) {
    let Ok(answer) = serde_json::from_slice::<Answer>(body) else {
        return;
    };
    let Some(waiting) = lock(&state.alarms.forwarded).remove(&answer.id) else {
        return;
    };
    let result = match (answer.status, answer.error) {
        (Some(status), _) => Ok(status),
        (None, Some((code, message))) => Err(ApiError::with_code(code, message)),
        (None, None) => Err(ApiError::internal(
            "the leading instance gave an empty answer",
        )),
    };
    let _ = waiting.send(result);
}
