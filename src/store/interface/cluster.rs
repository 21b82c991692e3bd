//! Instances sharing one store: what they share (the JWT secret), how they hear of each other's
//! changes and notices, and which of them leads. On SQLite one instance owns the file, so it is
//! alone and leads; on PostgreSQL several instances may run on one database.

use crate::store::types::{Leadership, PeerNotice};
use crate::store::StoreResult;
use std::sync::Arc;

/// The other instances on this store.
pub trait Cluster {
    /// The JWT secret every instance on this store signs with; `None` when the store has one
    /// instance only (SQLite), whose secret stays in its data directory.
    fn shared_jwt_secret(&self) -> StoreResult<Option<Vec<u8>>>;
    /// Calls `changed` when another instance may have changed identity data (users, keys,
    /// groups, grants), so cached identity must be dropped.
    fn on_identity_change(&self, changed: Arc<dyn Fn() + Send + Sync>);
    /// Calls `heard` with each notice another instance on this store sent, in order, starting
    /// with those heard since the store opened (so what the caller loaded before this call and
    /// what changed meanwhile cannot fall between the two).
    fn on_peer_notice(&self, heard: Arc<dyn Fn(PeerNotice) + Send + Sync>);
    /// Whether another instance is alive on this store (so messages have someone to reach): seen
    /// lately, or heard from lately.
    fn has_peers(&self) -> bool;
    /// Sends a notice (a kind and a body, both the caller's) to every other instance.
    fn tell_peers(&self, kind: &str, body: &[u8]) -> StoreResult<()>;
    /// Whether this instance is the one that runs what must run once for all instances.
    fn leadership(&self) -> Leadership;
}
