//! A point's `address` on an OPC UA server: a node id or a browse path from the Objects
//! folder, and how it is read (a monitored item of the connector's subscription, or a Read on
//! an interval). Checked when the record is written ([`check`]), typed at connect ([`Address`]).

use crate::duration::parse_duration;
use opcua::types::NodeId;
use serde_json::{Map, Value};
use std::str::FromStr;
use std::time::Duration;

/// Where the point's node is.
/// The monitored items' queue size when a point does not say.
pub const DEFAULT_QUEUE: u64 = 10;

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Id(NodeId),
    /// `(namespace index, browse name)` steps from the Objects folder.
    Path(Vec<(u16, String)>),
}

/// How the point is read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    Subscribe {
        sampling_interval: Duration,
        queue_size: u32,
        /// Absolute data-change deadband; 0 is none.
        deadband: f64,
    },
    Poll {
        interval: Duration,
    },
}

/// A checked address, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Address {
    pub node: Node,
    pub mode: Mode,
}

/// Checks point `index`'s `address` and fills in its defaults.
pub fn check(index: usize, address: &mut Map<String, Value>) -> Result<(), String> {
    let field = |member: &str| format!("points[{index}].address.{member}");
    for key in address.keys() {
        if !matches!(
            key.as_str(),
            "node_id"
                | "browse_path"
                | "mode"
                | "sampling_interval"
                | "queue_size"
                | "deadband"
                | "poll_interval"
        ) {
            return Err(format!(
                "{} is not a member of an OPC UA address.",
                field(key)
            ));
        }
    }
    match (address.get("node_id"), address.get("browse_path")) {
        (Some(Value::String(id)), None) => {
            parse_node_id(id).map_err(|e| format!("{}: {e}", field("node_id")))?;
        }
        (None, Some(Value::String(path))) => {
            parse_browse_path(path).map_err(|e| format!("{}: {e}", field("browse_path")))?;
        }
        (Some(_), Some(_)) => {
            return Err(format!(
                "{} and {} cannot both be given: name the node one way.",
                field("node_id"),
                field("browse_path")
            ))
        }
        (Some(_), None) => {
            return Err(format!(
                "{} must be a string like ns=2;s=Temp.",
                field("node_id")
            ))
        }
        (None, Some(_)) => {
            return Err(format!(
                "{} must be a string like 2:Plant/2:Temp.",
                field("browse_path")
            ))
        }
        (None, None) => {
            return Err(format!(
                "{} (or {}) is required.",
                field("node_id"),
                field("browse_path")
            ))
        }
    }
    let mode = match address.get("mode") {
        None | Some(Value::Null) => "subscribe",
        Some(Value::String(m)) if m == "subscribe" || m == "poll" => m.as_str(),
        Some(_) => return Err(format!("{} must be subscribe or poll.", field("mode"))),
    }
    .to_string();
    address.insert("mode".into(), Value::String(mode.clone()));
    if mode == "subscribe" {
        if address.contains_key("poll_interval") {
            return Err(format!("{} is for mode poll only.", field("poll_interval")));
        }
        duration(address, "sampling_interval", "0s", true)
            .map_err(|e| format!("{}{e}", field("sampling_interval")))?;
        // Room for the changes of several publishing intervals, so none is lost between two
        // publish responses.
        let queue = match address.get("queue_size") {
            None | Some(Value::Null) => DEFAULT_QUEUE,
            Some(value) => match value.as_u64() {
                Some(n) if (1..=u32::MAX as u64).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "{} must be a whole number of at least 1.",
                        field("queue_size")
                    ))
                }
            },
        };
        address.insert("queue_size".into(), Value::from(queue));
        let deadband = match address.get("deadband") {
            None | Some(Value::Null) => 0.0,
            Some(value) => match value.as_f64() {
                Some(d) if d >= 0.0 && d.is_finite() => d,
                _ => {
                    return Err(format!(
                        "{} must be a number of at least 0.",
                        field("deadband")
                    ))
                }
            },
        };
        address.insert("deadband".into(), Value::from(deadband));
    } else {
        for member in ["sampling_interval", "queue_size", "deadband"] {
            if address.contains_key(member) {
                return Err(format!("{} is for mode subscribe only.", field(member)));
            }
        }
        duration(address, "poll_interval", "1s", false)
            .map_err(|e| format!("{}{e}", field("poll_interval")))?;
    }
    Ok(())
}

fn duration(
    address: &mut Map<String, Value>,
    name: &str,
    default: &str,
    zero: bool,
) -> Result<(), String> {
    let text = match address.get(name) {
        None | Some(Value::Null) => default.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(format!(" must be a duration like {default}.")),
    };
    let value = parse_duration(&text).map_err(|e| format!(": {e}."))?;
    if value.is_zero() && !zero {
        return Err(" must be longer than zero.".into());
    }
    address.insert(name.into(), Value::String(text));
    Ok(())
}

