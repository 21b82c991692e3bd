//! A Modbus point's `address` object: which table (function), where, and how its registers
//! hold the value (type, byte and word order); checked with defaults filled in, and read back
//! into [`Address`] when the connector connects.

use super::settings::whole_number;
use crate::duration::parse_duration;
use serde_json::{Map, Value};
use std::time::Duration;

/// The four Modbus tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Function {
    Coil,
    DiscreteInput,
    HoldingRegister,
    InputRegister,
}

impl Function {
    pub fn as_str(self) -> &'static str {
        match self {
            Function::Coil => "coil",
            Function::DiscreteInput => "discrete_input",
            Function::HoldingRegister => "holding_register",
            Function::InputRegister => "input_register",
        }
    }

    /// Whether its items are single bits (coils, discrete inputs) rather than registers.
    pub fn is_bits(self) -> bool {
        matches!(self, Function::Coil | Function::DiscreteInput)
    }

    pub fn is_writable(self) -> bool {
        matches!(self, Function::Coil | Function::HoldingRegister)
    }
}

/// How the value is held: one bit, or a number or text over one or more registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    /// A coil or discrete input.
    Bool,
    /// Bit `n` (0 = least significant) of a register.
    Bit(u8),
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Uint64,
    Float32,
    Float64,
    /// Text of `length` registers (two bytes each).
    String(u16),
}

impl DataType {
    pub fn name(self) -> &'static str {
        match self {
            DataType::Bool => "bool",
            DataType::Bit(_) => "bit",
            DataType::Int16 => "int16",
            DataType::Uint16 => "uint16",
            DataType::Int32 => "int32",
            DataType::Uint32 => "uint32",
            DataType::Int64 => "int64",
            DataType::Uint64 => "uint64",
            DataType::Float32 => "float32",
            DataType::Float64 => "float64",
            DataType::String(_) => "string",
        }
    }

    /// Registers (or bits, for `bool`) the value takes.
    pub fn width(self) -> u16 {
        match self {
            DataType::Bool | DataType::Bit(_) | DataType::Int16 | DataType::Uint16 => 1,
            DataType::Int32 | DataType::Uint32 | DataType::Float32 => 2,
            DataType::Int64 | DataType::Uint64 | DataType::Float64 => 4,
            DataType::String(length) => length,
        }
    }
}

/// The order of two bytes within a register, or of the registers of a multi-register value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Most significant first (Modbus' own order).
    Big,
    Little,
}

/// A checked point address.
#[derive(Debug, Clone, PartialEq)]
pub struct Address {
    pub function: Function,
    /// The first register or bit (protocol address, 0-based).
    pub start: u16,
    pub data_type: DataType,
    pub byte_order: Order,
    pub word_order: Order,
    pub poll_interval: Duration,
}

impl Address {
    /// Registers or bits the point takes from `start`.
    pub fn width(&self) -> u16 {
        self.data_type.width()
    }

    /// Reads `address` (as [`check`] left it, or before: defaults apply to missing members);
    /// errors name the member as `<prefix><member>`.
    pub fn parse(prefix: &str, address: &Map<String, Value>) -> Result<Address, String> {
        const MEMBERS: [&str; 8] = [
            "function",
            "address",
            "type",
            "bit",
            "length",
            "byte_order",
            "word_order",
            "poll_interval",
        ];
        if let Some(name) = address
            .keys()
            .find(|name| !MEMBERS.contains(&name.as_str()))
        {
            return Err(format!(
                "{prefix}{name} is not a member of a modbus address (known: {})",
                MEMBERS.join(", ")
            ));
        }
        let function = match address.get("function").and_then(Value::as_str) {
            Some("coil") => Function::Coil,
            Some("discrete_input") => Function::DiscreteInput,
            Some("holding_register") => Function::HoldingRegister,
            Some("input_register") => Function::InputRegister,
            _ => {
                return Err(format!(
                    "{prefix}function is required: coil, discrete_input, holding_register or input_register"
                ))
            }
        };
        let start = match address.get("address").map(whole_number) {
            Some(Some(n)) if (0..=65535).contains(&n) => n as u16,
            _ => {
                return Err(format!(
                    "{prefix}address is required: a whole number from 0 to 65535"
                ))
            }
        };
        let data_type = data_type(prefix, function, address)?;
        let last = u32::from(start) + u32::from(data_type.width()) - 1;
        if last > 65535 {
            return Err(format!(
                "{prefix}address {start} with {} registers of {} ends past 65535",
                data_type.width(),
                data_type.name()
            ));
        }
        let byte_order = order(prefix, address, "byte_order")?;
        let word_order = order(prefix, address, "word_order")?;
        if function.is_bits() && (byte_order, word_order) != (Order::Big, Order::Big) {
            return Err(format!(
                "{prefix}byte_order and word_order apply to registers only"
            ));
        }
        let poll_interval = match address.get("poll_interval") {
            None => Duration::from_secs(1),
            Some(Value::String(text)) => parse_duration(text)
                .map_err(|e| format!("{prefix}poll_interval is not a duration: {e}"))?,
            Some(_) => {
                return Err(format!(
                    "{prefix}poll_interval must be a duration text like \"1s\""
                ))
            }
        };
        if poll_interval < Duration::from_millis(10) {
            return Err(format!("{prefix}poll_interval must be at least 10ms"));
        }
        Ok(Address {
            function,
            start,
            data_type,
            byte_order,
            word_order,
            poll_interval,
        })
    }
}

