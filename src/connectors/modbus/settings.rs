//! A Modbus connector's `settings`: checked with their defaults filled in (the record as
//! stored), and read back into [`Settings`] when the connector connects.

use crate::duration::parse_duration;
use serde_json::{Map, Value};
use std::time::Duration;

/// How requests are framed on the TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Modbus TCP (the MBAP header).
    Tcp,
    /// Modbus RTU frames (unit id and CRC) carried over TCP, as serial gateways speak it.
    RtuOverTcp,
}

impl Framing {
    pub fn as_str(self) -> &'static str {
        match self {
            Framing::Tcp => "tcp",
            Framing::RtuOverTcp => "rtu_over_tcp",
        }
    }
}

/// The checked settings of one Modbus connector.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    pub unit_id: u8,
    pub framing: Framing,
    /// How long a connect or one request may take.
    pub timeout: Duration,
    /// Registers one read request may ask for.
    pub max_registers: u16,
    /// Coils or discrete inputs one read request may ask for.
    pub max_bits: u16,
    /// Unused registers (or bits) a coalesced read may span between two points.
    pub max_gap: u16,
    /// Consecutive request timeouts that end the connection (the watchdog).
    pub timeouts_before_reconnect: u32,
}

const MEMBERS: [&str; 9] = [
    "host",
    "port",
    "unit_id",
    "framing",
    "timeout",
    "max_registers",
    "max_bits",
    "max_gap",
    "timeouts_before_reconnect",
];

/// Checks `settings` and fills in the defaults of the members it lacks.
pub fn check(settings: &mut Map<String, Value>) -> Result<(), String> {
    Settings::parse(settings)?;
    let defaults = [
        ("port", Value::from(502)),
        ("unit_id", Value::from(1)),
        ("framing", Value::from("tcp")),
        ("timeout", Value::from("2s")),
        ("max_registers", Value::from(125)),
        ("max_bits", Value::from(2000)),
        ("max_gap", Value::from(8)),
        ("timeouts_before_reconnect", Value::from(3)),
    ];
    for (name, value) in defaults {
        settings.entry(name).or_insert(value);
    }
    Ok(())
}

impl Settings {
    /// Reads `settings` (as [`check`] left them, or before: defaults apply to missing members).
    pub fn parse(settings: &Map<String, Value>) -> Result<Settings, String> {
        if let Some(name) = settings
            .keys()
            .find(|name| !MEMBERS.contains(&name.as_str()))
        {
            return Err(format!(
                "settings.{name} is not a setting of a modbus connector (known: {})",
                MEMBERS.join(", ")
            ));
        }
        let host = match settings.get("host") {
            Some(Value::String(host)) if !host.trim().is_empty() => host.trim().to_string(),
            Some(Value::String(_)) | None => {
                return Err(
                    "settings.host is required: the device's host name or IP address".into(),
                )
            }
            Some(_) => return Err("settings.host must be a string".into()),
        };
        let framing = match settings.get("framing") {
            None => Framing::Tcp,
            Some(Value::String(text)) if text == "tcp" => Framing::Tcp,
            Some(Value::String(text)) if text == "rtu_over_tcp" => Framing::RtuOverTcp,
            Some(_) => return Err("settings.framing must be \"tcp\" or \"rtu_over_tcp\"".into()),
        };
        let timeout = duration(settings, "timeout", "2s")?;
        if timeout < Duration::from_millis(10) {
            return Err("settings.timeout must be at least 10ms".into());
        }
        Ok(Settings {
            host,
            port: integer(settings, "port", 502, 1, 65535)? as u16,
            unit_id: integer(settings, "unit_id", 1, 0, 255)? as u8,
            framing,
            timeout,
            max_registers: integer(settings, "max_registers", 125, 1, 125)? as u16,
            max_bits: integer(settings, "max_bits", 2000, 1, 2000)? as u16,
            max_gap: integer(settings, "max_gap", 8, 0, 2000)? as u16,
            timeouts_before_reconnect: integer(settings, "timeouts_before_reconnect", 3, 1, 1000)?
                as u32,
        })
    }
}

