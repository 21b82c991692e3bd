//! One client connection: the CONNECT handshake, then one task that decodes everything a read
//! brought and handles it (publishes as one batch: one policy call, one durable commit, then
//! the acknowledgements) and writes whatever the session queued, whichever comes first. A
//! client costs that one task and nothing else: no timer (the hub sweeps for silent clients),
//! no second task, no buffers; a quiet plain-TCP client not even the task (it parks, see
//! [`super::parking`]).

use super::clients::LinkInfo;
use super::hub::{Hub, Will};
use super::inbound::Inbound;
use super::outbox::Waited;
use super::packet::{Codec, Handshake, Packet, Version};
use super::parking::{self, Resume, Ticket};
use super::publication::{forwarded, Publication};
#[cfg(test)]
use super::session::Session;
use super::session::{session_key, Kick, Link};
use super::transport::{self, Connection, Reader, Writer};
use super::writer::{Flushed, Sender};
use super::{stats, AuthRefusal};
use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use rmqtt_codec::error::DecodeError;
use rmqtt_codec::v5::{self, ConnectAckReason, DisconnectReasonCode};
use std::num::NonZeroU16;
use std::sync::Arc;
use std::time::Duration;

/// How long a client may take to send its CONNECT.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest wait before refusing a CONNECT whose user name or address is locked.
const THROTTLED_REFUSAL_DELAY: Duration = Duration::from_secs(3);

/// Serves one accepted connection until it ends: the CONNECT handshake in this task, then the
/// attached client in a task of its own, so that what the handshake needs (the connection as
/// accepted, the CONNECT, the credential check, the CONNACK) is gone from what every idle
/// client keeps.
pub async fn serve(hub: Arc<Hub>, connection: Connection) {
    if let Some(attached) = accept_client(hub, connection).await {
        tokio::spawn(attached.run());
    }
}

/// A client whose CONNECT was accepted, with its transport: what its task holds.
struct Attached {
    reader: Reader,
    writer: Writer,
    client: Box<Client>,
}

/// Everything a client's connection keeps besides its socket, parked or not. Kept small: it is
/// resident for every quiet client (the hub and the session are the inbound side's).
struct Client {
    buf: BytesMut,
    inbound: Inbound,
    /// Its codec also decodes what the client sends: one codec per connection, decoding and
    /// encoding keep their own state and limits in it.
    sender: Sender,
    will: Option<Box<Will>>,
    link_id: u64,
}

/// A parked client: its state without the read buffer (empty when it parks), in the
/// allocator's 128-byte class instead of the 160-byte one.
struct ParkedClient {
    inbound: Inbound,
    sender: Sender,
    will: Option<Box<Will>>,
    link_id: u64,
}

impl From<Client> for ParkedClient {
    fn from(client: Client) -> ParkedClient {
        let Client {
            buf: _,
            inbound,
            sender,
            will,
            link_id,
        } = client;
        ParkedClient {
            inbound,
            sender,
            will,
            link_id,
        }
    }
}

impl From<ParkedClient> for Client {
    fn from(parked: ParkedClient) -> Client {
        let ParkedClient {
            inbound,
            sender,
            will,
            link_id,
        } = parked;
        Client {
            buf: BytesMut::new(),
            inbound,
            sender,
            will,
            link_id,
        }
    }
}

/// The CONNECT handshake up to an attached session; None when the client was refused (and
/// answered) or went away.
async fn accept_client(hub: Arc<Hub>, connection: Connection) -> Option<Box<Attached>> {
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
            refuse(sender, writer, ack, reason, &why).await;
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
    Some(Box::new(Attached {
        reader,
        writer,
        client: Box::new(Client {
            buf,
            inbound,
            sender,
            will,
            link_id,
        }),
    }))
}

impl Attached {
    /// Serves the client until the connection ends or parks; when it ends, detaches the
    /// session (sending the will unless the client said goodbye) and writes the last bytes.
    ///
    /// Boxed: an async fn's by-value arguments are kept twice in its future, a box is 8 bytes.
    async fn run(mut self: Box<Self>) {
        let end = loop {
            match self.serve().await {
                Served::Ended(end) => break end,
                Served::Park(ticket) => match Attached::park(*self, ticket) {
                    Some(not_parked) => self = not_parked,
                    None => return,
                },
            }
        };
        let reason = self.client.detach(end);
        let Attached { writer, client, .. } = *self;
        let Client {
            sender, inbound, ..
        } = *client;
        drop(inbound);
        // Boxed: the last write's state is needed once, not kept in every client's future.
        Box::pin(sender.close(writer, reason)).await;
    }

