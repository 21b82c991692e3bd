//! What a kind of connector (`opcua`, `modbus`) implements, and the types the supervisor and a
//! kind exchange. A new kind is one implementation of [`Kind`] (its settings, its point
//! addresses, how to connect) and one line in [`super::KINDS`]; everything else (records,
//! tags, scaling, deadbands, reconnects, the watchdog, status, writes from REST and MQTT) is
//! shared.

use crate::store::Quality;
use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// One kind of connector.
#[async_trait]
pub trait Kind: Send + Sync + 'static {
    /// The record's `kind`: `opcua`, `modbus`.
    fn name(&self) -> &'static str;

    /// Checks the record's `settings` object and fills in its defaults (the sentence of a 400,
    /// naming the field as `settings.<name>`, otherwise).
    fn check_settings(&self, settings: &mut Map<String, Value>) -> Result<(), String>;

    /// Checks one point's `address` object and fills in its defaults (the sentence of a 400,
    /// naming the field as `points[<index>].address.<member>`, otherwise); `writable` is the
    /// point's, so an address that cannot be written (a Modbus input register) is refused.
    fn check_address(
        &self,
        index: usize,
        address: &mut Map<String, Value>,
        writable: bool,
    ) -> Result<(), String>;

    /// Connects to the device (within the settings' timeout) and readies the points. `Err`
    /// says why it could not; the supervisor retries after its backoff.
    async fn connect(&self, target: &Target) -> Result<Box<dyn Link>, Failure>;

    /// Whether connections need svc's own [`Identity`] and the domain's trust list.
    fn uses_certificates(&self) -> bool {
        false
    }

    /// Makes a new application instance certificate for svc (once per store: the supervisor
    /// keeps the first one made). `application_uri` names this installation.
    fn new_identity(&self, application_uri: &str) -> Result<Identity, String> {
        let _ = application_uri;
        Err(format!("a {} connector uses no certificate", self.name()))
    }

    /// What an administrator needs to recognise a server certificate (DER) this kind met:
    /// subject, application URI, validity; `None` when the kind does not know it.
    fn describe_certificate(&self, der: &[u8]) -> Option<Value> {
        let _ = der;
        None
    }

    /// One level of the device's address space under `node` (its root when `None`).
    async fn browse(
        &self,
        target: &Target,
        node: Option<&str>,
    ) -> Result<Vec<BrowseEntry>, Failure> {
        let _ = (target, node);
        Err(Failure::new(
            FailureKind::Protocol,
            format!("a {} connector has no address space to browse", self.name()),
        ))
    }
}

/// A live connection, as [`Kind::connect`] made it.
#[async_trait]
pub trait Link: Send {
    /// What the device says of itself (for `POST /svc/connectors/test`): product, version,
    /// endpoint, whatever the protocol tells.
    fn description(&self) -> Value;

    /// Reads the points (subscriptions or polls) into `sink` and carries out the writes that
    /// arrive on `writes`, until the connection fails or stalls (the kind's own watchdog:
    /// missing keep-alives or publish responses, requests that keep timing out). Returns why.
    async fn run(
        self: Box<Self>,
        sink: Arc<dyn Sink>,
        writes: &mut mpsc::Receiver<Write>,
    ) -> Failure;
}

/// Where a link delivers what it reads (never blocks: the supervisor's sink queues).
pub trait Sink: Send + Sync {
    /// A value read from point `point` (its index in [`Target::points`]), raw as the device
    /// holds it: scale, offset and deadband are applied after.
    fn reading(&self, point: usize, reading: Reading);
    /// Point `point` cannot be read (an exception response, a bad node id): its tag turns
    /// `bad` once and its status shows `error`; the other points go on.
    fn point_failed(&self, point: usize, error: String);
}

/// A value as the device reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub value: Value,
    /// The device's own time of the value (OPC UA's source timestamp), epoch ms; `None` when
    /// the protocol has none (Modbus): the time it was read.
    pub source_ms: Option<i64>,
    /// The device's status of the value (an OPC UA StatusCode; good for Modbus).
    pub quality: Quality,
}