/// A node id in the OPC UA text form (`ns=2;s=Temp`, `i=2258`).
pub fn parse_node_id(text: &str) -> Result<NodeId, String> {
    NodeId::from_str(text.trim())
        .map_err(|_| format!("`{text}` is not a node id like ns=2;s=Temp or i=2258."))
}

/// `2:Plant/2:Line1/2:Temp` (a step without `ns:` is in namespace 0).
pub fn parse_browse_path(text: &str) -> Result<Vec<(u16, String)>, String> {
    let trimmed = text.trim().trim_start_matches('/');
    if trimmed.is_empty() {
        return Err("the browse path is empty.".into());
    }
    trimmed
        .split('/')
        .map(|step| {
            let (ns, name) = match step.split_once(':') {
                Some((ns, name)) if !ns.is_empty() && ns.bytes().all(|b| b.is_ascii_digit()) => {
                    let ns = ns
                        .parse::<u16>()
                        .map_err(|_| format!("namespace {ns} is too large."))?;
                    (ns, name)
                }
                _ => (0, step),
            };
            if name.is_empty() {
                return Err(format!(
                    "`{text}` has an empty step (steps are ns:Name, split by /)."
                ));
            }
            Ok((ns, name.to_string()))
        })
        .collect()
}

impl Address {
    /// Reads an address [`check`] has completed.
    pub fn read(address: &Map<String, Value>) -> Result<Address, String> {
        let mut address = address.clone();
        check(0, &mut address)?;
        let node = match (address.get("node_id"), address.get("browse_path")) {
            (Some(Value::String(id)), _) => Node::Id(parse_node_id(id)?),
            (_, Some(Value::String(path))) => Node::Path(parse_browse_path(path)?),
            _ => return Err("no node".into()),
        };
        let text_duration = |name: &str| parse_duration(address[name].as_str().unwrap_or_default());
        let mode = if address["mode"] == "poll" {
            Mode::Poll {
                interval: text_duration("poll_interval")?,
            }
        } else {
            Mode::Subscribe {
                sampling_interval: text_duration("sampling_interval")?,
                queue_size: address["queue_size"].as_u64().unwrap_or(DEFAULT_QUEUE) as u32,
                deadband: address["deadband"].as_f64().unwrap_or(0.0),
            }
        };
        Ok(Address { node, mode })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn checked(value: Value) -> Result<Map<String, Value>, String> {
        let mut map = value.as_object().unwrap().clone();
        check(3, &mut map).map(|_| map)
    }

    #[test]
    fn node_ids_browse_paths_and_defaults() {
        let map = checked(json!({"node_id": "ns=2;s=Temp"})).unwrap();
        assert_eq!(map["mode"], "subscribe");
        assert_eq!(map["sampling_interval"], "0s");
        assert_eq!(map["queue_size"], DEFAULT_QUEUE);
        assert_eq!(map["deadband"], 0.0);
        let address = Address::read(&map).unwrap();
        assert_eq!(address.node, Node::Id(NodeId::new(2, "Temp")));
        for id in ["ns=2;i=5", "i=2258"] {
            checked(json!({"node_id": id})).unwrap();
        }
        let map =
            checked(json!({"browse_path": "2:Plant/2:Line1/2:Temp", "mode": "poll"})).unwrap();
        assert_eq!(map["poll_interval"], "1s");
        let address = Address::read(&map).unwrap();
        assert_eq!(
            address.node,
            Node::Path(vec![
                (2, "Plant".into()),
                (2, "Line1".into()),
                (2, "Temp".into())
            ])
        );
        assert_eq!(
            address.mode,
            Mode::Poll {
                interval: Duration::from_secs(1)
            }
        );
    }

    #[test]
    fn errors_name_the_member() {
        let cases = [
            (json!({}), "points[3].address.node_id"),
            (json!({"node_id": "Temp"}), "points[3].address.node_id"),
            (
                json!({"node_id": "ns=2;s=A", "browse_path": "2:A"}),
                "points[3].address.node_id",
            ),
            (
                json!({"browse_path": "2:A//2:B"}),
                "points[3].address.browse_path",
            ),
            (
                json!({"node_id": "i=1", "mode": "push"}),
                "points[3].address.mode",
            ),
            (
                json!({"node_id": "i=1", "queue_size": 0}),
                "points[3].address.queue_size",
            ),
            (
                json!({"node_id": "i=1", "deadband": -1}),
                "points[3].address.deadband",
            ),
            (
                json!({"node_id": "i=1", "sampling_interval": "x"}),
                "points[3].address.sampling_interval",
            ),
            (
                json!({"node_id": "i=1", "mode": "poll", "poll_interval": "0s"}),
                "points[3].address.poll_interval",
            ),
            (
                json!({"node_id": "i=1", "mode": "poll", "deadband": 1}),
                "points[3].address.deadband",
            ),
            (
                json!({"node_id": "i=1", "colour": 1}),
                "points[3].address.colour",
            ),
        ];
        for (value, member) in cases {
            let error = checked(value.clone()).unwrap_err();
            assert!(error.starts_with(member), "{value}: {error}");
        }
    }
}
