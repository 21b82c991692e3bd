//! The values the storage interface takes and returns, shared by both engines: what a caller
//! of [`super::Store`] sees, with no trace of SQL, and the engine-neutral rules both apply the
//! same way.

mod alarms;
mod automation;
mod broker;
mod historian;
mod identity;
mod peers;
mod records;
mod upstream;

pub use alarms::*;
pub use automation::*;
pub use broker::*;
pub use historian::*;
pub use identity::*;
pub use peers::*;
pub use records::*;
pub use upstream::*;

/// Which engine runs and where: the `storage` part of `GET /svc/`.
#[derive(Debug, Clone)]
pub struct StorageDescription {
    pub engine: &'static str,
    /// SQLite's database file.
    pub path: Option<String>,
    /// PostgreSQL's `host:port`, database and server version.
    pub host: Option<String>,
    pub database: Option<String>,
    pub server_version: Option<String>,
}
