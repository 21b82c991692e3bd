//! Values to and from registers: what a point's registers (or bit) mean as JSON by its type,
//! byte order and word order, and the registers that write a JSON value. Pure functions.
//!
//! A value's bytes are its big-endian bytes; `word_order: little` puts its last register
//! first and `byte_order: little` swaps the two bytes of each register, so the four
//! combinations are the ABCD, CDAB, BADC and DCBA layouts devices use. A string's registers
//! are in address order (word order does not apply); its byte order does.

use super::address::{Address, DataType, Order};
use serde_json::{Number, Value};

/// The value of a coil or discrete input.
pub fn decode_bool(bit: bool) -> Value {
    Value::Bool(bit)
}

/// The value `registers` (exactly the point's width) hold; `Err` when it has no JSON value
/// (a NaN or infinite float).
pub fn decode(address: &Address, registers: &[u16]) -> Result<Value, String> {
    let data_type = address.data_type;
    if let DataType::Bit(bit) = data_type {
        return Ok(Value::Bool(
            registers.first().is_some_and(|r| r >> bit & 1 == 1),
        ));
    }
    let bytes = to_bytes(address, registers);
    let value = match data_type {
        DataType::Int16 => Value::from(i16::from_be_bytes(array(&bytes))),
        DataType::Uint16 => Value::from(u16::from_be_bytes(array(&bytes))),
        DataType::Int32 => Value::from(i32::from_be_bytes(array(&bytes))),
        DataType::Uint32 => Value::from(u32::from_be_bytes(array(&bytes))),
        DataType::Int64 => Value::from(i64::from_be_bytes(array(&bytes))),
        DataType::Uint64 => Value::from(u64::from_be_bytes(array(&bytes))),
        DataType::Float32 => float(f64::from(f32::from_be_bytes(array(&bytes))), "float32")?,
        DataType::Float64 => float(f64::from_be_bytes(array(&bytes)), "float64")?,
        DataType::String(_) => {
            let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            Value::String(String::from_utf8_lossy(&bytes[..end]).into_owned())
        }
        DataType::Bool | DataType::Bit(_) => {
            return Err(format!(
                "a {} point is not read from registers",
                data_type.name()
            ))
        }
    };
    Ok(value)
}

/// The coil state (or register bit) that writes `value`: a JSON boolean, or 0 or 1.
pub fn encode_bool(value: &Value) -> Result<bool, String> {
    match value {
        Value::Bool(bit) => Ok(*bit),
        Value::Number(n) if n.as_f64() == Some(0.0) => Ok(false),
        Value::Number(n) if n.as_f64() == Some(1.0) => Ok(true),
        _ => Err(format!(
            "{} cannot be written to a bool point: write true or false (or 1 or 0)",
            brief(value)
        )),
    }
}

/// The registers (the point's width, in address order) that write `value` to a register
/// point of a number or string type.
pub fn encode(address: &Address, value: &Value) -> Result<Vec<u16>, String> {
    let data_type = address.data_type;
    let name = data_type.name();
    let bytes: Vec<u8> = match data_type {
        DataType::Int16 => (integer(value, name, i16::MIN.into(), i16::MAX.into())? as i16)
            .to_be_bytes()
            .to_vec(),
        DataType::Uint16 => (integer(value, name, 0, u16::MAX.into())? as u16)
            .to_be_bytes()
            .to_vec(),
        DataType::Int32 => (integer(value, name, i32::MIN.into(), i32::MAX.into())? as i32)
            .to_be_bytes()
            .to_vec(),
        DataType::Uint32 => (integer(value, name, 0, u32::MAX.into())? as u32)
            .to_be_bytes()
            .to_vec(),
        DataType::Int64 => (integer(value, name, i64::MIN.into(), i64::MAX.into())? as i64)
            .to_be_bytes()
            .to_vec(),
        DataType::Uint64 => (integer(value, name, 0, u64::MAX.into())? as u64)
            .to_be_bytes()
            .to_vec(),
        DataType::Float32 => {
            let f = number(value, name)?;
            if f.is_finite() && f.abs() > f64::from(f32::MAX) {
                return Err(format!(
                    "{f} is out of range for float32 (at most {:e} either way)",
                    f32::MAX
                ));
            }
            (f as f32).to_be_bytes().to_vec()
        }
        DataType::Float64 => number(value, name)?.to_be_bytes().to_vec(),
        DataType::String(length) => {
            let Value::String(text) = value else {
                return Err(format!(
                    "{} cannot be written to a string point: write a string",
                    brief(value)
                ));
            };
            let room = usize::from(length) * 2;
            if text.len() > room {
                return Err(format!(
                    "the string is {} bytes (UTF-8) but the point holds at most {room} ({length} registers)",
                    text.len()
                ));
            }
            let mut bytes = text.as_bytes().to_vec();
            bytes.resize(room, 0);
            bytes
        }
        DataType::Bool | DataType::Bit(_) => {
            return Err(format!(
                "a {name} point is written as a bool, not as registers"
            ))
        }
    };
    Ok(from_bytes(address, &bytes))
}

