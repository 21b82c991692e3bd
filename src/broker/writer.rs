//! A connection's sending side: it drains every packet queued for the client into one buffer
//! and writes it with one call, so a busy subscriber costs one syscall per batch, not per
//! message. It also owns what is per hop on the way out: outbound topic aliases and the
//! client's Maximum Packet Size. It runs in the connection's own task (no task of its own: a
//! quiet client costs one task, not two), and it is handed the transport's [`Writer`] for each
//! write rather than owning it, so that a parked connection keeps its sender without a socket.

pub use super::outbox::Outbox;
use super::outbox::{self, Inbox, Waited};
use super::packet::{Codec, Packet};
use super::publication::Delivery;
use super::session::Kick;
use super::stats;
use super::transport::Writer;
use bytes::BytesMut;
use bytestring::ByteString;
use rmqtt_codec::v5::{Disconnect, DisconnectReasonCode};
use std::collections::HashMap;
use std::io;
use std::num::NonZeroU16;
use std::time::Duration;

/// Above this many buffered bytes the sender writes before encoding more of the batch.
const BATCH_BYTES: usize = 64 * 1024;
/// How long the last bytes (and a server DISCONNECT) may take when a connection ends.
const LAST_WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a connection is asked to send.
#[derive(Debug)]
pub enum Outbound {
    /// Boxed: the queue keeps slots of the largest variant.
    Packet(Box<Packet>),
    Deliver {
        delivery: Delivery,
        packet_id: Option<NonZeroU16>,
        dup: bool,
    },
    /// A server DISCONNECT (MQTT 5 only) then close; `None` closes without one.
    Close(Option<DisconnectReasonCode>),
}

impl Outbound {
    pub fn packet(packet: Packet) -> Outbound {
        Outbound::Packet(Box::new(packet))
    }

    /// A QoS 0 delivery: counted while it waits, dropped when its client falls behind.
    pub fn is_qos0_delivery(&self) -> bool {
        matches!(
            self,
            Outbound::Deliver {
                packet_id: None,
                ..
            }
        )
    }
}

/// How a write of what was queued ended.
pub enum Flushed {
    /// All written; the connection goes on.
    Done,
    /// The queue asked to close (a [`Outbound::Close`]), or the client is gone.
    Closed,
    /// Told to end while the client was not taking its bytes.
    Kicked(Kick),
}

/// The sending side of one connection.
pub struct Sender {
    codec: Codec,
    /// Only for clients that take aliases (MQTT 5 Topic Alias Maximum above 0).
    aliases: Option<Box<Aliases>>,
    inbox: Inbox,
}

impl Sender {
    /// The sending side, and the queue that feeds it.
    pub fn new(codec: Codec, client_alias_max: u16) -> (Sender, Outbox) {
        let (outbox, inbox) = outbox::outbox();
        let sender = Sender {
            codec,
            aliases: (client_alias_max > 0).then(|| Box::new(Aliases::new(client_alias_max))),
            inbox,
        };
        (sender, outbox)
    }

    /// Waits until something is queued or the connection is told to end. Cancel-safe.
    /// (`&mut`: the codec is not `Sync`, and the connection's future must stay `Send`.)
    pub async fn wait(&mut self) -> Waited {
        self.inbox.wait().await
    }

    /// The client's bytes arrived just now (for the keep-alive sweep).
    pub fn heard(&self, now_ms: i64) {
        self.inbox.heard(now_ms);
    }

    /// The connection's codec, to decode what the client sends (the limit on what it
    /// receives, MQTT 5 Maximum Packet Size, applies to encoding only).
    pub fn codec(&mut self) -> &mut Codec {
        &mut self.codec
    }

    /// The queue's receiving side (to hand its wake-ups to a parked connection).
    pub fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    /// Encodes and writes everything queued now, in writes of up to [`BATCH_BYTES`]; a kick
    /// interrupts a write the client does not take.
    pub async fn flush(&mut self, writer: &mut Writer) -> Flushed {
        let mut batch = Vec::new();
        self.inbox.take(&mut batch);
        let now_ms = crate::time::now_ms();
        self.inbox.active(now_ms);
        let mut buf = BytesMut::new();
        // Added to the connection's counter once per batch (the list of connected clients
        // shows it), not once per message.
        let mut deliveries = 0;
        let mut by_qos = [0u64; 3];
        let mut closed = false;
        for item in batch {
            if let Outbound::Deliver { delivery, .. } = &item {
                deliveries += 1;
                by_qos[stats::qos_index(delivery.qos)] += 1;
            }
            closed = self.encode(item, &mut buf, now_ms);
            if closed || buf.len() >= BATCH_BYTES {
                if let Some(end) = self.write(writer, &mut buf).await {
                    return end;
                }
                if closed {
                    break;
                }
            }
        }
        self.inbox.count_sent(deliveries);
        stats::sent(by_qos);
        if let Some(end) = self.write(writer, &mut buf).await {
            return end;
        }
        if closed {
            Flushed::Closed
        } else {
            Flushed::Done
        }
    }

    /// Writes `buf` (emptied), unless a kick comes first; `Some` ends the connection.
    async fn write(&mut self, writer: &mut Writer, buf: &mut BytesMut) -> Option<Flushed> {
        if buf.is_empty() {
            return None;
        }
        stats::bytes_out(buf.len());
        // The written bytes share the buffer's allocation: each write gets a new one, so a
        // quiet connection holds none.
        let bytes = buf.split().freeze();
        tokio::select! {
            written = writer.write(bytes) => written.is_err().then_some(Flushed::Closed),
            why = self.inbox.kicked() => Some(Flushed::Kicked(why)),
        }
    }

