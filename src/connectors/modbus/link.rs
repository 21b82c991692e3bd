//! A live Modbus connection: polls each group of points on its own schedule, one request at a
//! time, carries out writes between requests, and ends when the connection breaks or too many
//! requests in a row time out (the watchdog).

use super::address::{Address, DataType, Function};
use super::codec;
use super::exchange::{exception_text, Connection, Items, Trouble};
use super::plan::{self, Group, ReadRequest};
use super::settings::Settings;
use crate::connectors::kind::{Failure, FailureKind, Link, Reading, Sink, Write, WriteError};
use crate::store::Quality;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use tokio::sync::mpsc;
use tokio::time::{interval, Interval, MissedTickBehavior};
use tokio_modbus::Request;

/// One point as the link reads and writes it.
#[derive(Debug, Clone)]
pub struct Point {
    pub tag: String,
    pub address: Address,
    pub writable: bool,
}

/// The connection [`super::connect::connect`] made, and what it polls.
pub struct ModbusLink {
    connection: Connection,
    settings: Settings,
    points: Vec<Point>,
    /// Shared with the poll in progress, so a poll borrows no part of the link.
    groups: Arc<Vec<Group>>,
    /// Whether the unit answered the probe at connect.
    answered: bool,
    /// Requests in a row that got no answer.
    timeouts: u32,
}

impl ModbusLink {
    pub fn new(
        connection: Connection,
        settings: Settings,
        points: Vec<Point>,
        answered: bool,
    ) -> ModbusLink {
        let limits = plan::Limits {
            max_registers: settings.max_registers,
            max_bits: settings.max_bits,
            max_gap: settings.max_gap,
        };
        let groups = Arc::new(plan::plan(
            points.iter().map(|p| &p.address).enumerate(),
            limits,
        ));
        ModbusLink {
            connection,
            settings,
            points,
            groups,
            answered,
            timeouts: 0,
        }
    }

    /// Polls and writes until the connection fails.
    async fn serve(
        &mut self,
        sink: &dyn Sink,
        writes: &mut mpsc::Receiver<Write>,
    ) -> Result<Infallible, Failure> {
        let mut schedules: Vec<Interval> = self
            .groups
            .iter()
            .map(|group| {
                let mut schedule = interval(group.interval);
                schedule.set_missed_tick_behavior(MissedTickBehavior::Delay);
                schedule
            })
            .collect();
        // The requests due, (group, request): one is sent per turn so a write waits for one
        // request at most, not for a whole poll cycle.
        let mut due: VecDeque<(usize, usize)> = VecDeque::new();
        let mut writes_open = true;
        loop {
            tokio::select! {
                biased;
                write = writes.recv(), if writes_open => match write {
                    Some(write) => self.write(write, sink).await?,
                    None => writes_open = false,
                },
                group = next_due(&mut schedules) => {
                    if !due.iter().any(|&(g, _)| g == group) {
                        due.extend((0..self.groups[group].requests.len()).map(|r| (group, r)));
                    }
                }
                () = std::future::ready(()), if !due.is_empty() => {
                    if let Some((group, request)) = due.pop_front() {
                        let groups = Arc::clone(&self.groups);
                        self.poll(&groups[group].requests[request], sink).await?;
                    }
                }
            }
        }
    }

    /// Reads `request` and delivers its points' values (or their error).
    async fn poll(&mut self, request: &ReadRequest, sink: &dyn Sink) -> Result<(), Failure> {
        match self.connection.read(request).await {
            Ok(Ok(items)) => {
                self.timeouts = 0;
                for &(point, offset) in &request.points {
                    match self.decode(point, offset, &items) {
                        Ok(value) => sink.reading(
                            point,
                            Reading {
                                value,
                                source_ms: None,
                                quality: Quality::GOOD,
                            },
                        ),
                        Err(error) => sink.point_failed(point, error),
                    }
                }
                Ok(())
            }
            Ok(Err(error)) => {
                self.timeouts = 0;
                for &(point, _) in &request.points {
                    sink.point_failed(point, error.clone());
                }
                Ok(())
            }
            Err(Trouble::Timeout) => self.timed_out(),
            Err(Trouble::Failed(failure)) => Err(failure),
        }
    }

