//! What switch and change nodes do to one message: property paths into the message
//! (`payload.temp`, `msg.topic`), the switch conditions, and the change rules.

use super::graph::{ChangeConfig, ChangeRule, Condition, SwitchConfig};
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// A message travelling through a flow: `topic`, `payload` and whatever nodes add.
pub type Msg = Map<String, Value>;

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.strip_prefix("msg.").unwrap_or(path).split('.')
}

/// The value at a path, if there is one.
pub fn get_path<'a>(msg: &'a Msg, path: &str) -> Option<&'a Value> {
    let mut parts = segments(path);
    let mut current = msg.get(parts.next()?)?;
    for part in parts {
        current = match current {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// Sets the value at a path, creating objects on the way (and replacing non-objects there).
pub fn set_path(msg: &mut Msg, path: &str, value: Value) {
    let parts: Vec<&str> = segments(path).collect();
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut current = msg;
    for part in parents {
        let slot = current
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        let Value::Object(next) = slot else {
            return;
        };
        current = next;
    }
    current.insert(last.to_string(), value);
}

/// Removes and returns the value at a path.
pub fn remove_path(msg: &mut Msg, path: &str) -> Option<Value> {
    let parts: Vec<&str> = segments(path).collect();
    let (last, parents) = parts.split_last()?;
    let mut current = msg;
    for part in parents {
        match current.get_mut(*part)? {
            Value::Object(next) => current = next,
            _ => return None,
        }
    }
    current.remove(*last)
}

/// The output ports a switch sends the message to.
pub fn switch_ports(config: &SwitchConfig, msg: &Msg) -> Vec<usize> {
    let value = get_path(msg, &config.property);
    let mut ports = Vec::new();
    for (port, rule) in config.rules.iter().enumerate() {
        let matched = match rule {
            Condition::Else => ports.is_empty(),
            _ => matches(rule, value),
        };
        if matched {
            ports.push(port);
            if !config.checkall {
                break;
            }
        }
    }
    ports
}

fn matches(condition: &Condition, value: Option<&Value>) -> bool {
    let ordered = |wanted: &Value, accept: fn(Ordering) -> bool| {
        value.and_then(|v| compare(v, wanted)).is_some_and(accept)
    };
    match condition {
        Condition::Eq(wanted) => value.is_some_and(|v| equal(v, wanted)),
        Condition::Neq(wanted) => !value.is_some_and(|v| equal(v, wanted)),
        Condition::Lt(wanted) => ordered(wanted, Ordering::is_lt),
        Condition::Lte(wanted) => ordered(wanted, Ordering::is_le),
        Condition::Gt(wanted) => ordered(wanted, Ordering::is_gt),
        Condition::Gte(wanted) => ordered(wanted, Ordering::is_ge),
        Condition::Between(low, high) => {
            ordered(low, Ordering::is_ge) && ordered(high, Ordering::is_le)
        }
        Condition::Contains(wanted) => match value {
            Some(Value::String(s)) => wanted.as_str().is_some_and(|w| s.contains(w)),
            Some(Value::Array(items)) => items.iter().any(|item| equal(item, wanted)),
            Some(Value::Object(map)) => wanted.as_str().is_some_and(|key| map.contains_key(key)),
            _ => false,
        },
        Condition::Regex(regex) => matches!(value, Some(Value::String(s)) if regex.is_match(s)),
        Condition::True => matches!(value, Some(Value::Bool(true))),
        Condition::False => matches!(value, Some(Value::Bool(false))),
        Condition::Null => matches!(value, None | Some(Value::Null)),
        Condition::NotNull => !matches!(value, None | Some(Value::Null)),
        Condition::Empty => is_empty(value),
        Condition::NotEmpty => !is_empty(value),
        Condition::Else => false,
    }
}

fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    }
}

