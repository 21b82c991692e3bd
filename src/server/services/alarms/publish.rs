//! Carrying out what an evaluation step changed, on the leading instance: each change on
//! `$SYS/svc/alarms/<domain>/<alarm>` (retained while the alarm is not normal; a return to
//! normal clears the retained copy), on the Server-Sent Events stream, to the notification
//! pipelines and to the other instances, at once; the journal entries and the states follow
//! through the journal writer. Nothing here waits for the disk, so a write that stalls (a WAL
//! checkpoint) stays out of the value → event latency.

use super::journal::Journal;
use super::mirror;
use crate::alarms::engine::Change;
use crate::alarms::AlarmEvent;
use crate::broker::Stored;
use crate::server::AppState;
use crate::store::{AlarmJournalEntry, StoredAlarmState};
use bytes::Bytes;
use std::sync::Arc;

/// The topic an alarm's changes are published on.
pub fn topic_of(domain: &str, alarm: &str) -> String {
    format!("$SYS/svc/alarms/{domain}/{alarm}")
}

/// Announces `changes` and returns what the journal writer keeps of them, to be written once
/// the announcements' retained copies are stored.
pub(super) async fn carry_out(state: &AppState, changes: Vec<Change>) -> Journal {
    let mut journal = Journal::default();
    if changes.is_empty() {
        return journal;
    }
    journal.entries = changes.iter().map(|c| journal_entry(&c.event)).collect();
    journal.states = changes
        .iter()
        .map(|c| StoredAlarmState {
            domain: c.event.domain.clone(),
            alarm: c.event.alarm.clone(),
            state: c.state.as_ref().and_then(|s| serde_json::to_string(s).ok()),
        })
        .collect();
    for change in &changes {
        journal
            .announced
            .extend(announce(state, &change.event).await);
    }
    let events: Vec<AlarmEvent> = changes.iter().map(|c| c.event.clone()).collect();
    state.notifier.offer(&events);
    mirror::tell(state, &changes).await;
    journal
}

/// Publishes one change on MQTT (to this instance's subscribers and retained messages; a
/// follower announces what the leader told it) and on the event stream, and returns what
/// resolves once the broker stored it.
pub(super) async fn announce(state: &AppState, event: &AlarmEvent) -> Option<Stored> {
    let _ = state.alarms.changes.send(Arc::new(event.clone()));
    let broker = state.broker().ok()?;
    let topic = topic_of(&event.domain, &event.alarm);
    let payload = Bytes::from(serde_json::to_vec(event).unwrap_or_default());
    let standing = event.is_standing();
    let mut messages = Vec::with_capacity(2);
    if !standing {
        // Clears the retained copy; subscribers then hear the return to normal.
        messages.push((topic.clone(), Bytes::new(), true));
    }
    messages.push((topic, payload, standing));
    Some(broker.announce(messages, event.at_ms).await)
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
