//! MQTT test clients: rumqttc in both protocol versions over every listener, and the
//! `mosquitto_pub`/`mosquitto_sub` command-line clients, with waits that fail the test with a
//! description of what arrived instead.

use super::*;

/// How long any single MQTT wait may take before the test fails.
pub const MQTT_WAIT: Duration = Duration::from_secs(10);

/// MQTT protocol version of a test client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    V3,
    V5,
}

/// Which listener a test client uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// MQTT over TCP on the `mqtt` port.
    Tcp,
    /// MQTT over WebSocket on the `ws` port, at the given path (any path is accepted).
    Ws(&'static str),
    /// MQTT over WebSocket at `/mqtt` on the HTTP port.
    HttpMqtt,
}

/// Connection options of a test client.
#[derive(Clone, Debug)]
pub struct MqttOpts {
    pub proto: Proto,
    pub via: Via,
    pub client_id: String,
    /// `(username, password)`; `None` sends a CONNECT without credentials.
    pub credentials: Option<(String, String)>,
    /// v3: clean session; v5: clean start.
    pub clean: bool,
    /// v5 session expiry interval (seconds).
    pub session_expiry: Option<u32>,
    pub keep_alive_secs: u64,
}

impl MqttOpts {
    pub fn new(proto: Proto, via: Via, client_id: &str) -> MqttOpts {
        MqttOpts {
            proto,
            via,
            client_id: client_id.to_string(),
            credentials: None,
            clean: true,
            session_expiry: None,
            keep_alive_secs: 30,
        }
    }

    pub fn creds(mut self, username: &str, password: &str) -> MqttOpts {
        self.credentials = Some((username.to_string(), password.to_string()));
        self
    }

    /// A persistent session: v3 clean_session=false; v5 clean_start=false with expiry 1 h.
    pub fn persistent(mut self) -> MqttOpts {
        self.clean = false;
        if self.proto == Proto::V5 {
            self.session_expiry = Some(3600);
        }
        self
    }

    pub fn keep_alive(mut self, secs: u64) -> MqttOpts {
        self.keep_alive_secs = secs;
        self
    }
}

/// A received PUBLISH, the same for both protocol versions.
#[derive(Clone, Debug)]
pub struct Msg {
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
    pub retain: bool,
    /// MQTT 5 content-type property.
    pub content_type: Option<String>,
    /// MQTT 5 correlation data.
    pub correlation: Option<Vec<u8>>,
}

impl Msg {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.payload).into_owned()
    }
}

#[derive(Debug)]
enum MqttEv {
    ConnAck(Result<bool, String>),
    Publish(Msg),
    SubAck(Vec<Option<u8>>),
    PubAck(String),
    PubComp(String),
    OutDisconnect,
    ServerDisconnect(String),
    Closed(String),
}

enum MqttHandle {
    V3(rumqttc::AsyncClient),
    V5(rumqttc::v5::AsyncClient),
}

/// A real MQTT client (rumqttc) whose event loop runs in its own thread.
pub struct Mqtt {
    handle: MqttHandle,
    /// Dropping it stops the event loop and closes the connection.
    _stop: tokio::sync::oneshot::Sender<()>,
    rx: mpsc::Receiver<MqttEv>,
    /// Publishes received while waiting for something else.
    backlog: std::collections::VecDeque<Msg>,
    /// Why the connection ended, once it has.
    pub closed: Option<String>,
    pub session_present: bool,
    pub client_id: String,
}

/// Runs `$eventloop` on its own thread until the stop channel fires or its sender is dropped
/// (which closes the connection); `$step` maps poll results to reported events.
macro_rules! spawn_event_loop {
    ($eventloop:expr, $step:expr, $tx:expr, $stop:expr) => {{
        let mut eventloop = $eventloop;
        let tx: mpsc::Sender<MqttEv> = $tx;
        let mut stop: tokio::sync::oneshot::Receiver<()> = $stop;
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime for an MQTT client");
            rt.block_on(async move {
                loop {
                    let event = tokio::select! {
                        _ = &mut stop => break,
                        event = eventloop.poll() => event,
                    };
                    let (events, go_on) = $step(event);
                    for e in events {
                        if tx.send(e).is_err() {
                            return;
                        }
                    }
                    if !go_on {
                        break;
                    }
                }
            });
        });
    }};
}

