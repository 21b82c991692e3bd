//! A connection's writer: it drains every packet queued for the client into one buffer and
//! writes it with one call, so a busy subscriber costs one syscall per batch, not per message.
//! It also owns what is per hop on the way out: outbound topic aliases and the client's
//! Maximum Packet Size.

pub use super::outbox::Outbox;
use super::outbox::{self, Inbox};
use super::packet::{Codec, Packet};
use super::publication::Delivery;
use super::transport::Writer;
use bytes::BytesMut;
use bytestring::ByteString;
use rmqtt_codec::v5::{Disconnect, DisconnectReasonCode};
use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU16;

/// Above this many buffered bytes the writer writes before taking more from the queue.
const BATCH_BYTES: usize = 64 * 1024;

/// What a connection's writer is asked to send.
#[derive(Debug)]
pub enum Outbound {
    /// Boxed: the channel allocates slots of the largest variant, and every connection has one.
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

/// Starts the writer task of a connection.
pub fn spawn(
    writer: Writer,
    codec: Codec,
    client_alias_max: u16,
) -> (Outbox, tokio::task::JoinHandle<()>) {
    let (outbox, inbox) = outbox::outbox();
    let task = WriterTask {
        writer,
        codec,
        aliases: Aliases::new(client_alias_max),
    };
    let handle = tokio::spawn(Box::new(task).run(inbox));
    (outbox, handle)
}

struct WriterTask {
    writer: Writer,
    codec: Codec,
    aliases: Aliases,
}

impl WriterTask {
    /// Boxed: an async fn's by-value arguments are kept twice in its future, and every
    /// connection keeps this one for its life.
    async fn run(mut self: Box<Self>, inbox: Inbox) {
        let mut batch = VecDeque::new();
        'batches: while inbox.take(&mut batch).await {
            let now_ms = crate::time::now_ms();
            let mut buf = BytesMut::new();
            while let Some(item) = batch.pop_front() {
                let close = self.encode(item, &inbox, &mut buf, now_ms);
                if close || buf.len() >= BATCH_BYTES {
                    // The written bytes share the buffer's allocation: each write gets a new
                    // one, so a quiet connection holds none.
                    if self.writer.write(buf.split().freeze()).await.is_err() {
                        break 'batches;
                    }
                    if close {
                        break 'batches;
                    }
                }
            }
            if !buf.is_empty() && self.writer.write(buf.freeze()).await.is_err() {
                break;
            }
            // A burst's queue is not kept for the quiet time after it.
            batch = VecDeque::new();
        }
        // Boxed: the close path waits on a timer, which would otherwise sit in every idle
        // connection's writer.
        Box::pin(self.writer.close()).await;
    }

    /// Encodes one item; true when the connection is to close after this batch.
    fn encode(&mut self, item: Outbound, inbox: &Inbox, buf: &mut BytesMut, now_ms: i64) -> bool {
        let packet = match item {
            Outbound::Packet(packet) => *packet,
            Outbound::Deliver {
                delivery,
                packet_id,
                dup,
            } => {
                if packet_id.is_none() {
                    inbox.written_qos0();
                }
                let mut publish = delivery.packet(packet_id, dup, now_ms);
                if let Some(props) = publish.properties.as_mut() {
                    match self.aliases.alias(&publish.topic) {
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
        // A packet above the client's maximum is dropped (MQTT 5 §3.1.2.25): the session
        // already skips deliveries it can size, this catches the rest.
        if let Err(e) = self.codec.encode(packet, buf) {
            tracing::debug!(error = %e, "an outbound MQTT packet was not sent");
        }
        false
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
