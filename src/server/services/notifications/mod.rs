//! Alarm notifications: the domains' pipelines (the `alarm_notifications` system table) that
//! turn alarm events into webhook calls and e-mails. Skeleton: the alarm service hands every
//! event here; delivery is built in its own change.

use crate::alarms::AlarmEvent;
use crate::server::error::ApiResult;
use crate::server::AppState;

#[derive(Default)]
pub struct Notifier {}

impl Notifier {
    /// Starts delivery (once the state exists; on the leading instance only).
    pub fn start(_state: &AppState) {}

    /// Takes the events of one evaluation step, in order (called on the leading instance).
    pub fn offer(&self, _events: &[AlarmEvent]) {}
}

/// Re-reads `domain`'s notification pipelines.
pub async fn reload_domain(_state: &AppState, _domain: &str) -> ApiResult<()> {
    Ok(())
}
