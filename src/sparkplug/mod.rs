//! Sparkplug B: svc as the plant's Sparkplug host application (edge nodes' metrics become
//! tags with their datatypes, units, times and qualities; dead nodes turn `bad`; lost messages
//! bring a rebirth request; writes go back as NCMD/DCMD) and the payload codec the edge-node
//! role of an upstream uses. The payload types are `srad-types`' (prost, generated from Eclipse
//! Tahu's `sparkplug_b.proto`). Inside: `topic` (the topic namespace), `value` (a metric's
//! value as JSON by datatype), `session` (one edge node's session), `host` (the domains' hosts
//! and their nodes), `config` (a host's record).

pub mod config;
pub mod host;
pub mod session;
pub mod topic;
pub mod value;

pub use config::{HostConfig, FEATURE, TABLE};
pub use host::{CommandError, Handled, Host};
pub use topic::{SparkplugTopic, NAMESPACE};

/// The prefix under which the Sparkplug-aware broker keeps every BIRTH retained (Sparkplug
/// 3.0): `$sparkplug/certificates/spBv1.0/<group>/NBIRTH/<node>[/<device>]`.
pub const CERTIFICATES: &str = "$sparkplug/certificates/";
