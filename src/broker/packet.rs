//! Both MQTT versions behind one shape. The core speaks MQTT 5 packets (rmqtt-codec's `v5`
//! types); this module detects the version from the first CONNECT, turns MQTT 3.1.1 packets
//! into their MQTT 5 equivalents on the way in, and back on the way out.

use bytes::BytesMut;
use rmqtt_codec::error::{DecodeError, EncodeError};
use rmqtt_codec::types::QoS;
use rmqtt_codec::version::{ProtocolVersion, VersionCodec};
use rmqtt_codec::{v3, v5};
use tokio_util::codec::{Decoder, Encoder};

pub use v5::Packet;

/// The protocol version a client connected with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V3,
    V5,
}

/// A connection's codec: decoding and encoding in the connection's version.
#[derive(Debug, Clone)]
pub enum Codec {
    V3(v3::Codec),
    V5(v5::Codec),
}

/// Why the first bytes of a connection are not an MQTT CONNECT we speak.
#[derive(Debug)]
pub enum Handshake {
    /// Not enough bytes yet.
    Incomplete,
    Refused,
}

impl Codec {
    /// Looks at the start of a connection (without consuming it) to pick the codec.
    pub fn detect(buf: &mut BytesMut, max_packet: u32) -> Result<Codec, Handshake> {
        match VersionCodec.decode(buf) {
            Ok(Some(ProtocolVersion::MQTT3)) => Ok(Codec::V3(v3::Codec::new(max_packet))),
            Ok(Some(ProtocolVersion::MQTT5)) => Ok(Codec::V5(v5::Codec::new(max_packet, 0))),
            Ok(None) => Err(Handshake::Incomplete),
            Err(_) => Err(Handshake::Refused),
        }
    }

    pub fn version(&self) -> Version {
        match self {
            Codec::V3(_) => Version::V3,
            Codec::V5(_) => Version::V5,
        }
    }

    /// Never send the client a packet above its Maximum Packet Size (MQTT 5).
    pub fn limit_outbound(&mut self, max: u32) {
        if let Codec::V5(codec) = self {
            codec.set_max_outbound_size(max);
        }
    }

    /// The next whole packet in `buf`, as an MQTT 5 packet.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Packet>, DecodeError> {
        match self {
            Codec::V5(codec) => Ok(codec.decode(buf)?.map(|(packet, _)| packet)),
            Codec::V3(codec) => Ok(codec.decode(buf)?.map(|(packet, _)| from_v3(packet))),
        }
    }

    /// Appends `packet` to `buf`. Packets MQTT 3.1.1 has no form for (a server DISCONNECT,
    /// AUTH) write nothing.
    pub fn encode(&mut self, packet: Packet, buf: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            Codec::V5(codec) => codec.encode(packet, buf),
            Codec::V3(codec) => match to_v3(packet) {
                Some(packet) => codec.encode(packet, buf),
                None => Ok(()),
            },
        }
    }
}

fn from_v3(packet: v3::Packet) -> Packet {
    use v3::Packet as P;
    match packet {
        P::Connect(c) => Packet::Connect(Box::new(v5::Connect {
            clean_start: c.clean_session,
            keep_alive: c.keep_alive,
            // Persistent v3 sessions get the server's expiry; the connection decides it.
            session_expiry_interval_secs: if c.clean_session { 0 } else { u32::MAX },
            last_will: c.last_will.map(|w| v5::LastWill {
                qos: w.qos,
                retain: w.retain,
                topic: w.topic,
                message: w.message,
                will_delay_interval_sec: None,
                correlation_data: None,
                message_expiry_interval: None,
                content_type: None,
                user_properties: Vec::new(),
                is_utf8_payload: None,
                response_topic: None,
            }),
            client_id: c.client_id,
            username: c.username,
            password: c.password,
            ..v5::Connect::default()
        })),
        P::Publish(p) => Packet::Publish(p),
        P::PublishAck { packet_id } => Packet::PublishAck(v5::PublishAck {
            packet_id,
            ..v5::PublishAck::default()
        }),
        P::PublishReceived { packet_id } => Packet::PublishReceived(v5::PublishAck {
            packet_id,
            ..v5::PublishAck::default()
        }),
        P::PublishRelease { packet_id } => Packet::PublishRelease(v5::PublishAck2 {
            packet_id,
            ..v5::PublishAck2::default()
        }),
        P::PublishComplete { packet_id } => Packet::PublishComplete(v5::PublishAck2 {
            packet_id,
            ..v5::PublishAck2::default()
        }),
        P::Subscribe {
            packet_id,
            topic_filters,
        } => Packet::Subscribe(v5::Subscribe {
            packet_id,
            id: None,
            user_properties: Vec::new(),
            topic_filters: topic_filters
                .into_iter()
                .map(|(filter, qos)| {
                    let options = v5::SubscriptionOptions {
                        qos,
                        ..v5::SubscriptionOptions::default()
                    };
                    (filter, options)
                })
                .collect(),
        }),
        P::Unsubscribe {
            packet_id,
            topic_filters,
        } => Packet::Unsubscribe(v5::Unsubscribe {
            packet_id,
            user_properties: Vec::new(),
            topic_filters,
        }),
        P::PingRequest => Packet::PingRequest,
        P::PingResponse => Packet::PingResponse,
        P::Disconnect => Packet::Disconnect(v5::Disconnect::default()),
        // A client never sends these; the connection treats them as protocol errors.
        P::ConnectAck(_) | P::SubscribeAck { .. } | P::UnsubscribeAck { .. } => {
            Packet::Auth(v5::Auth::default())
        }
    }
}

