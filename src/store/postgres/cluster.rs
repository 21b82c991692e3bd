//! Instances sharing one PostgreSQL database: the JWT secret they share, the notices they
//! hear (`instances.rs`: the listening connection), and which of them leads
//! (`leadership.rs`: the campaign).

use super::instances::set;
use super::PgStore;
use crate::store::interface::Cluster;
use crate::store::types::Leadership;
use crate::store::{PeerNotice, StoreResult};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Cluster for PgStore {
    /// The JWT secret every instance on this database signs with: created (random, 32 bytes)
    /// by the first instance that asks.
    fn shared_jwt_secret(&self) -> StoreResult<Option<Vec<u8>>> {
        let fresh = rand::random::<[u8; 32]>().to_vec();
        self.execute(
            "INSERT INTO svc_secrets (name, value) VALUES ('jwt', $1) ON CONFLICT DO NOTHING",
            &[&fresh],
        )?;
        Ok(Some(
            self.query_one("SELECT value FROM svc_secrets WHERE name = 'jwt'", &[])?
                .get(0),
        ))
    }

    /// Calls `changed` whenever any instance changes identity data, and whenever the listening
    /// connection was lost and is back (what changed meanwhile was not heard).
    fn on_identity_change(&self, changed: Arc<dyn Fn() + Send + Sync>) {
        set(&self.listeners.identity, changed);
    }

    /// Calls `heard` with every notice another instance sends, in the order they were sent.
    /// Notices heard since the store opened and before this call come first.
    fn on_peer_notice(&self, heard: Arc<dyn Fn(PeerNotice) + Send + Sync>) {
        self.listeners.take_notices(heard);
    }

    /// Whether any other instance is alive on this database: seen by the leadership
    /// campaign in the last seconds, or heard from just now (an instance that starts asks the
    /// others for their last values, so they know of it before it is ready).
    fn has_peers(&self) -> bool {
        self.peers_present.load(Ordering::Relaxed) || self.listeners.peer_heard_lately()
    }

    /// Sends a notice to every other instance on this database.
    fn tell_peers(&self, kind: &str, body: &[u8]) -> StoreResult<()> {
        self.query_one(
            "WITH notice AS (
                 INSERT INTO svc_peer_notices (instance, kind, body) VALUES ($1, $2, $3)
                 RETURNING id)
             SELECT pg_notify('svc_peers', notice.id || ' ' || $1) FROM notice",
            &[&self.instance, &kind, &body],
        )
        .map(|_| ())
    }

    /// Whether this instance leads, as it changes.
    fn leadership(&self) -> Leadership {
        Leadership::following(self.leads.subscribe())
    }
}
