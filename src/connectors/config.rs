//! A connector's record: every field checked with an error naming it, defaults filled in, so
//! what is stored is complete. The kind checks its own `settings` and point `address`es; this
//! file checks what every kind shares: the name, the points' tags, scaling, deadbands and
//! write topics, reconnects. The password is not part of the record (kept aside, write-only);
//! the record says only `password_set`.

use super::kind::Kind;
use crate::fields::*;
use crate::historian::compression::Compression;
use crate::topic::validate_topic_name;
use serde_json::{json, Map, Value};
use std::collections::HashSet;

/// The most points one connector may have.
pub const MAX_POINTS: usize = 50_000;

/// Checks a connector record (`fields`, without `id` and times) and rewrites it normalised.
/// `password` must have been taken out before ([`take_password`]).
pub fn normalise(fields: &mut Map<String, Value>) -> Result<(), String> {
    let known = [
        "name",
        "description",
        "kind",
        "enabled",
        "settings",
        "password_set",
        "reconnect",
        "points",
    ];
    if let Some(unknown) = fields
        .keys()
        .find(|k| !known.contains(&k.as_str()) && !is_system(k))
    {
        return Err(format!("unknown field `{unknown}`"));
    }
    let mut out = Map::new();
    let name = link_name(fields)?;
    out.insert("name".into(), json!(name));
    if let Some(description) = text(fields, "description")? {
        out.insert("description".into(), json!(description));
    }
    let kind_name = text(fields, "kind")?.ok_or("field `kind` is required")?;
    let kind = super::kind(&kind_name).ok_or_else(|| {
        let names: Vec<&str> = super::KINDS.iter().map(|k| k.name()).collect();
        format!(
            "field `kind` must be one of {}, not `{kind_name}`",
            names.join(", ")
        )
    })?;
    out.insert("kind".into(), json!(kind_name));
    out.insert(
        "enabled".into(),
        json!(flag(fields, "enabled")?.unwrap_or(true)),
    );
    let mut settings = object(fields.get("settings"), "settings")?;
    kind.check_settings(&mut settings)?;
    out.insert("settings".into(), Value::Object(settings));
    out.insert(
        "password_set".into(),
        json!(flag(fields, "password_set")?.unwrap_or(false)),
    );
    out.insert("reconnect".into(), reconnect(fields.get("reconnect"))?);
    out.insert("points".into(), points(kind, fields.get("points"))?);
    *fields = out;
    Ok(())
}

fn points(kind: &dyn Kind, value: Option<&Value>) -> Result<Value, String> {
    let points = match value {
        None | Some(Value::Null) => return Ok(json!([])),
        Some(Value::Array(points)) => points,
        Some(_) => return Err("field `points` must be an array".into()),
    };
    if points.len() > MAX_POINTS {
        return Err(format!(
            "field `points` may hold at most {MAX_POINTS} points, not {}",
            points.len()
        ));
    }
    let mut tags = HashSet::new();
    let mut write_topics = HashSet::new();
    let mut out = Vec::with_capacity(points.len());
    for (i, point) in points.iter().enumerate() {
        let point = self::point(kind, i, point)?;
        let tag = point["tag"].as_str().unwrap_or_default().to_string();
        if !tags.insert(tag.clone()) {
            return Err(format!(
                "field `points[{i}].tag`: `{tag}` is already the tag of another point"
            ));
        }
        if let Some(topic) = point.get("write_topic").and_then(Value::as_str) {
            write_topics.insert(topic.to_string());
        }
        out.push(point);
    }
    // A write topic that is also a point's tag would take device values for writes.
    if let Some((i, tag)) = out
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p["tag"].as_str()?)))
        .find(|(_, tag)| write_topics.contains(*tag))
    {
        return Err(format!(
            "field `points[{i}].tag`: `{tag}` is the write topic of another point"
        ));
    }
    Ok(Value::Array(out))
}

