//! One MQTT connection to an upstream as a client, in the protocol version its record names
//! (MQTT 5 or 3.1.1, through rmqtt-codec, the codec svc's broker speaks): the CONNECT/CONNACK
//! handshake with its failures classified, then packets encoded into one buffer that is
//! written with one write (a burst of messages is one syscall and few TCP segments, not one
//! each) and packets decoded from whatever one read brought. A connection may carry a will (the
//! Sparkplug edge node's NDEATH).

mod v311;

use super::connect::{Failure, Target};
use super::queue::UpstreamMessage;
use super::wire::{self, Reader, Writer};
use crate::broker::{BRIDGE_PROPERTY, HOPS_PROPERTY};
use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use rmqtt_codec::types::{Publish, QoS};
use rmqtt_codec::{v3, v5};
use std::num::{NonZeroU16, NonZeroU32};
use std::time::Duration;
use tokio_util::codec::{Decoder, Encoder};
use v311::{from_v3, to_v3};

/// The largest packet an upstream connection sends or takes (svc's own broker default).
const MAX_PACKET: u32 = 1024 * 1024;
/// QoS 1/2 messages sent and not yet acknowledged, at most (the upstream may allow fewer).
pub const MAX_IN_FLIGHT: u16 = 1024;

/// How a connection is to be opened.
#[derive(Clone)]
pub struct Open {
    /// Give up on the connection attempt after this long.
    pub limit: Duration,
    /// Ask for the record's session expiry (a bridge); otherwise a probe that leaves no
    /// session behind.
    pub bridge: bool,
    /// Announced in the CONNECT (MQTT 5) as `svc-bridge`: `<domain>/<name>`.
    pub announce: Option<String>,
    /// The message the upstream publishes when the connection ends without a DISCONNECT.
    pub will: Option<Will>,
    /// Start a new session and keep none after the connection (Sparkplug requires it of edge
    /// nodes), whatever the record's `clean_start` and `session_expiry` say.
    pub fresh: bool,
}

impl Open {
    /// A connection as the record says, without a will.
    pub fn plain(limit: Duration, bridge: bool, announce: Option<String>) -> Open {
        Open {
            limit,
            bridge,
            announce,
            will: None,
            fresh: false,
        }
    }
}

/// A will message.
#[derive(Debug, Clone)]
pub struct Will {
    pub topic: String,
    pub payload: Bytes,
    pub qos: u8,
    pub retain: bool,
}

/// A packet from the upstream that the bridge acts on.
#[derive(Debug)]
pub enum In {
    Publish(Incoming),
    /// PUBACK (QoS 1 delivered) or PUBCOMP (QoS 2 delivered).
    Delivered {
        packet_id: u16,
        refused: bool,
    },
    /// PUBREC: answered with PUBREL unless refused.
    Received {
        packet_id: u16,
        refused: bool,
    },
    /// PUBREL of an incoming QoS 2 message: answered with PUBCOMP.
    Released {
        packet_id: u16,
    },
    /// SUBACK: the filters the upstream refused, by position, with their reason codes.
    Subscribed {
        refused: Vec<(usize, u8)>,
    },
    /// The upstream closed the session, saying why.
    Disconnect(String),
    Other,
}

#[derive(Debug)]
pub struct Incoming {
    pub packet_id: Option<u16>,
    pub topic: String,
    pub payload: Bytes,
    pub qos: u8,
    pub retain: bool,
    pub hops: u8,
}

enum Codec {
    V3(v3::Codec),
    V5(v5::Codec),
}

pub struct Session {
    reader: Reader,
    writer: Writer,
    codec: Codec,
    read_buf: BytesMut,
    write_buf: BytesMut,
    /// The keep-alive agreed on (the server may lower ours).
    pub keep_alive: Duration,
    /// QoS 1/2 messages the upstream takes before acknowledging (its Receive Maximum).
    pub window: usize,
    pub session_present: bool,
}

