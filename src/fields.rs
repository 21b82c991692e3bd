//! Checks of a system record's fields, shared by the tables whose records are checked field by
//! field (upstreams, connectors): each error is one sentence naming the field, and what is
//! stored is complete, with its defaults filled in.

use crate::duration::parse_duration;
use serde_json::{json, Map, Value};

/// Takes the write-only `password` out of a record: `Some(new)` when the body set one (an
/// empty string or null clears it), `None` when it did not mention it.
pub fn take_password(fields: &mut Map<String, Value>) -> Result<Option<Option<String>>, String> {
    match fields.remove("password") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(p)) if p.is_empty() => Ok(Some(None)),
        Some(Value::String(p)) => Ok(Some(Some(p))),
        Some(_) => Err("field `password` must be a string".into()),
    }
}

pub fn is_system(key: &str) -> bool {
    matches!(key, "id" | "created_dt" | "updated_dt")
}

pub fn text(fields: &Map<String, Value>, name: &str) -> Result<Option<String>, String> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("field `{name}` must be a string")),
    }
}

pub fn flag(fields: &Map<String, Value>, name: &str) -> Result<Option<bool>, String> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("field `{name}` must be true or false")),
    }
}

pub fn number(
    fields: &Map<String, Value>,
    name: &str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, String> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(format!(
                "field `{name}` must be a whole number from {min} to {max}, not {v}"
            )),
        },
    }
}

/// A JSON number as an integer when it is one: an integer, or a float without a fraction (a
/// value written to a device or an edge node's metric, in whatever form JSON gave it).
pub fn whole_number(n: &serde_json::Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
        .or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e20)
                .map(|f| f as i128)
        })
}

/// An object field (`{}` when absent).
pub fn object(value: Option<&Value>, name: &str) -> Result<Map<String, Value>, String> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(_) => Err(format!("field `{name}` must be an object")),
    }
}

/// Renames `field `x`` in an error to `field `<parent>.x``, for fields of an object field.
pub fn within(parent: &str) -> impl Fn(String) -> String + Copy + '_ {
    move |e| e.replace("field `", &format!("field `{parent}."))
}

pub fn only(map: &Map<String, Value>, name: &str, known: &[&str]) -> Result<(), String> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(format!("unknown field `{name}.{unknown}`")),
        None => Ok(()),
    }
}

pub fn duration_field(
    map: &Map<String, Value>,
    parent: &str,
    name: &str,
    default: &str,
) -> Result<Value, String> {
    let text = text(map, name)
        .map_err(|_| format!("field `{parent}.{name}` must be a duration such as \"5s\""))?
        .unwrap_or_else(|| default.into());
    parse_duration(&text).map_err(|e| format!("field `{parent}.{name}`: {e}"))?;
    Ok(json!(text))
}

pub fn reconnect(value: Option<&Value>) -> Result<Value, String> {
    let reconnect = object(value, "reconnect")?;
    only(&reconnect, "reconnect", &["initial", "max", "jitter"])?;
    let initial = duration_field(&reconnect, "reconnect", "initial", "1s")?;
    let max = duration_field(&reconnect, "reconnect", "max", "60s")?;
    let jitter = match reconnect.get("jitter") {
        None | Some(Value::Null) => 0.2,
        Some(v) => match v.as_f64() {
            Some(j) if (0.0..=1.0).contains(&j) => j,
            _ => {
                return Err(format!(
                    "field `reconnect.jitter` must be a fraction from 0 to 1, not {v}"
                ))
            }
        },
    };
    Ok(json!({"initial": initial, "max": max, "jitter": jitter}))
}

/// The required `name` of a supervised link's record (an upstream, a connector): not empty,
/// and without `/ + #` or NUL, since it is a level of the link's status topic.
pub fn link_name(fields: &Map<String, Value>) -> Result<String, String> {
    let name = text(fields, "name")?.ok_or("field `name` is required")?;
    if name.trim().is_empty() {
        return Err("field `name` cannot be empty".into());
    }
    if name.contains(['/', '+', '#', '\0']) {
        return Err("field `name` cannot contain `/`, `+`, `#` or NUL".into());
    }
    Ok(name)
}

/// The start every named system record's check shares (Sparkplug hosts, alarms, notification
/// pipelines): no field outside `known` but the system's, then the record's `name`
/// ([`link_name`]), its `description` when given and `enabled` (true when not given).
pub fn named_record(
    fields: &Map<String, Value>,
    known: &[&str],
) -> Result<Map<String, Value>, String> {
    if let Some(unknown) = fields
        .keys()
        .find(|k| !known.contains(&k.as_str()) && !is_system(k))
    {
        return Err(format!("unknown field `{unknown}`"));
    }
    let mut out = Map::new();
    out.insert("name".into(), json!(link_name(fields)?));
    if let Some(description) = text(fields, "description")? {
        out.insert("description".into(), json!(description));
    }
    out.insert(
        "enabled".into(),
        json!(flag(fields, "enabled")?.unwrap_or(true)),
    );
    Ok(out)
}