fn qos3(q: u8) -> rumqttc::QoS {
    match q {
        0 => rumqttc::QoS::AtMostOnce,
        1 => rumqttc::QoS::AtLeastOnce,
        _ => rumqttc::QoS::ExactlyOnce,
    }
}

fn qos5(q: u8) -> rumqttc::v5::mqttbytes::QoS {
    use rumqttc::v5::mqttbytes::QoS;
    match q {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

impl Server {
    /// `host:port` of a listener from the `ready` line.
    pub fn listener(&self, name: &str) -> String {
        self.ready[name]
            .as_str()
            .unwrap_or_else(|| panic!("ready line has no `{name}`: {}", self.ready))
            .to_string()
    }

    /// The port of a listener from the `ready` line.
    pub fn listener_port(&self, name: &str) -> u16 {
        let addr = self.listener(name);
        addr.rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or_else(|| panic!("bad address `{addr}` for `{name}`"))
    }

    /// Connects a test client; panics with the reason if the broker refuses it.
    pub fn mqtt(&self, opts: MqttOpts) -> Mqtt {
        let what = format!(
            "{:?} {:?} client `{}`",
            opts.proto, opts.via, opts.client_id
        );
        self.try_mqtt(opts)
            .unwrap_or_else(|e| panic!("{what} could not connect: {e}"))
    }

    /// A connected admin client (username `admin` and its password).
    pub fn mqtt_admin(&self, proto: Proto, via: Via, client_id: &str) -> Mqtt {
        self.mqtt(MqttOpts::new(proto, via, client_id).creds("admin", ADMIN_PASSWORD))
    }

    /// Connects a test client; `Err` carries the refusal (CONNACK code or transport error).
    pub fn try_mqtt(&self, opts: MqttOpts) -> Result<Mqtt, String> {
        let (host, port) = match opts.via {
            Via::Tcp => ("127.0.0.1".to_string(), self.listener_port("mqtt")),
            Via::Ws(path) => (
                format!("ws://{}{path}", self.listener("ws")),
                self.listener_port("ws"),
            ),
            Via::HttpMqtt => (
                format!("ws://{}/mqtt", self.listener("http")),
                self.listener_port("http"),
            ),
        };
        let ws = !matches!(opts.via, Via::Tcp);
        connect_client(host, port, ws, opts)
    }
}

/// Connects a test client to any broker (`host` a WebSocket URL when `ws`); `Err` carries the
/// refusal (CONNACK code or transport error).
pub fn connect_client(host: String, port: u16, ws: bool, opts: MqttOpts) -> Result<Mqtt, String> {
    let (tx, rx) = mpsc::channel();
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let handle = match opts.proto {
        Proto::V3 => {
            let mut o = rumqttc::MqttOptions::new(opts.client_id.clone(), host, port);
            o.set_keep_alive(Duration::from_secs(opts.keep_alive_secs));
            o.set_clean_session(opts.clean);
            o.set_max_packet_size(1024 * 1024, 1024 * 1024);
            if let Some((u, p)) = &opts.credentials {
                o.set_credentials(u.clone(), p.clone());
            }
            if ws {
                o.set_transport(rumqttc::Transport::Ws);
            }
            let (client, eventloop) = rumqttc::AsyncClient::new(o, 1000);
            spawn_event_loop!(eventloop, step_v3, tx, stop_rx);
            MqttHandle::V3(client)
        }
        Proto::V5 => {
            let mut o = rumqttc::v5::MqttOptions::new(opts.client_id.clone(), host, port);
            o.set_keep_alive(Duration::from_secs(opts.keep_alive_secs));
            o.set_clean_start(opts.clean);
            o.set_max_packet_size(Some(1024 * 1024));
            if let Some((u, p)) = &opts.credentials {
                o.set_credentials(u.clone(), p.clone());
            }
            if let Some(expiry) = opts.session_expiry {
                let mut props = rumqttc::v5::mqttbytes::v5::ConnectProperties::new();
                props.session_expiry_interval = Some(expiry);
                props.max_packet_size = Some(1024 * 1024);
                o.set_connect_properties(props);
            }
            if ws {
                o.set_transport(rumqttc::Transport::Ws);
            }
            let (client, eventloop) = rumqttc::v5::AsyncClient::new(o, 1000);
            spawn_event_loop!(eventloop, step_v5, tx, stop_rx);
            MqttHandle::V5(client)
        }
    };
    let mut mqtt = Mqtt {
        handle,
        _stop: stop,
        rx,
        backlog: Default::default(),
        closed: None,
        session_present: false,
        client_id: opts.client_id.clone(),
    };
    match mqtt.rx.recv_timeout(MQTT_WAIT) {
        Ok(MqttEv::ConnAck(Ok(session_present))) => {
            mqtt.session_present = session_present;
            Ok(mqtt)
        }
        Ok(MqttEv::ConnAck(Err(e))) | Ok(MqttEv::Closed(e)) => Err(e),
        Ok(other) => Err(format!("expected CONNACK, got {other:?}")),
        Err(_) => Err(format!("no CONNACK within {MQTT_WAIT:?}")),
    }
}

/// The events one v3.1.1 poll result reports, and whether the loop goes on.
fn step_v3(event: Result<rumqttc::Event, rumqttc::ConnectionError>) -> (Vec<MqttEv>, bool) {
    use rumqttc::{Event, Outgoing, Packet};
    let ev = match event {
        Ok(Event::Incoming(Packet::ConnAck(ack))) => {
            if ack.code == rumqttc::ConnectReturnCode::Success {
                MqttEv::ConnAck(Ok(ack.session_present))
            } else {
                MqttEv::ConnAck(Err(format!("{:?}", ack.code)))
            }
        }
        Ok(Event::Incoming(Packet::Publish(p))) => MqttEv::Publish(Msg {
            topic: p.topic.clone(),
            payload: p.payload.to_vec(),
            qos: p.qos as u8,
            retain: p.retain,
            content_type: None,
            correlation: None,
        }),
        Ok(Event::Incoming(Packet::SubAck(ack))) => MqttEv::SubAck(
            ack.return_codes
                .iter()
                .map(|c| match c {
                    rumqttc::SubscribeReasonCode::Success(q) => Some(*q as u8),
                    rumqttc::SubscribeReasonCode::Failure => None,
                })
                .collect(),
        ),
        Ok(Event::Incoming(Packet::PubAck(_))) => MqttEv::PubAck("Success".into()),
        Ok(Event::Incoming(Packet::PubComp(_))) => MqttEv::PubComp("Success".into()),
        Ok(Event::Outgoing(Outgoing::Disconnect)) => MqttEv::OutDisconnect,
        Ok(_) => return (Vec::new(), true),
        Err(rumqttc::ConnectionError::ConnectionRefused(code)) => {
            return (vec![MqttEv::ConnAck(Err(format!("{code:?}")))], false)
        }
        Err(e) => return (vec![MqttEv::Closed(format!("{e:?}"))], false),
    };
    (vec![ev], true)
}

/// The events one MQTT 5 poll result reports, and whether the loop goes on.
fn step_v5(event: Result<rumqttc::v5::Event, rumqttc::v5::ConnectionError>) -> (Vec<MqttEv>, bool) {
    use rumqttc::v5::mqttbytes::v5::{
        ConnectReturnCode, Packet, PubRecReason, SubscribeReasonCode,
    };
    use rumqttc::v5::{ConnectionError, Event};
    use rumqttc::Outgoing;
    let ev = match event {
        Ok(Event::Incoming(Packet::ConnAck(ack))) => {
            if ack.code == ConnectReturnCode::Success {
                MqttEv::ConnAck(Ok(ack.session_present))
            } else {
                MqttEv::ConnAck(Err(format!("{:?}", ack.code)))
            }
        }
        Ok(Event::Incoming(Packet::Publish(p))) => MqttEv::Publish(Msg {
            topic: String::from_utf8_lossy(&p.topic).into_owned(),
            payload: p.payload.to_vec(),
            qos: p.qos as u8,
            retain: p.retain,
            content_type: p.properties.as_ref().and_then(|p| p.content_type.clone()),
            correlation: p
                .properties
                .as_ref()
                .and_then(|p| p.correlation_data.as_ref().map(|c| c.to_vec())),
        }),
        Ok(Event::Incoming(Packet::SubAck(ack))) => MqttEv::SubAck(
            ack.return_codes
                .iter()
                .map(|c| match c {
                    SubscribeReasonCode::Success(q) => Some(*q as u8),
                    _ => None,
                })
                .collect(),
        ),
        Ok(Event::Incoming(Packet::PubAck(ack))) => MqttEv::PubAck(format!("{:?}", ack.reason)),
        Ok(Event::Incoming(Packet::PubComp(comp))) => MqttEv::PubComp(format!("{:?}", comp.reason)),
        // A refused QoS 2 publish ends at its PUBREC: report it where the PUBCOMP would be.
        Ok(Event::Incoming(Packet::PubRec(rec)))
            if !matches!(
                rec.reason,
                PubRecReason::Success | PubRecReason::NoMatchingSubscribers
            ) =>
        {
            MqttEv::PubComp(format!("{:?}", rec.reason))
        }
        Ok(Event::Incoming(Packet::Disconnect(d))) => {
            MqttEv::ServerDisconnect(format!("{:?}", d.reason_code))
        }
        Ok(Event::Outgoing(Outgoing::Disconnect)) => MqttEv::OutDisconnect,
        Ok(_) => return (Vec::new(), true),
        Err(ConnectionError::ConnectionRefused(code)) => {
            return (vec![MqttEv::ConnAck(Err(format!("{code:?}")))], false)
        }
        Err(e) => return (vec![MqttEv::Closed(format!("{e:?}"))], false),
    };
    (vec![ev], true)
}

impl Mqtt {
    /// Receives the next non-publish event (publishes go to the backlog) within `within`.
    fn next_control(&mut self, within: Duration, what: &str) -> MqttEv {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(MqttEv::Publish(m)) => self.backlog.push_back(m),
                Ok(MqttEv::Closed(e)) => {
                    self.closed = Some(e.clone());
                    panic!(
                        "client `{}`: connection closed ({e}) while waiting for {what}",
                        self.client_id
                    );
                }
                Ok(ev) => return ev,
                Err(_) => panic!("client `{}`: no {what} within {within:?}", self.client_id),
            }
        }
    }

    /// Subscribes and returns the granted QoS (`None` when the broker refused the filter).
    pub fn subscribe(&mut self, filter: &str, qos: u8) -> Option<u8> {
        let sent = match &self.handle {
            MqttHandle::V3(c) => c
                .try_subscribe(filter, qos3(qos))
                .map_err(|e| e.to_string()),
            MqttHandle::V5(c) => c
                .try_subscribe(filter, qos5(qos))
                .map_err(|e| e.to_string()),
        };
        sent.unwrap_or_else(|e| panic!("client `{}`: subscribe failed: {e}", self.client_id));
        match self.next_control(MQTT_WAIT, &format!("SUBACK for `{filter}`")) {
            MqttEv::SubAck(codes) => codes.first().copied().flatten(),
            other => panic!(
                "client `{}`: expected SUBACK for `{filter}`, got {other:?}",
                self.client_id
            ),
        }
    }

    /// Publishes; for QoS 1/2 waits for PUBACK/PUBCOMP and returns its reason (v3: "Success").
    pub fn publish(
        &mut self,
        topic: &str,
        payload: impl Into<Vec<u8>>,
        qos: u8,
        retain: bool,
    ) -> String {
        self.publish_ct(topic, payload, qos, retain, None)
    }

    /// [`Mqtt::publish`] with an MQTT 5 content-type property (v5 clients only).
    pub fn publish_ct(
        &mut self,
        topic: &str,
        payload: impl Into<Vec<u8>>,
        qos: u8,
        retain: bool,
        content_type: Option<&str>,
    ) -> String {
        let payload: Vec<u8> = payload.into();
        let sent = match &self.handle {
            MqttHandle::V3(c) => {
                assert!(content_type.is_none(), "content type needs MQTT 5");
                c.try_publish(topic, qos3(qos), retain, payload)
                    .map_err(|e| e.to_string())
            }
            MqttHandle::V5(c) => {
                let props = rumqttc::v5::mqttbytes::v5::PublishProperties {
                    content_type: content_type.map(str::to_string),
                    ..Default::default()
                };
                c.try_publish_with_properties(topic, qos5(qos), retain, payload, props)
                    .map_err(|e| e.to_string())
            }
        };
        sent.unwrap_or_else(|e| panic!("client `{}`: publish failed: {e}", self.client_id));
        match qos {
            0 => "Success".into(),
            1 => match self.next_control(MQTT_WAIT, &format!("PUBACK for `{topic}`")) {
                MqttEv::PubAck(reason) => reason,
                other => panic!("expected PUBACK for `{topic}`, got {other:?}"),
            },
            _ => match self.next_control(MQTT_WAIT, &format!("PUBCOMP for `{topic}`")) {
                MqttEv::PubComp(reason) => reason,
                other => panic!("expected PUBCOMP for `{topic}`, got {other:?}"),
            },
        }
    }

    /// An MQTT 5 request: a QoS 1 publish with a response topic and correlation data; returns
    /// the PUBACK's reason.
    pub fn publish_request(
        &mut self,
        topic: &str,
        payload: impl Into<Vec<u8>>,
        response_topic: &str,
        correlation: &[u8],
    ) -> String {
        let MqttHandle::V5(c) = &self.handle else {
            panic!("a response topic needs MQTT 5");
        };
        let props = rumqttc::v5::mqttbytes::v5::PublishProperties {
            response_topic: Some(response_topic.to_string()),
            correlation_data: Some(correlation.to_vec().into()),
            ..Default::default()
        };
        let payload: Vec<u8> = payload.into();
        c.try_publish_with_properties(topic, qos5(1), false, payload, props)
            .unwrap_or_else(|e| panic!("client `{}`: publish failed: {e}", self.client_id));
        match self.next_control(MQTT_WAIT, &format!("PUBACK for `{topic}`")) {
            MqttEv::PubAck(reason) => reason,
            other => panic!("expected PUBACK for `{topic}`, got {other:?}"),
        }
    }

    /// The next received publish within `within`, or `None`.
    pub fn next_publish(&mut self, within: Duration) -> Option<Msg> {
        if let Some(m) = self.backlog.pop_front() {
            return Some(m);
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(MqttEv::Publish(m)) => return Some(m),
                Ok(MqttEv::Closed(e)) => {
                    self.closed = Some(e);
                    return None;
                }
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Every publish received up to and including the first one on `topic`; panics (listing
    /// what did arrive) if none arrives within [`MQTT_WAIT`].
    pub fn collect_until(&mut self, topic: &str) -> Vec<Msg> {
        self.collect_until_match(topic, |m| m.topic == topic)
    }

    /// Every publish received up to and including the first one matching `done`; panics
    /// (naming `what` and listing what did arrive) if none arrives within [`MQTT_WAIT`].
    pub fn collect_until_match(&mut self, what: &str, done: impl Fn(&Msg) -> bool) -> Vec<Msg> {
        let topic = what;
        let deadline = Instant::now() + MQTT_WAIT;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_publish(left) {
                Some(m) => {
                    let matched = done(&m);
                    got.push(m);
                    if matched {
                        return got;
                    }
                }
                None => panic!(
                    "client `{}`: no publish on `{topic}` within {MQTT_WAIT:?} (closed: {:?}); \
                     received: {:?}",
                    self.client_id,
                    self.closed,
                    got.iter()
                        .map(|m| format!("{} {}", m.topic, m.text()))
                        .collect::<Vec<_>>()
                ),
            }
        }
    }

    /// The first publish on `topic` (others are skipped); panics if none within [`MQTT_WAIT`].
    pub fn expect_publish(&mut self, topic: &str) -> Msg {
        self.collect_until(topic)
            .pop()
            .expect("collect_until returns the match")
    }

    /// Waits until the server ends the connection; returns the reason seen by the client.
    pub fn wait_closed(&mut self, within: Duration) -> String {
        if let Some(e) = &self.closed {
            return e.clone();
        }
        let deadline = Instant::now() + within;
        let mut server_disconnect = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(MqttEv::Closed(e)) => {
                    let reason = match server_disconnect {
                        Some(d) => format!("DISCONNECT {d}, then {e}"),
                        None => e,
                    };
                    self.closed = Some(reason.clone());
                    return reason;
                }
                Ok(MqttEv::ServerDisconnect(d)) => server_disconnect = Some(d),
                Ok(MqttEv::Publish(m)) => self.backlog.push_back(m),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return "event loop ended".into();
                }
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "client `{}`: the connection is still open after {within:?}",
                    self.client_id
                ),
            }
        }
    }

    /// Sends DISCONNECT, waits until it has been written, then closes the connection (as MQTT
    /// requires of the client) and waits for the event loop to end.
    pub fn disconnect(self) {
        let Mqtt {
            handle,
            _stop: stop,
            rx,
            client_id,
            ..
        } = self;
        let sent = match &handle {
            MqttHandle::V3(c) => c.try_disconnect().map_err(|e| e.to_string()),
            MqttHandle::V5(c) => c.try_disconnect().map_err(|e| e.to_string()),
        };
        if let Err(e) = sent {
            panic!("client `{client_id}`: disconnect failed: {e}");
        }
        wait_disconnect_written(&rx, &client_id);
        // Stopping the event loop drops the connection, which closes the socket.
        drop(stop);
        drop(handle);
        let deadline = Instant::now() + MQTT_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(MqttEv::Closed(_)) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "client `{client_id}`: event loop still running {MQTT_WAIT:?} after DISCONNECT"
                ),
            }
        }
    }

    /// Sends DISCONNECT and returns as soon as it has been written to the socket; the
    /// connection is closed when the returned value is dropped.
    pub fn disconnect_nowait(self) -> Mqtt {
        let sent = match &self.handle {
            MqttHandle::V3(c) => c.try_disconnect().map_err(|e| e.to_string()),
            MqttHandle::V5(c) => c.try_disconnect().map_err(|e| e.to_string()),
        };
        if let Err(e) = sent {
            panic!("client `{}`: disconnect failed: {e}", self.client_id);
        }
        wait_disconnect_written(&self.rx, &self.client_id);
        self
    }
}

fn wait_disconnect_written(rx: &mpsc::Receiver<MqttEv>, client_id: &str) {
    let deadline = Instant::now() + MQTT_WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(MqttEv::OutDisconnect) => return,
            Ok(MqttEv::Closed(e)) => {
                panic!("client `{client_id}`: connection closed ({e}) before DISCONNECT")
            }
            Ok(_) => {}
            Err(e) => {
                panic!("client `{client_id}`: DISCONNECT not written within {MQTT_WAIT:?} ({e:?})")
            }
        }
    }
}