fn qos_of(n: u8) -> QoS {
    match n {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

fn id(packet_id: u16) -> NonZeroU16 {
    NonZeroU16::new(packet_id).unwrap_or(NonZeroU16::MIN)
}

fn protocol(e: impl std::fmt::Display) -> Failure {
    Failure::Protocol(e.to_string())
}

impl Session {
    /// Connects as `target` says and waits for the CONNACK (all within `how.limit`).
    pub async fn connect(target: &Target, how: &Open) -> Result<Session, Failure> {
        tokio::time::timeout(how.limit, Session::handshake(target, how))
            .await
            .map_err(|_| Failure::Timeout(how.limit))?
    }

    async fn handshake(target: &Target, how: &Open) -> Result<Session, Failure> {
        let tls = match target.protocol() {
            "mqtts" | "wss" => Some(target.tls_config()?),
            _ => None,
        };
        let path = target.text("path");
        let address = wire::Address {
            host: target.text("host"),
            port: u16::try_from(target.number("port")).unwrap_or(1883),
            tls,
            websocket_path: target.protocol().starts_with("ws").then_some(path),
        };
        let (reader, writer) = wire::open(&address).await?;
        let keep_alive = u16::try_from(target.number("keep_alive").max(5)).unwrap_or(u16::MAX);
        let username = target.optional_text("username").map(ByteString::from);
        let password = target
            .password()
            .map(|p| Bytes::copy_from_slice(p.as_bytes()));
        let client_id = ByteString::from(target.text("client_id"));
        let clean = how.fresh || target.flag("clean_start") != Some(false);
        let mut write_buf = BytesMut::with_capacity(8 * 1024);
        let codec = if target.is_v5() {
            let connect = v5::Connect {
                clean_start: clean,
                keep_alive,
                session_expiry_interval_secs: if how.bridge && !how.fresh {
                    u32::try_from(target.number("session_expiry")).unwrap_or(u32::MAX)
                } else {
                    0
                },
                receive_max: NonZeroU16::new(MAX_IN_FLIGHT),
                max_packet_size: NonZeroU32::new(MAX_PACKET),
                user_properties: how
                    .announce
                    .iter()
                    .map(|a| (BRIDGE_PROPERTY.into(), a.as_str().into()))
                    .collect(),
                last_will: how.will.as_ref().map(|will| v5::LastWill {
                    qos: qos_of(will.qos),
                    retain: will.retain,
                    topic: ByteString::from(will.topic.as_str()),
                    message: will.payload.clone(),
                    will_delay_interval_sec: None,
                    correlation_data: None,
                    message_expiry_interval: None,
                    content_type: None,
                    user_properties: Vec::new(),
                    is_utf8_payload: None,
                    response_topic: None,
                }),
                client_id,
                username,
                password,
                ..v5::Connect::default()
            };
            let mut codec = v5::Codec::new(MAX_PACKET, 0);
            codec
                .encode(v5::Packet::Connect(Box::new(connect)), &mut write_buf)
                .map_err(protocol)?;
            Codec::V5(codec)
        } else {
            let connect = v3::Connect {
                clean_session: clean,
                keep_alive,
                last_will: how.will.as_ref().map(|will| v3::LastWill {
                    qos: qos_of(will.qos),
                    retain: will.retain,
                    topic: ByteString::from(will.topic.as_str()),
                    message: will.payload.clone(),
                }),
                client_id,
                username,
                password,
                ..v3::Connect::default()
            };
            let mut codec = v3::Codec::new(MAX_PACKET);
            codec
                .encode(v3::Packet::Connect(Box::new(connect)), &mut write_buf)
                .map_err(protocol)?;
            Codec::V3(codec)
        };
        let mut session = Session {
            reader,
            writer,
            codec,
            read_buf: BytesMut::with_capacity(8 * 1024),
            write_buf,
            keep_alive: Duration::from_secs(u64::from(keep_alive)),
            window: usize::from(MAX_IN_FLIGHT),
            session_present: false,
        };
        session.flush().await?;
        loop {
            if session
                .reader
                .read(&mut session.read_buf)
                .await
                .map_err(tcp)?
                == 0
            {
                return Err(Failure::Protocol(
                    "the upstream closed the connection before its CONNACK".into(),
                ));
            }
            if let Some(ack) = session.decode_connack()? {
                return ack.map(|()| session);
            }
        }
    }

    /// The CONNACK, once a whole one was read: `Ok(())` accepted (the session takes its
    /// settings), or the refusal.
    fn decode_connack(&mut self) -> Result<Option<Result<(), Failure>>, Failure> {
        match &mut self.codec {
            Codec::V5(codec) => match codec.decode(&mut self.read_buf).map_err(protocol)? {
                None => Ok(None),
                Some((v5::Packet::ConnectAck(ack), _)) => {
                    use v5::ConnectAckReason as R;
                    let refusal = match ack.reason_code {
                        R::Success => None,
                        R::BadUserNameOrPassword => Some((0x86, "bad user name or password")),
                        R::NotAuthorized => Some((0x87, "not authorized")),
                        R::Banned => Some((0x8A, "banned")),
                        R::BadAuthenticationMethod => Some((0x8C, "bad authentication method")),
                        other => {
                            return Ok(Some(Err(Failure::Protocol(format!(
                                "CONNACK refused: {other:?}"
                            )))))
                        }
                    };
                    if let Some((code, text)) = refusal {
                        return Ok(Some(Err(Failure::Auth(code, text.into()))));
                    }
                    self.session_present = ack.session_present;
                    self.window = usize::from(ack.receive_max.get().min(MAX_IN_FLIGHT));
                    if let Some(secs) = ack.server_keepalive_sec {
                        self.keep_alive = Duration::from_secs(u64::from(secs.max(1)));
                    }
                    Ok(Some(Ok(())))
                }
                Some((other, _)) => Err(Failure::Protocol(format!(
                    "expected a CONNACK, got packet type {}",
                    other.packet_type()
                ))),
            },
            Codec::V3(codec) => match codec.decode(&mut self.read_buf).map_err(protocol)? {
                None => Ok(None),
                Some((v3::Packet::ConnectAck(ack), _)) => {
                    use v3::ConnectAckReason as R;
                    Ok(Some(match ack.return_code {
                        R::ConnectionAccepted => {
                            self.session_present = ack.session_present;
                            Ok(())
                        }
                        R::BadUserNameOrPassword => {
                            Err(Failure::Auth(4, "bad user name or password".into()))
                        }
                        R::NotAuthorized => Err(Failure::Auth(5, "not authorized".into())),
                        other => Err(Failure::Protocol(format!("CONNACK refused: {other:?}"))),
                    }))
                }
                Some(_) => Err(Failure::Protocol("expected a CONNACK".into())),
            },
        }
    }

    fn encode(&mut self, packet: v5::Packet) -> Result<(), Failure> {
        match &mut self.codec {
            Codec::V5(codec) => codec.encode(packet, &mut self.write_buf).map_err(protocol),
            Codec::V3(codec) => match to_v3(packet) {
                Some(packet) => codec.encode(packet, &mut self.write_buf).map_err(protocol),
                None => Ok(()),
            },
        }
    }

    /// Queues a message for the upstream (`packet_id` for QoS 1/2); MQTT 5 carries the hop
    /// count it will have there.
    pub fn publish(
        &mut self,
        item: &UpstreamMessage,
        packet_id: Option<u16>,
    ) -> Result<(), Failure> {
        let properties = matches!(self.codec, Codec::V5(_)).then(|| v5::PublishProperties {
            user_properties: vec![(
                HOPS_PROPERTY.into(),
                item.hops.saturating_add(1).to_string().into(),
            )],
            ..v5::PublishProperties::default()
        });
        self.encode(v5::Packet::Publish(Box::new(Publish {
            dup: false,
            retain: item.retain,
            qos: qos_of(item.qos),
            topic: ByteString::from(item.topic.as_str()),
            packet_id: packet_id.and_then(NonZeroU16::new),
            payload: item.payload.clone(),
            properties,
        })))
    }

    /// Queues a message of svc's own (a Sparkplug edge node's), without the hop count that
    /// bridged messages carry.
    pub fn publish_own(
        &mut self,
        topic: &str,
        payload: Bytes,
        qos: u8,
        packet_id: Option<u16>,
    ) -> Result<(), Failure> {
        self.encode(v5::Packet::Publish(Box::new(Publish {
            dup: false,
            retain: false,
            qos: qos_of(qos),
            topic: ByteString::from(topic),
            packet_id: packet_id.and_then(NonZeroU16::new),
            payload,
            properties: None,
        })))
    }

    /// Queues a SUBSCRIBE of `(filter, qos)` pairs; MQTT 5 asks No Local (what this connection
    /// publishes does not come back) and Retain As Published.
    pub fn subscribe(&mut self, packet_id: u16, filters: &[(String, u8)]) -> Result<(), Failure> {
        let topic_filters = filters
            .iter()
            .map(|(filter, qos)| {
                let options = v5::SubscriptionOptions {
                    qos: qos_of(*qos),
                    no_local: true,
                    retain_as_published: true,
                    ..v5::SubscriptionOptions::default()
                };
                (ByteString::from(filter.as_str()), options)
            })
            .collect();
        self.encode(v5::Packet::Subscribe(v5::Subscribe {
            packet_id: id(packet_id),
            id: None,
            user_properties: Vec::new(),
            topic_filters,
        }))
    }

    /// Queues the acknowledgement of an incoming QoS 1 (PUBACK) or QoS 2 (PUBREC) message.
    pub fn acknowledge(&mut self, packet_id: u16, qos: u8) -> Result<(), Failure> {
        let ack = v5::PublishAck {
            packet_id: id(packet_id),
            reason_code: v5::PublishAckReason::Success,
            properties: Vec::new(),
            reason_string: None,
        };
        self.encode(if qos >= 2 {
            v5::Packet::PublishReceived(ack)
        } else {
            v5::Packet::PublishAck(ack)
        })
    }

    /// Queues PUBREL (after a PUBREC) or PUBCOMP (after a PUBREL).
    pub fn release(&mut self, packet_id: u16, complete: bool) -> Result<(), Failure> {
        let ack = v5::PublishAck2 {
            packet_id: id(packet_id),
            reason_code: v5::PublishAck2Reason::Success,
            properties: Vec::new(),
            reason_string: None,
        };
        self.encode(if complete {
            v5::Packet::PublishComplete(ack)
        } else {
            v5::Packet::PublishRelease(ack)
        })
    }

    pub fn ping(&mut self) -> Result<(), Failure> {
        self.encode(v5::Packet::PingRequest)
    }

    /// Whether packets wait to be written.
    pub fn has_output(&self) -> bool {
        !self.write_buf.is_empty()
    }

    /// Writes every queued packet at once.
    pub async fn flush(&mut self) -> Result<(), Failure> {
        if self.write_buf.is_empty() {
            return Ok(());
        }
        self.writer.write_all(&self.write_buf).await.map_err(tcp)?;
        self.write_buf.clear();
        Ok(())
    }

    /// Waits for bytes from the upstream (cancel safe: nothing read is lost if dropped).
    pub async fn read(&mut self) -> Result<(), Failure> {
        match self.reader.read(&mut self.read_buf).await.map_err(tcp)? {
            0 => Err(Failure::Tcp("the upstream closed the connection".into())),
            _ => Ok(()),
        }
    }

    /// The packets the reads brought so far.
    pub fn packets(&mut self) -> Result<Vec<In>, Failure> {
        let mut packets = Vec::new();
        loop {
            let packet = match &mut self.codec {
                Codec::V5(codec) => codec.decode(&mut self.read_buf).map_err(protocol)?,
                Codec::V3(codec) => codec
                    .decode(&mut self.read_buf)
                    .map_err(protocol)?
                    .map(|(p, size)| (from_v3(p), size)),
            };
            let Some((packet, _)) = packet else {
                return Ok(packets);
            };
            packets.push(classify(packet));
        }
    }

    /// Says goodbye (DISCONNECT) and closes.
    pub async fn disconnect(mut self) {
        let goodbye = v5::Packet::Disconnect(v5::Disconnect::default());
        if self.encode(goodbye).is_ok() {
            let _ = self.flush().await;
        }
        self.writer.close().await;
    }
}

fn tcp(e: std::io::Error) -> Failure {
    Failure::Tcp(e.to_string())
}

fn classify(packet: v5::Packet) -> In {
    use v5::Packet as P;
    match packet {
        P::Publish(publish) => {
            let hops = publish
                .properties
                .as_ref()
                .and_then(|p| p.user_properties.iter().find(|(k, _)| k == HOPS_PROPERTY))
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            In::Publish(Incoming {
                packet_id: publish.packet_id.map(NonZeroU16::get),
                topic: publish.topic.to_string(),
                payload: publish.payload,
                qos: publish.qos.value(),
                retain: publish.retain,
                hops,
            })
        }
        P::PublishAck(ack) => In::Delivered {
            packet_id: ack.packet_id.get(),
            refused: u8::from(ack.reason_code) >= 0x80,
        },
        P::PublishReceived(ack) => In::Received {
            packet_id: ack.packet_id.get(),
            refused: u8::from(ack.reason_code) >= 0x80,
        },
        P::PublishComplete(ack) => In::Delivered {
            packet_id: ack.packet_id.get(),
            refused: false,
        },
        P::PublishRelease(ack) => In::Released {
            packet_id: ack.packet_id.get(),
        },
        P::SubscribeAck(ack) => In::Subscribed {
            refused: ack
                .status
                .iter()
                .enumerate()
                .map(|(i, reason)| (i, u8::from(*reason)))
                .filter(|(_, code)| *code >= 0x80)
                .collect(),
        },
        P::Disconnect(disconnect) => In::Disconnect(format!(
            "the upstream disconnected: {:?}{}",
            disconnect.reason_code,
            disconnect
                .reason_string
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )),
        _ => In::Other,
    }
}

/// What a SUBACK's failure reason code means (MQTT 3.1.1's one failure code is 0x80).
pub fn refusal_text(code: u8) -> &'static str {
    match code {
        0x83 => "implementation specific error",
        0x87 => "not authorized",
        0x8F => "topic filter invalid",
        0x91 => "packet identifier in use",
        0x97 => "quota exceeded",
        0x9E => "shared subscriptions not supported",
        0xA1 => "subscription identifiers not supported",
        0xA2 => "wildcard subscriptions not supported",
        _ => "unspecified error",
    }
}
