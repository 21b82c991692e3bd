//! The audit trail: one row per successful administrative change (who, what, when, where),
//! queried by `GET /svc/audit` and thinned by the `audit_retention` sweep.

use super::{SqliteStore, StoreResult};
use crate::store::interface::AuditTrail;
use crate::store::types::*;
use rusqlite::{params_from_iter, types::Value as SqlValue};

impl AuditTrail for SqliteStore {
    fn record_audit(&self, entry: &AuditEntry) -> StoreResult<()> {
        self.conn()?
            .prepare_cached(
                "INSERT INTO audit_log (time, domain, user_id, username, via, action, \
                 resource_type, resource_id, summary, correlation_id) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(rusqlite::params![
                entry.time,
                entry.domain,
                entry.user_id,
                entry.username,
                entry.via,
                entry.action,
                entry.resource_type,
                entry.resource_id,
                entry.summary.to_string(),
                entry.correlation_id,
            ])?;
        Ok(())
    }

    /// Entries matching `filter`, newest first.
    fn list_audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
        let mut clauses = Vec::new();
        let mut args: Vec<SqlValue> = Vec::new();
        let mut add = |clause: &str, value: &str| {
            args.push(SqlValue::Text(value.to_string()));
            clauses.push(clause.replace('?', &format!("?{}", args.len())));
        };
        if let Some(v) = &filter.domain {
            add("domain = ?", v);
        }
        if let Some(v) = &filter.since {
            add("time >= ?", v);
        }
        if let Some(v) = &filter.until {
            add("time <= ?", v);
        }
        if let Some(v) = &filter.user {
            args.push(SqlValue::Text(v.clone()));
            let n = args.len();
            clauses.push(format!("(user_id = ?{n} OR username = ?{n})"));
        }
        if let Some(v) = &filter.resource_type {
            args.push(SqlValue::Text(v.clone()));
            clauses.push(format!("resource_type = ?{}", args.len()));
        }
        if let Some(v) = &filter.action {
            args.push(SqlValue::Text(v.clone()));
            clauses.push(format!("action = ?{}", args.len()));
        }
        let filter_sql = if clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", clauses.join(" AND "))
        };
        args.push(SqlValue::Integer(i64::from(filter.limit)));
        args.push(SqlValue::Integer(i64::from(filter.offset)));
        let sql = format!(
            "SELECT id, time, domain, user_id, username, via, action, resource_type, \
             resource_id, summary, correlation_id FROM audit_log {filter_sql} \
             ORDER BY time DESC, id DESC LIMIT ?{} OFFSET ?{}",
            args.len() - 1,
            args.len()
        );
        let conn = self.conn()?;
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map(params_from_iter(args), |r| {
            let summary: String = r.get(9)?;
            Ok(AuditEntry {
                id: r.get(0)?,
                time: r.get(1)?,
                domain: r.get(2)?,
                user_id: r.get(3)?,
                username: r.get(4)?,
                via: r.get(5)?,
                action: r.get(6)?,
                resource_type: r.get(7)?,
                resource_id: r.get(8)?,
                summary: serde_json::from_str(&summary).unwrap_or(serde_json::Value::Null),
                correlation_id: r.get(10)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Deletes entries older than `before` (RFC 3339); returns how many went.
    fn delete_audit_before(&self, before: &str) -> StoreResult<usize> {
        Ok(self
            .conn()?
            .execute("DELETE FROM audit_log WHERE time < ?1", [before])?)
    }
}
