//! One client connection: the CONNECT handshake, then a reader that decodes everything a read
//! brought and handles it, publishes as one batch (one policy call, one durable commit, then
//! the acknowledgements), while the connection's writer sends whatever the session queues.

use super::hub::{Hub, Will};
use super::inbound::Inbound;
use super::packet::{Codec, Handshake, Packet, Version};
use super::publication::{forwarded, Publication};
use super::session::{session_key, Kick, Link, Session};
use super::transport::{Connection, Reader};
use super::writer::{self, Outbound, Outbox};
use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use rmqtt_codec::error::DecodeError;
use rmqtt_codec::v5::{self, ConnectAckReason, DisconnectReasonCode};
use std::num::NonZeroU16;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// How long a client may take to send its CONNECT.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);

/// Serves one accepted connection until it ends: the CONNECT handshake in this task, then the
/// attached client in a task of its own, so that what the handshake needs (the connection as
/// accepted, the CONNECT, the credential check, the CONNACK) is gone from what every idle
/// client keeps.
pub async fn serve(hub: Arc<Hub>, connection: Connection) {
    if let Some(attached) = accept_client(hub, connection).await {
        tokio::spawn(Box::new(attached).run());
    }
}

/// A client whose CONNECT was accepted: everything its connection keeps until it ends.
struct Attached {
    hub: Arc<Hub>,
    reader: Reader,
    buf: BytesMut,
    codec: Codec,
    inbound: Inbound,
    keep_alive: u16,
    kick: oneshot::Receiver<Kick>,
    will: Option<Box<Will>>,
    session: Arc<Session>,
    link_id: u64,
    outbox: Outbox,
    writer_task: tokio::task::JoinHandle<()>,
}

/// The CONNECT handshake up to an attached session; None when the client was refused (and
/// answered) or went away.
async fn accept_client(hub: Arc<Hub>, connection: Connection) -> Option<Attached> {
    let Connection {
        mut reader,
        writer,
        peer,
        listener,
    } = connection;
    let mut buf = BytesMut::new();
    let handshake = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        read_connect(&mut reader, &mut buf, hub.limits.max_packet_size),
    )
    .await
    .unwrap_or(Err(Refusal::Close("no CONNECT in time")));
    let (codec, mut connect) = match handshake {
        Ok(found) => found,
        Err(Refusal::IdentifierRejected(codec)) => {
            // MQTT 3.1.1: an empty client id needs a clean session (return code 2).
            let (outbox, writer_task) = writer::spawn(writer, codec, 0);
            let ack = v5::ConnectAck::default();
            refuse(
                outbox,
                writer_task,
                ack,
                ConnectAckReason::ClientIdentifierNotValid,
                "a persistent session needs a client identifier",
            )
            .await;
            return None;
        }
        Err(Refusal::Close(why)) => {
            tracing::debug!(%peer, %listener, why, "MQTT handshake failed");
            let mut writer = writer;
            writer.close().await;
            return None;
        }
    };
    if buf.is_empty() {
        // The CONNECT was all there was: hold no buffer while the client is quiet.
        buf = BytesMut::new();
    }
    let version = codec.version();
    let mut out_codec = codec.clone();
    let client_max_packet = connect.max_packet_size.map_or(0, |m| m.get());
    if client_max_packet > 0 {
        out_codec.limit_outbound(client_max_packet);
    }
    let alias_max = if version == Version::V5 {
        connect.topic_alias_max
    } else {
        0
    };
    let (outbox, writer_task) = writer::spawn(writer, out_codec, alias_max);

    let limits = hub.limits;
    let mut ack = v5::ConnectAck {
        receive_max: NonZeroU16::new(limits.max_inflight).unwrap_or(NonZeroU16::MIN),
        max_packet_size: Some(limits.max_packet_size),
        topic_alias_max: limits.topic_alias_max,
        retain_available: true,
        wildcard_subscription_available: true,
        subscription_identifiers_available: true,
        shared_subscription_available: true,
        ..v5::ConnectAck::default()
    };
    // Copied: the decoded CONNECT's fields share the read buffer's allocation, which must
    // not stay pinned for the life of the connection.
    let mut client_id = ByteString::from(&*connect.client_id);
    // (An MQTT 3.1.1 persistent session without a client id never gets here: the codec
    // refuses it, answered in the handshake above.)
    if client_id.is_empty() {
        client_id = ByteString::from(format!("svc-{}", crate::ids::new_key()));
        ack.assigned_client_id = Some(client_id.clone());
    }
    let username = connect.username.as_deref();
    let password = connect.password.as_deref();
    let Some(principal) = hub.policy.authenticate(username, password).await else {
        tracing::info!(%peer, %listener, client_id = %client_id, "MQTT CONNECT refused: bad credentials");
        refuse(
            outbox,
            writer_task,
            ack,
            ConnectAckReason::BadUserNameOrPassword,
            "bad user name or password",
        )
        .await;
        return None;
    };

    let mut keep_alive = connect.keep_alive;
    if keep_alive > limits.max_keepalive {
        keep_alive = limits.max_keepalive;
        ack.server_keepalive_sec = Some(keep_alive);
    }
    let expiry = match (version, connect.session_expiry_interval_secs) {
        (Version::V3, 0) => 0,
        (Version::V3, _) => limits.session_expiry_secs,
        (Version::V5, asked) if asked > limits.session_expiry_secs => {
            ack.session_expiry_interval_secs = Some(limits.session_expiry_secs);
            limits.session_expiry_secs
        }
        (Version::V5, asked) => asked,
    };
    let bridge = connect
        .user_properties
        .iter()
        .find(|(k, _)| k == super::BRIDGE_PROPERTY)
        .map(|(_, announced)| {
            Box::new(super::Bridge {
                client_id: client_id.to_string(),
                announced: announced.to_string(),
                peer,
                user_key: principal.user_key.clone(),
                since_ms: crate::time::now_ms(),
            })
        });
    let (kick_tx, kick_rx) = oneshot::channel();
    let link_id = hub.next_link_id();
    let link = Link {
        id: link_id,
        outbox: outbox.clone(),
        receive_max: connect.receive_max.map_or(u16::MAX, |r| r.get()),
        max_packet: client_max_packet,
        kick: Some(kick_tx),
        bridge,
    };
    let key = session_key(&principal.user_key, &client_id);
    let will = connect.last_will.take().map(|w| Box::new(will_of(w, &key)));
    let clean_start = connect.clean_start;
    drop(connect);
    let (session, present) = hub.attach(&key, principal.clone(), clean_start, expiry, link);
    ack.session_present = present;
    outbox.send(Outbound::packet(Packet::ConnectAck(Box::new(ack))));
    let mut writes = Vec::new();
    session.resume(&limits, &mut writes);
    hub.persist.send(writes);

    let inbound = Inbound::new(
        hub.clone(),
        session.clone(),
        outbox.clone(),
        version,
        principal,
    );
    Some(Attached {
        hub,
        reader,
        buf,
        codec,
        inbound,
        keep_alive,
        kick: kick_rx,
        will,
        session,
        link_id,
        outbox,
        writer_task,
    })
}

