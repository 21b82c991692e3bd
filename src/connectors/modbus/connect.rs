//! Opening a Modbus connection: the host resolved, TCP connected within the timeout, the
//! framing chosen, and a probe read that confirms the unit answers.

use super::address::Address;
use super::exchange::{Connection, Trouble};
use super::link::{ModbusLink, Point};
use super::plan;
use super::settings::{Framing, Settings};
use crate::connectors::kind::{Failure, FailureKind, Target};
use std::net::SocketAddr;
use tokio::net::{lookup_host, TcpStream};
use tokio::time::{timeout_at, Instant};
use tokio_modbus::client::{rtu, tcp};
use tokio_modbus::Slave;

/// Connects to `target`'s device and readies its points.
pub async fn connect(target: &Target) -> Result<ModbusLink, Failure> {
    let settings =
        Settings::parse(&target.settings).map_err(|e| Failure::new(FailureKind::Protocol, e))?;
    let points = target
        .points
        .iter()
        .enumerate()
        .map(|(index, point)| {
            Ok(Point {
                tag: point.tag.clone(),
                address: Address::parse(&format!("points[{index}].address."), &point.address())?,
                writable: point.writable,
            })
        })
        .collect::<Result<Vec<Point>, String>>()
        .map_err(|e| Failure::new(FailureKind::Protocol, e))?;
    let stream = open(&settings).await?;
    let slave = Slave(settings.unit_id);
    let context = match settings.framing {
        Framing::Tcp => tcp::attach_slave(stream, slave),
        Framing::RtuOverTcp => rtu::attach_slave(stream, slave),
    };
    let mut connection = Connection::new(context, settings.timeout);
    let answered = match points.first() {
        None => false,
        Some(point) => match connection.read(&plan::single(0, &point.address)).await {
            // An exception is an answer too: the unit is there.
            Ok(_) => true,
            Err(Trouble::Timeout) => {
                return Err(Failure::new(
                    FailureKind::Timeout,
                    format!(
                        "unit {} at {}:{} did not answer within {:?}",
                        settings.unit_id, settings.host, settings.port, settings.timeout
                    ),
                ))
            }
            Err(Trouble::Failed(failure)) => return Err(failure),
        },
    };
    Ok(ModbusLink::new(connection, settings, points, answered))
}

/// The TCP connection to the device, within the settings' timeout.
async fn open(settings: &Settings) -> Result<TcpStream, Failure> {
    let deadline = Instant::now() + settings.timeout;
    let host = settings.host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> =
        match timeout_at(deadline, lookup_host((host, settings.port))).await {
            Err(_elapsed) => {
                return Err(Failure::new(
                    FailureKind::Dns,
                    format!("resolving {host} took longer than {:?}", settings.timeout),
                ))
            }
            Ok(Err(error)) => {
                return Err(Failure::new(
                    FailureKind::Dns,
                    format!("cannot resolve {host}: {error}"),
                ))
            }
            Ok(Ok(addresses)) => addresses.collect(),
        };
    let mut last_error = None;
    for address in addresses {
        match timeout_at(deadline, TcpStream::connect(address)).await {
            Err(_elapsed) => {
                return Err(Failure::new(
                    FailureKind::Timeout,
                    format!(
                        "connecting to {address} took longer than {:?}",
                        settings.timeout
                    ),
                ))
            }
            Ok(Ok(stream)) => {
                // Requests are small and answered one at a time: send each at once.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(error)) => last_error = Some(format!("cannot connect to {address}: {error}")),
        }
    }
    Err(match last_error {
        Some(text) => Failure::new(FailureKind::Tcp, text),
        None => Failure::new(FailureKind::Dns, format!("{host} resolves to no address")),
    })
}