/// A connector as its supervisor runs it: the checked record.
#[derive(Debug, Clone)]
pub struct Target {
    pub domain: String,
    pub name: String,
    /// The record's `settings`, as [`Kind::check_settings`] left them.
    pub settings: Map<String, Value>,
    /// The write-only secret (an OPC UA user's password), if one is set.
    pub password: Option<String>,
    pub points: Vec<PointAddress>,
    /// svc's own certificate, for the kinds that [use certificates](Kind::uses_certificates).
    pub identity: Option<Identity>,
    /// The server certificates (DER) the connector's domain trusts.
    pub trusted: Vec<Vec<u8>>,
    /// A directory of this connector's own under the data dir, for files a protocol crate
    /// insists on keeping on disk (a PKI directory); its content may be replaced at any time.
    pub scratch: std::path::PathBuf,
}

/// One point as its kind sees it.
#[derive(Debug, Clone)]
pub struct PointAddress {
    /// Its tag, for messages.
    pub tag: String,
    /// The address as [`Kind::check_address`] left it, kept as its JSON text: a connector of
    /// 10,000 points held them as maps in 7.6 MB (bench/connectors-history.md), as text in
    /// under 1 MB, and a kind reads them once per connection.
    address: Box<str>,
    pub writable: bool,
}

impl PointAddress {
    pub fn new(tag: String, address: &Map<String, Value>, writable: bool) -> PointAddress {
        PointAddress {
            tag,
            address: Value::Object(address.clone()).to_string().into_boxed_str(),
            writable,
        }
    }

    /// The address object.
    pub fn address(&self) -> Map<String, Value> {
        serde_json::from_str(&self.address).unwrap_or_default()
    }
}

/// A write to a point: the supervisor has scaled `value` back to the device's units.
#[derive(Debug)]
pub struct Write {
    pub point: usize,
    pub value: Value,
    pub reply: oneshot::Sender<Result<(), WriteError>>,
}

/// Why a write did not happen.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteError {
    /// The value cannot be written to the point as its type says (400).
    Invalid(String),
    /// The device refused it (422, with the device's reason or status code).
    Refused(String),
    /// The device cannot be reached, or did not answer in time (503).
    Unreachable(String),
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Invalid(s) | WriteError::Refused(s) | WriteError::Unreachable(s) => {
                f.write_str(s)
            }
        }
    }
}

/// Why a connection failed: the cause the status shows, the sentence, and the device's
/// status code when it gave one.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub kind: FailureKind,
    pub text: String,
    pub status_code: Option<String>,
    /// The certificate (DER) a server presented that the domain does not trust yet: the
    /// supervisor lists it for an administrator to trust or reject.
    pub untrusted_certificate: Option<Vec<u8>>,
}

impl Failure {
    pub fn new(kind: FailureKind, text: impl Into<String>) -> Failure {
        Failure {
            kind,
            text: text.into(),
            status_code: None,
            untrusted_certificate: None,
        }
    }

    pub fn with_status(mut self, code: impl Into<String>) -> Failure {
        self.status_code = Some(code.into());
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)?;
        if let Some(code) = &self.status_code {
            if !self.text.contains(code.as_str()) {
                write!(f, " ({code})")?;
            }
        }
        Ok(())
    }
}

/// The cause of a [`Failure`], as the status names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureKind {
    Dns,
    Tcp,
    /// Certificates, trust, security policy or mode.
    Security,
    /// The user identity was refused.
    Auth,
    Timeout,
    Protocol,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Dns => "dns",
            FailureKind::Tcp => "tcp",
            FailureKind::Security => "security",
            FailureKind::Auth => "auth",
            FailureKind::Timeout => "timeout",
            FailureKind::Protocol => "protocol",
        }
    }
}

/// One node of a device's address space, as `browse` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrowseEntry {
    pub node_id: String,
    pub browse_name: String,
    pub display_name: String,
    pub node_class: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_type: Option<String>,
    /// `read`, `write`, `read-write` for variables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_level: Option<String>,
    pub has_children: bool,
}

/// svc's application instance certificate and its private key, both DER.
#[derive(Clone, PartialEq, Eq)]
pub struct Identity {
    pub certificate: Vec<u8>,
    pub private_key: Vec<u8>,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key, not even in a debug print.
        write!(
            f,
            "Identity({} bytes of certificate)",
            self.certificate.len()
        )
    }
}