impl Attached {
    /// Reads and handles the client's packets until the connection ends, then detaches the
    /// session (sending the will unless the client said goodbye) and lets the writer finish.
    ///
    /// Boxed: an async fn's by-value arguments are kept twice in its future, a box is 8 bytes.
    async fn run(mut self: Box<Self>) {
        let end = self.read_loop().await;
        let will = match end {
            End::Normal => None,
            _ => self.will.take().map(|will| *will),
        };
        match end {
            End::Server(reason) => self.outbox.send(Outbound::Close(Some(reason))),
            _ => self.outbox.send(Outbound::Close(None)),
        };
        self.hub.detach(&self.session, self.link_id, will);
        let Attached {
            outbox,
            writer_task,
            inbound,
            ..
        } = *self;
        drop((outbox, inbound));
        let _ = writer_task.await;
    }

    async fn read_loop(&mut self) -> End {
        // A client silent for one and a half keep-alive periods is gone (MQTT §3.1.2.10).
        let silence =
            (self.keep_alive > 0).then(|| Duration::from_millis(u64::from(self.keep_alive) * 1500));
        loop {
            let read = async {
                match silence {
                    Some(limit) => tokio::time::timeout(limit, self.reader.read(&mut self.buf))
                        .await
                        .ok(),
                    None => Some(self.reader.read(&mut self.buf).await),
                }
            };
            tokio::select! {
                biased;
                why = &mut self.kick => {
                    return match why {
                        Ok(Kick::TakenOver) => End::Server(DisconnectReasonCode::SessionTakenOver),
                        Ok(Kick::NotAuthorized) => End::Server(DisconnectReasonCode::NotAuthorized),
                        Ok(Kick::ShuttingDown) => End::Server(DisconnectReasonCode::ServerShuttingDown),
                        Err(_) => End::Abrupt,
                    };
                }
                read = read => match read {
                    None => return End::Server(DisconnectReasonCode::KeepAliveTimeout),
                    Some(Ok(0)) | Some(Err(_)) => {
                        Box::pin(self.inbound.flush()).await;
                        return End::Abrupt;
                    }
                    Some(Ok(_)) => {}
                },
            }
            // Boxed: handling publishes awaits the platform's policy and the store, and that
            // state would otherwise be part of what every quiet client keeps.
            if let Some(end) = Box::pin(handle_read(
                &mut self.buf,
                &mut self.codec,
                &mut self.inbound,
            ))
            .await
            {
                return end;
            }
            if self.buf.is_empty() && self.buf.capacity() > 0 {
                // Everything read was handled: give the buffer back while the client is quiet
                // (the next read reserves one when bytes arrive).
                self.buf = BytesMut::new();
            }
        }
    }
}