/// The value's bytes, most significant first, from its registers in address order.
fn to_bytes(address: &Address, registers: &[u16]) -> Vec<u8> {
    let swap_words =
        address.word_order == Order::Little && !matches!(address.data_type, DataType::String(_));
    let mut bytes = Vec::with_capacity(registers.len() * 2);
    let mut push = |register: &u16| {
        let [high, low] = register.to_be_bytes();
        match address.byte_order {
            Order::Big => bytes.extend([high, low]),
            Order::Little => bytes.extend([low, high]),
        }
    };
    if swap_words {
        registers.iter().rev().for_each(&mut push);
    } else {
        registers.iter().for_each(&mut push);
    }
    bytes
}

/// The registers in address order that hold `bytes` (most significant first): the inverse of
/// [`to_bytes`].
fn from_bytes(address: &Address, bytes: &[u8]) -> Vec<u16> {
    let swap_words =
        address.word_order == Order::Little && !matches!(address.data_type, DataType::String(_));
    let mut registers: Vec<u16> = bytes
        .chunks(2)
        .map(|pair| {
            let (first, second) = (pair[0], pair.get(1).copied().unwrap_or(0));
            match address.byte_order {
                Order::Big => u16::from_be_bytes([first, second]),
                Order::Little => u16::from_be_bytes([second, first]),
            }
        })
        .collect();
    if swap_words {
        registers.reverse();
    }
    registers
}

/// The first `N` bytes as an array (zeros for any missing, which the caller's width check
/// makes impossible).
fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    for (slot, byte) in out.iter_mut().zip(bytes) {
        *slot = *byte;
    }
    out
}

fn float(f: f64, name: &str) -> Result<Value, String> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| format!("the device holds {f} as {name}, which JSON cannot carry"))
}

/// `value` as an integer within `min..=max`: integers as they are, floats rounded to the
/// nearest (reverse scaling makes 12.000000001 of 12).
fn integer(value: &Value, name: &str, min: i128, max: i128) -> Result<i128, String> {
    let Value::Number(n) = value else {
        return Err(format!(
            "{} cannot be written to a {name} point: write a number",
            brief(value)
        ));
    };
    let whole = if let Some(i) = n.as_i64() {
        i128::from(i)
    } else if let Some(u) = n.as_u64() {
        i128::from(u)
    } else {
        let f = n.as_f64().unwrap_or(f64::NAN).round();
        // Beyond ±2^127 the cast saturates, which the range check below refuses anyway.
        if !f.is_finite() {
            return Err(format!("{n} is out of range for {name} ({min} to {max})"));
        }
        f as i128
    };
    if whole < min || whole > max {
        return Err(format!("{n} is out of range for {name} ({min} to {max})"));
    }
    Ok(whole)
}

fn number(value: &Value, name: &str) -> Result<f64, String> {
    match value {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| format!("{n} cannot be written to a {name} point")),
        _ => Err(format!(
            "{} cannot be written to a {name} point: write a number",
            brief(value)
        )),
    }
}

/// A JSON value, shortened for a message.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
