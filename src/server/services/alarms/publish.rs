//! Carrying out what an evaluation step changed, on the leading instance: each change on
//! `$SYS/svc/alarms/<domain>/<alarm>` (retained while the alarm is not normal; a return to
//! normal clears the retained copy), on the Server-Sent Events stream, to the notification
//! pipelines and to the other instances, then the journal entries and the states in one
//! transaction. Announcing first keeps a write that waits for the disk (a WAL checkpoint) out
//! of the value → event latency; the journal follows within the same step.

use super::mirror;
use crate::alarms::engine::Change;
use crate::alarms::AlarmEvent;
use crate::server::AppState;
use crate::store::{AlarmJournalEntry, StoredAlarmState};
use bytes::Bytes;
use std::sync::Arc;

/// The topic an alarm's changes are published on.
pub fn topic_of(domain: &str, alarm: &str) -> String {
    format!("$SYS/svc/alarms/{domain}/{alarm}")
}

pub(super) async fn carry_out(state: &AppState, changes: Vec<Change>) {
    if changes.is_empty() {
        return;
    }
    let entries: Vec<AlarmJournalEntry> = changes.iter().map(|c| journal_entry(&c.event)).collect();
    let states: Vec<StoredAlarmState> = changes
        .iter()
        .map(|c| StoredAlarmState {
            domain: c.event.domain.clone(),
            alarm: c.event.alarm.clone(),
            state: c.state.as_ref().and_then(|s| serde_json::to_string(s).ok()),
        })
        .collect();
    for change in &changes {
        announce(state, &change.event).await;
    }
    let events: Vec<AlarmEvent> = changes.iter().map(|c| c.event.clone()).collect();
    state.notifier.offer(&events);
    mirror::tell(state, &changes).await;
    if let Err(e) = state
        .store
        .run(move |s| s.alarms_commit(&entries, &states))
        .await
    {
        tracing::warn!(error = %e, "cannot write the alarm journal; the changes were announced");
    }
}

/// Publishes one change on MQTT (through the broker here, or, on a follower, delivered to
/// this instance's subscribers only) and on the event stream.
pub(super) async fn announce(state: &AppState, event: &AlarmEvent) {
    let _ = state.alarms.changes.send(Arc::new(event.clone()));
    let Ok(broker) = state.broker() else { return };
    let topic = topic_of(&event.domain, &event.alarm);
    let payload = Bytes::from(serde_json::to_vec(event).unwrap_or_default());
    let standing = event.is_standing();
    let leading = state.peers.leadership().is_leader();
    let mut messages = Vec::with_capacity(2);
    if !standing {
        messages.push((Bytes::new(), true));
    }
    messages.push((payload, standing));
    for (payload, retain) in messages {
        let sent = if leading {
            broker.publish(&topic, payload, 1, retain).await
        } else {
            broker
                .deliver_from_peer(&topic, payload, 1, retain, event.at_ms)
                .await
        };
        if let Err(e) = sent {
            tracing::warn!(topic, error = %e, "cannot publish an alarm's change");
        }
    }
}

fn journal_entry(event: &AlarmEvent) -> AlarmJournalEntry {
    AlarmJournalEntry {
        id: 0,
        domain: event.domain.clone(),
        alarm: event.alarm.clone(),
        state: event.state.as_str().into(),
        previous: event.previous.as_str().into(),
        cause: event.cause.clone(),
        priority: event.priority.name().into(),
        tag: event.tag.clone(),
        value: event.value.to_string(),
        message: event.message.clone(),
        at_ms: event.at_ms,
        who: event.who.clone(),
        comment: event.comment.clone(),
    }
}
