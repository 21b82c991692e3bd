//! An `alarms` record: one alarm of a domain. It watches one tag (`tag`) for one kind of
//! condition (`kind`, with its `setpoint` and `deadband`), which must hold for `on_delay`
//! before the alarm is raised and be gone for `off_delay` before it returns to normal. It has a
//! `priority`, a `message` template (`{tag}`, `{value}`, `{unit}`, `{setpoint}`, `{name}`), may
//! be `latching` (it stays annunciated until acknowledged after the condition is gone), and may
//! be enabled only while another tag has a value (`enable_tag` equal to `enable_value`, true
//! when not given): otherwise it is suppressed by design. Every field is checked with an error
//! naming it; what is stored is complete.

use crate::duration::parse_duration;
use crate::fields::{flag, is_system, named_record, text};
use crate::topic::validate_topic_name;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// What an alarm watches for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The value is above the setpoint.
    High,
    HighHigh,
    /// The value is below the setpoint.
    Low,
    LowLow,
    /// The value equals the setpoint (any JSON value).
    Equal,
    NotEqual,
    /// The value is `true` (or a non-zero number).
    True,
    /// The value is `false` (or zero).
    False,
    /// The value changes faster than the setpoint, in units per second, either way.
    RateOfChange,
    /// The value's quality is `bad`.
    Bad,
    /// No value arrived for `setpoint` seconds.
    Stale,
}

const KINDS: [(&str, Kind); 11] = [
    ("high", Kind::High),
    ("high_high", Kind::HighHigh),
    ("low", Kind::Low),
    ("low_low", Kind::LowLow),
    ("equal", Kind::Equal),
    ("not_equal", Kind::NotEqual),
    ("true", Kind::True),
    ("false", Kind::False),
    ("rate_of_change", Kind::RateOfChange),
    ("bad", Kind::Bad),
    ("stale", Kind::Stale),
];

impl Kind {
    pub fn name(self) -> &'static str {
        KINDS
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("", |(n, _)| n)
    }

    fn parse(text: &str) -> Option<Kind> {
        KINDS.iter().find(|(n, _)| *n == text).map(|(_, k)| *k)
    }

    /// Whether the setpoint is a number (every kind but the equalities and the booleans and
    /// quality, which need none or any value).
    fn numeric_setpoint(self) -> bool {
        matches!(
            self,
            Kind::High
                | Kind::HighHigh
                | Kind::Low
                | Kind::LowLow
                | Kind::RateOfChange
                | Kind::Stale
        )
    }

    fn needs_setpoint(self) -> bool {
        self.numeric_setpoint() || matches!(self, Kind::Equal | Kind::NotEqual)
    }
}

/// How urgent an alarm is; ordered, so `Critical` sorts above `Low`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Low,
    Medium,
    High,
    Critical,
}

pub const PRIORITIES: [(&str, Priority); 4] = [
    ("low", Priority::Low),
    ("medium", Priority::Medium),
    ("high", Priority::High),
    ("critical", Priority::Critical),
];

impl Priority {
    pub fn name(self) -> &'static str {
        PRIORITIES
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("", |(n, _)| n)
    }

    pub fn parse(text: &str) -> Option<Priority> {
        PRIORITIES.iter().find(|(n, _)| *n == text).map(|(_, p)| *p)
    }
}

/// The message an alarm says when none is configured.
pub const DEFAULT_MESSAGE: &str = "{name}: {tag} is {value} {unit}";

/// One alarm, read from its stored (normalised) record.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// Its record's id, which a rename keeps.
    pub record: String,
    pub name: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub tag: String,
    pub kind: Kind,
    pub setpoint: Value,
    pub deadband: f64,
    pub on_delay_ms: i64,
    pub off_delay_ms: i64,
    pub priority: Priority,
    pub message: String,
    pub latching: bool,
    /// The tag whose value enables the alarm, and the value that does.
    pub enable: Option<(String, Value)>,
}

