//! Node configs: the typed config of each node type and the parsing that checks it (topic
//! filters, schedules, switch rules, change rules, delay modes, function limits).

use crate::functions::{check_limits, default_memory_mb, default_timeout_ms};
use crate::schedule::Schedule;
use crate::topic::{validate_topic_filter, validate_topic_name};
use regex::Regex;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

/// Longest a delay node may hold a message.
const MAX_DELAY_MS: u64 = 24 * 3600 * 1000;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagInConfig {
    pub topic: String,
}

#[derive(Debug, Clone)]
pub struct InjectConfig {
    pub topic: Option<String>,
    pub payload: Option<Value>,
    /// `None`: injected only by hand.
    pub schedule: Option<Schedule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionConfig {
    pub code: String,
    #[serde(default = "one")]
    pub outputs: usize,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default = "default_memory_mb")]
    pub memory_mb: u64,
}

#[derive(Debug, Clone)]
pub struct SwitchConfig {
    /// Path of the message property tested (`payload`, `payload.temp`).
    pub property: String,
    /// One rule per output port.
    pub rules: Vec<Condition>,
    /// Send to every matching port (true) or only the first.
    pub checkall: bool,
}

#[derive(Debug, Clone)]
pub enum Condition {
    Eq(Value),
    Neq(Value),
    Lt(Value),
    Lte(Value),
    Gt(Value),
    Gte(Value),
    Between(Value, Value),
    Contains(Value),
    Regex(Regex),
    True,
    False,
    Null,
    NotNull,
    Empty,
    NotEmpty,
    /// Matches when no earlier rule did.
    Else,
}

