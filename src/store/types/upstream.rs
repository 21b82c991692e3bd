//! What an upstream's out-queue keeps in the store: the messages waiting to go out to another
//! broker, in order. The queue's policy (limits, conflation, retries) is `upstream::queue`'s.

use bytes::Bytes;

/// One message on its way to the upstream (its topic already the remote one).
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamMessage {
    pub seq: i64,
    pub topic: String,
    pub payload: Bytes,
    pub qos: u8,
    pub retain: bool,
    /// Bridges the message crossed before this one.
    pub hops: u8,
    pub enqueued_ms: i64,
    /// Which binding of the upstream carried it out.
    pub binding: usize,
}