fn point(kind: &dyn Kind, i: usize, value: &Value) -> Result<Value, String> {
    let Value::Object(point) = value else {
        return Err(format!("field `points[{i}]` must be an object"));
    };
    let known = [
        "tag",
        "description",
        "address",
        "historize",
        "unit",
        "compression",
        "scale",
        "offset",
        "deadband",
        "writable",
        "write_topic",
    ];
    if let Some(unknown) = point.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("unknown field `points[{i}].{unknown}`"));
    }
    let field = |e: String| e.replace("field `", &format!("field `points[{i}]."));
    let mut out = Map::new();
    let tag = text(point, "tag")
        .map_err(field)?
        .ok_or_else(|| format!("field `points[{i}].tag` is required"))?;
    validate_topic_name(&tag).map_err(|e| format!("field `points[{i}].tag`: {e}"))?;
    if tag.starts_with('$') {
        return Err(format!(
            "field `points[{i}].tag`: `{tag}` is a broker topic, not a tag"
        ));
    }
    out.insert("tag".into(), json!(tag));
    if let Some(description) = text(point, "description").map_err(field)? {
        out.insert("description".into(), json!(description));
    }
    let writable = flag(point, "writable").map_err(field)?.unwrap_or(false);
    let mut address = object(point.get("address"), &format!("points[{i}].address"))?;
    kind.check_address(i, &mut address, writable)?;
    out.insert("address".into(), Value::Object(address));
    out.insert(
        "historize".into(),
        json!(flag(point, "historize").map_err(field)?.unwrap_or(false)),
    );
    if let Some(unit) = text(point, "unit").map_err(field)? {
        out.insert("unit".into(), json!(unit));
    }
    if let Some(compression) = point.get("compression").filter(|c| !c.is_null()) {
        Compression::from_member(Some(compression)).map_err(field)?;
        out.insert("compression".into(), compression.clone());
    }
    let scale = real(point, "scale", 1.0).map_err(field)?;
    if scale == 0.0 {
        return Err(format!("field `points[{i}].scale` cannot be 0"));
    }
    out.insert("scale".into(), json!(scale));
    out.insert(
        "offset".into(),
        json!(real(point, "offset", 0.0).map_err(field)?),
    );
    let deadband = real(point, "deadband", 0.0).map_err(field)?;
    if deadband < 0.0 {
        return Err(format!("field `points[{i}].deadband` cannot be negative"));
    }
    out.insert("deadband".into(), json!(deadband));
    out.insert("writable".into(), json!(writable));
    if writable {
        let topic = text(point, "write_topic")
            .map_err(field)?
            .unwrap_or_else(|| format!("{tag}/set"));
        validate_topic_name(&topic).map_err(|e| format!("field `points[{i}].write_topic`: {e}"))?;
        if topic == tag {
            return Err(format!(
                "field `points[{i}].write_topic` cannot be the point's own tag: subscribers would take writes for device values"
            ));
        }
        out.insert("write_topic".into(), json!(topic));
    } else if point.get("write_topic").is_some_and(|t| !t.is_null()) {
        return Err(format!(
            "field `points[{i}].write_topic` needs `writable: true`"
        ));
    }
    Ok(Value::Object(out))
}

/// A finite number field (`default` when absent).
fn real(fields: &Map<String, Value>, name: &str, default: f64) -> Result<f64, String> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("field `{name}` must be a number, not {v}")),
    }
}

/// The tags of a connector record's points, with their index (checked against the domain's
/// namespaces), and their write topics.
pub fn point_topics(fields: &Map<String, Value>) -> Vec<(String, String)> {
    let mut topics = Vec::new();
    for (i, point) in fields
        .get("points")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(tag) = point.get("tag").and_then(Value::as_str) {
            topics.push((format!("points[{i}].tag"), tag.to_string()));
        }
        if let Some(topic) = point.get("write_topic").and_then(Value::as_str) {
            topics.push((format!("points[{i}].write_topic"), topic.to_string()));
        }
    }
    topics
}
