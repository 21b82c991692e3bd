//! The broker's durable state as the storage interface passes it: retained messages and
//! persistent sessions, and the writes that change them.

use crate::store::{StoreError, StoreResult};
use std::collections::HashMap;

// ---- Broker state ----

/// A PUBLISH as kept for a retained topic or a session's queue.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
    pub retain: bool,
    /// Opaque, encoded by the broker.
    pub properties: Vec<u8>,
    pub received_ms: i64,
    pub expires_at_ms: Option<i64>,
}

/// One subscription of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSubscription {
    pub filter: String,
    /// Opaque, encoded by the broker.
    pub options: Vec<u8>,
}

/// A message in a session's queue and how far its delivery got.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedMessage {
    pub seq: i64,
    pub packet_id: Option<u16>,
    /// 0 queued, 1 sent awaiting PUBACK/PUBREC, 2 PUBREC received awaiting PUBCOMP.
    pub state: u8,
    pub message: StoredMessage,
}

/// A persistent session with everything it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    pub client_id: String,
    /// User key of the principal that owns the session.
    pub owner: String,
    pub expiry_secs: u32,
    /// `None` while connected.
    pub disconnected_at_ms: Option<i64>,
    pub subscriptions: Vec<StoredSubscription>,
    /// Ordered by seq.
    pub queue: Vec<QueuedMessage>,
    /// Packet ids received at QoS 2 awaiting PUBREL.
    pub inbound_qos2: Vec<u16>,
}

/// One change to the broker's state; see [`Store::mqtt_write`].
#[derive(Debug, Clone, PartialEq)]
pub enum MqttWrite {
    PutRetained(StoredMessage),
    DeleteRetained {
        topic: String,
    },
    /// Upsert; keeps the session's subscriptions, queue and inbound ids.
    PutSession {
        client_id: String,
        owner: String,
        expiry_secs: u32,
        disconnected_at_ms: Option<i64>,
    },
    /// The session and its subscriptions, queue and inbound ids.
    DeleteSession {
        client_id: String,
    },
    /// Upsert by (client_id, filter).
    PutSubscription {
        client_id: String,
        subscription: StoredSubscription,
    },
    DeleteSubscription {
        client_id: String,
        filter: String,
    },
    /// A seq the session already holds is a conflict (and fails the batch).
    Enqueue {
        client_id: String,
        seq: i64,
        message: StoredMessage,
    },
    /// No change when the message is no longer queued.
    SetDelivery {
        client_id: String,
        seq: i64,
        packet_id: Option<u16>,
        state: u8,
    },
    Dequeue {
        client_id: String,
        seq: i64,
    },
    /// Idempotent: a duplicate QoS 2 PUBLISH may carry the same id again.
    PutInboundQos2 {
        client_id: String,
        packet_id: u16,
    },
    DeleteInboundQos2 {
        client_id: String,
        packet_id: u16,
    },
}

/// Refuses a QoS that MQTT does not have.
pub fn check_qos(qos: u8) -> StoreResult<()> {
    if qos > 2 {
        return Err(StoreError::Invalid(format!("QoS {qos} is not 0, 1 or 2")));
    }
    Ok(())
}

impl MqttWrite {
    /// What the write is, for an error message.
    pub fn label(&self) -> String {
        match self {
            MqttWrite::PutRetained(m) => format!("retain on `{}`", m.topic),
            MqttWrite::DeleteRetained { topic } => format!("delete retained on `{topic}`"),
            MqttWrite::PutSession { client_id, .. } => format!("put session `{client_id}`"),
            MqttWrite::DeleteSession { client_id } => format!("delete session `{client_id}`"),
            MqttWrite::PutSubscription {
                client_id,
                subscription,
            } => format!("subscribe `{client_id}` to `{}`", subscription.filter),
            MqttWrite::DeleteSubscription { client_id, filter } => {
                format!("unsubscribe `{client_id}` from `{filter}`")
            }
            MqttWrite::Enqueue { client_id, seq, .. } => {
                format!("enqueue #{seq} for `{client_id}`")
            }
            MqttWrite::SetDelivery { client_id, seq, .. } => {
                format!("delivery state of #{seq} for `{client_id}`")
            }
            MqttWrite::Dequeue { client_id, seq } => format!("dequeue #{seq} for `{client_id}`"),
            MqttWrite::PutInboundQos2 {
                client_id,
                packet_id,
            } => format!("inbound QoS 2 id {packet_id} of `{client_id}`"),
            MqttWrite::DeleteInboundQos2 {
                client_id,
                packet_id,
            } => format!("release inbound QoS 2 id {packet_id} of `{client_id}`"),
        }
    }
}

/// The session a child row belongs to (`index`: client id → position in `sessions`).
pub fn session_of<'s>(
    sessions: &'s mut [StoredSession],
    index: &HashMap<String, usize>,
    client_id: &str,
) -> StoreResult<&'s mut StoredSession> {
    let i = index.get(client_id).copied().ok_or_else(|| {
        StoreError::Internal(format!("stored MQTT row of unknown session `{client_id}`"))
    })?;
    Ok(&mut sessions[i])
}