/// A whole number of `value` (an integer, or a float with no fraction), if it is one.
pub fn whole_number(value: &Value) -> Option<i64> {
    if let Some(n) = value.as_i64() {
        return Some(n);
    }
    let f = value.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
}

/// The integer member `name` of `map` within `min..=max`, or `default` when it is missing.
fn integer(
    map: &Map<String, Value>,
    name: &str,
    default: i64,
    min: i64,
    max: i64,
) -> Result<i64, String> {
    let Some(value) = map.get(name) else {
        return Ok(default);
    };
    match whole_number(value) {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "settings.{name} must be a whole number from {min} to {max}"
        )),
    }
}

fn duration(map: &Map<String, Value>, name: &str, default: &str) -> Result<Duration, String> {
    let text = match map.get(name) {
        None => default,
        Some(Value::String(text)) => text.as_str(),
        Some(_) => {
            return Err(format!(
                "settings.{name} must be a duration text like \"2s\""
            ))
        }
    };
    parse_duration(text).map_err(|e| format!("settings.{name} is not a duration: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn checked(settings: Value) -> Result<Map<String, Value>, String> {
        let mut map = settings.as_object().unwrap().clone();
        check(&mut map).map(|()| map)
    }

    #[test]
    fn defaults_are_filled_in() {
        let map = checked(json!({"host": "plc1"})).unwrap();
        assert_eq!(
            Value::Object(map.clone()),
            json!({"host": "plc1", "port": 502, "unit_id": 1, "framing": "tcp", "timeout": "2s",
                   "max_registers": 125, "max_bits": 2000, "max_gap": 8,
                   "timeouts_before_reconnect": 3})
        );
        let settings = Settings::parse(&map).unwrap();
        assert_eq!(settings.timeout, Duration::from_secs(2));
        assert_eq!(settings.framing, Framing::Tcp);
    }

    #[test]
    fn given_values_are_kept() {
        let map = checked(json!({"host": "10.0.0.5", "port": 1502, "unit_id": 0,
            "framing": "rtu_over_tcp", "timeout": "500ms", "max_registers": 60, "max_bits": 1.0,
            "max_gap": 0, "timeouts_before_reconnect": 5}))
        .unwrap();
        let settings = Settings::parse(&map).unwrap();
        assert_eq!(settings.port, 1502);
        assert_eq!(settings.unit_id, 0);
        assert_eq!(settings.framing, Framing::RtuOverTcp);
        assert_eq!(settings.timeout, Duration::from_millis(500));
        assert_eq!(
            (settings.max_registers, settings.max_bits, settings.max_gap),
            (60, 1, 0)
        );
        assert_eq!(settings.timeouts_before_reconnect, 5);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!({}), "settings.host"),
            (json!({"host": ""}), "settings.host"),
            (json!({"host": 5}), "settings.host"),
            (json!({"host": "a", "port": 0}), "settings.port"),
            (json!({"host": "a", "port": 65536}), "settings.port"),
            (json!({"host": "a", "port": "502"}), "settings.port"),
            (json!({"host": "a", "unit_id": 256}), "settings.unit_id"),
            (json!({"host": "a", "unit_id": -1}), "settings.unit_id"),
            (json!({"host": "a", "framing": "rtu"}), "settings.framing"),
            (json!({"host": "a", "timeout": "soon"}), "settings.timeout"),
            (json!({"host": "a", "timeout": 2}), "settings.timeout"),
            (
                json!({"host": "a", "max_registers": 126}),
                "settings.max_registers",
            ),
            (
                json!({"host": "a", "max_registers": 0}),
                "settings.max_registers",
            ),
            (json!({"host": "a", "max_bits": 2001}), "settings.max_bits"),
            (json!({"host": "a", "max_gap": 1.5}), "settings.max_gap"),
            (
                json!({"host": "a", "timeouts_before_reconnect": 0}),
                "settings.timeouts_before_reconnect",
            ),
            (json!({"host": "a", "hots": "b"}), "settings.hots"),
        ];
        for (settings, field) in cases {
            let error = checked(settings.clone()).unwrap_err();
            assert!(error.starts_with(field), "{settings}: {error}");
            assert!(!error.contains('\n'), "{error}");
        }
    }
}
