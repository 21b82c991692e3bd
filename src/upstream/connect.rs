//! One connection attempt to an upstream broker, as a normalised record describes it: the
//! MQTT client options (MQTT 5 or 3.1.1 over TCP, TLS, WebSocket or secure WebSocket), and a
//! probe that connects, waits for the CONNACK and says how it went or why it failed (DNS,
//! TCP, TLS, authentication, protocol, timeout).

use super::tls::client_config;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;
use std::time::{Duration, Instant};

/// The largest packet an upstream connection sends or takes (svc's own broker default).
const MAX_PACKET: u32 = 1024 * 1024;

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
            Failure::Timeout(limit) => write!(
                f,
                "timeout: the upstream did not accept the connection within {} s",
                limit.as_secs()
            ),
        }
    }
}

/// The steps both rumqttc clients share (their types differ, their methods match): transport,
/// keep-alive and credentials from the record, connect, wait for the CONNACK and hand its
/// session-present flag to `$connected`; with `$hold` false that ends it (Ok), else the
/// connection is served until it fails, and the classified failure is the result.
macro_rules! session {
    ($target:ident, $options:ident, $client:ident, $event:ident, $packet:ident, $classify:expr,
     $hold:expr, $connected:expr $(, $adjust:expr)?) => {{
        $options.set_transport($target.transport()?);
        // rumqttc wants at least 5 s of MQTT 5 clients (config.rs enforces it for records).
        $options.set_keep_alive(Duration::from_secs($target.number("keep_alive").max(5)));
        if let Some(user) = $target.record.get("username").and_then(Value::as_str) {
            $options.set_credentials(user, $target.password.clone().unwrap_or_default());
        }
        let (client, mut events) = $client::new($options, 16);
        $( ($adjust)(&mut events); )?
        loop {
            match events.poll().await {
                Ok($event::Incoming($packet::ConnAck(ack))) => {
                    ($connected)(ack.session_present);
                    if !$hold {
                        let _ = client.try_disconnect();
                        return Ok(ack.session_present);
                    }
                }
                Ok(_) => {}
                Err(e) => return Err(($classify)(e)),
            }
        }
    }};
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

    fn text(&self, name: &str) -> &str {
        self.record
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    fn number(&self, name: &str) -> u64 {
        self.record
            .get(name)
            .and_then(Value::as_u64)
            .unwrap_or_default()
    }

    fn protocol(&self) -> &str {
        self.text("protocol")
    }

    fn is_v5(&self) -> bool {
        self.text("mqtt_version") != "3.1.1"
    }

    /// The broker address rumqttc wants: the host, or the URL for WebSocket transports.
    fn address(&self) -> String {
        let host = self.text("host");
        match self.protocol() {
            "ws" | "wss" => format!(
                "{}://{host}:{}{}",
                self.protocol(),
                self.number("port"),
                self.text("path")
            ),
            _ => host.to_string(),
        }
    }

    fn transport(&self) -> Result<rumqttc::Transport, Failure> {
        let tls = || {
            let config = client_config(self.record.get("tls").unwrap_or(&Value::Null))
                .map_err(Failure::Tls)?;
            Ok(rumqttc::TlsConfiguration::Rustls(std::sync::Arc::new(
                config,
            )))
        };
        Ok(match self.protocol() {
            "mqtts" => rumqttc::Transport::Tls(tls()?),
            "ws" => rumqttc::Transport::Ws,
            "wss" => rumqttc::Transport::Wss(tls()?),
            _ => rumqttc::Transport::Tcp,
        })
    }

    /// Connects, waits for the CONNACK (at most `limit`), and disconnects.
    pub async fn probe(&self, limit: Duration) -> Result<Probe, Failure> {
        let started = Instant::now();
        let session_present = tokio::time::timeout(limit, self.connect(limit, false, &mut |_| {}))
            .await
            .map_err(|_| Failure::Timeout(limit))??;
        let version = if self.is_v5() { "5" } else { "3.1.1" };
        Ok(Probe {
            latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            session_present,
            protocol: format!("{} {version}", self.protocol()),
        })
    }

    /// Connects (giving up on one attempt after `limit`), calls `connected` at the CONNACK and
    /// keeps the connection (pings included) until it fails; returns why it ended.
    pub async fn hold(&self, limit: Duration, connected: &mut (dyn FnMut(bool) + Send)) -> Failure {
        match self.connect(limit, true, connected).await {
            Err(failure) => failure,
            Ok(_) => Failure::Protocol("the connection ended".into()),
        }
    }

    async fn connect(
        &self,
        limit: Duration,
        hold: bool,
        connected: &mut (dyn FnMut(bool) + Send),
    ) -> Result<bool, Failure> {
        let port = u16::try_from(self.number("port")).unwrap_or(1883);
        let client_id = self.text("client_id");
        let clean = self.record.get("clean_start") != Some(&Value::Bool(false));
        if self.is_v5() {
            use rumqttc::v5::{mqttbytes::v5::Packet, AsyncClient, Event, MqttOptions};
            let mut options = MqttOptions::new(client_id, self.address(), port);
            options.set_clean_start(clean);
            options.set_max_packet_size(Some(MAX_PACKET));
            options.set_connection_timeout(limit.as_secs());
            if hold {
                let expiry = u32::try_from(self.number("session_expiry")).unwrap_or(u32::MAX);
                options.set_session_expiry_interval(Some(expiry));
            }
            session!(
                self,
                options,
                AsyncClient,
                Event,
                Packet,
                |e| classify_v5(e, limit),
                hold,
                connected
            )
        } else {
            use rumqttc::{AsyncClient, Event, MqttOptions, Packet};
            let mut options = MqttOptions::new(client_id, self.address(), port);
            options.set_clean_session(clean);
            options.set_max_packet_size(MAX_PACKET as usize, MAX_PACKET as usize);
            let set_timeout = |events: &mut rumqttc::EventLoop| {
                events
                    .network_options
                    .set_connection_timeout(limit.as_secs());
            };
            session!(
                self,
                options,
                AsyncClient,
                Event,
                Packet,
                |e| classify_v3(e, limit),
                hold,
                connected,
                set_timeout
            )
        }
    }
}

/// The cause of an I/O error while reaching the broker.
fn classify_io(e: &std::io::Error) -> Failure {
    let text = e.to_string();
    if text.contains("lookup") || text.contains("resolve") || text.contains("Name or service") {
        Failure::Dns(text)
    } else {
        Failure::Tcp(text)
    }
}

fn classify_v3(e: rumqttc::ConnectionError, limit: Duration) -> Failure {
    use rumqttc::{ConnectReturnCode as Code, ConnectionError as E};
    match e {
        E::Io(e) => classify_io(&e),
        E::Tls(e) => Failure::Tls(e.to_string()),
        E::ConnectionRefused(code) => match code {
            Code::BadUserNamePassword => Failure::Auth(4, "bad user name or password".into()),
            Code::NotAuthorized => Failure::Auth(5, "not authorized".into()),
            other => Failure::Protocol(format!("CONNACK refused: {other:?}")),
        },
        E::NetworkTimeout => Failure::Timeout(limit),
        other => Failure::Protocol(other.to_string()),
    }
}

fn classify_v5(e: rumqttc::v5::ConnectionError, limit: Duration) -> Failure {
    use rumqttc::v5::mqttbytes::v5::ConnectReturnCode as Code;
    use rumqttc::v5::ConnectionError as E;
    match e {
        E::Io(e) => classify_io(&e),
        E::Tls(e) => Failure::Tls(e.to_string()),
        E::ConnectionRefused(code) => match code {
            Code::BadUserNamePassword => Failure::Auth(0x86, "bad user name or password".into()),
            Code::NotAuthorized => Failure::Auth(0x87, "not authorized".into()),
            Code::Banned => Failure::Auth(0x8A, "banned".into()),
            Code::BadAuthenticationMethod => {
                Failure::Auth(0x8C, "bad authentication method".into())
            }
            other => Failure::Protocol(format!("CONNACK refused: {other:?}")),
        },
        E::Timeout(_) => Failure::Timeout(limit),
        other => Failure::Protocol(other.to_string()),
    }
}
