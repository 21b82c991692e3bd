//! A connector's status as `GET /svc/connectors/status` shows it and
//! `$SYS/svc/connectors/<domain>/<name>/state` carries it: the link's state since when, the
//! last failure and its cause, attempts and the next retry, the traffic, and every point's
//! last value time, quality and error.

use super::feed::PointStatus;
use super::kind::{Failure, FailureKind};
use serde::Serialize;

pub use crate::model::LinkState as State;

/// The last failure: its cause (`dns|tcp|security|auth|timeout|protocol`), the sentence,
/// the device's status code when it gave one, and when.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LastError {
    pub kind: FailureKind,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_code: Option<String>,
    pub at: String,
}

impl LastError {
    pub fn of(failure: &Failure) -> LastError {
        LastError {
            kind: failure.kind,
            text: failure.to_string(),
            status_code: failure.status_code.clone(),
            at: now(),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Status {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub state: State,
    pub since: String,
    pub last_error: Option<LastError>,
    /// Connection attempts since the last successful one.
    pub attempts: u32,
    pub next_retry: Option<String>,
    /// Values read from the device since the connector started.
    pub values_in: u64,
    /// Writes the device accepted, and writes that failed.
    pub writes: u64,
    pub write_errors: u64,
    /// What the device said of itself at the last connection.
    pub device: Option<serde_json::Value>,
    pub points: Vec<PointStatus>,
}

impl Status {
    pub fn new(id: String, name: String, kind: String, state: State) -> Status {
        Status {
            id,
            name,
            kind,
            state,
            since: now(),
            last_error: None,
            attempts: 0,
            next_retry: None,
            values_in: 0,
            writes: 0,
            write_errors: 0,
            device: None,
            points: Vec::new(),
        }
    }

    pub fn enter(&mut self, state: State) {
        if self.state != state {
            self.state = state;
            self.since = now();
        }
    }
}

pub fn now() -> String {
    crate::historian::format_ms(crate::time::now_ms())
}

/// Whether a failure needs a change before a retry can succeed (`error`) or may pass on its
/// own (`backoff`).
pub fn state_after(failure: &Failure) -> State {
    match failure.kind {
        FailureKind::Auth | FailureKind::Security | FailureKind::Protocol => {
            State::Error
        }
        FailureKind::Dns | FailureKind::Tcp | FailureKind::Timeout => State::Backoff,
    }
}
