//! Where an upstream is, as a normalised record describes it (the [`Target`]: address,
//! protocol version, TLS, credentials, session settings), why a connection to it fails (the
//! [`Failure`]: DNS, TCP, TLS, authentication, protocol, a refused subscription, timeout),
//! and the probe of the test routes: connect, wait for the CONNACK, say how it went.

use super::session::{Open, Session};
use super::tls::client_config;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;
use std::time::{Duration, Instant};

/// How a successful probe went (`POST /svc/upstreams/test`).
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub latency_ms: u64,
    pub session_present: bool,
    /// `mqtt 5`, `mqtts 3.1.1`, `ws 5`, …
    pub protocol: String,
}

/// Why an upstream could not be reached or refused the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Dns(String),
    Tcp(String),
    Tls(String),
    /// The CONNACK refused the credentials (reason code and text).
    Auth(u8, String),
    Protocol(String),
    /// The SUBACK refused incoming bindings' filters (the sentence names them).
    Subscribe(String),
    Timeout(Duration),
}

impl Failure {
    /// The cause as the status names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Dns(_) => "dns",
            Failure::Tcp(_) => "tcp",
            Failure::Tls(_) => "tls",
            Failure::Auth(..) => "auth",
            Failure::Protocol(_) => "protocol",
            Failure::Subscribe(_) => "subscribe",
            Failure::Timeout(_) => "timeout",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Dns(e) => write!(f, "dns: the upstream's host name does not resolve ({e})"),
            Failure::Tcp(e) => write!(f, "tcp: the upstream cannot be reached ({e})"),
            Failure::Tls(e) => write!(f, "tls: the TLS handshake with the upstream failed ({e})"),
            Failure::Auth(code, text) => write!(
                f,
                "auth: the upstream refused the connection (reason 0x{code:02X} {text})"
            ),
            Failure::Protocol(e) => {
                write!(f, "protocol: the upstream broke the MQTT protocol ({e})")
            }
            Failure::Subscribe(e) => {
                write!(
                    f,
                    "subscribe: the upstream refused the bridge's subscription to {e}"
                )
            }
            Failure::Timeout(limit) => write!(
                f,
                "timeout: the upstream did not accept the connection within {} s",
                limit.as_secs()
            ),
        }
    }
}

/// Where and how to connect, read from a normalised upstream record.
pub struct Target {
    record: Map<String, Value>,
    password: Option<String>,
}

impl Target {
    pub fn new(record: Map<String, Value>, password: Option<String>) -> Target {
        Target { record, password }
    }

    pub(super) fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    pub(super) fn optional_text(&self, name: &str) -> Option<&str> {
        self.record.get(name).and_then(Value::as_str)
    }

    pub(super) fn flag(&self, name: &str) -> Option<bool> {
        self.record.get(name).and_then(Value::as_bool)
    }

    pub(super) fn text(&self, name: &str) -> &str {
        self.record
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub(super) fn number(&self, name: &str) -> u64 {
        self.record
            .get(name)
            .and_then(Value::as_u64)
            .unwrap_or_default()
    }

    pub(super) fn protocol(&self) -> &str {
        self.text("protocol")
    }

    pub(super) fn is_v5(&self) -> bool {
        self.text("mqtt_version") != "3.1.1"
    }

    /// The TLS client configuration of the record's `tls` object.
    pub(super) fn tls_config(&self) -> Result<tokio_rustls::rustls::ClientConfig, Failure> {
        client_config(self.record.get("tls").unwrap_or(&Value::Null)).map_err(Failure::Tls)
    }

    /// Connects, waits for the CONNACK (at most `limit`), and disconnects.
    pub async fn probe(&self, limit: Duration) -> Result<Probe, Failure> {
        let started = Instant::now();
        let how = Open::plain(limit, false, None);
        let session = Session::connect(self, &how).await?;
        let session_present = session.session_present;
        session.disconnect().await;
        let version = if self.is_v5() { "5" } else { "3.1.1" };
        Ok(Probe {
            latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            session_present,
            protocol: format!("{} {version}", self.protocol()),
        })
    }
}