    /// Point `point`'s value from `items`, its registers starting at `offset`.
    fn decode(&self, point: usize, offset: u16, items: &Items) -> Result<Value, String> {
        let address = &self.points[point].address;
        let from = usize::from(offset);
        let to = from + usize::from(address.width());
        match items {
            Items::Bits(bits) => bits.get(from).map(|&bit| codec::decode_bool(bit)),
            Items::Registers(registers) => registers
                .get(from..to)
                .map(|r| codec::decode(address, r))
                .transpose()?,
        }
        .ok_or_else(|| "the device's answer is shorter than the point".to_string())
    }

    /// Counts a request that got no answer; the watchdog ends the link after too many.
    fn timed_out(&mut self) -> Result<(), Failure> {
        self.timeouts += 1;
        if self.timeouts >= self.settings.timeouts_before_reconnect {
            return Err(Failure::new(
                FailureKind::Timeout,
                format!(
                    "{} requests in a row got no answer within {:?}",
                    self.timeouts,
                    self.connection.timeout()
                ),
            ));
        }
        Ok(())
    }

    /// Carries out `write` and replies; reads the point back after the device acknowledged.
    async fn write(&mut self, write: Write, sink: &dyn Sink) -> Result<(), Failure> {
        let Write {
            point,
            value,
            reply,
        } = write;
        let request = match self.write_request(point, &value) {
            Ok(request) => request,
            Err(error) => {
                let _ = reply.send(Err(WriteError::Invalid(error)));
                return Ok(());
            }
        };
        match self.connection.call(request).await {
            Ok(Ok(_acknowledged)) => {
                self.timeouts = 0;
                let _ = reply.send(Ok(()));
                // The tag follows the device: read the point back now.
                let request = plan::single(point, &self.points[point].address);
                self.poll(&request, sink).await
            }
            Ok(Err(code)) => {
                self.timeouts = 0;
                let _ = reply.send(Err(WriteError::Refused(exception_text(code))));
                Ok(())
            }
            Err(Trouble::Timeout) => {
                let _ = reply.send(Err(WriteError::Unreachable(format!(
                    "the device did not answer the write within {:?}",
                    self.connection.timeout()
                ))));
                self.timed_out()
            }
            Err(Trouble::Failed(failure)) => {
                let _ = reply.send(Err(WriteError::Unreachable(failure.text.clone())));
                Err(failure)
            }
        }
    }

    /// The request that writes `value` to point `point`: write single coil (5), write single
    /// register (6), write multiple registers (16), or a masked write of one bit (22).
    fn write_request(&self, point: usize, value: &Value) -> Result<Request<'static>, String> {
        let Some(Point {
            tag,
            address,
            writable,
        }) = self.points.get(point)
        else {
            return Err(format!("the connector has no point {point}"));
        };
        if !*writable || !address.function.is_writable() {
            return Err(format!("point {tag} is not writable"));
        }
        let start = address.start;
        Ok(match (address.function, address.data_type) {
            (Function::Coil, _) => Request::WriteSingleCoil(start, codec::encode_bool(value)?),
            (_, DataType::Bit(bit)) => {
                let mask = 1u16 << bit;
                let or_mask = if codec::encode_bool(value)? { mask } else { 0 };
                Request::MaskWriteRegister(start, !mask, or_mask)
            }
            _ => {
                let registers = codec::encode(address, value)?;
                match registers.as_slice() {
                    [register] => Request::WriteSingleRegister(start, *register),
                    _ => Request::WriteMultipleRegisters(start, registers.into()),
                }
            }
        })
    }
}

/// The index of the next schedule that is due (pending forever when there are none).
async fn next_due(schedules: &mut [Interval]) -> usize {
    poll_fn(|cx| {
        for (index, schedule) in schedules.iter_mut().enumerate() {
            if schedule.poll_tick(cx).is_ready() {
                return Poll::Ready(index);
            }
        }
        Poll::Pending
    })
    .await
}

#[async_trait]
impl Link for ModbusLink {
    fn description(&self) -> Value {
        json!({
            "protocol": "modbus",
            "framing": self.settings.framing.as_str(),
            "host": self.settings.host,
            "port": self.settings.port,
            "unit_id": self.settings.unit_id,
            "answered": self.answered,
        })
    }

    async fn run(
        mut self: Box<Self>,
        sink: Arc<dyn Sink>,
        writes: &mut mpsc::Receiver<Write>,
    ) -> Failure {
        match self.serve(&*sink, writes).await {
            Err(failure) => failure,
            Ok(never) => match never {},
        }
    }
}
