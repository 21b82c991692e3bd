//! One instance owns an SQLite file: it shares nothing, hears no one and leads alone.

use super::{SqliteStore, StoreResult};
use crate::store::interface::Cluster;
use crate::store::types::{Leadership, PeerNotice};
use std::sync::Arc;

impl Cluster for SqliteStore {
    /// One instance owns an SQLite file: its JWT secret stays in its data directory.
    fn shared_jwt_secret(&self) -> StoreResult<Option<Vec<u8>>> {
        Ok(None)
    }

    /// One instance owns an SQLite file: its own writes clear its caches, no one else writes.
    fn on_identity_change(&self, _changed: Arc<dyn Fn() + Send + Sync>) {}

    /// No other instance can open the file, so none is ever heard from or told anything.
    fn on_peer_notice(&self, _heard: Arc<dyn Fn(PeerNotice) + Send + Sync>) {}

    fn has_peers(&self) -> bool {
        false
    }

    fn tell_peers(&self, _kind: &str, _body: &[u8]) -> StoreResult<()> {
        Ok(())
    }

    /// The one instance on the file leads.
    fn leadership(&self) -> Leadership {
        Leadership::alone()
    }
}
