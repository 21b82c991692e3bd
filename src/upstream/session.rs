//! One MQTT connection to an upstream, whichever protocol version its record names: rumqttc's
//! MQTT 5 and MQTT 3.1.1 clients behind one client type and one event type, so the probe and
//! the relay are written once. The options come from the record: transport (TCP, TLS,
//! WebSocket, secure WebSocket), keep-alive, credentials, client id and session settings.

use super::connect::{Failure, Target};
use super::queue::Item;
use crate::broker::{BRIDGE_PROPERTY, HOPS_PROPERTY};
use bytes::Bytes;
use std::time::Duration;

/// The largest packet an upstream connection sends or takes (svc's own broker default).
const MAX_PACKET: u32 = 1024 * 1024;
/// QoS 1/2 messages sent and not yet acknowledged, at most (the upstream may allow fewer).
const MAX_IN_FLIGHT: u16 = 256;
/// Requests (publishes, subscriptions, acks) waiting for the client's event loop.
const REQUEST_CAPACITY: usize = 512;

/// What the connection reports.
pub enum Event {
    ConnAck {
        session_present: bool,
    },
    /// A message from the upstream (to be acknowledged with [`Client::ack`]).
    Publish(Incoming),
    /// A message handed to [`Client::publish`] went out with this packet id (0 for QoS 0).
    Sent {
        packet_id: u16,
    },
    /// The upstream acknowledged (PUBACK, PUBCOMP) or refused the message with this id.
    Acked {
        packet_id: u16,
        refused: bool,
    },
    Other,
}

pub struct Incoming {
    pub topic: String,
    pub payload: Bytes,
    pub qos: u8,
    pub retain: bool,
    pub hops: u8,
    ack: AckOf,
}

enum AckOf {
    V5(Box<rumqttc::v5::mqttbytes::v5::Publish>),
    V3(rumqttc::Publish),
}

#[derive(Clone)]
pub enum Client {
    V5(rumqttc::v5::AsyncClient),
    V3(rumqttc::AsyncClient),
}

pub enum Events {
    V5(Box<rumqttc::v5::EventLoop>),
    V3(Box<rumqttc::EventLoop>),
}

/// How a connection is to be opened.
pub struct Open {
    /// Give up on a connection attempt after this long.
    pub limit: Duration,
    /// Ask for the record's session expiry and acknowledge incoming messages by hand (a
    /// bridge); otherwise a probe that leaves no session behind.
    pub bridge: bool,
    /// Announced in the CONNECT (MQTT 5) as `svc-bridge`: `<device>/<domain>/<name>`.
    pub announce: Option<String>,
}

