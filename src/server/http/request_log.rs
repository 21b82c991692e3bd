//! The request log: the most recent requests (time, correlation id, method, route template,
//! status, user, domain, duration) kept in a bounded in-memory ring, written by `observe` for
//! every routed request. Nothing of a request's query string or body is kept, so no key or
//! password can land here. `GET /svc/logs` is `routes::logs`.

use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Mutex;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LogEntry {
    /// RFC 3339 UTC with milliseconds, when the request arrived.
    pub time: String,
    pub correlation_id: String,
    pub method: String,
    /// The route template (`/svc/{target}`), not the path, so ids and names stay out of it;
    /// `null` for requests that matched no route.
    pub route: Option<String>,
    pub status: u16,
    /// The authenticated user's id and name, when the request carried a valid credential.
    pub user_id: Option<String>,
    pub username: Option<String>,
    pub domain: String,
    pub duration_ms: f64,
}

/// The last `capacity` requests, oldest first.
pub struct RequestLog {
    capacity: usize,
    entries: Mutex<VecDeque<LogEntry>>,
}

impl RequestLog {
    pub fn new(capacity: usize) -> RequestLog {
        RequestLog {
            capacity,
            entries: Mutex::new(VecDeque::with_capacity(capacity.min(1024))),
        }
    }

    pub fn push(&self, entry: LogEntry) {
        if self.capacity == 0 {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= self.capacity {
                entries.pop_front();
            }
            entries.push_back(entry);
        }
    }

    /// The entries `keep` accepts, newest first, at most `limit`.
    pub fn select(&self, keep: impl Fn(&LogEntry) -> bool, limit: usize) -> Vec<LogEntry> {
        let Ok(entries) = self.entries.lock() else {
            return Vec::new();
        };
        entries
            .iter()
            .rev()
            .filter(|e| keep(e))
            .take(limit)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_only_the_newest() {
        let log = RequestLog::new(3);
        for i in 0..5u16 {
            log.push(LogEntry {
                time: format!("2026-01-01T00:00:0{i}.000Z"),
                correlation_id: i.to_string(),
                method: "GET".into(),
                route: None,
                status: 200 + i,
                user_id: None,
                username: None,
                domain: "svc_admin".into(),
                duration_ms: 1.0,
            });
        }
        let all = log.select(|_| true, 10);
        let ids: Vec<&str> = all.iter().map(|e| e.correlation_id.as_str()).collect();
        assert_eq!(ids, ["4", "3", "2"]);
    }
}
