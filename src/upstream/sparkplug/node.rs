//! One connection's Sparkplug session of the edge node, without the I/O: the metrics of its
//! NBIRTH (names, aliases, datatypes, the tags they are), the sequence number, the NDATA
//! metrics waiting to go out, and the payloads: NBIRTH, NDATA, NDEATH, and what an NCMD asks.
//!
//! - A metric is a tag at or under the branch, named by its path below the branch (the
//!   branch's own tag by the branch's last level). Its value is the tag's latest value by the
//!   historian's payload rules (the `value` member of a `{"value",…}` object, else the whole
//!   JSON), with the value's time as the metric's timestamp, its unit as the `engUnit`
//!   property and a quality other than good as the `Quality` property (Ignition's codes: 0
//!   bad, 64 uncertain).
//! - The datatype follows the value (`value::datatype_of`: booleans Boolean, integers Int64
//!   (UInt64 beyond), other numbers Double, strings String, objects and arrays Text holding
//!   their JSON, a tag without a value a null String). Within a connection a metric keeps its
//!   datatype while values fit it (an integer fits a Double, so 21 after 21.5 changes nothing);
//!   a value that does not fit needs a rebirth with the new datatype, since Sparkplug fixes a
//!   metric's datatype in its BIRTH.
//! - Aliases are 1, 2, … in the order of the names at the connection's first NBIRTH, and
//!   kept by every rebirth of the connection; a metric new since takes the next free number.

use super::super::relay::LocalTag;
use crate::historian::point_from_payload;
use crate::sparkplug::session::{BD_SEQ, REBIRTH};
use crate::sparkplug::value::{datatype, datatype_of, from_json, to_json};
use crate::store::Quality;
use prost::Message as _;
use serde_json::Value;
use srad_types::payload::{
    metric, property_value, DataType, Metric, Payload, PropertySet, PropertyValue,
};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// The folder of Sparkplug's node control metrics; tags named into it are not published.
const NODE_CONTROL: &str = "Node Control/";

/// Why the node must be born again before a value can go out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebirth {
    /// A tag that has no metric in the NBIRTH.
    NewMetric(String),
    /// A value that does not fit the datatype the NBIRTH declared.
    Datatype {
        name: String,
        born: DataType,
        now: DataType,
    },
}

impl fmt::Display for Rebirth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rebirth::NewMetric(name) => write!(f, "tag `{name}` is new since the NBIRTH"),
            Rebirth::Datatype { name, born, now } => write!(
                f,
                "tag `{name}` took a {} value, and was born a {}",
                now.as_str_name(),
                born.as_str_name()
            ),
        }
    }
}

/// What an NCMD asks.
#[derive(Debug, Default, PartialEq)]
pub struct Command {
    /// `Node Control/Rebirth` = true.
    pub rebirth: bool,
    /// Writes: (tag, value), in the NCMD's order.
    pub writes: Vec<(String, Value)>,
    /// Metrics the NCMD names that cannot be written, each with why.
    pub problems: Vec<String>,
}

/// A metric of the current NBIRTH.
#[derive(Debug, Clone)]
struct Slot {
    alias: u64,
    datatype: DataType,
    /// The tag it is.
    topic: String,
    unit: Option<String>,
}

/// The node's session on one connection.
pub struct NodeState {
    branch: String,
    bd_seq: u64,
    /// The sequence number of the last message (NBIRTH 0, then NDATA 1, 2, … mod 256).
    seq: u64,
    /// The metrics of the current NBIRTH by name.
    metrics: BTreeMap<String, Slot>,
    by_alias: HashMap<u64, String>,
    /// Every alias handed out on this connection, by name.
    aliases: HashMap<String, u64>,
    last_alias: u64,
    /// The datatype each metric last had on this connection.
    types: HashMap<String, DataType>,
    /// NDATA metrics waiting to go out, in the order their values arrived.
    pending: Vec<Metric>,
}

impl NodeState {
    pub fn new(branch: &str, bd_seq: u64) -> NodeState {
        NodeState {
            branch: branch.to_string(),
            bd_seq,
            seq: 0,
            metrics: BTreeMap::new(),
            by_alias: HashMap::new(),
            aliases: HashMap::new(),
            last_alias: 0,
            types: HashMap::new(),
            pending: Vec::new(),
        }
    }

    /// The metric name of a topic at or under the branch.
    fn name_of(&self, topic: &str) -> Option<String> {
        if topic == self.branch {
            return self.branch.rsplit('/').next().map(str::to_string);
        }
        let below = topic.strip_prefix(&self.branch)?.strip_prefix('/')?;
        Some(below.to_string())
    }

    /// The metrics of the current NBIRTH, `bdSeq` and `Node Control/Rebirth` included.
    pub fn metric_count(&self) -> usize {
        self.metrics.len() + 2
    }

