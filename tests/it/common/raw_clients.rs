//! The version-specific side of the raw MQTT test client ([`Raw5`], [`Raw3`] from
//! `raw_mqtt.rs`): CONNECT with the CONNACK returned, SUBSCRIBE, the QoS 1/2 exchanges in both
//! directions, DISCONNECT, and builders of the packets the tests send most.

use super::*;
use bytes::Bytes;
use rmqtt_codec::error::{DecodeError, EncodeError};
use rmqtt_codec::types::{Publish, QoS};
use rmqtt_codec::{v3, v5};
use std::fmt::Debug;
use std::num::NonZeroU16;
use tokio_util::codec::{Decoder, Encoder};

/// A QoS from its number.
pub fn qos(n: u8) -> QoS {
    match n {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

/// A PUBLISH (no packet id yet; [`Raw5::publish`] and [`Raw3::publish`] assign one).
pub fn publish_packet(topic: &str, payload: impl Into<Vec<u8>>, q: u8, retain: bool) -> Publish {
    Publish {
        dup: false,
        retain,
        qos: qos(q),
        topic: topic.to_string().into(),
        packet_id: None,
        payload: Bytes::from(payload.into()),
        properties: None,
    }
}

/// An MQTT 5 CONNECT as admin with clean start and keep alive 30 s.
pub fn connect5(client_id: &str) -> v5::Connect {
    v5::Connect {
        clean_start: true,
        keep_alive: 30,
        client_id: client_id.to_string().into(),
        username: Some("admin".to_string().into()),
        password: Some(Bytes::from(ADMIN_PASSWORD)),
        ..Default::default()
    }
}

/// An MQTT 3.1.1 CONNECT as admin with clean session and keep alive 30 s.
pub fn connect3(client_id: &str) -> v3::Connect {
    v3::Connect {
        clean_session: true,
        keep_alive: 30,
        client_id: client_id.to_string().into(),
        username: Some("admin".to_string().into()),
        password: Some(Bytes::from(ADMIN_PASSWORD)),
        ..Default::default()
    }
}

/// Subscription options with `q` and the rest at their defaults.
pub fn sub_opts(q: u8) -> v5::SubscriptionOptions {
    v5::SubscriptionOptions {
        qos: qos(q),
        ..Default::default()
    }
}

/// The properties of a received MQTT 5 PUBLISH (defaults when it had none).
pub fn props(p: &Publish) -> v5::PublishProperties {
    p.properties.clone().unwrap_or_default()
}

impl Raw5 {
    /// Sends `connect` over `via` and returns the connection with the server's CONNACK
    /// (whatever its reason code); `Err` when no CONNACK came.
    pub fn try_connect(
        server: &Server,
        via: Via,
        connect: v5::Connect,
    ) -> Result<(Raw5, v5::ConnectAck), String> {
        let name = format!("v5 {via:?} `{}`", connect.client_id);
        let mut raw = Raw::open(server, via, v5::Codec::new(0, 0), &name)?;
        raw.try_send(v5::Packet::Connect(Box::new(connect)))?;
        match raw.read_packet(MQTT_WAIT) {
            Ok(v5::Packet::ConnectAck(ack)) => Ok((raw, *ack)),
            Ok(other) => Err(format!("{name}: expected CONNACK, got {other:?}")),
            Err(end) => Err(format!("{name}: no CONNACK ({end:?})")),
        }
    }

    /// Like [`Raw5::try_connect`]; panics unless a CONNACK came.
    pub fn connect(server: &Server, via: Via, connect: v5::Connect) -> (Raw5, v5::ConnectAck) {
        Raw5::try_connect(server, via, connect).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Connects with `connect` and asserts CONNACK success.
    pub fn connect_ok(server: &Server, via: Via, connect: v5::Connect) -> (Raw5, v5::ConnectAck) {
        let (raw, ack) = Raw5::connect(server, via, connect);
        assert_eq!(
            ack.reason_code,
            v5::ConnectAckReason::Success,
            "{}: CONNACK {ack:?}",
            raw.name
        );
        (raw, ack)
    }

    /// A connected admin client with clean start.
    pub fn admin(server: &Server, via: Via, client_id: &str) -> Raw5 {
        Raw5::connect_ok(server, via, connect5(client_id)).0
    }

    /// One SUBSCRIBE with an optional subscription identifier; returns the SUBACK.
    pub fn subscribe_with(
        &mut self,
        id: Option<u32>,
        filters: &[(&str, v5::SubscriptionOptions)],
    ) -> v5::SubscribeAck {
        let pid = self.pid();
        self.send(v5::Packet::Subscribe(v5::Subscribe {
            packet_id: pid,
            id: id.and_then(std::num::NonZeroU32::new),
            user_properties: Vec::new(),
            topic_filters: filters
                .iter()
                .map(|(f, o)| (f.to_string().into(), *o))
                .collect(),
        }));
        match self.expect(
            "SUBACK",
            |p| matches!(p, v5::Packet::SubscribeAck(a) if a.packet_id == pid),
        ) {
            v5::Packet::SubscribeAck(ack) => ack,
            _ => unreachable!("matched a SUBACK"),
        }
    }

    /// Subscribes to one filter at QoS `q` and asserts it was granted that QoS.
    pub fn subscribe(&mut self, filter: &str, q: u8) {
        let ack = self.subscribe_with(None, &[(filter, sub_opts(q))]);
        let want = match q {
            0 => v5::SubscribeAckReason::GrantedQos0,
            1 => v5::SubscribeAckReason::GrantedQos1,
            _ => v5::SubscribeAckReason::GrantedQos2,
        };
        assert_eq!(ack.status, [want], "{}: SUBACK for `{filter}`", self.name);
    }

    /// Publishes; QoS 1 returns the PUBACK, QoS 2 the PUBREC (and, when it succeeded, completes
    /// the exchange with PUBREL and a successful PUBCOMP).
    pub fn publish(&mut self, mut p: Publish) -> Option<v5::PublishAck> {
        if p.qos != QoS::AtMostOnce && p.packet_id.is_none() {
            p.packet_id = Some(self.pid());
        }
        let (q, pid) = (p.qos, p.packet_id);
        self.send(v5::Packet::Publish(Box::new(p)));
        let pid = pid?;
        if q == QoS::AtLeastOnce {
            return match self.expect(
                "PUBACK",
                |x| matches!(x, v5::Packet::PublishAck(a) if a.packet_id == pid),
            ) {
                v5::Packet::PublishAck(a) => Some(a),
                _ => unreachable!("matched a PUBACK"),
            };
        }
        let rec = match self.expect(
            "PUBREC",
            |x| matches!(x, v5::Packet::PublishReceived(a) if a.packet_id == pid),
        ) {
            v5::Packet::PublishReceived(a) => a,
            _ => unreachable!("matched a PUBREC"),
        };
        if u8::from(rec.reason_code) < 0x80 {
            self.send(v5::Packet::PublishRelease(v5::PublishAck2 {
                packet_id: pid,
                ..Default::default()
            }));
            match self.expect(
                "PUBCOMP",
                |x| matches!(x, v5::Packet::PublishComplete(a) if a.packet_id == pid),
            ) {
                v5::Packet::PublishComplete(c) => assert_eq!(
                    c.reason_code,
                    v5::PublishAck2Reason::Success,
                    "{}: PUBCOMP",
                    self.name
                ),
                _ => unreachable!("matched a PUBCOMP"),
            }
        }
        Some(rec)
    }

    /// Sends DISCONNECT with `reason` and closes the socket.
    pub fn disconnect(mut self, reason: v5::DisconnectReasonCode) {
        self.send(v5::Packet::Disconnect(v5::Disconnect::new(reason)));
        self.drop_connection();
    }

    /// How the connection ends within `within`: the server's DISCONNECT (and close), a close
    /// without DISCONNECT, or not at all. Other packets that arrive meanwhile are dropped.
    pub fn ending(&mut self, within: Duration) -> Ending {
        let (got, closed) = self.drain(within);
        let disconnect = got.into_iter().find_map(|p| match p {
            v5::Packet::Disconnect(d) => Some(d.reason_code),
            _ => None,
        });
        match (disconnect, closed) {
            (_, None) => Ending::Open,
            (Some(code), Some(_)) => Ending::Disconnect(code),
            (None, Some(_)) => Ending::ClosedWithoutDisconnect,
        }
    }
}

impl Raw3 {
    /// Sends `connect` over `via` and returns the connection with the server's CONNACK.
    pub fn try_connect(
        server: &Server,
        via: Via,
        connect: v3::Connect,
    ) -> Result<(Raw3, v3::ConnectAck), String> {
        let name = format!("v3 {via:?} `{}`", connect.client_id);
        let mut raw = Raw::open(server, via, v3::Codec::new(0), &name)?;
        raw.try_send(v3::Packet::Connect(Box::new(connect)))?;
        match raw.read_packet(MQTT_WAIT) {
            Ok(v3::Packet::ConnectAck(ack)) => Ok((raw, ack)),
            Ok(other) => Err(format!("{name}: expected CONNACK, got {other:?}")),
            Err(end) => Err(format!("{name}: no CONNACK ({end:?})")),
        }
    }

    /// Connects with `connect` and asserts CONNACK success.
    pub fn connect_ok(server: &Server, via: Via, connect: v3::Connect) -> (Raw3, v3::ConnectAck) {
        let (raw, ack) = Raw3::try_connect(server, via, connect).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ack.return_code,
            v3::ConnectAckReason::ConnectionAccepted,
            "{}: CONNACK",
            raw.name
        );
        (raw, ack)
    }

    /// A connected admin client with clean session.
    pub fn admin(server: &Server, via: Via, client_id: &str) -> Raw3 {
        Raw3::connect_ok(server, via, connect3(client_id)).0
    }

    /// Subscribes to one filter and returns the SUBACK's return code.
    pub fn subscribe(&mut self, filter: &str, q: u8) -> v3::SubscribeReturnCode {
        let pid = self.pid();
        self.send(v3::Packet::Subscribe {
            packet_id: pid,
            topic_filters: vec![(filter.to_string().into(), qos(q))],
        });
        match self.expect(
            "SUBACK",
            |p| matches!(p, v3::Packet::SubscribeAck { packet_id, .. } if *packet_id == pid),
        ) {
            v3::Packet::SubscribeAck { status, .. } => status
                .first()
                .copied()
                .unwrap_or(v3::SubscribeReturnCode::Failure),
            _ => unreachable!("matched a SUBACK"),
        }
    }

    /// Publishes and completes the QoS 1/2 exchange (PUBACK, or PUBREC/PUBREL/PUBCOMP).
    pub fn publish(&mut self, mut p: Publish) {
        if p.qos != QoS::AtMostOnce && p.packet_id.is_none() {
            p.packet_id = Some(self.pid());
        }
        let (q, pid) = (p.qos, p.packet_id);
        self.send(v3::Packet::Publish(Box::new(p)));
        let Some(pid) = pid else { return };
        if q == QoS::AtLeastOnce {
            self.expect(
                "PUBACK",
                |x| matches!(x, v3::Packet::PublishAck { packet_id } if *packet_id == pid),
            );
            return;
        }
        self.expect(
            "PUBREC",
            |x| matches!(x, v3::Packet::PublishReceived { packet_id } if *packet_id == pid),
        );
        self.send(v3::Packet::PublishRelease { packet_id: pid });
        self.expect(
            "PUBCOMP",
            |x| matches!(x, v3::Packet::PublishComplete { packet_id } if *packet_id == pid),
        );
    }

    /// Sends DISCONNECT and closes the socket.
    pub fn disconnect(mut self) {
        self.send(v3::Packet::Disconnect);
        self.drop_connection();
    }
}

/// What receiving and acknowledging a PUBLISH takes from a protocol version's packets.
pub trait PublishFlow: Sized {
    /// The PUBLISH this packet is, if it is one.
    fn publish(self) -> Option<Publish>;
    fn is_publish(&self) -> bool;
    fn puback(packet_id: NonZeroU16) -> Self;
    fn pubrec(packet_id: NonZeroU16) -> Self;
    fn is_pubrel(&self, packet_id: NonZeroU16) -> bool;
    fn pubcomp(packet_id: NonZeroU16) -> Self;
}

impl PublishFlow for v5::Packet {
    fn publish(self) -> Option<Publish> {
        match self {
            v5::Packet::Publish(p) => Some(*p),
            _ => None,
        }
    }
    fn is_publish(&self) -> bool {
        matches!(self, v5::Packet::Publish(_))
    }
    fn puback(packet_id: NonZeroU16) -> Self {
        v5::Packet::PublishAck(v5::PublishAck {
            packet_id,
            ..Default::default()
        })
    }
    fn pubrec(packet_id: NonZeroU16) -> Self {
        v5::Packet::PublishReceived(v5::PublishAck {
            packet_id,
            ..Default::default()
        })
    }
    fn is_pubrel(&self, pid: NonZeroU16) -> bool {
        matches!(self, v5::Packet::PublishRelease(a) if a.packet_id == pid)
    }
    fn pubcomp(packet_id: NonZeroU16) -> Self {
        v5::Packet::PublishComplete(v5::PublishAck2 {
            packet_id,
            ..Default::default()
        })
    }
}

impl PublishFlow for v3::Packet {
    fn publish(self) -> Option<Publish> {
        match self {
            v3::Packet::Publish(p) => Some(*p),
            _ => None,
        }
    }
    fn is_publish(&self) -> bool {
        matches!(self, v3::Packet::Publish(_))
    }
    fn puback(packet_id: NonZeroU16) -> Self {
        v3::Packet::PublishAck { packet_id }
    }
    fn pubrec(packet_id: NonZeroU16) -> Self {
        v3::Packet::PublishReceived { packet_id }
    }
    fn is_pubrel(&self, pid: NonZeroU16) -> bool {
        matches!(self, v3::Packet::PublishRelease { packet_id } if *packet_id == pid)
    }
    fn pubcomp(packet_id: NonZeroU16) -> Self {
        v3::Packet::PublishComplete { packet_id }
    }
}

impl<C, P> Raw<C, P>
where
    C: Encoder<P, Error = EncodeError> + Decoder<Item = (P, u32), Error = DecodeError>,
    P: Debug + PublishFlow,
{
    /// The next PUBLISH within `within` (other packets are kept); not acknowledged.
    pub fn recv_publish(&mut self, within: Duration) -> Option<Publish> {
        self.wait_for(within, P::is_publish).ok()?.publish()
    }

    /// The next PUBLISH within [`MQTT_WAIT`], acknowledged as its QoS requires.
    pub fn expect_publish(&mut self) -> Publish {
        let p = self.recv_publish(MQTT_WAIT).unwrap_or_else(|| {
            panic!(
                "`{}`: no PUBLISH within {MQTT_WAIT:?} (closed: {:?})",
                self.name, self.closed
            )
        });
        self.ack(&p);
        p
    }

    /// `once` delivered at QoS 2, then `end`, then nothing for 500 ms: a QoS 2 publish the
    /// publisher sent twice (before PUBREL) was routed once. `tag` names the case in failures.
    pub fn expect_exactly_once_then(&mut self, once: &str, end: &str, tag: &str) {
        let first = self.expect_publish();
        assert_eq!(
            (text(&first).as_str(), first.qos),
            (once, QoS::ExactlyOnce),
            "{tag}"
        );
        let next = self.expect_publish();
        assert_eq!(text(&next), end, "{tag}: the duplicate was routed again");
        let (rest, closed) = self.drain(Duration::from_millis(500));
        assert!(
            rest.is_empty() && closed.is_none(),
            "{tag}: after a completed QoS 2 exchange the server sent {rest:?} (closed: {closed:?})"
        );
    }

    /// Every PUBLISH up to and including the first on `topic`, each acknowledged; panics
    /// (listing what came) if none arrives on `topic` within [`MQTT_WAIT`].
    pub fn collect_until(&mut self, topic: &str) -> Vec<Publish> {
        let deadline = Instant::now() + MQTT_WAIT;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(p) = self.recv_publish(left) else {
                panic!(
                    "`{}`: no PUBLISH on `{topic}` in {MQTT_WAIT:?} (closed: {:?}); got {got:?}",
                    self.name, self.closed
                );
            };
            self.ack(&p);
            let done = p.topic == topic;
            got.push(p);
            if done {
                return got;
            }
        }
    }

    /// Acknowledges a received PUBLISH: PUBACK, or PUBREC then (after PUBREL) PUBCOMP.
    pub fn ack(&mut self, p: &Publish) {
        let Some(pid) = p.packet_id else { return };
        if p.qos == QoS::AtLeastOnce {
            self.send(P::puback(pid));
            return;
        }
        self.send(P::pubrec(pid));
        self.expect("PUBREL", |x| x.is_pubrel(pid));
        self.send(P::pubcomp(pid));
    }
}
