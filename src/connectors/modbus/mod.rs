//! The `modbus` kind of connector: Modbus TCP devices (and RTU framing over TCP, as serial
//! gateways speak it), polled through tokio-modbus's clients.
//!
//! - [`settings`]: the connector's settings; [`address`]: a point's address;
//! - [`codec`]: registers to JSON values and back; [`plan`]: which reads poll which points;
//! - [`connect`]: opening the connection; [`exchange`]: one request and its answer;
//! - [`link`]: the polls and writes of a live connection.

pub mod address;
pub mod codec;
pub mod connect;
pub mod exchange;
pub mod link;
pub mod plan;
pub mod settings;

#[cfg(test)]
mod tests;

use super::kind::{Failure, Kind, Link, Target};
use async_trait::async_trait;
use serde_json::{Map, Value};

/// The `modbus` kind.
pub struct Modbus;

#[async_trait]
impl Kind for Modbus {
    fn name(&self) -> &'static str {
        "modbus"
    }

    fn check_settings(&self, settings: &mut Map<String, Value>) -> Result<(), String> {
        settings::check(settings)
    }

    fn check_address(
        &self,
        index: usize,
        address: &mut Map<String, Value>,
        writable: bool,
    ) -> Result<(), String> {
        address::check(index, address, writable)
    }

    async fn connect(&self, target: &Target) -> Result<Box<dyn Link>, Failure> {
        Ok(Box::new(connect::connect(target).await?))
    }
}
