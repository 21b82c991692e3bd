//! One request at a time on the connection, within the timeout: tokio-modbus's answers sorted
//! into what the link does with them (values, a device's exception, a timeout, or the end of
//! the connection). Never panics on what a device sends.

use super::address::Function;
use super::plan::ReadRequest;
use crate::connectors::kind::{Failure, FailureKind};
use std::io;
use std::time::Duration;
use tokio_modbus::client::{Client, Context};
use tokio_modbus::{Error, ExceptionCode, Request, Response};

/// Why a request got no usable answer.
#[derive(Debug)]
pub enum Trouble {
    /// No answer within the timeout (or a late answer to an abandoned request): counts
    /// towards the watchdog.
    Timeout,
    /// The connection broke, or the device's answer is not Modbus: the link ends.
    Failed(Failure),
}

/// What a read request answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Items {
    Bits(Vec<bool>),
    Registers(Vec<u16>),
}

/// The client end of one connection.
pub struct Connection {
    context: Context,
    timeout: Duration,
    /// Whether the last request timed out: its answer may still arrive, and then the next
    /// request's answer does not match.
    after_timeout: bool,
}

impl Connection {
    pub fn new(context: Context, timeout: Duration) -> Connection {
        Connection {
            context,
            timeout,
            after_timeout: false,
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends `request` and waits for its answer: the response, or the device's exception.
    pub async fn call(
        &mut self,
        request: Request<'_>,
    ) -> Result<Result<Response, ExceptionCode>, Trouble> {
        let answer = match tokio::time::timeout(self.timeout, self.context.call(request)).await {
            Err(_elapsed) => {
                self.after_timeout = true;
                return Err(Trouble::Timeout);
            }
            Ok(answer) => answer,
        };
        match answer {
            Ok(result) => {
                self.after_timeout = false;
                Ok(result)
            }
            Err(Error::Transport(error)) => Err(Trouble::Failed(transport_failure(&error))),
            // The answer to the request that timed out, arriving late.
            Err(Error::Protocol(_)) if self.after_timeout => Err(Trouble::Timeout),
            Err(Error::Protocol(error)) => Err(Trouble::Failed(Failure::new(
                FailureKind::Protocol,
                format!("the device's answer does not match the request: {error}"),
            ))),
        }
    }

    /// Reads `request`'s registers or bits: `Ok(Err(sentence))` when the device answered with
    /// an exception or with fewer items than asked (for the request's points only).
    pub async fn read(&mut self, request: &ReadRequest) -> Result<Result<Items, String>, Trouble> {
        let (start, count) = (request.start, request.count);
        let call = match request.function {
            Function::Coil => Request::ReadCoils(start, count),
            Function::DiscreteInput => Request::ReadDiscreteInputs(start, count),
            Function::HoldingRegister => Request::ReadHoldingRegisters(start, count),
            Function::InputRegister => Request::ReadInputRegisters(start, count),
        };
        let response = match self.call(call).await? {
            Ok(response) => response,
            Err(code) => return Ok(Err(exception_text(code))),
        };
        let wanted = usize::from(count);
        let items = match response {
            Response::ReadCoils(mut bits) | Response::ReadDiscreteInputs(mut bits) => {
                if bits.len() < wanted {
                    return Ok(Err(short(bits.len(), wanted, "bits")));
                }
                // Bits come in whole bytes: the last byte's padding is not ours.
                bits.truncate(wanted);
                Items::Bits(bits)
            }
            Response::ReadHoldingRegisters(registers) | Response::ReadInputRegisters(registers) => {
                if registers.len() != wanted {
                    return Ok(Err(short(registers.len(), wanted, "registers")));
                }
                Items::Registers(registers)
            }
            other => {
                return Err(Trouble::Failed(Failure::new(
                    FailureKind::Protocol,
                    format!("the device answered a read with {other:?}"),
                )))
            }
        };
        Ok(Ok(items))
    }
}

fn short(got: usize, wanted: usize, what: &str) -> String {
    format!("the device answered {got} {what} where {wanted} were asked")
}

/// The failure a broken connection, or an answer that is not Modbus, ends the link with.
fn transport_failure(error: &io::Error) -> Failure {
    match error.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput => Failure::new(
            FailureKind::Protocol,
            format!("the device's answer is not Modbus: {error}"),
        ),
        _ => Failure::new(
            FailureKind::Tcp,
            format!("the connection to the device broke: {error}"),
        ),
    }
}

/// A device's exception as a point's error or a refused write says it:
/// `illegal data address (exception 2)`.
pub fn exception_text(code: ExceptionCode) -> String {
    let name = match code {
        ExceptionCode::IllegalFunction => "illegal function",
        ExceptionCode::IllegalDataAddress => "illegal data address",
        ExceptionCode::IllegalDataValue => "illegal data value",
        ExceptionCode::ServerDeviceFailure => "server device failure",
        ExceptionCode::Acknowledge => "acknowledge",
        ExceptionCode::ServerDeviceBusy => "server device busy",
        ExceptionCode::MemoryParityError => "memory parity error",
        ExceptionCode::GatewayPathUnavailable => "gateway path unavailable",
        ExceptionCode::GatewayTargetDevice => "gateway target device failed to respond",
        ExceptionCode::Custom(_) => "device-specific exception",
    };
    format!("{name} (exception {})", u8::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exceptions_are_named_with_their_code() {
        assert_eq!(
            exception_text(ExceptionCode::new(2)),
            "illegal data address (exception 2)"
        );
        assert_eq!(
            exception_text(ExceptionCode::new(6)),
            "server device busy (exception 6)"
        );
        assert_eq!(
            exception_text(ExceptionCode::new(11)),
            "gateway target device failed to respond (exception 11)"
        );
        assert_eq!(
            exception_text(ExceptionCode::new(0x42)),
            "device-specific exception (exception 66)"
        );
    }

    #[test]
    fn broken_connections_and_garbage_are_told_apart() {
        let garbage = io::Error::new(io::ErrorKind::InvalidData, "bad length");
        assert_eq!(transport_failure(&garbage).kind, FailureKind::Protocol);
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(transport_failure(&reset).kind, FailureKind::Tcp);
    }
}