impl Definition {
    /// The alarm of a stored record (`None` for one svc did not write, never the case).
    pub fn from_record(record: &Value) -> Option<Definition> {
        let text = |name: &str| record.get(name).and_then(Value::as_str).map(str::to_string);
        let delay = |name: &str| {
            text(name)
                .and_then(|t| parse_duration(&t).ok())
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        };
        Some(Definition {
            record: text("id").unwrap_or_default(),
            name: text("name")?,
            description: text("description"),
            enabled: record
                .get("enabled")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            tag: text("tag")?,
            kind: Kind::parse(&text("kind")?)?,
            setpoint: record.get("setpoint").cloned().unwrap_or(Value::Null),
            deadband: record
                .get("deadband")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            on_delay_ms: delay("on_delay"),
            off_delay_ms: delay("off_delay"),
            priority: text("priority")
                .and_then(|p| Priority::parse(&p))
                .unwrap_or(Priority::Medium),
            message: text("message").unwrap_or_else(|| DEFAULT_MESSAGE.into()),
            latching: record
                .get("latching")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            enable: text("enable_tag").map(|tag| {
                let value = record
                    .get("enable_value")
                    .cloned()
                    .unwrap_or(Value::Bool(true));
                (tag, value)
            }),
        })
    }

    /// The numeric setpoint (0 for the kinds without one).
    pub fn setpoint_number(&self) -> f64 {
        self.setpoint.as_f64().unwrap_or(0.0)
    }

    /// Stale alarms: how long without a value raises them, in milliseconds.
    pub fn stale_after_ms(&self) -> i64 {
        (self.setpoint_number() * 1000.0) as i64
    }