    /// Reads and handles the client's packets and writes what is queued for it, whichever is
    /// ready, until the connection ends or may park.
    async fn serve(&mut self) -> Served {
        let Attached {
            reader,
            writer,
            client,
        } = self;
        loop {
            // Not biased: a subscriber whose queue never empties still has its reads (pings,
            // acknowledgements) taken, and a fast publisher its acknowledgements written.
            tokio::select! {
                waited = client.sender.wait() => match waited {
                    Waited::Kicked(why) => return kicked(why),
                    Waited::ParkAsked => {
                        if let Some(ticket) = client.may_park(reader) {
                            return Served::Park(ticket);
                        }
                        continue;
                    }
                    // Boxed: a write waits on the client, and that state would otherwise be
                    // part of what every quiet client keeps.
                    Waited::Queued => match Box::pin(client.sender.flush(writer)).await {
                        Flushed::Done => continue,
                        Flushed::Closed => return Served::Ended(End::Abrupt),
                        Flushed::Kicked(why) => return kicked(why),
                    },
                },
                read = reader.read(&mut client.buf) => match read {
                    Ok(0) | Err(_) => {
                        Box::pin(client.inbound.flush()).await;
                        return Served::Ended(End::Abrupt);
                    }
                    Ok(n) => {
                        stats::bytes_in(n);
                        client.sender.heard(crate::time::now_ms());
                    }
                },
            }
            // Boxed: handling publishes awaits the platform's policy and the store, and that
            // state would otherwise be part of what every quiet client keeps.
            if let Some(end) = Box::pin(handle_read(
                &mut client.buf,
                client.sender.codec(),
                &mut client.inbound,
            ))
            .await
            {
                return Served::Ended(end);
            }
            if client.buf.is_empty() && client.buf.capacity() > 0 {
                // Everything read was handled: give the buffer back while the client is quiet
                // (the next read reserves one when bytes arrive).
                client.buf = BytesMut::new();
            }
        }
    }

    /// Parks the connection: its socket leaves tokio, its client state waits in the parking
    /// lot, its task ends. Given back when the transport cannot be parked.
    fn park(self, ticket: Ticket) -> Option<Box<Self>> {
        let Attached {
            reader,
            writer,
            mut client,
        } = self;
        match transport::into_std(reader, writer) {
            Ok(Ok(stream)) => {
                client.inbound.session().lock().compact();
                // Before parking: see [`Ticket::waker`].
                client.sender.inbox().wake_instead(&ticket.waker());
                let outbox = client.sender.inbox().outbox();
                let parked = Box::new(ParkedClient::from(*client));
                ticket.park(stream, parked, move || outbox.pending());
                None
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "an MQTT connection was lost while parking");
                client.detach(End::Abrupt);
                None
            }
            Err((reader, writer)) => Some(Box::new(Attached {
                reader,
                writer,
                client,
            })),
        }
    }
}

impl Client {
    /// A ticket to park with when the connection may park now: plain TCP, nothing half-read,
    /// and quiet both ways since the hub asked.
    fn may_park(&self, reader: &Reader) -> Option<Ticket> {
        let quiet = crate::time::now_ms() - self.sender.inbox().active_ms() >= parking::QUIET_MS;
        (quiet && self.buf.is_empty() && reader.is_tcp())
            .then(Ticket::new)
            .flatten()
    }

    /// Detaches the session from the ended connection (sending the will unless the client
    /// said goodbye); the server's reason to tell the client, if any.
    fn detach(&mut self, end: End) -> Option<DisconnectReasonCode> {
        let (will, reason) = match end {
            End::Normal => (None, None),
            End::Abrupt => (self.will.take(), None),
            End::Server(reason) => (self.will.take(), Some(reason)),
        };
        self.inbound
            .hub()
            .detach(self.inbound.session(), self.link_id, will.map(|will| *will));
        reason
    }
}

impl Resume for ParkedClient {
    fn resume(self: Box<Self>, stream: std::net::TcpStream, runtime: &tokio::runtime::Handle) {
        runtime.spawn(async move {
            let client = Box::new(Client::from(*self));
            match transport::from_std(stream) {
                Ok((reader, writer)) => {
                    let attached = Box::new(Attached {
                        reader,
                        writer,
                        client,
                    });
                    attached.run().await;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "a parked MQTT connection could not be served again");
                    let mut client = client;
                    client.detach(End::Abrupt);
                }
            }
        });
    }
}

/// What serving a connection came to.
enum Served {
    Ended(End),
    /// Quiet: park it with this ticket.
    Park(Ticket),
}

/// How a connection the server was told to end ends.
fn kicked(why: Kick) -> Served {
    Served::Ended(End::Server(match why {
        Kick::TakenOver => DisconnectReasonCode::SessionTakenOver,
        Kick::NotAuthorized => DisconnectReasonCode::NotAuthorized,
        Kick::ShuttingDown => DisconnectReasonCode::ServerShuttingDown,
        Kick::KeepAliveTimeout => DisconnectReasonCode::KeepAliveTimeout,
    }))
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
    sender: Sender,
    writer: Writer,
    mut ack: v5::ConnectAck,
    reason: ConnectAckReason,
    why: &str,
) {
    ack.reason_code = reason;
    ack.reason_string = Some(why.into());
    ack.session_present = false;
    sender
        .refuse(writer, Packet::ConnectAck(Box::new(ack)))
        .await;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What every client keeps is sized to the allocator's classes (mimalloc: 128, 160 and
    /// 192 bytes): a field more moves it to the next class, 32 bytes more per client.
    #[test]
    fn a_quiet_clients_state_fits_its_allocation_classes() {
        assert!(std::mem::size_of::<Client>() <= 160);
        assert!(std::mem::size_of::<ParkedClient>() <= 128);
        // An `Arc` adds two counters (16 bytes) to what it holds.
        assert!(std::mem::size_of::<Session>() + 16 <= 192);
    }
}