/// Checks point `index`'s `address` and fills in its defaults; a `writable` point must be a
/// coil or a holding register.
pub fn check(index: usize, address: &mut Map<String, Value>, writable: bool) -> Result<(), String> {
    let prefix = format!("points[{index}].address.");
    let parsed = Address::parse(&prefix, address)?;
    if writable && !parsed.function.is_writable() {
        return Err(format!(
            "{prefix}function {} cannot be written: only coils and holding registers can (make the point not writable)",
            parsed.function.as_str()
        ));
    }
    address
        .entry("type")
        .or_insert(Value::from(parsed.data_type.name()));
    if !parsed.function.is_bits() {
        address.entry("byte_order").or_insert(Value::from("big"));
        address.entry("word_order").or_insert(Value::from("big"));
    }
    address.entry("poll_interval").or_insert(Value::from("1s"));
    Ok(())
}

fn data_type(
    prefix: &str,
    function: Function,
    address: &Map<String, Value>,
) -> Result<DataType, String> {
    let name = match address.get("type") {
        None if function.is_bits() => "bool",
        None => "uint16",
        Some(Value::String(name)) => name.as_str(),
        Some(_) => return Err(format!("{prefix}type must be a string")),
    };
    if function.is_bits() {
        if name != "bool" {
            return Err(format!(
                "{prefix}type of a {} must be bool",
                function.as_str()
            ));
        }
        refuse_member(prefix, address, "bit", "bit")?;
        refuse_member(prefix, address, "length", "string")?;
        return Ok(DataType::Bool);
    }
    let data_type = match name {
        "bit" => {
            let bit = match address.get("bit").map(whole_number) {
                Some(Some(n)) if (0..=15).contains(&n) => n as u8,
                _ => return Err(format!("{prefix}bit is required for type bit: a whole number from 0 to 15")),
            };
            DataType::Bit(bit)
        }
        "int16" => DataType::Int16,
        "uint16" => DataType::Uint16,
        "int32" => DataType::Int32,
        "uint32" => DataType::Uint32,
        "int64" => DataType::Int64,
        "uint64" => DataType::Uint64,
        "float32" => DataType::Float32,
        "float64" => DataType::Float64,
        "string" => {
            let length = match address.get("length").map(whole_number) {
                Some(Some(n)) if (1..=123).contains(&n) => n as u16,
                _ => {
                    return Err(format!(
                        "{prefix}length is required for type string: registers, a whole number from 1 to 123"
                    ))
                }
            };
            DataType::String(length)
        }
        "bool" => {
            return Err(format!(
                "{prefix}type bool is for coils and discrete inputs; a register's bit is type bit with a bit number"
            ))
        }
        _ => {
            return Err(format!(
                "{prefix}type must be one of bit, int16, uint16, int32, uint32, int64, uint64, float32, float64, string"
            ))
        }
    };
    if !matches!(data_type, DataType::Bit(_)) {
        refuse_member(prefix, address, "bit", "bit")?;
    }
    if !matches!(data_type, DataType::String(_)) {
        refuse_member(prefix, address, "length", "string")?;
    }
    Ok(data_type)
}

fn refuse_member(
    prefix: &str,
    address: &Map<String, Value>,
    member: &str,
    type_name: &str,
) -> Result<(), String> {
    if address.contains_key(member) {
        return Err(format!("{prefix}{member} applies to type {type_name} only"));
    }
    Ok(())
}

fn order(prefix: &str, address: &Map<String, Value>, member: &str) -> Result<Order, String> {
    match address.get(member) {
        None => Ok(Order::Big),
        Some(Value::String(text)) if text == "big" => Ok(Order::Big),
        Some(Value::String(text)) if text == "little" => Ok(Order::Little),
        Some(_) => Err(format!("{prefix}{member} must be \"big\" or \"little\"")),
    }
}

#[cfg(test)]
#[path = "address_tests.rs"]
mod tests;
