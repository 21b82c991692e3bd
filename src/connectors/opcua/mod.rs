//! The `opcua` kind of connector: an OPC UA client (async-opcua) that subscribes to or polls
//! a server's variables, writes to the writable ones, and browses the address space.
//!
//! - [`settings`]: the connector's settings; [`address`]: a point's address;
//! - [`security`]: svc's certificate, the PKI directory, the trust list;
//! - [`session`]: connecting (endpoint, security, identity) and the crate's event loop;
//! - [`nodes`]: browse paths, write types, structure definitions, the server's description;
//! - [`link`]: subscription, polls, writes and the watchdog; [`convert`]: values and JSON;
//! - [`browse`]: one level of the address space; [`failure`]: status codes as failures.

pub mod address;
pub mod browse;
pub mod convert;
pub mod failure;
pub mod link;
pub mod nodes;
pub mod security;
pub mod session;
pub mod settings;
#[cfg(test)]
mod tests;

use crate::connectors::kind::{BrowseEntry, Failure, FailureKind, Identity, Kind, Link, Target};
use address::{Address, Node};
use async_trait::async_trait;
use link::{OpcUaLink, Point};
use serde_json::{Map, Value};
use settings::Settings;

/// The OPC UA client kind.
pub struct OpcUa;

#[async_trait]
impl Kind for OpcUa {
    fn name(&self) -> &'static str {
        "opcua"
    }

    fn describe_certificate(&self, der: &[u8]) -> Option<Value> {
        security::summary(der)
    }

    fn check_settings(&self, settings: &mut Map<String, Value>) -> Result<(), String> {
        settings::check(settings)
    }

    fn check_address(
        &self,
        index: usize,
        address: &mut Map<String, Value>,
        _writable: bool,
    ) -> Result<(), String> {
        // Whether a node can be written is the server's to say (its access level), at write time.
        address::check(index, address)
    }

    async fn connect(&self, target: &Target) -> Result<Box<dyn Link>, Failure> {
        let settings =
            Settings::read(&target.settings).map_err(|e| Failure::new(FailureKind::Protocol, e))?;
        let mut addresses = Vec::with_capacity(target.points.len());
        for point in &target.points {
            let address = Address::read(&point.address()).map_err(|e| {
                Failure::new(FailureKind::Protocol, format!("point {}: {e}", point.tag))
            })?;
            addresses.push(address);
        }
        let connection = session::connect(target, &settings).await?;
        let session = connection.session.clone();
        let within = settings.timeout;
        let step = |what: &'static str| {
            move |e: opcua::types::Error| failure::from_status(e.status(), what)
        };
        let timed_out = |what: &str| {
            Failure::new(
                FailureKind::Timeout,
                format!("the server did not answer in time while {what}"),
            )
        };

        let node_refs: Vec<Node> = addresses.iter().map(|a| a.node.clone()).collect();
        let nodes = tokio::time::timeout(within, nodes::resolve(&session, &node_refs))
            .await
            .map_err(|_| timed_out("resolving browse paths"))?
            .map_err(step("resolving browse paths"))?;

        let writable: Vec<usize> = (0..target.points.len())
            .filter(|&i| target.points[i].writable && nodes[i].is_ok())
            .collect();
        let writable_nodes: Vec<_> = writable
            .iter()
            .filter_map(|&i| nodes[i].clone().ok())
            .collect();
        let types = tokio::time::timeout(within, nodes::write_types(&session, &writable_nodes))
            .await
            .map_err(|_| timed_out("reading the writable points' data types"))?
            .map_err(step("reading the writable points' data types"))?;

        nodes::load_types(&session, within).await;
        let description = nodes::describe(&session, &connection.endpoint, &settings.endpoint).await;

        let mut points: Vec<Point> = addresses
            .into_iter()
            .zip(nodes)
            .zip(&target.points)
            .map(|((address, node), point)| Point {
                // Replaced below by the type read from the server when the node resolved.
                write: point
                    .writable
                    .then(|| Err(node.as_ref().err().cloned().unwrap_or_default())),
                node,
                mode: address.mode,
            })
            .collect();
        for (i, ty) in writable.into_iter().zip(types) {
            points[i].write = Some(ty);
        }
        Ok(Box::new(OpcUaLink {
            connection,
            settings,
            points,
            description,
        }))
    }

    fn uses_certificates(&self) -> bool {
        true
    }

    fn new_identity(&self, application_uri: &str) -> Result<Identity, String> {
        security::new_identity(application_uri)
    }

    async fn browse(
        &self,
        target: &Target,
        node: Option<&str>,
    ) -> Result<Vec<BrowseEntry>, Failure> {
        browse::browse(target, node).await
    }
}