/// Numbers compare by value (`1` equals `1.0`); everything else structurally.
fn equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Numbers with numbers, strings with strings; anything else does not compare.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Applies a change node's rules in order.
pub fn apply_change(config: &ChangeConfig, msg: &mut Msg) -> Result<(), String> {
    for rule in &config.rules {
        match rule {
            ChangeRule::Set { property, value } => set_path(msg, property, value.clone()),
            ChangeRule::Copy { property, from } => {
                let value = get_path(msg, from)
                    .cloned()
                    .ok_or_else(|| format!("the message has no `{from}` to copy"))?;
                set_path(msg, property, value);
            }
            ChangeRule::Move { property, to } => {
                let value = remove_path(msg, property)
                    .ok_or_else(|| format!("the message has no `{property}` to move"))?;
                set_path(msg, to, value);
            }
            ChangeRule::Delete { property } => {
                remove_path(msg, property);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flows::graph::parse;
    use crate::flows::graph::NodeKind;
    use serde_json::json;

    fn msg(value: Value) -> Msg {
        serde_json::from_value(value).unwrap()
    }

    fn node_kind(kind: &str, config: Value) -> NodeKind {
        let flow = json!({"name": "f", "nodes": [{"id": "n", "type": kind, "config": config}]});
        parse(&flow, &|_| Ok(())).unwrap().nodes.remove(0).kind
    }

    fn switch(config: Value) -> SwitchConfig {
        match node_kind("switch", config) {
            NodeKind::Switch(c) => c,
            _ => unreachable!(),
        }
    }

    fn change(config: Value) -> ChangeConfig {
        match node_kind("change", config) {
            NodeKind::Change(c) => c,
            _ => unreachable!(),
        }
    }

    #[test]
    fn paths_read_write_and_remove_nested_values() {
        let mut m = msg(json!({"payload": {"temp": 21.5, "list": [1, 2]}}));
        assert_eq!(get_path(&m, "payload.temp"), Some(&json!(21.5)));
        assert_eq!(get_path(&m, "msg.payload.list.1"), Some(&json!(2)));
        assert_eq!(get_path(&m, "payload.missing"), None);
        set_path(&mut m, "meta.source.line", json!("L1"));
        assert_eq!(m["meta"], json!({"source": {"line": "L1"}}));
        set_path(&mut m, "payload.temp.unit", json!("C"));
        assert_eq!(m["payload"]["temp"], json!({"unit": "C"}));
        assert_eq!(
            remove_path(&mut m, "meta.source"),
            Some(json!({"line": "L1"}))
        );
        assert_eq!(m["meta"], json!({}));
        assert_eq!(remove_path(&mut m, "nothing.here"), None);
    }

    #[test]
    fn switch_routes_by_comparison_with_else_and_checkall() {
        let config = switch(json!({"property": "payload", "rules": [
            {"op": "gt", "value": 80}, {"op": "between", "value": 50, "value2": 80},
            {"op": "gte", "value": 70}, {"op": "else"}
        ]}));
        let ports = |v: Value| switch_ports(&config, &msg(json!({"payload": v})));
        assert_eq!(ports(json!(90)), [0, 2]);
        assert_eq!(ports(json!(75)), [1, 2]);
        assert_eq!(ports(json!(80.0)), [1, 2]);
        assert_eq!(ports(json!(10)), [3]);
        assert_eq!(
            ports(json!("hot")),
            [3],
            "strings do not compare with numbers"
        );

        let first = switch(
            json!({"rules": [{"op": "gte", "value": 1}, {"op": "gte", "value": 2}], "checkall": false}),
        );
        assert_eq!(switch_ports(&first, &msg(json!({"payload": 5}))), [0]);
    }

    #[test]
    fn switch_tests_equality_text_and_presence() {
        let config = switch(json!({"property": "payload.state", "rules": [
            {"op": "eq", "value": 1}, {"op": "contains", "value": "larm"},
            {"op": "regex", "value": "^ST[0-9]+$"}, {"op": "null"}, {"op": "nempty"},
            {"op": "true"}, {"op": "neq", "value": "x"}
        ]}));
        let ports = |v: Value| switch_ports(&config, &msg(json!({"payload": {"state": v}})));
        assert_eq!(ports(json!(1.0)), [0, 4, 6]);
        assert_eq!(ports(json!("alarm")), [1, 4, 6]);
        assert_eq!(ports(json!("ST42")), [2, 4, 6]);
        assert_eq!(ports(json!(null)), [3, 6]);
        assert_eq!(ports(json!(true)), [4, 5, 6]);
        assert_eq!(ports(json!("x")), [4]);
        assert_eq!(switch_ports(&config, &msg(json!({"payload": 3}))), [3, 6]);
    }

    #[test]
    fn change_sets_copies_moves_and_deletes_in_order() {
        let config = change(json!({"rules": [
            {"action": "set", "property": "topic", "value": "plant/alarm"},
            {"action": "set", "property": "payload.level", "from": "payload.value"},
            {"action": "move", "property": "payload.value", "to": "original"},
            {"action": "delete", "property": "payload.noise"}
        ]}));
        let mut m = msg(json!({"topic": "t", "payload": {"value": 9, "noise": true}}));
        apply_change(&config, &mut m).unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"topic": "plant/alarm", "payload": {"level": 9}, "original": 9})
        );

        let mut empty = msg(json!({"payload": 1}));
        let err = apply_change(&config, &mut empty).unwrap_err();
        assert!(err.contains("payload.value"), "{err}");
    }
}
