//! Alarm notification pipelines, the parts that know no server: `config` (an
//! `alarm_notifications` record: its checks and the pipeline read from it) and `render` (what
//! a notification says, as a plain-text mail and as a webhook's JSON). Delivery, queueing and
//! scheduling live in the server's `notifications` service.

pub mod config;
pub mod render;

pub use config::{Pipeline, TABLE};
