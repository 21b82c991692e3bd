//! The audit trail on PostgreSQL: the same rows as SQLite's, filtered by one prepared
//! statement whose absent filters are NULL parameters.

use super::PgStore;
use crate::store::interface::AuditTrail;
use crate::store::types::{AuditEntry, AuditFilter};
use crate::store::StoreResult;

impl AuditTrail for PgStore {
    fn record_audit(&self, entry: &AuditEntry) -> StoreResult<()> {
        self.execute(
            "INSERT INTO audit_log (time, domain, user_id, username, via, action, \
             resource_type, resource_id, summary, correlation_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                &entry.time,
                &entry.domain,
                &entry.user_id,
                &entry.username,
                &entry.via,
                &entry.action,
                &entry.resource_type,
                &entry.resource_id,
                &entry.summary.to_string(),
                &entry.correlation_id,
            ],
        )?;
        Ok(())
    }

    /// Entries matching `filter`, newest first.
    fn list_audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
        let rows = self.query(
            "SELECT id, time, domain, user_id, username, via, action, resource_type, \
             resource_id, summary, correlation_id FROM audit_log \
             WHERE ($1::text IS NULL OR domain = $1) AND ($2::text IS NULL OR time >= $2) \
             AND ($3::text IS NULL OR time <= $3) \
             AND ($4::text IS NULL OR user_id = $4 OR username = $4) \
             AND ($5::text IS NULL OR resource_type = $5) AND ($6::text IS NULL OR action = $6) \
             ORDER BY time DESC, id DESC LIMIT $7 OFFSET $8",
            &[
                &filter.domain,
                &filter.since,
                &filter.until,
                &filter.user,
                &filter.resource_type,
                &filter.action,
                &i64::from(filter.limit),
                &i64::from(filter.offset),
            ],
        )?;
        Ok(rows
            .iter()
            .map(|r| AuditEntry {
                id: r.get(0),
                time: r.get(1),
                domain: r.get(2),
                user_id: r.get(3),
                username: r.get(4),
                via: r.get(5),
                action: r.get(6),
                resource_type: r.get(7),
                resource_id: r.get(8),
                summary: serde_json::from_str(r.get(9)).unwrap_or(serde_json::Value::Null),
                correlation_id: r.get(10),
            })
            .collect())
    }

    /// Deletes entries older than `before` (RFC 3339); returns how many went.
    fn delete_audit_before(&self, before: &str) -> StoreResult<usize> {
        Ok(self.execute("DELETE FROM audit_log WHERE time < $1", &[&before])? as usize)
    }
}
