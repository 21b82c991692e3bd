//! The storage interface, one trait per area, each documented per method and implemented by
//! both engines in files of the same name (`sqlite/<area>.rs`, `postgres/<area>.rs`). An
//! [`Engine`] is all of them but [`Cluster`] (the other instances and leadership), which it
//! hands out as a handle of its own; a [`Store`](super::Store) holds one and hands its calls on.
//! Engine-neutral logic lives in default methods or blanket implementations (the historian's
//! reads, from `store::history`), not in either engine.

mod alarms;
mod async_reads;
mod audit;
mod auth;
mod auth_groups;
mod auth_profiles;
mod automation;
mod cluster;
mod connector_secrets;
mod hist_blocks;
mod hist_journal;
mod historian;
mod mqtt_state;
mod record_writes;
mod records;
mod report;
mod tags;
mod upstream_queue;
mod upstream_secrets;

pub use alarms::Alarms;
pub use async_reads::AsyncReads;
pub use audit::AuditTrail;
pub use auth::Identity;
pub use auth_groups::GroupChanges;
pub use auth_profiles::Profiles;
pub use automation::Automation;
pub use cluster::Cluster;
pub use connector_secrets::ConnectorSecrets;
pub use hist_blocks::HistorianBlocks;
pub use hist_journal::HistorianJournal;
pub use historian::{HistorianReads, HistorianRetention, HistorianTestCalls};
pub use mqtt_state::BrokerState;
pub use record_writes::RecordWrites;
pub use records::Records;
pub use report::Reports;
pub use tags::Tags;
pub use upstream_queue::UpstreamQueue;
pub use upstream_secrets::UpstreamSecrets;

use super::types::StorageDescription;
use super::StoreResult;
use std::path::Path;
use std::sync::Arc;

/// The engine itself: its health, size, files and caches.
pub trait Maintenance {
    /// Which engine runs, and where, as `GET /svc/` reports it (never a password).
    fn describe(&self) -> StorageDescription;
    /// Whether a short read may run on the caller's own thread (an idle SQLite connection)
    /// rather than on the blocking pool.
    fn has_idle_connection(&self) -> bool;
    /// The engine's reads that run as futures on the caller's own runtime, if it has them
    /// (PostgreSQL); `None` (SQLite) sends them to the synchronous traits.
    fn async_reads(&self) -> Option<&dyn AsyncReads> {
        None
    }
    /// Bytes of record text kept in memory for reads by id; 0 keeps none.
    fn set_record_cache_capacity(&self, bytes: usize);
    /// A trivial query, for the readiness check.
    fn ping(&self) -> StoreResult<()>;
    /// The local file the store keeps (SQLite's database), next to which journals are kept.
    fn path(&self) -> &Path;
    /// Bytes the data takes on disk.
    fn size_bytes(&self) -> u64;
    /// Leaves the data complete and consistent on its own (SQLite: checkpoints the log).
    fn close(&self) -> StoreResult<()>;
    /// Copies a consistent snapshot of the whole database to `dest`.
    fn snapshot_to(&self, dest: &Path) -> StoreResult<()>;
}

/// A storage engine: every area of the interface (each engine says `impl Engine for …`, and
/// the compiler checks it implements them all).
pub trait Engine:
    Maintenance
    + AuditTrail
    + Identity
    + GroupChanges
    + Profiles
    + Records
    + RecordWrites
    + Tags
    + UpstreamSecrets
    + ConnectorSecrets
    + HistorianJournal
    + HistorianReads
    + HistorianBlocks
    + HistorianRetention
    + HistorianTestCalls
    + UpstreamQueue
    + BrokerState
    + Automation
    + Reports
    + Alarms
    + Send
    + Sync
{
    /// The engine's [`Cluster`]: the other instances on this store, and which one leads. A
    /// handle of its own, since peers and leadership are not storage: the server holds it
    /// apart from the store and no storage call reaches it.
    fn cluster(self: Arc<Self>) -> Arc<dyn Cluster + Send + Sync>;
}