    /// The tags that become metrics, by name, sorted; the others with why not.
    fn publishable<'t>(
        &self,
        tags: &'t [LocalTag],
    ) -> (BTreeMap<String, &'t LocalTag>, Vec<String>) {
        let mut named = BTreeMap::new();
        let mut problems = Vec::new();
        let mut sorted: Vec<&LocalTag> = tags.iter().collect();
        // The branch's own tag first, so a tag below named like it is the one left out.
        sorted.sort_by(|a, b| a.path.cmp(&b.path));
        for tag in sorted {
            let Some(name) = self.name_of(&tag.path) else {
                continue;
            };
            if name == BD_SEQ || name.starts_with(NODE_CONTROL) {
                problems.push(format!(
                    "tag `{}` is not published: `{name}` is a Sparkplug node metric",
                    tag.path
                ));
            } else if let Some(first) = named.get(&name) {
                let first: &&LocalTag = first;
                problems.push(format!(
                    "tag `{}` is not published: tag `{}` has the metric name `{name}`",
                    tag.path, first.path
                ));
            } else {
                named.insert(name, tag);
            }
        }
        (named, problems)
    }

    /// Whether the tags are the metrics of the current NBIRTH (same names, same units).
    pub fn matches(&self, tags: &[LocalTag]) -> bool {
        let (named, _) = self.publishable(tags);
        named.len() == self.metrics.len()
            && named.iter().all(|(name, tag)| {
                self.metrics
                    .get(name)
                    .is_some_and(|slot| slot.topic == tag.path && slot.unit == tag.unit)
            })
    }

    /// An NBIRTH of `tags` (sequence number 0 again); what waited for an NDATA is dropped,
    /// since the NBIRTH carries the latest values. Returns the payload and the tags left out,
    /// each with why.
    pub fn birth(&mut self, tags: &[LocalTag], now_ms: i64) -> (Vec<u8>, Vec<String>) {
        let (named, problems) = self.publishable(tags);
        self.seq = 0;
        self.pending.clear();
        self.metrics.clear();
        self.by_alias.clear();
        let mut metrics = vec![bd_seq_metric(self.bd_seq), rebirth_metric()];
        for (name, tag) in named {
            let alias = match self.aliases.get(&name) {
                Some(alias) => *alias,
                None => {
                    self.last_alias += 1;
                    self.aliases.insert(name.clone(), self.last_alias);
                    self.last_alias
                }
            };
            let point = tag
                .last
                .as_ref()
                .map(|(received_ms, payload)| point_from_payload(payload, *received_ms));
            let value = point.as_ref().map_or(&Value::Null, |(_, v, _)| v);
            let datatype = match self.types.get(&name) {
                Some(t) if fits(*t, value) => *t,
                // A tag without a value yet: a null String until it has one.
                _ if value.is_null() => DataType::String,
                _ => datatype_of(value),
            };
            self.types.insert(name.clone(), datatype);
            let mut metric = value_metric(datatype, value);
            metric.name = Some(name.clone());
            metric.alias = Some(alias);
            metric.datatype = Some(datatype as u32);
            if let Some((ts_ms, _, quality)) = &point {
                metric.timestamp = Some(millis(*ts_ms));
                metric.properties = properties(tag.unit.as_deref(), *quality);
            } else {
                metric.properties = properties(tag.unit.as_deref(), Quality::GOOD);
            }
            metrics.push(metric);
            self.by_alias.insert(alias, name.clone());
            self.metrics.insert(
                name,
                Slot {
                    alias,
                    datatype,
                    topic: tag.path.clone(),
                    unit: tag.unit.clone(),
                },
            );
        }
        let payload = Payload {
            timestamp: Some(millis(now_ms)),
            metrics,
            seq: Some(0),
            uuid: None,
            body: None,
        };
        (payload.encode_to_vec(), problems)
    }

    /// A new value of a tag (its payload as published): an NDATA metric by alias waits to go
    /// out, or the node must be born again first. A topic that is no metric and never will be
    /// (outside the branch, a node control name, a name another tag has) is ignored.
    pub fn change(&mut self, topic: &str, received_ms: i64, payload: &[u8]) -> Result<(), Rebirth> {
        let Some(name) = self.name_of(topic) else {
            return Ok(());
        };
        if name == BD_SEQ || name.starts_with(NODE_CONTROL) {
            return Ok(());
        }
        let Some(slot) = self.metrics.get(&name) else {
            return Err(Rebirth::NewMetric(name));
        };
        if slot.topic != topic {
            return Ok(());
        }
        let (ts_ms, value, quality) = point_from_payload(payload, received_ms);
        if !fits(slot.datatype, &value) {
            return Err(Rebirth::Datatype {
                name,
                born: slot.datatype,
                now: datatype_of(&value),
            });
        }
        // Sparkplug: DATA metrics go by alias alone, without their datatype.
        let mut metric = value_metric(slot.datatype, &value);
        metric.alias = Some(slot.alias);
        metric.timestamp = Some(millis(ts_ms));
        metric.properties = properties(None, quality);
        self.pending.push(metric);
        Ok(())
    }

    /// NDATA metrics waiting.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The NDATA of what waits (the next sequence number), if anything waits.
    pub fn data(&mut self, now_ms: i64) -> Option<Vec<u8>> {
        if self.pending.is_empty() {
            return None;
        }
        self.seq = (self.seq + 1) % 256;
        let payload = Payload {
            timestamp: Some(millis(now_ms)),
            metrics: std::mem::take(&mut self.pending),
            seq: Some(self.seq),
            uuid: None,
            body: None,
        };
        Some(payload.encode_to_vec())
    }

    /// What an NCMD payload asks: a rebirth, writes to the tags of the metrics it names (by
    /// name or alias; the value read by the NCMD's datatype, else the NBIRTH's).
    pub fn command(&self, payload: &[u8]) -> Result<Command, String> {
        let payload = Payload::decode(payload)
            .map_err(|e| format!("an NCMD that is not a Sparkplug B payload: {e}"))?;
        let mut command = Command::default();
        for metric in &payload.metrics {
            let name = match (&metric.name, metric.alias) {
                (Some(name), _) => Some(name.clone()),
                (None, Some(alias)) => self.by_alias.get(&alias).cloned(),
                (None, None) => None,
            };
            let Some(name) = name else {
                command.problems.push(format!(
                    "an NCMD metric with alias {:?} that the NBIRTH did not declare",
                    metric.alias
                ));
                continue;
            };
            if name == REBIRTH {
                if metric.value == Some(metric::Value::BooleanValue(true)) {
                    command.rebirth = true;
                }
                continue;
            }
            let Some(slot) = self.metrics.get(&name) else {
                command.problems.push(format!(
                    "an NCMD writes metric `{name}`, which is not a tag of the node"
                ));
                continue;
            };
            let datatype = metric.datatype.and_then(datatype).unwrap_or(slot.datatype);
            match to_json(datatype, metric) {
                Ok(Value::Null) => command
                    .problems
                    .push(format!("an NCMD writes metric `{name}` without a value")),
                Ok(value) => command.writes.push((slot.topic.clone(), value)),
                Err(e) => command
                    .problems
                    .push(format!("an NCMD writes metric `{name}`: {e}")),
            }
        }
        Ok(command)
    }
}

