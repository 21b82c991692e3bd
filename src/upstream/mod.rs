//! Upstream bridges: another MQTT broker a domain's namespaces are carried to and from. What an
//! upstream is (its record, checked and normalised; its bindings), how to reach it (the byte
//! stream, TLS, svc's own MQTT client session), a probe of whether it can be reached, the
//! durable out-queue with its buffer limits, the relay that carries messages both ways without
//! loops, the Sparkplug B edge node an upstream may be as well, and the supervisor that keeps
//! every enabled upstream connected.

pub mod binding;
pub mod config;
pub mod connect;
mod echo;
pub mod queue;
mod queue_writer;
pub mod relay;
mod session;
pub mod sparkplug;
pub mod supervisor;
mod tls;
mod wire;
