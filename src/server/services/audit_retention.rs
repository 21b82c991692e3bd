//! The `audit_retention` sweep: audit entries and alarm journal entries older than the setting
//! are deleted, checked often enough for short retentions. The alarm journal is an audit trail
//! of the plant's operation, kept as long as the other one.

use crate::server::AppState;
use crate::time::format_rfc3339;
use std::time::Duration;

/// Deletes audit entries older than `retention`, checking often enough for short retentions.
pub fn spawn_retention(state: &AppState) {
    let retention = state.settings.audit_retention;
    let every = (retention / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let store = state.store.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        loop {
            ticks.tick().await;
            let Ok(keep) = chrono::Duration::from_std(retention) else {
                return;
            };
            let cutoff = chrono::Utc::now() - keep;
            let before = format_rfc3339(cutoff);
            match store.run(move |s| s.delete_audit_before(&before)).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "audit retention"),
                Err(e) => tracing::warn!(error = %e, "audit retention failed"),
            }
            let before_ms = cutoff.timestamp_millis();
            match store.run(move |s| s.alarm_journal_prune(before_ms)).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "alarm journal retention"),
                Err(e) => tracing::warn!(error = %e, "alarm journal retention failed"),
            }
        }
    });
}
