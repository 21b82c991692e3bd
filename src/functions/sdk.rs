//! The process model of the platform's client SDK, next to svc's own function fields: named
//! `inputs` resolved before each run (a tag's last value, or the rows of a read-only SQL
//! query), `outputs` applied after a successful run (a tag write of the output or one of its
//! fields, or a record write from an `sql` INSERT/UPDATE, see [`super::sql_output`]), a read-only `config` made of the parallel `keys`/`values` lists, and triggers in
//! the SDK's `{type, config: {…}}` shape as well as svc's flat one. [`sdk_view`] is a function
//! as the SDK reads it (`GET /svc/processes/domain`), its references made the SDK's RecordID
//! objects by [`sdk_references`].

use super::{FunctionDef, Trigger, CREATED_BY};
use crate::ids::RecordId;
use crate::topic::validate_topic_name;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashSet;

/// A named value resolved before each run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessInput {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: InputKind,
    #[serde(default)]
    pub config: InputConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    Tag,
    Sql,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

/// What a successful run's output becomes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessOutput {
    #[serde(rename = "type")]
    pub kind: OutputKind,
    #[serde(default)]
    pub config: OutputConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    TagWrite,
    Sql,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The output's member to write (the whole output without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyEntry {
    pub key: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueEntry {
    pub value: Value,
}

/// A trigger as either shape writes it: svc's flat `{type, topic | value, unit | expr |
/// endpoint}` or the SDK's `{type, config: {tag | interval_value, interval_unit |
/// cron_expression | endpoint}}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTrigger {
    #[serde(rename = "type")]
    kind: String,
    topic: Option<String>,
    value: Option<u64>,
    unit: Option<String>,
    expr: Option<String>,
    endpoint: Option<String>,
    config: Option<TriggerConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TriggerConfig {
    tag: Option<String>,
    interval_value: Option<Value>,
    interval_unit: Option<String>,
    cron_expression: Option<String>,
    endpoint: Option<String>,
}

impl TryFrom<RawTrigger> for Trigger {
    type Error = String;

    fn try_from(raw: RawTrigger) -> Result<Trigger, String> {
        let config = raw.config.unwrap_or_default();
        let missing = |what: &str| format!("a `{}` trigger needs `{what}`", raw.kind);
        Ok(match raw.kind.as_str() {
            "manual" => Trigger::Manual,
            "http" => Trigger::Http {
                endpoint: raw.endpoint.or(config.endpoint),
            },
            "tag_change" => Trigger::TagChange {
                topic: raw
                    .topic
                    .or(config.tag)
                    .ok_or_else(|| missing("topic` or `config.tag"))?,
            },
            "interval" => {
                let value = match (raw.value, config.interval_value) {
                    (Some(value), _) => value,
                    (None, Some(Value::Number(n))) => n.as_u64().ok_or_else(|| {
                        "`config.interval_value` must be a whole number".to_string()
                    })?,
                    (None, Some(Value::String(text))) => text.trim().parse().map_err(|_| {
                        "`config.interval_value` must be a whole number".to_string()
                    })?,
                    _ => return Err(missing("value` or `config.interval_value")),
                };
                Trigger::Interval {
                    value,
                    unit: raw
                        .unit
                        .or(config.interval_unit)
                        .ok_or_else(|| missing("unit` or `config.interval_unit"))?,
                }
            }
            "cron" => Trigger::Cron {
                expr: raw
                    .expr
                    .or(config.cron_expression)
                    .ok_or_else(|| missing("expr` or `config.cron_expression"))?,
            },
            other => {
                return Err(format!(
                    "unknown trigger type `{other}`: use manual, http, tag_change, interval or cron"
                ))
            }
        })
    }
}

impl Trigger {
    /// The trigger in the SDK's shape.
    pub fn to_sdk(&self) -> Value {
        let (kind, config) = match self {
            Trigger::Manual => ("manual", json!({})),
            Trigger::Http { endpoint } => match endpoint {
                Some(endpoint) => ("http", json!({"endpoint": endpoint})),
                None => ("http", json!({})),
            },
            Trigger::TagChange { topic } => ("tag_change", json!({"tag": topic})),
            Trigger::Interval { value, unit } => (
                "interval",
                json!({"interval_value": value, "interval_unit": unit}),
            ),
            Trigger::Cron { expr } => ("cron", json!({"cron_expression": expr})),
        };
        json!({"type": kind, "config": config})
    }
}