#[derive(Debug, Clone)]
pub struct ChangeConfig {
    pub rules: Vec<ChangeRule>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ChangeRule {
    Set { property: String, value: Value },
    Copy { property: String, from: String },
    Move { property: String, to: String },
    Delete { property: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagWriteConfig {
    /// Default: the message's `topic`.
    pub topic: Option<String>,
    #[serde(default)]
    pub qos: u8,
    #[serde(default)]
    pub retain: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordWriteConfig {
    pub table: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DelayConfig {
    /// Holds every message for `ms`.
    Delay { ms: u64 },
    /// At most `count` messages per `per`; the rest wait their turn, or are dropped.
    Rate {
        count: u64,
        per: Duration,
        drop: bool,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebugConfig {
    pub label: Option<String>,
}

/// Most output ports of a switch or function node.
pub const MAX_PORTS: usize = 16;

/// A node's type with its checked config.
#[derive(Debug, Clone)]
pub enum NodeKind {
    TagIn(TagInConfig),
    Inject(InjectConfig),
    Function(FunctionConfig),
    Switch(SwitchConfig),
    Change(ChangeConfig),
    TagWrite(TagWriteConfig),
    RecordWrite(RecordWriteConfig),
    Delay(DelayConfig),
    Debug(DebugConfig),
}

impl NodeKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            NodeKind::TagIn(_) => "tag-in",
            NodeKind::Inject(_) => "inject",
            NodeKind::Function(_) => "function",
            NodeKind::Switch(_) => "switch",
            NodeKind::Change(_) => "change",
            NodeKind::TagWrite(_) => "svc.tag.write",
            NodeKind::RecordWrite(_) => "record-write",
            NodeKind::Delay(_) => "delay",
            NodeKind::Debug(_) => "debug",
        }
    }

    /// How many output ports the node has.
    pub fn ports(&self) -> usize {
        match self {
            NodeKind::Function(c) => c.outputs,
            NodeKind::Switch(c) => c.rules.len(),
            NodeKind::Debug(_) => 0,
            _ => 1,
        }
    }
}

pub(super) fn parse_kind(
    kind: &str,
    config: &Value,
    check_js: &dyn Fn(&str) -> Result<(), String>,
) -> Result<NodeKind, String> {
    Ok(match kind {
        "tag-in" => {
            let c: TagInConfig = typed(config)?;
            validate_topic_filter(&c.topic)?;
            NodeKind::TagIn(c)
        }
        "inject" => NodeKind::Inject(inject(config)?),
        "function" => {
            let c: FunctionConfig = typed(config)?;
            if !(1..=MAX_PORTS).contains(&c.outputs) {
                return Err(format!("`outputs` must be 1 to {MAX_PORTS}"));
            }
            check_limits(c.timeout_ms, c.memory_mb, c.code.len())?;
            check_js(&c.code).map_err(|e| format!("the code does not compile: {e}"))?;
            NodeKind::Function(c)
        }
        "switch" => NodeKind::Switch(switch(config)?),
        "change" => NodeKind::Change(change(config)?),
        "svc.tag.write" => {
            let c: TagWriteConfig = typed(config)?;
            if let Some(topic) = &c.topic {
                validate_topic_name(topic)?;
            }
            if c.qos > 2 {
                return Err("`qos` must be 0, 1 or 2".into());
            }
            NodeKind::TagWrite(c)
        }
        "record-write" => {
            let c: RecordWriteConfig = typed(config)?;
            if !crate::ids::is_identifier(&c.table) {
                return Err(format!("`{}` is not a table name", c.table));
            }
            NodeKind::RecordWrite(c)
        }
        "delay" => NodeKind::Delay(delay(config)?),
        "debug" => NodeKind::Debug(typed(config)?),
        other => {
            return Err(format!(
                "unknown node type `{other}` (known: tag-in, inject, function, switch, change, \
                 svc.tag.write, record-write, delay, debug)"
            ))
        }
    })
}

fn typed<T: DeserializeOwned>(config: &Value) -> Result<T, String> {
    serde_json::from_value(config.clone()).map_err(|e| format!("bad config: {e}"))
}

fn inject(config: &Value) -> Result<InjectConfig, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Every {
        value: u64,
        unit: String,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        interval: Option<Every>,
        cron: Option<String>,
        payload: Option<Value>,
        topic: Option<String>,
    }
    let raw: Raw = typed(config)?;
    if let Some(topic) = &raw.topic {
        validate_topic_name(topic)?;
    }
    let schedule = match (raw.interval, raw.cron) {
        (Some(_), Some(_)) => return Err("give `interval` or `cron`, not both".into()),
        (Some(every), None) => Some(Schedule::interval(every.value, &every.unit)?),
        (None, Some(cron)) => Some(Schedule::cron(&cron)?),
        (None, None) => None,
    };
    Ok(InjectConfig {
        topic: raw.topic,
        payload: raw.payload,
        schedule,
    })
}

fn switch(config: &Value) -> Result<SwitchConfig, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Rule {
        op: String,
        value: Option<Value>,
        value2: Option<Value>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        #[serde(default = "payload")]
        property: String,
        rules: Vec<Rule>,
        #[serde(default = "yes")]
        checkall: bool,
    }
    let raw: Raw = typed(config)?;
    check_path(&raw.property)?;
    if !(1..=MAX_PORTS).contains(&raw.rules.len()) {
        return Err(format!("a switch has 1 to {MAX_PORTS} rules"));
    }
    let rules = raw
        .rules
        .into_iter()
        .enumerate()
        .map(|(i, rule)| {
            let value = || {
                rule.value
                    .clone()
                    .ok_or(format!("rule {} (`{}`) needs `value`", i + 1, rule.op))
            };
            Ok(match rule.op.as_str() {
                "eq" => Condition::Eq(value()?),
                "neq" => Condition::Neq(value()?),
                "lt" => Condition::Lt(value()?),
                "lte" => Condition::Lte(value()?),
                "gt" => Condition::Gt(value()?),
                "gte" => Condition::Gte(value()?),
                "between" => {
                    let high = rule
                        .value2
                        .clone()
                        .ok_or(format!("rule {} (`between`) needs `value2`", i + 1))?;
                    Condition::Between(value()?, high)
                }
                "contains" => Condition::Contains(value()?),
                "regex" => {
                    let pattern = value()?;
                    let pattern = pattern
                        .as_str()
                        .ok_or(format!("rule {} (`regex`) needs a string `value`", i + 1))?;
                    let regex = Regex::new(pattern).map_err(|e| format!("rule {}: {e}", i + 1))?;
                    Condition::Regex(regex)
                }
                "true" => Condition::True,
                "false" => Condition::False,
                "null" => Condition::Null,
                "nnull" => Condition::NotNull,
                "empty" => Condition::Empty,
                "nempty" => Condition::NotEmpty,
                "else" => Condition::Else,
                other => {
                    return Err(format!(
                        "rule {}: unknown op `{other}` (known: eq neq lt lte gt gte between \
                         contains regex true false null nnull empty nempty else)",
                        i + 1
                    ))
                }
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(SwitchConfig {
        property: raw.property,
        rules,
        checkall: raw.checkall,
    })
}

fn change(config: &Value) -> Result<ChangeConfig, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Rule {
        action: String,
        property: String,
        value: Option<Value>,
        from: Option<String>,
        to: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        rules: Vec<Rule>,
    }
    let raw: Raw = typed(config)?;
    if raw.rules.is_empty() {
        return Err("a change node needs at least one rule".into());
    }
    let rules = raw
        .rules
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            check_path(&r.property)?;
            let n = i + 1;
            Ok(match (r.action.as_str(), r.value, r.from, r.to) {
                ("set", Some(value), None, None) => ChangeRule::Set {
                    property: r.property,
                    value,
                },
                ("set", None, Some(from), None) => {
                    check_path(&from)?;
                    ChangeRule::Copy {
                        property: r.property,
                        from,
                    }
                }
                ("set", ..) => return Err(format!("rule {n} (`set`) needs `value` or `from`")),
                ("move", None, None, Some(to)) => {
                    check_path(&to)?;
                    ChangeRule::Move {
                        property: r.property,
                        to,
                    }
                }
                ("move", ..) => return Err(format!("rule {n} (`move`) needs `to` only")),
                ("delete", None, None, None) => ChangeRule::Delete {
                    property: r.property,
                },
                ("delete", ..) => return Err(format!("rule {n} (`delete`) takes only `property`")),
                (other, ..) => {
                    return Err(format!(
                        "rule {n}: unknown action `{other}` (set, move, delete)"
                    ))
                }
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(ChangeConfig { rules })
}

fn check_path(path: &str) -> Result<(), String> {
    let path = path.strip_prefix("msg.").unwrap_or(path);
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(format!(
            "`{path}` is not a property path like `payload.temp`"
        ));
    }
    Ok(())
}

fn delay(config: &Value) -> Result<DelayConfig, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        #[serde(default = "delay_mode")]
        mode: String,
        ms: Option<u64>,
        count: Option<u64>,
        per: Option<String>,
        #[serde(default)]
        drop: bool,
    }
    let raw: Raw = typed(config)?;
    match raw.mode.as_str() {
        "delay" => {
            if raw.count.is_some() || raw.per.is_some() || raw.drop {
                return Err("mode `delay` takes only `ms`".into());
            }
            let ms = raw.ms.ok_or("mode `delay` needs `ms`")?;
            if !(1..=MAX_DELAY_MS).contains(&ms) {
                return Err(format!("`ms` must be 1 to {MAX_DELAY_MS}"));
            }
            Ok(DelayConfig::Delay { ms })
        }
        "rate" => {
            if raw.ms.is_some() {
                return Err("mode `rate` takes `count`, `per` and `drop`".into());
            }
            let count = raw.count.ok_or("mode `rate` needs `count`")?;
            if count == 0 {
                return Err("`count` must be at least 1".into());
            }
            let per = match raw.per {
                Some(text) => crate::duration::parse_duration(&text)?,
                None => Duration::from_secs(1),
            };
            if per.is_zero() || per.as_millis() as u64 > MAX_DELAY_MS {
                return Err("`per` must be between 1ms and 1d".into());
            }
            Ok(DelayConfig::Rate {
                count,
                per,
                drop: raw.drop,
            })
        }
        other => Err(format!("unknown mode `{other}` (delay, rate)")),
    }
}

fn one() -> usize {
    1
}

fn yes() -> bool {
    true
}

fn payload() -> String {
    "payload".into()
}

fn delay_mode() -> String {
    "delay".into()
}
