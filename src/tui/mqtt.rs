//! The MQTT side of the monitor: a rumqttc client on a background thread that connects to the
//! embedded broker (TCP or WebSocket), subscribes on every CONNACK (so a broker restart is
//! survived), reconnects with exponential backoff, and sends connection states, each
//! subscription's acknowledgement (the moment to read the server's last values) and messages
//! to the UI over a bounded channel.

use rumqttc::{Client, ConnectionError, Event, MqttOptions, Packet, QoS, Transport};
use std::sync::mpsc::SyncSender;
use std::time::Duration;

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct MqttTarget {
    pub host: String,
    pub port: u16,
    pub websocket: bool,
    /// MQTT password: an API key or a JWT (the username is informational).
    pub password: Option<String>,
    pub filter: String,
}

impl MqttTarget {
    /// `mqtt://host:port` or `ws://host:port/mqtt`, as shown in the status bar.
    pub fn url(&self) -> String {
        if self.websocket {
            format!("ws://{}:{}/mqtt", self.host, self.port)
        } else {
            format!("mqtt://{}:{}", self.host, self.port)
        }
    }
}

/// The broker connection as the status bar shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum ConnState {
    Connecting,
    Connected,
    /// Lost or refused; the next attempt follows after `retry_in`.
    Disconnected {
        error: String,
        retry_in: Duration,
    },
}

/// What the background thread reports.
#[derive(Debug, Clone)]
pub enum MqttEvent {
    State(ConnState),
    /// The broker acknowledged the subscription: every value set from now on arrives here, so
    /// the server's last values read now miss nothing.
    Subscribed,
    Message {
        topic: String,
        payload: Vec<u8>,
        retain: bool,
        qos: u8,
    },
}

/// Shortest and longest pause between connection attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(10);

/// Starts the client thread. It ends when the receiving side of `events` is dropped.
pub fn spawn(target: MqttTarget, events: SyncSender<MqttEvent>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("svc-tui-mqtt".into())
        .spawn(move || run(target, events))
        .map(|_| ())
}

fn options(target: &MqttTarget) -> MqttOptions {
    let id = format!(
        "svc-tui-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    );
    let mut options = if target.websocket {
        let mut o = MqttOptions::new(id, target.url(), target.port);
        o.set_transport(Transport::Ws);
        o
    } else {
        MqttOptions::new(id, target.host.clone(), target.port)
    };
    options
        .set_keep_alive(Duration::from_secs(10))
        .set_clean_session(true)
        // The broker accepts packets up to 1 MiB; take anything it forwards.
        .set_max_packet_size(2 << 20, 64 << 10);
    if let Some(password) = &target.password {
        options.set_credentials("svc-tui", password.clone());
    }
    options
}

fn run(target: MqttTarget, events: SyncSender<MqttEvent>) {
    let (client, mut connection) = Client::new(options(&target), 64);
    let mut backoff = BACKOFF_MIN;
    if events
        .send(MqttEvent::State(ConnState::Connecting))
        .is_err()
    {
        return;
    }
    for event in connection.iter() {
        let report = match event {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                backoff = BACKOFF_MIN;
                // Clean session: every (re)connection subscribes again. QoS 2 lets each message
                // arrive with the QoS its publisher used.
                let _ = client.try_subscribe(target.filter.clone(), QoS::ExactlyOnce);
                Some(MqttEvent::State(ConnState::Connected))
            }
            Ok(Event::Incoming(Packet::SubAck(_))) => Some(MqttEvent::Subscribed),
            Ok(Event::Incoming(Packet::Publish(publish))) => Some(MqttEvent::Message {
                topic: publish.topic,
                payload: publish.payload.to_vec(),
                retain: publish.retain,
                qos: publish.qos as u8,
            }),
            Ok(_) => None,
            Err(ConnectionError::RequestsDone) => return,
            Err(error) => {
                let state = ConnState::Disconnected {
                    error: describe(&error),
                    retry_in: backoff,
                };
                if events.send(MqttEvent::State(state)).is_err() {
                    return;
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(BACKOFF_MAX);
                Some(MqttEvent::State(ConnState::Connecting))
            }
        };
        if let Some(report) = report {
            if events.send(report).is_err() {
                return;
            }
        }
    }
}

/// A one-line reason for the status bar.
fn describe(error: &ConnectionError) -> String {
    match error {
        ConnectionError::ConnectionRefused(code) => format!("refused by the broker: {code:?}"),
        ConnectionError::Io(e) => e.to_string(),
        other => other.to_string(),
    }
}