    /// The alarm's message for `value` of a tag measured in `unit`.
    pub fn render(&self, value: &Value, unit: Option<&str>) -> String {
        let value = match value {
            Value::String(s) => s.clone(),
            Value::Null => "no value".into(),
            other => other.to_string(),
        };
        let setpoint = match &self.setpoint {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.message
            .replace("{name}", &self.name)
            .replace("{tag}", &self.tag)
            .replace("{value}", &value)
            .replace("{unit}", unit.unwrap_or(""))
            .replace("{setpoint}", &setpoint)
            .trim()
            .to_string()
    }
}

const KNOWN: [&str; 15] = [
    "name",
    "description",
    "enabled",
    "tag",
    "kind",
    "setpoint",
    "deadband",
    "on_delay",
    "off_delay",
    "priority",
    "message",
    "latching",
    "enable_tag",
    "enable_value",
    "notes",
];

/// Checks an `alarms` record and fills in its defaults (the sentence of a 400 otherwise).
pub fn normalise(fields: &mut Map<String, Value>) -> Result<(), String> {
    let mut out = named_record(fields, &KNOWN)?;
    if let Some(notes) = text(fields, "notes")? {
        out.insert("notes".into(), json!(notes));
    }
    let tag = text(fields, "tag")?.ok_or("field `tag` is required")?;
    check_tag("tag", &tag)?;
    out.insert("tag".into(), json!(tag));
    let kind_text = text(fields, "kind")?.ok_or("field `kind` is required")?;
    let kind = Kind::parse(&kind_text).ok_or_else(|| {
        let names: Vec<&str> = KINDS.iter().map(|(n, _)| *n).collect();
        format!(
            "field `kind` must be one of {}, not `{kind_text}`",
            names.join(", ")
        )
    })?;
    out.insert("kind".into(), json!(kind.name()));
    let setpoint = fields.get("setpoint").cloned().unwrap_or(Value::Null);
    if kind.needs_setpoint() && setpoint.is_null() {
        return Err(format!(
            "field `setpoint` is required for a `{}` alarm",
            kind.name()
        ));
    }
    if kind.numeric_setpoint() && !setpoint.as_f64().is_some_and(f64::is_finite) {
        return Err(format!(
            "field `setpoint` of a `{}` alarm must be a number, not {setpoint}",
            kind.name()
        ));
    }
    if kind == Kind::Stale && setpoint.as_f64().is_some_and(|s| s <= 0.0) {
        return Err(
            "field `setpoint` of a `stale` alarm must be a number of seconds above 0".into(),
        );
    }
    if !setpoint.is_null() {
        out.insert("setpoint".into(), setpoint);
    }
    let deadband = match fields.get("deadband") {
        None | Some(Value::Null) => 0.0,
        Some(v) => v
            .as_f64()
            .filter(|d| d.is_finite() && *d >= 0.0)
            .ok_or_else(|| format!("field `deadband` must be a number of 0 or more, not {v}"))?,
    };
    out.insert("deadband".into(), json!(deadband));
    for delay in ["on_delay", "off_delay"] {
        let text = text(fields, delay)
            .map_err(|_| format!("field `{delay}` must be a duration such as \"5s\""))?
            .unwrap_or_else(|| "0s".into());
        parse_duration(&text).map_err(|e| format!("field `{delay}`: {e}"))?;
        out.insert(delay.into(), json!(text));
    }
    let priority = text(fields, "priority")?.unwrap_or_else(|| "medium".into());
    if Priority::parse(&priority).is_none() {
        return Err(format!(
            "field `priority` must be low, medium, high or critical, not `{priority}`"
        ));
    }
    out.insert("priority".into(), json!(priority));
    let message = text(fields, "message")?.unwrap_or_else(|| DEFAULT_MESSAGE.into());
    out.insert("message".into(), json!(message));
    out.insert(
        "latching".into(),
        json!(flag(fields, "latching")?.unwrap_or(false)),
    );
    if let Some(enable_tag) = text(fields, "enable_tag")? {
        check_tag("enable_tag", &enable_tag)?;
        out.insert("enable_tag".into(), json!(enable_tag));
        let value = fields.get("enable_value").cloned().unwrap_or(json!(true));
        out.insert(
            "enable_value".into(),
            if value.is_null() { json!(true) } else { value },
        );
    } else if fields.get("enable_value").is_some_and(|v| !v.is_null()) {
        return Err("field `enable_value` needs field `enable_tag`".into());
    }
    for (key, value) in fields.iter().filter(|(k, _)| is_system(k)) {
        out.insert(key.clone(), value.clone());
    }
    *fields = out;
    Ok(())
}

fn check_tag(field: &str, tag: &str) -> Result<(), String> {
    validate_topic_name(tag)
        .ok()
        .filter(|_| !tag.starts_with('$'))
        .map(|_| ())
        .ok_or_else(|| {
            format!("field `{field}` must be a tag's topic such as `plant/line1/temp`, not `{tag}`")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(record: Value) -> Result<Map<String, Value>, String> {
        let mut fields = record.as_object().cloned().unwrap();
        normalise(&mut fields).map(|()| fields)
    }

    #[test]
    fn defaults_fill_a_minimal_record() {
        let fields =
            checked(json!({"name": "hot", "tag": "a/t", "kind": "high", "setpoint": 80})).unwrap();
        let alarm = Definition::from_record(&Value::Object(fields)).unwrap();
        assert_eq!(alarm.kind, Kind::High);
        assert_eq!(alarm.priority, Priority::Medium);
        assert_eq!((alarm.on_delay_ms, alarm.off_delay_ms), (0, 0));
        assert!(alarm.enabled && !alarm.latching && alarm.enable.is_none());
    }

    #[test]
    fn every_bad_field_is_named() {
        let base = json!({"name": "a", "tag": "a/t", "kind": "high", "setpoint": 1});
        let cases = [
            (json!({"kind": "hot"}), "field `kind`"),
            (json!({"setpoint": "x"}), "field `setpoint`"),
            (json!({"setpoint": null}), "field `setpoint` is required"),
            (json!({"tag": "a/+"}), "field `tag`"),
            (json!({"tag": "$SYS/x"}), "field `tag`"),
            (json!({"name": "a/b"}), "field `name`"),
            (json!({"deadband": -1}), "field `deadband`"),
            (json!({"on_delay": "soon"}), "field `on_delay`"),
            (json!({"priority": "urgent"}), "field `priority`"),
            (json!({"enable_value": 1}), "field `enable_value`"),
            (json!({"colour": "red"}), "unknown field `colour`"),
            (json!({"latching": "yes"}), "field `latching`"),
        ];
        for (change, expected) in cases {
            let mut record = base.clone();
            for (k, v) in change.as_object().unwrap() {
                record[k] = v.clone();
            }
            let error = checked(record).unwrap_err();
            assert!(error.contains(expected), "{error} lacks {expected}");
        }
    }

    #[test]
    fn a_message_names_value_unit_and_tag() {
        let fields = checked(
            json!({"name": "hot", "tag": "a/t", "kind": "high", "setpoint": 80,
            "message": "{tag} at {value} {unit} (limit {setpoint})"}),
        )
        .unwrap();
        let alarm = Definition::from_record(&Value::Object(fields)).unwrap();
        assert_eq!(
            alarm.render(&json!(81.5), Some("°C")),
            "a/t at 81.5 °C (limit 80)"
        );
    }
}