    /// Ends the connection: what is still queued, then a DISCONNECT with `reason` (MQTT 5), then close — bounded in time, as the client
    /// may not be taking bytes any more.
    pub async fn close(mut self, mut writer: Writer, reason: Option<DisconnectReasonCode>) {
        let last = async {
            let mut buf = BytesMut::new();
            let mut batch = Vec::new();
            self.inbox.take(&mut batch);
            let now_ms = crate::time::now_ms();
            let mut closed = false;
            for item in batch {
                closed = self.encode(item, &mut buf, now_ms);
                if closed {
                    break;
                }
            }
            if !closed {
                self.encode(Outbound::Close(reason), &mut buf, 0);
            }
            if !buf.is_empty() {
                stats::bytes_out(buf.len());
                let _ = writer.write(buf.freeze()).await;
            }
        };
        // Boxed: the close path waits on a timer, which would otherwise sit in every idle
        // connection's future.
        let _ = Box::pin(tokio::time::timeout(LAST_WRITE_TIMEOUT, last)).await;
        drop(self.inbox);
        Box::pin(writer.close()).await;
    }

    /// Answers `packet` (a refused CONNECT's CONNACK) over `writer` and closes it.
    pub async fn refuse(mut self, mut writer: Writer, packet: Packet) {
        let _ = self.write_now(&mut writer, packet).await;
        Box::pin(writer.close()).await;
    }

    /// Writes `packet` (a CONNECT's CONNACK) now, before anything queued is written: a client
    /// that connects then needs no queue allocation, and no packet box that would be freed
    /// between the allocations every quiet client keeps (and leave holes among them).
    /// Err when the client did not take it.
    pub async fn write_now(&mut self, writer: &mut Writer, packet: Packet) -> io::Result<()> {
        let mut buf = BytesMut::new();
        self.encode_packet(packet, &mut buf);
        stats::bytes_out(buf.len());
        tokio::time::timeout(LAST_WRITE_TIMEOUT, writer.write(buf.freeze()))
            .await
            .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()))
    }

    /// Encodes one item; true when the connection is to close after it.
    fn encode(&mut self, item: Outbound, buf: &mut BytesMut, now_ms: i64) -> bool {
        let packet = match item {
            Outbound::Packet(packet) => *packet,
            Outbound::Deliver {
                delivery,
                packet_id,
                dup,
            } => {
                if packet_id.is_none() {
                    self.inbox.written_qos0();
                }
                let mut publish = delivery.packet(packet_id, dup, now_ms);
                if let (Some(props), Some(aliases)) =
                    (publish.properties.as_mut(), self.aliases.as_mut())
                {
                    match aliases.alias(&publish.topic) {
                        Some((alias, true)) => props.topic_alias = Some(alias),
                        Some((alias, false)) => {
                            props.topic_alias = Some(alias);
                            publish.topic = ByteString::default();
                        }
                        None => {}
                    }
                }
                Packet::Publish(Box::new(publish))
            }
            Outbound::Close(reason) => {
                if let Some(reason_code) = reason {
                    let disconnect = Disconnect {
                        reason_code,
                        ..Disconnect::default()
                    };
                    let _ = self.codec.encode(Packet::Disconnect(disconnect), buf);
                }
                return true;
            }
        };
        self.encode_packet(packet, buf);
        false
    }

    fn encode_packet(&mut self, packet: Packet, buf: &mut BytesMut) {
        // A packet above the client's maximum is dropped (MQTT 5 §3.1.2.25): the session
        // already skips deliveries it can size, this catches the rest.
        if let Err(e) = self.codec.encode(packet, buf) {
            tracing::debug!(error = %e, "an outbound MQTT packet was not sent");
        }
    }
}

/// Outbound topic aliases: the first topics a client receives get an alias each, up to the
/// client's Topic Alias Maximum; later deliveries on them carry only the alias.
struct Aliases {
    max: u16,
    assigned: HashMap<ByteString, NonZeroU16>,
}

impl Aliases {
    fn new(max: u16) -> Aliases {
        Aliases {
            max,
            assigned: HashMap::new(),
        }
    }

    /// The alias for `topic` and whether this is its first use (the topic must go along).
    fn alias(&mut self, topic: &ByteString) -> Option<(NonZeroU16, bool)> {
        if self.max == 0 || topic.is_empty() {
            return None;
        }
        if let Some(alias) = self.assigned.get(topic) {
            return Some((*alias, false));
        }
        let next = u16::try_from(self.assigned.len() + 1).ok()?;
        if next > self.max {
            return None;
        }
        let alias = NonZeroU16::new(next)?;
        self.assigned.insert(topic.clone(), alias);
        Some((alias, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_assigned_up_to_the_client_maximum() {
        let mut aliases = Aliases::new(2);
        let a = ByteString::from("a");
        let b = ByteString::from("b");
        let c = ByteString::from("c");
        assert_eq!(
            aliases.alias(&a).map(|(n, f)| (n.get(), f)),
            Some((1, true))
        );
        assert_eq!(
            aliases.alias(&a).map(|(n, f)| (n.get(), f)),
            Some((1, false))
        );
        assert_eq!(
            aliases.alias(&b).map(|(n, f)| (n.get(), f)),
            Some((2, true))
        );
        assert_eq!(aliases.alias(&c), None);
        assert_eq!(Aliases::new(0).alias(&a), None);
    }
}
