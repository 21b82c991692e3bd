//! Alarm management as ISA-18.2 (IEC 62682) defines it, next to the data: an alarm watches one
//! tag and is evaluated on every value the tag takes, whatever published it. Inside:
//! `definition` (an `alarms` record: what to watch and how), `condition` (whether a value is
//! in alarm, with the deadband), `state` (one alarm's ISA-18.2 state machine: delays,
//! acknowledgement, latching, shelving, suppression by design, out of service), `engine` (a
//! domain's alarms indexed by tag, driven by values, timers and operators), `event` (a state
//! change as the journal, MQTT, Server-Sent Events and notifications carry it), `health`
//! (ISA-18.2 and EEMUA 191 performance measures) and `notify` (the notification pipelines).
//! Nothing here knows the server: it takes values and time, and says what changed.

pub mod condition;
pub mod definition;
pub mod engine;
pub mod event;
pub mod health;
pub mod notify;
pub mod state;

pub use definition::{Definition, Priority};
pub use event::{AlarmEvent, AlarmStatus, StateName};

/// The system table of alarm definitions, and the permission feature over alarms.
pub const TABLE: &str = "alarms";
pub const FEATURE: &str = "alarms";
/// The custom action that lets an operator acknowledge, shelve and take alarms out of service
/// without the right to change their definitions.
pub const ACK_ACTION: &str = "ack";

#[cfg(test)]
mod engine_tests;
