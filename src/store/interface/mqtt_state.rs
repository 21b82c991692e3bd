//! The broker's durable state: retained messages and persistent sessions (subscriptions and
//! queued messages), written behind the broker and loaded at start.

use crate::store::types::{MqttWrite, StoredMessage, StoredSession};
use crate::store::StoreResult;

/// Retained messages and persistent sessions.
pub trait BrokerState {
    /// Applies a batch of changes in order, in one transaction.
    fn mqtt_write(&self, writes: &[MqttWrite]) -> StoreResult<()>;
    /// The retained messages and the sessions not expired at `now_ms`.
    fn mqtt_load(&self, now_ms: i64) -> StoreResult<(Vec<StoredMessage>, Vec<StoredSession>)>;
}