/// The NDEATH of the connection with `bd_seq` (the will, or sent before a graceful
/// disconnect): `bdSeq` alone, and no sequence number (Sparkplug forbids one).
pub fn death(bd_seq: u64, now_ms: i64) -> Vec<u8> {
    Payload {
        timestamp: Some(millis(now_ms)),
        metrics: vec![bd_seq_metric(bd_seq)],
        seq: None,
        uuid: None,
        body: None,
    }
    .encode_to_vec()
}

fn bd_seq_metric(bd_seq: u64) -> Metric {
    let mut metric = Metric::new();
    metric
        .set_name(BD_SEQ.to_string())
        .set_datatype(DataType::Int64)
        .set_value(metric::Value::LongValue(bd_seq));
    metric
}

fn rebirth_metric() -> Metric {
    let mut metric = Metric::new();
    metric
        .set_name(REBIRTH.to_string())
        .set_datatype(DataType::Boolean)
        .set_value(metric::Value::BooleanValue(false));
    metric
}

/// Whether `value` can be published as a metric born a `born`.
fn fits(born: DataType, value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Number(n) => match born {
            DataType::Double => true,
            DataType::Int64 => n.is_i64(),
            DataType::UInt64 => n.is_u64(),
            _ => false,
        },
        other => datatype_of(other) == born,
    }
}

/// A metric holding `value` as `datatype` (a null metric for null).
fn value_metric(datatype: DataType, value: &Value) -> Metric {
    let mut metric = Metric::new();
    if value.is_null() {
        metric.set_null();
        return metric;
    }
    match from_json(datatype, value) {
        Ok(v) => {
            metric.set_value(v);
        }
        // `fits` let it through, so it converts; if it ever does not, null says "no value"
        // rather than a wrong one.
        Err(_) => {
            metric.set_null();
        }
    }
    metric
}

/// The `engUnit` and `Quality` properties (quality only when not good, in Ignition's codes).
fn properties(unit: Option<&str>, quality: Quality) -> Option<PropertySet> {
    let mut set = PropertySet::default();
    if let Some(unit) = unit {
        set.keys.push("engUnit".into());
        set.values.push(PropertyValue {
            r#type: Some(DataType::String as u32),
            is_null: None,
            value: Some(property_value::Value::StringValue(unit.to_string())),
        });
    }
    let code = match quality.label() {
        "good" => None,
        "uncertain" => Some(64),
        _ => Some(0),
    };
    if let Some(code) = code {
        set.keys.push("Quality".into());
        set.values.push(PropertyValue {
            r#type: Some(DataType::Int32 as u32),
            is_null: None,
            value: Some(property_value::Value::IntValue(code)),
        });
    }
    (!set.keys.is_empty()).then_some(set)
}

/// Epoch milliseconds as Sparkplug's unsigned timestamp (before 1970 is 0).
fn millis(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}
