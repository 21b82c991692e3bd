//! The audit trail: one entry per successful administrative change (who, what, when, where).

use crate::store::types::{AuditEntry, AuditFilter};
use crate::store::StoreResult;

/// Keeps and lists the audit trail.
pub trait AuditTrail {
    /// Appends one entry.
    fn record_audit(&self, entry: &AuditEntry) -> StoreResult<()>;
    /// The entries matching `filter`, newest first.
    fn list_audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>>;
    /// Deletes the entries older than `before` (RFC 3339); how many went.
    fn delete_audit_before(&self, before: &str) -> StoreResult<usize>;
}
