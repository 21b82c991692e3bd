//! Upstream bridges: another MQTT broker a domain's namespaces are carried to and from. This
//! part holds what an upstream is (its record, checked and normalised); connecting to it is
//! built on top of that.

pub mod config;
