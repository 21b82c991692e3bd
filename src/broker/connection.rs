//! One client connection: after the CONNECT handshake (see [`super::handshake`]), one task
//! that decodes everything a read brought and handles it (publishes as one batch: one policy call, one durable commit, then
//! the acknowledgements) and writes whatever the session queued, whichever comes first. A
//! client costs that one task and nothing else: no timer (the hub sweeps for silent clients),
//! no second task, no buffers; a quiet plain-TCP client not even the task (it parks, see
//! [`super::parking`]).

use super::hub::{Hub, Will};
use super::inbound::Inbound;
use super::outbox::Waited;
use super::packet::Codec;
use super::parking::{self, Resume, Ticket};
use super::session::Kick;
#[cfg(test)]
use super::session::Session;
use super::stats;
use super::transport::{self, Connection, Reader, Writer};
use super::writer::{Flushed, Sender};
use bytes::BytesMut;
use rmqtt_codec::error::DecodeError;
use rmqtt_codec::v5::DisconnectReasonCode;
use std::sync::Arc;

/// Serves one accepted connection until it ends: the CONNECT handshake in this task, then the
/// attached client in a task of its own, so that what the handshake needs (the connection as
/// accepted, the CONNECT, the credential check, the CONNACK) is gone from what every idle
/// client keeps.
pub async fn serve(hub: Arc<Hub>, connection: Connection) {
    if let Some(attached) = super::handshake::accept_client(hub, connection).await {
        tokio::spawn(attached.run());
    }
}

/// A client whose CONNECT was accepted, with its transport: what its task holds.
pub(super) struct Attached {
    reader: Reader,
    writer: Writer,
    client: Box<Client>,
}

/// Everything a client's connection keeps besides its socket, parked or not. Kept small: it is
/// resident for every quiet client (the hub and the session are the inbound side's).
pub(super) struct Client {
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
        // The read buffer is empty when a client parks (see `Client::may_park`).
        let Client {
            inbound,
            sender,
            will,
            link_id,
            ..
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
        let buf = BytesMut::new();
        Client {
            buf,
            inbound,
            sender,
            will,
            link_id,
        }
    }
}

impl Attached {
    pub(super) fn new(reader: Reader, writer: Writer, client: Box<Client>) -> Box<Attached> {
        Box::new(Attached {
            reader,
            writer,
            client,
        })
    }

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
        let server_ends = matches!(end, End::Server(_));
        let reason = self.client.detach(end);
        let Attached {
            reader,
            writer,
            client,
        } = *self;
        let Client {
            sender, inbound, ..
        } = *client;
        drop(inbound);
        let closing = sender.close(writer, reason);
        // Boxed: the last write's state is needed once, not kept in every client's future.
        if server_ends {
            // The client may still be writing: see [`transport::linger`].
            Box::pin(transport::linger(reader, closing)).await;
        } else {
            Box::pin(closing).await;
        }
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
            Err((reader, writer)) => Some(Attached::new(reader, writer, client)),
        }
    }
}

impl Client {
    pub(super) fn new(
        buf: BytesMut,
        inbound: Inbound,
        sender: Sender,
        will: Option<Box<Will>>,
        link_id: u64,
    ) -> Box<Client> {
        Box::new(Client {
            buf,
            inbound,
            sender,
            will,
            link_id,
        })
    }

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
                    let attached = Attached::new(reader, writer, client);
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