/// Decodes and handles every whole packet in `buf`, then dispatches the publishes among them;
/// `Some` ends the connection.
async fn handle_read(buf: &mut BytesMut, codec: &mut Codec, inbound: &mut Inbound) -> Option<End> {
    loop {
        match codec.decode(buf) {
            Ok(Some(packet)) => {
                if let Some(end) = inbound.handle(packet).await {
                    inbound.flush().await;
                    return Some(end);
                }
            }
            Ok(None) => break,
            Err(e) => {
                inbound.flush().await;
                return Some(End::Server(decode_reason(&e)));
            }
        }
    }
    inbound.flush().await
}

/// How a connection ended.
pub enum End {
    /// DISCONNECT with reason 0: no will.
    Normal,
    /// DISCONNECT 0x04, closed socket, or an error: the will goes out.
    Abrupt,
    /// The server ends it with this reason (MQTT 5 DISCONNECT).
    Server(DisconnectReasonCode),
}

fn decode_reason(e: &DecodeError) -> DisconnectReasonCode {
    match e {
        DecodeError::MaxSizeExceeded { .. } => DisconnectReasonCode::PacketTooLarge,
        _ => DisconnectReasonCode::MalformedPacket,
    }
}

/// Why a connection ends before its CONNECT is accepted.
enum Refusal {
    /// Answered with CONNACK "identifier rejected" in the client's version.
    IdentifierRejected(Codec),
    /// Closed without an answer (not MQTT, malformed, too slow).
    Close(&'static str),
}

/// Reads until the first packet, which must be CONNECT.
async fn read_connect(
    reader: &mut Reader,
    buf: &mut BytesMut,
    max_packet: u32,
) -> Result<(Codec, Box<v5::Connect>), Refusal> {
    let mut codec = None;
    loop {
        if codec.is_none() {
            match Codec::detect(buf, max_packet) {
                Ok(found) => codec = Some(found),
                Err(Handshake::Incomplete) => {}
                Err(Handshake::Refused) => return Err(Refusal::Close("not an MQTT CONNECT")),
            }
        }
        if let Some(codec) = codec.as_mut() {
            match codec.decode(buf) {
                Ok(Some(Packet::Connect(connect))) => return Ok((codec.clone(), connect)),
                Ok(Some(_)) => return Err(Refusal::Close("the first packet was not CONNECT")),
                Ok(None) => {}
                Err(DecodeError::InvalidClientId) => {
                    return Err(Refusal::IdentifierRejected(codec.clone()))
                }
                Err(_) => return Err(Refusal::Close("a malformed CONNECT")),
            }
        }
        match reader.read(buf).await {
            Ok(0) | Err(_) => return Err(Refusal::Close("closed before CONNECT")),
            Ok(_) => {}
        }
    }
}

async fn refuse(
    outbox: Outbox,
    writer_task: tokio::task::JoinHandle<()>,
    mut ack: v5::ConnectAck,
    reason: ConnectAckReason,
    why: &str,
) {
    ack.reason_code = reason;
    ack.reason_string = Some(why.into());
    ack.session_present = false;
    outbox.send(Outbound::packet(Packet::ConnectAck(Box::new(ack))));
    outbox.send(Outbound::Close(None));
    drop(outbox);
    let _ = writer_task.await;
}

/// The will, in allocations of its own (the decoded CONNECT shares the read buffer's).
fn will_of(will: v5::LastWill, session_key: &Arc<str>) -> Will {
    let properties = v5::PublishProperties {
        correlation_data: will.correlation_data,
        message_expiry_interval: will.message_expiry_interval,
        content_type: will.content_type,
        user_properties: will.user_properties,
        is_utf8_payload: will.is_utf8_payload.unwrap_or(false),
        response_topic: will.response_topic,
        ..v5::PublishProperties::default()
    };
    Will {
        delay_secs: will.will_delay_interval_sec.unwrap_or(0),
        publication: Publication {
            topic: ByteString::from(&*will.topic),
            payload: Bytes::copy_from_slice(&will.message),
            qos: will.qos,
            retain: will.retain,
            properties: forwarded(Some(properties)),
            received_ms: 0,
            sender: Some(session_key.clone()),
        },
    }
}
