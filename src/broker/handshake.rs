//! The CONNECT handshake of one connection: read the CONNECT (in time, within the size
//! limit), check the credential with the platform's policy (throttled logins are refused
//! slowly), attach the session (taking over an earlier connection with the same client id),
//! answer the CONNACK, and hand over what the attached client's task keeps. What only the
//! handshake needs is dropped before the client's task starts.

use super::clients::LinkInfo;
use super::connection::{Attached, Client};
use super::hub::{Hub, Will};
use super::inbound::Inbound;
use super::packet::{Codec, Handshake, Packet, Version};
use super::publication::{forwarded, Publication};
use super::session::{session_key, Link};
use super::transport::{Connection, Reader, Writer};
use super::writer::Sender;
use super::{stats, AuthRefusal};
use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use rmqtt_codec::error::DecodeError;
use rmqtt_codec::v5::{self, ConnectAckReason};
use std::num::NonZeroU16;
use std::sync::Arc;
use std::time::Duration;

/// How long a client may take to send its CONNECT.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest wait before refusing a CONNECT whose user name or address is locked.
const THROTTLED_REFUSAL_DELAY: Duration = Duration::from_secs(3);

/// The CONNECT handshake up to an attached session; None when the client was refused (and
/// answered) or went away.
pub async fn accept_client(hub: Arc<Hub>, connection: Connection) -> Option<Box<Attached>> {
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
            let (sender, _) = Sender::new(codec, 0);
            let ack = v5::ConnectAck::default();
            refuse(
                sender,
                reader,
                writer,
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
    let mut codec = codec;
    let client_max_packet = connect.max_packet_size.map_or(0, |m| m.get());
    if client_max_packet > 0 {
        codec.limit_outbound(client_max_packet);
    }
    let alias_max = if version == Version::V5 {
        connect.topic_alias_max
    } else {
        0
    };
    let (mut sender, outbox) = Sender::new(codec, alias_max);

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
    let principal = match hub.policy.authenticate(peer, username, password).await {
        Ok(principal) => hub.share_principal(principal),
        Err(refusal) => {
            stats::connect(false);
            let (reason, why) = match refusal {
                AuthRefusal::BadCredentials => {
                    tracing::info!(%peer, %listener, client_id = %client_id, "MQTT CONNECT refused: bad credentials");
                    (
                        ConnectAckReason::BadUserNameOrPassword,
                        "bad user name or password".to_string(),
                    )
                }
                AuthRefusal::Throttled { retry_after } => {
                    tracing::info!(%peer, %listener, client_id = %client_id, "MQTT CONNECT refused: too many failed logins");
                    // The refusal waits, so a client retrying in a loop slows down with it.
                    tokio::time::sleep(retry_after.min(THROTTLED_REFUSAL_DELAY)).await;
                    let reason = match version {
                        Version::V5 => ConnectAckReason::QuotaExceeded,
                        Version::V3 => ConnectAckReason::NotAuthorized,
                    };
                    let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                    let why = format!(
                        "too many failed logins for this user or from this address; try again in {} seconds",
                        secs.max(1)
                    );
                    (reason, why)
                }
            };
            refuse(sender, reader, writer, ack, reason, &why).await;
            return None;
        }
    };
    stats::connect(true);

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
    let link_id = hub.next_link_id();
    let link = Link {
        id: link_id,
        outbox: outbox.clone(),
        receive_max: connect.receive_max.map_or(u16::MAX, |r| r.get()),
        max_packet: client_max_packet,
        bridge,
        info: LinkInfo {
            peer_ip: peer.ip(),
            peer_port: peer.port(),
            since_ms: crate::time::now_ms(),
            keep_alive,
            version,
            listener,
            clean_start: connect.clean_start,
        },
    };
    let key = session_key(&principal.user_key, &client_id);
    let will = connect.last_will.take().map(|w| Box::new(will_of(w, &key)));
    let clean_start = connect.clean_start;
    drop(connect);
    let (session, present) = hub.attach(&key, principal.clone(), clean_start, expiry, link);
    ack.session_present = present;
    let mut writer = writer;
    if let Err(e) = sender
        .write_now(&mut writer, Packet::ConnectAck(Box::new(ack)))
        .await
    {
        // The client's task finds the connection gone at its first read, and ends it as
        // any connection lost (the will goes out).
        tracing::debug!(%peer, error = %e, "an MQTT CONNACK was not taken");
    }
    let mut writes = Vec::new();
    session.resume(&limits, &mut writes);
    hub.persist.send(writes);

    let inbound = Inbound::new(hub, session, outbox, version, principal);
    let client = Client::new(buf, inbound, sender, will, link_id);
    Some(Attached::new(reader, writer, client))
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

/// Answers a refused CONNECT with its CONNACK and closes carefully (see
/// [`super::transport::linger`]): a client that sent more behind its CONNECT still reads why.
async fn refuse(
    sender: Sender,
    reader: Reader,
    writer: Writer,
    mut ack: v5::ConnectAck,
    reason: ConnectAckReason,
    why: &str,
) {
    ack.reason_code = reason;
    ack.reason_string = Some(why.into());
    ack.session_present = false;
    let answer = sender.refuse(writer, Packet::ConnectAck(Box::new(ack)));
    // Boxed: a refusal's state is needed once, not kept in every handshake's future.
    Box::pin(super::transport::linger(reader, answer)).await;
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