fn v5_qos(qos: u8) -> rumqttc::v5::mqttbytes::QoS {
    use rumqttc::v5::mqttbytes::QoS;
    match qos {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

fn v3_qos(qos: u8) -> rumqttc::QoS {
    use rumqttc::QoS;
    match qos {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

/// The client and its event loop for `target` (nothing is sent before the loop is polled).
pub fn open(target: &Target, how: &Open) -> Result<(Client, Events), Failure> {
    let port = u16::try_from(target.number("port")).unwrap_or(1883);
    let client_id = target.text("client_id");
    let clean = target.flag("clean_start") != Some(false);
    // rumqttc wants at least 5 s of MQTT 5 clients (config.rs enforces it for records).
    let keep_alive = Duration::from_secs(target.number("keep_alive").max(5));
    let username = target.optional_text("username");
    let password = target.password().unwrap_or_default().to_string();
    if target.is_v5() {
        use rumqttc::v5::{AsyncClient, MqttOptions};
        let mut options = MqttOptions::new(client_id, target.address(), port);
        options.set_transport(target.transport()?);
        options.set_keep_alive(keep_alive);
        options.set_clean_start(clean);
        options.set_max_packet_size(Some(MAX_PACKET));
        options.set_connection_timeout(how.limit.as_secs());
        options.set_outgoing_inflight_upper_limit(MAX_IN_FLIGHT);
        if let Some(user) = username {
            options.set_credentials(user, password);
        }
        if how.bridge {
            let expiry = u32::try_from(target.number("session_expiry")).unwrap_or(u32::MAX);
            options.set_session_expiry_interval(Some(expiry));
            options.set_manual_acks(true);
        }
        if let Some(announce) = &how.announce {
            options.set_user_properties(vec![(BRIDGE_PROPERTY.into(), announce.clone())]);
        }
        let (client, events) = AsyncClient::new(options, REQUEST_CAPACITY);
        Ok((Client::V5(client), Events::V5(Box::new(events))))
    } else {
        use rumqttc::{AsyncClient, MqttOptions};
        let mut options = MqttOptions::new(client_id, target.address(), port);
        options.set_transport(target.transport()?);
        options.set_keep_alive(keep_alive);
        options.set_clean_session(clean);
        options.set_max_packet_size(MAX_PACKET as usize, MAX_PACKET as usize);
        options.set_inflight(MAX_IN_FLIGHT);
        options.set_manual_acks(how.bridge);
        if let Some(user) = username {
            options.set_credentials(user, password);
        }
        let (client, mut events) = AsyncClient::new(options, REQUEST_CAPACITY);
        events
            .network_options
            .set_connection_timeout(how.limit.as_secs());
        Ok((Client::V3(client), Events::V3(Box::new(events))))
    }
}

impl Client {
    /// Hands a message to the event loop (waits while its request queue is full). `Err` when
    /// the connection is gone.
    pub async fn publish(&self, item: &Item) -> Result<(), ()> {
        match self {
            Client::V5(client) => {
                use rumqttc::v5::mqttbytes::v5::PublishProperties;
                let properties = PublishProperties {
                    user_properties: vec![(
                        HOPS_PROPERTY.into(),
                        item.hops.saturating_add(1).to_string(),
                    )],
                    ..PublishProperties::default()
                };
                client
                    .publish_with_properties(
                        item.topic.as_str(),
                        v5_qos(item.qos),
                        item.retain,
                        item.payload.clone(),
                        properties,
                    )
                    .await
                    .map_err(drop)
            }
            Client::V3(client) => client
                .publish_bytes(
                    item.topic.as_str(),
                    v3_qos(item.qos),
                    item.retain,
                    item.payload.clone(),
                )
                .await
                .map_err(drop),
        }
    }

    /// Subscribes to `(filter, qos)` pairs; MQTT 5 asks No Local (what this connection
    /// publishes does not come back) and Retain As Published.
    pub async fn subscribe(&self, filters: &[(String, u8)]) -> Result<(), ()> {
        if filters.is_empty() {
            return Ok(());
        }
        match self {
            Client::V5(client) => {
                use rumqttc::v5::mqttbytes::v5::Filter;
                let filters = filters.iter().map(|(path, qos)| Filter {
                    nolocal: true,
                    preserve_retain: true,
                    ..Filter::new(path.as_str(), v5_qos(*qos))
                });
                client.subscribe_many(filters).await.map_err(drop)
            }
            Client::V3(client) => {
                let filters = filters
                    .iter()
                    .map(|(path, qos)| rumqttc::SubscribeFilter::new(path.clone(), v3_qos(*qos)));
                client.subscribe_many(filters).await.map_err(drop)
            }
        }
    }

    /// Acknowledges an incoming message (once it is safely published locally).
    pub async fn ack(&self, incoming: &Incoming) -> Result<(), ()> {
        match (self, &incoming.ack) {
            (Client::V5(client), AckOf::V5(publish)) => client.ack(publish).await.map_err(drop),
            (Client::V3(client), AckOf::V3(publish)) => client.ack(publish).await.map_err(drop),
            _ => Err(()),
        }
    }

    pub fn disconnect(&self) {
        match self {
            Client::V5(client) => drop(client.try_disconnect()),
            Client::V3(client) => drop(client.try_disconnect()),
        }
    }
}

impl Events {
    /// The next event; an error ends the connection and says why.
    pub async fn poll(&mut self, limit: Duration) -> Result<Event, Failure> {
        match self {
            Events::V5(events) => {
                use rumqttc::v5::mqttbytes::v5::{Packet, PubAckReason, PubRecReason};
                use rumqttc::v5::Event as E;
                use rumqttc::Outgoing;
                Ok(
                    match events.poll().await.map_err(|e| classify_v5(e, limit))? {
                        E::Incoming(Packet::ConnAck(ack)) => Event::ConnAck {
                            session_present: ack.session_present,
                        },
                        E::Incoming(Packet::Publish(publish)) => {
                            let hops = publish
                                .properties
                                .as_ref()
                                .and_then(|p| {
                                    p.user_properties.iter().find(|(k, _)| k == HOPS_PROPERTY)
                                })
                                .and_then(|(_, v)| v.parse().ok())
                                .unwrap_or(0);
                            Event::Publish(Incoming {
                                topic: String::from_utf8_lossy(&publish.topic).into_owned(),
                                payload: publish.payload.clone(),
                                qos: publish.qos as u8,
                                retain: publish.retain,
                                hops,
                                ack: AckOf::V5(Box::new(publish)),
                            })
                        }
                        E::Incoming(Packet::PubAck(ack)) => Event::Acked {
                            packet_id: ack.pkid,
                            refused: !matches!(
                                ack.reason,
                                PubAckReason::Success | PubAckReason::NoMatchingSubscribers
                            ),
                        },
                        E::Incoming(Packet::PubRec(rec))
                            if !matches!(
                                rec.reason,
                                PubRecReason::Success | PubRecReason::NoMatchingSubscribers
                            ) =>
                        {
                            Event::Acked {
                                packet_id: rec.pkid,
                                refused: true,
                            }
                        }
                        E::Incoming(Packet::PubComp(comp)) => Event::Acked {
                            packet_id: comp.pkid,
                            refused: false,
                        },
                        E::Outgoing(Outgoing::Publish(packet_id)) => Event::Sent { packet_id },
                        _ => Event::Other,
                    },
                )
            }
            Events::V3(events) => {
                use rumqttc::{Event as E, Outgoing, Packet};
                Ok(
                    match events.poll().await.map_err(|e| classify_v3(e, limit))? {
                        E::Incoming(Packet::ConnAck(ack)) => Event::ConnAck {
                            session_present: ack.session_present,
                        },
                        E::Incoming(Packet::Publish(publish)) => Event::Publish(Incoming {
                            topic: publish.topic.clone(),
                            payload: publish.payload.clone(),
                            qos: publish.qos as u8,
                            retain: publish.retain,
                            hops: 0,
                            ack: AckOf::V3(publish),
                        }),
                        E::Incoming(Packet::PubAck(ack)) => Event::Acked {
                            packet_id: ack.pkid,
                            refused: false,
                        },
                        E::Incoming(Packet::PubComp(comp)) => Event::Acked {
                            packet_id: comp.pkid,
                            refused: false,
                        },
                        E::Outgoing(Outgoing::Publish(packet_id)) => Event::Sent { packet_id },
                        _ => Event::Other,
                    },
                )
            }
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