/// Checks the SDK fields of a function.
pub(super) fn validate(def: &FunctionDef) -> Result<(), String> {
    let mut names = HashSet::new();
    for (i, input) in def.inputs.iter().enumerate() {
        let at = format!("inputs[{i}]");
        let identifier = input
            .name
            .chars()
            .enumerate()
            .all(|(j, c)| c == '_' || c.is_ascii_alphabetic() || (j > 0 && c.is_ascii_digit()));
        if input.name.is_empty() || !identifier {
            return Err(format!(
                "`{at}.name` must be a name the code can use (letters, digits, _)"
            ));
        }
        if !names.insert(input.name.as_str()) {
            return Err(format!("input `{}` is named twice", input.name));
        }
        match input.kind {
            InputKind::Tag => required(&input.config.tag, &at, "tag", validate_topic_name)?,
            InputKind::Sql => required(&input.config.query, &at, "query", |query| {
                crate::report_sql::check(query).map(drop)
            })?,
        }
    }
    for (i, output) in def.outputs.iter().enumerate() {
        let at = format!("outputs[{i}]");
        match output.kind {
            OutputKind::TagWrite => required(&output.config.tag, &at, "tag", validate_topic_name)?,
            OutputKind::Sql => required(&output.config.query, &at, "query", |query| {
                super::sql_output::parse(query).map(drop)
            })?,
        }
    }
    if def.keys.len() != def.values.len() {
        return Err(format!(
            "`keys` and `values` are parallel lists: {} keys, {} values",
            def.keys.len(),
            def.values.len()
        ));
    }
    let mut keys = HashSet::new();
    for entry in &def.keys {
        if !keys.insert(entry.key.as_str()) {
            return Err(format!("key `{}` is given twice", entry.key));
        }
    }
    Ok(())
}

/// A `config` field an input or output of kind needs (`<at>.config.<field>` is required),
/// checked by `check`; errors name the field.
fn required(
    value: &Option<String>,
    at: &str,
    field: &str,
    check: impl FnOnce(&str) -> Result<(), String>,
) -> Result<(), String> {
    let value = value
        .as_deref()
        .ok_or_else(|| format!("`{at}.config.{field}` is required"))?;
    check(value).map_err(|e| format!("`{at}.config.{field}`: {e}"))
}

/// The `config` object the code reads: `keys[i].key` → `values[i].value`.
pub fn config_of(def: &FunctionDef) -> Value {
    let map: Map<String, Value> = def
        .keys
        .iter()
        .zip(&def.values)
        .map(|(k, v)| (k.key.clone(), v.value.clone()))
        .collect();
    Value::Object(map)
}

/// A function as the SDK reads it (`GET /svc/processes/domain`): its record with the
/// triggers in the SDK's shape, every SDK list present and its references as RecordIDs.
pub fn sdk_view(record: &Map<String, Value>, def: &FunctionDef) -> Value {
    let mut view = record.clone();
    sdk_references(&mut view);
    view.insert(
        "triggers".into(),
        Value::Array(def.triggers.iter().map(Trigger::to_sdk).collect()),
    );
    view.insert("log_enabled".into(), json!(def.log_enabled));
    for (name, list) in [
        ("inputs", json!(def.inputs)),
        ("outputs", json!(def.outputs)),
        ("keys", json!(def.keys)),
        ("values", json!(def.values)),
    ] {
        view.insert(name.into(), list);
    }
    Value::Object(view)
}

/// The SDK's `Process` references in a process record: `id`, `domain_id` (the domain of the
/// id) and `createdBy` become RecordID objects, and `createdDt` repeats `created_dt`.
pub fn sdk_references(view: &mut Map<String, Value>) {
    if let Some(id) = view.get("id").and_then(Value::as_str).map(str::to_string) {
        if let Ok(parsed) = RecordId::parse(&id) {
            let domain = format!("domains:{}", parsed.table.domain);
            view.insert("domain_id".into(), sdk_record_id(&domain));
        }
        view.insert("id".into(), sdk_record_id(&id));
    }
    if let Some(by) = view
        .get(CREATED_BY)
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        view.insert(CREATED_BY.into(), sdk_record_id(&by));
    }
    if let Some(created) = view.get("created_dt").cloned() {
        view.insert("createdDt".into(), created);
    }
}

/// A RecordID string as the SDK types it, `{"Table", "ID"}`, split where the SDK's
/// `StringToRecordID` splits it (the `:`), so that its `RecordIDToString` (`Table:ID`) gives
/// the string back: `acme.processes:k1` → `{"Table": "acme.processes", "ID": "k1"}`.
pub fn sdk_record_id(id: &str) -> Value {
    match id.split_once(':') {
        Some((table, key)) => json!({"Table": table, "ID": key}),
        None => Value::String(id.to_string()),
    }
}
