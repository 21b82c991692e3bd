//! Connectors: svc reads plant devices (OPC UA servers, Modbus TCP devices) into tags and
//! writes back to them. A connector is a record of a domain's `connectors` system table (its
//! kind, connection settings and points); every enabled one is a supervised task that
//! reconnects forever, feeds what it reads into the Unified Namespace through the broker's
//! in-process publish, and carries writes to writable points back to the device.
//!
//! This module depends downward only (the store's types, the historian's compression
//! settings, topics); the server implements [`supervisor::Uns`] to give it the broker.

pub mod config;
pub mod feed;
pub mod kind;
pub mod modbus;
pub mod opcua;
pub mod point;
pub mod status;
pub mod supervised;
pub mod supervisor;

use kind::Kind;

/// The permission feature of connectors (scope `*`), and the name of their system table.
pub const FEATURE: &str = "connectors";

/// Every kind of connector.
pub const KINDS: [&dyn Kind; 2] = [&opcua::OpcUa, &modbus::Modbus];

/// The kind called `name`.
pub fn kind(name: &str) -> Option<&'static dyn Kind> {
    KINDS.into_iter().find(|kind| kind.name() == name)
}
