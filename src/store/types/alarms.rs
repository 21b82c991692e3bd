//! What the store keeps of alarms: the journal of state changes, each alarm's state (so it
//! survives a restart), and the notifications waiting to be delivered.

/// One row of the alarm journal: a state change or an operator's action.
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmJournalEntry {
    /// Assigned by the store, increasing (0 on an entry not yet written).
    pub id: i64,
    pub domain: String,
    pub alarm: String,
    pub state: String,
    pub previous: String,
    /// What changed it: `raised`, `cleared`, `acknowledge`, `shelve`, …
    pub cause: String,
    pub priority: String,
    pub tag: String,
    /// The tag's value at the change, as JSON text.
    pub value: String,
    pub message: String,
    pub at_ms: i64,
    pub who: Option<String>,
    pub comment: Option<String>,
}

/// Which journal entries to list; every filter is optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JournalQuery {
    pub alarm: Option<String>,
    pub state: Option<String>,
    pub priority: Option<String>,
    pub who: Option<String>,
    pub from_ms: Option<i64>,
    pub to_ms: Option<i64>,
    /// Entries older than this id only (the next page of a newest-first list).
    pub before_id: Option<i64>,
    pub limit: usize,
}

/// An alarm's state to keep (`state`: the engine's JSON) or forget (`None`).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAlarmState {
    pub domain: String,
    pub alarm: String,
    pub state: Option<String>,
}

/// A notification waiting to be delivered (a webhook call or an e-mail), retried until it is.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedNotification {
    /// Assigned by the writer, increasing.
    pub id: i64,
    pub domain: String,
    /// The `alarm_notifications` record it is for.
    pub pipeline: String,
    /// `webhook` or `email`.
    pub channel: String,
    /// What to deliver, as the pipeline's JSON.
    pub body: String,
    pub attempts: i64,
    /// When to try next (epoch ms).
    pub due_ms: i64,
}
