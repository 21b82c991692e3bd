//! Upstream bridges: another MQTT broker a domain's namespaces are carried to and from. What an
//! upstream is (its record, checked and normalised), how to connect to it (client options and
//! TLS), a probe of whether it can be reached, and the supervisor that keeps every enabled
//! upstream connected.

pub mod binding;
pub mod config;
pub mod connect;
mod echo;
pub mod queue;
mod queue_writer;
pub mod relay;
mod session;
pub mod supervisor;
mod tls;
mod wire;