fn to_v3(packet: Packet) -> Option<v3::Packet> {
    use v3::Packet as P;
    Some(match packet {
        Packet::ConnectAck(ack) => P::ConnectAck(v3::ConnectAck {
            session_present: ack.session_present,
            return_code: v3_return_code(ack.reason_code),
        }),
        Packet::Publish(mut p) => {
            p.properties = None;
            P::Publish(p)
        }
        Packet::PublishAck(ack) => P::PublishAck {
            packet_id: ack.packet_id,
        },
        Packet::PublishReceived(ack) => P::PublishReceived {
            packet_id: ack.packet_id,
        },
        Packet::PublishRelease(ack) => P::PublishRelease {
            packet_id: ack.packet_id,
        },
        Packet::PublishComplete(ack) => P::PublishComplete {
            packet_id: ack.packet_id,
        },
        Packet::SubscribeAck(ack) => P::SubscribeAck {
            packet_id: ack.packet_id,
            status: ack
                .status
                .into_iter()
                .map(|reason| match reason {
                    v5::SubscribeAckReason::GrantedQos0 => {
                        v3::SubscribeReturnCode::Success(QoS::AtMostOnce)
                    }
                    v5::SubscribeAckReason::GrantedQos1 => {
                        v3::SubscribeReturnCode::Success(QoS::AtLeastOnce)
                    }
                    v5::SubscribeAckReason::GrantedQos2 => {
                        v3::SubscribeReturnCode::Success(QoS::ExactlyOnce)
                    }
                    _ => v3::SubscribeReturnCode::Failure,
                })
                .collect(),
        },
        Packet::UnsubscribeAck(ack) => P::UnsubscribeAck {
            packet_id: ack.packet_id,
        },
        Packet::PingResponse => P::PingResponse,
        Packet::PingRequest => P::PingRequest,
        Packet::Connect(_)
        | Packet::Subscribe(_)
        | Packet::Unsubscribe(_)
        | Packet::Disconnect(_)
        | Packet::Auth(_) => return None,
    })
}

fn v3_return_code(reason: v5::ConnectAckReason) -> v3::ConnectAckReason {
    use v3::ConnectAckReason as R3;
    use v5::ConnectAckReason as R5;
    match reason {
        R5::Success => R3::ConnectionAccepted,
        R5::UnsupportedProtocolVersion => R3::UnacceptableProtocolVersion,
        R5::ClientIdentifierNotValid => R3::IdentifierRejected,
        R5::BadUserNameOrPassword | R5::BadAuthenticationMethod => R3::BadUserNameOrPassword,
        R5::NotAuthorized | R5::Banned => R3::NotAuthorized,
        _ => R3::ServiceUnavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v3_connect(clean: bool) -> BytesMut {
        let mut buf = BytesMut::new();
        let connect = v3::Connect {
            clean_session: clean,
            keep_alive: 30,
            client_id: "dev-1".into(),
            ..v3::Connect::default()
        };
        v3::Codec::new(0)
            .encode(v3::Packet::Connect(Box::new(connect)), &mut buf)
            .expect("encodes");
        buf
    }

    #[test]
    fn a_v3_connect_becomes_an_mqtt5_connect() {
        let mut buf = v3_connect(false);
        let mut codec = Codec::detect(&mut buf, 1024).expect("detected");
        assert_eq!(codec.version(), Version::V3);
        match codec.decode(&mut buf).expect("decodes") {
            Some(Packet::Connect(c)) => {
                assert_eq!(c.client_id, "dev-1");
                assert!(!c.clean_start);
                assert_eq!(c.session_expiry_interval_secs, u32::MAX);
                assert_eq!(c.keep_alive, 30);
            }
            other => panic!("expected CONNECT, got {other:?}"),
        }
    }

    #[test]
    fn a_refused_connack_keeps_its_meaning_in_v3() {
        let mut codec = Codec::V3(v3::Codec::new(0));
        let mut buf = BytesMut::new();
        let ack = v5::ConnectAck {
            reason_code: v5::ConnectAckReason::BadUserNameOrPassword,
            ..v5::ConnectAck::default()
        };
        codec
            .encode(Packet::ConnectAck(Box::new(ack)), &mut buf)
            .expect("encodes");
        assert_eq!(&buf[..], &[0x20, 0x02, 0x00, 0x04]);
    }

    #[test]
    fn a_server_disconnect_writes_nothing_in_v3() {
        let mut codec = Codec::V3(v3::Codec::new(0));
        let mut buf = BytesMut::new();
        codec
            .encode(Packet::Disconnect(v5::Disconnect::default()), &mut buf)
            .expect("encodes");
        assert!(buf.is_empty());
    }

    #[test]
    fn garbage_is_refused_at_the_handshake() {
        let mut buf = BytesMut::from(&b"GET / HTTP/1.1\r\n\r\n"[..]);
        assert!(matches!(
            Codec::detect(&mut buf, 1024),
            Err(Handshake::Refused)
        ));
    }
}
