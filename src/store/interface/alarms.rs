//! The store's side of alarms: the journal of every state change, each alarm's current state
//! (so active alarms survive a restart, and a new leading instance carries on where the last
//! stopped), and the durable queue of notifications.

use crate::store::types::{AlarmJournalEntry, JournalQuery, QueuedNotification, StoredAlarmState};
use crate::store::StoreResult;

pub trait Alarms {
    /// Appends `entries` to the journal and keeps or forgets `states`, in one transaction.
    fn alarms_commit(
        &self,
        entries: &[AlarmJournalEntry],
        states: &[StoredAlarmState],
    ) -> StoreResult<()>;
    /// Every kept alarm state (each with `state` set).
    fn alarm_states_load(&self) -> StoreResult<Vec<StoredAlarmState>>;
    /// `domain`'s journal entries matching `query`, newest first, at most `query.limit`.
    fn alarm_journal_list(
        &self,
        domain: &str,
        query: &JournalQuery,
    ) -> StoreResult<Vec<AlarmJournalEntry>>;
    /// Deletes journal entries older than `before_ms`; returns how many.
    fn alarm_journal_prune(&self, before_ms: i64) -> StoreResult<u64>;
    /// Adds notifications to the queue (or replaces those with the same id) and deletes the
    /// delivered or abandoned ones (by id), in one transaction.
    fn notification_queue_write(
        &self,
        upserts: &[QueuedNotification],
        deletes: &[i64],
    ) -> StoreResult<()>;
    /// Every queued notification, oldest first.
    fn notification_queue_load(&self) -> StoreResult<Vec<QueuedNotification>>;
    /// Sets (or replaces) the write-only SMTP password of pipeline record `pipeline` (its key)
    /// of `domain`.
    fn notification_password_set(
        &self,
        domain: &str,
        pipeline: &str,
        password: &str,
    ) -> StoreResult<()>;
    /// Forgets the SMTP password of pipeline record `pipeline` of `domain` (none: nothing).
    fn notification_password_clear(&self, domain: &str, pipeline: &str) -> StoreResult<()>;
    /// The SMTP password of pipeline record `pipeline` of `domain`, if one is set.
    fn notification_password(&self, domain: &str, pipeline: &str) -> StoreResult<Option<String>>;
}
