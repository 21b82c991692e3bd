//! What a Sparkplug host knows of one edge node between its BIRTH and its DEATH: the metrics
//! it and its devices declared (name, alias, datatype, tag), its `bdSeq` and last sequence
//! number, who is online, and the rebirths asked of it. [`NodeSession::apply`] turns one
//! decoded message into what the host must do: tag values to publish or historize, tags to
//! declare, a rebirth to request, a BIRTH to keep for the Sparkplug-aware broker.

use super::config::HostConfig;
use super::topic::Verb;
use super::value::{datatype, properties_json, to_json};
use crate::store::Quality;
use serde::Serialize;
use serde_json::Value;
use srad_types::payload::{DataType, Metric, Payload};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The metric every NBIRTH and NDEATH carries: the birth/death sequence of the node's session.
pub const BD_SEQ: &str = "bdSeq";
/// The node control metric a host writes `true` to, to ask for a rebirth.
pub const REBIRTH: &str = "Node Control/Rebirth";

/// A metric as its BIRTH declared it.
#[derive(Debug, Clone)]
pub struct MetricDef {
    pub name: String,
    pub alias: Option<u64>,
    pub datatype: DataType,
    /// Its tag; `None` when its name makes no topic.
    pub tag: Option<String>,
    /// The latest value, for turning the tag `bad` with it on a DEATH.
    pub last: Value,
}

/// The metrics of a node or of one of its devices, by alias and by name.
#[derive(Debug, Default)]
pub struct Metrics {
    pub defs: Vec<MetricDef>,
    by_alias: HashMap<u64, usize>,
    by_name: HashMap<String, usize>,
}

impl Metrics {
    fn find(&self, metric: &Metric) -> Option<usize> {
        match (&metric.alias, &metric.name) {
            (_, Some(name)) if self.by_name.contains_key(name) => self.by_name.get(name).copied(),
            (Some(alias), _) => self.by_alias.get(alias).copied(),
            _ => None,
        }
    }

    /// The metric named `name` (a write's target).
    pub fn named(&self, name: &str) -> Option<&MetricDef> {
        self.by_name.get(name).map(|i| &self.defs[*i])
    }
}

/// A device of the node.
#[derive(Debug, Default)]
pub struct Device {
    pub metrics: Metrics,
    pub online: bool,
    pub birth_ms: Option<i64>,
}

/// A tag value the host publishes (or, for historical metrics, only historizes).
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub tag: String,
    pub value: Value,
    pub ts_ms: i64,
    pub quality: Quality,
    /// An `is_historical` metric: for the historian only, not the tag's live value.
    pub historical: bool,
}

/// A tag a BIRTH declares.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    pub tag: String,
    pub historize: bool,
    pub unit: Option<String>,
    pub description: String,
}

/// What one message asks of the host.
#[derive(Debug, Default)]
pub struct Outcome {
    pub updates: Vec<Update>,
    pub declarations: Vec<Declaration>,
    /// Ask the node to rebirth (already throttled).
    pub rebirth: bool,
    /// Metrics the host could not read, each with why.
    pub problems: Vec<String>,
}

/// One edge node's session as the host sees it.
#[derive(Debug, Default)]
pub struct NodeSession {
    pub online: bool,
    pub bd_seq: Option<u64>,
    pub seq: Option<u64>,
    pub birth_ms: Option<i64>,
    pub death_ms: Option<i64>,
    pub last_message_ms: Option<i64>,
    pub metrics: Metrics,
    pub devices: BTreeMap<String, Device>,
    pub rebirths_requested: u64,
    pub last_rebirth_ms: Option<i64>,
    last_rebirth: Option<Instant>,
    pub last_problem: Option<String>,
}

/// A node's part of `GET /svc/sparkplug/nodes`.
#[derive(Debug, Clone, Serialize)]
pub struct NodeStatus {
    pub host: String,
    /// The tree folder of the node's tags, when the host's template gives it one.
    pub folder: Option<String>,
    pub group: String,
    pub node: String,
    pub online: bool,
    pub bd_seq: Option<u64>,
    pub last_seq: Option<u64>,
    pub last_birth: Option<String>,
    pub last_death: Option<String>,
    pub last_message: Option<String>,
    pub rebirths_requested: u64,
    pub last_rebirth_request: Option<String>,
    pub metrics: usize,
    pub devices: Vec<DeviceStatus>,
    pub last_problem: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceStatus {
    pub device: String,
    pub folder: Option<String>,
    pub online: bool,
    pub last_birth: Option<String>,
    pub metrics: usize,
}

/// Where a message came from and when.
pub struct Context<'a> {
    pub config: &'a HostConfig,
    pub group: &'a str,
    pub node: &'a str,
    pub received_ms: i64,
    pub now: Instant,
}

impl NodeSession {
    /// Applies one message of the node (or of its `device`).
    pub fn apply(
        &mut self,
        cx: &Context<'_>,
        verb: Verb,
        device: Option<&str>,
        payload: &Payload,
    ) -> Outcome {
        let mut out = Outcome::default();
        self.last_message_ms = Some(cx.received_ms);
        match verb {
            Verb::NBirth => self.node_birth(cx, payload, &mut out),
            Verb::NDeath => self.node_death(cx, payload, &mut out),
            Verb::NCmd | Verb::DCmd => {}
            _ if !self.online => {
                // DATA or a device's message from a node whose BIRTH this host has not seen.
                out.problems
                    .push(format!("a {verb} from a node whose NBIRTH was not seen"));
                self.ask_rebirth(cx, &mut out);
            }
            _ => {
                self.check_seq(cx, payload, &mut out);
                // A metric no BIRTH declared: the host's picture of the node is stale.
                let mut unknown = false;
                match (verb, device) {
                    (Verb::NData, _) => {
                        let metrics = &mut self.metrics;
                        unknown = !data(cx, None, metrics, payload, &mut out);
                    }
                    (Verb::DBirth, Some(device)) => {
                        self.device_birth(cx, device, payload, &mut out)
                    }
                    (Verb::DData, Some(device)) => match self.devices.get_mut(device) {
                        Some(known) if known.online => {
                            unknown =
                                !data(cx, Some(device), &mut known.metrics, payload, &mut out);
                        }
                        _ => {
                            out.problems.push(format!(
                                "a DDATA from device `{device}` whose DBIRTH was not seen"
                            ));
                            self.ask_rebirth(cx, &mut out);
                        }
                    },
                    (Verb::DDeath, Some(device)) => {
                        if let Some(known) = self.devices.get_mut(device) {
                            known.online = false;
                            turn_bad(&mut known.metrics, cx.received_ms, &mut out);
                        }
                    }
                    _ => {}
                }
                if unknown {
                    self.ask_rebirth(cx, &mut out);
                }
            }
        }
        if let Some(last) = out.problems.last() {
            self.last_problem = Some(last.clone());
        }
        out
    }

    /// A sequence number that is not the last one plus one (mod 256) means messages were
    /// lost: the host's picture may be wrong, so it asks for a rebirth.
    fn check_seq(&mut self, cx: &Context<'_>, payload: &Payload, out: &mut Outcome) {
        let Some(seq) = payload.seq else { return };
        if let Some(last) = self.seq {
            if seq != (last + 1) % 256 {
                out.problems.push(format!(
                    "sequence number {seq} after {last}: messages were lost"
                ));
                self.ask_rebirth(cx, out);
            }
        }
        self.seq = Some(seq);
    }

    /// Sets `out.rebirth` unless a rebirth was asked less than the host's throttle ago.
    fn ask_rebirth(&mut self, cx: &Context<'_>, out: &mut Outcome) {
        if out.rebirth {
            return;
        }
        let throttle: Duration = cx.config.rebirth_throttle;
        if self
            .last_rebirth
            .is_some_and(|at| cx.now.duration_since(at) < throttle)
        {
            return;
        }
        self.last_rebirth = Some(cx.now);
        self.last_rebirth_ms = Some(cx.received_ms);
        self.rebirths_requested += 1;
        out.rebirth = true;
    }

    fn node_birth(&mut self, cx: &Context<'_>, payload: &Payload, out: &mut Outcome) {
        self.online = true;
        self.birth_ms = Some(cx.received_ms);
        self.seq = payload.seq;
        self.bd_seq = bd_seq(payload);
        // A new session of the node: its devices must be born again.
        for device in self.devices.values_mut() {
            device.online = false;
        }
        self.metrics = birth(cx, None, payload, out);
    }

    fn device_birth(
        &mut self,
        cx: &Context<'_>,
        device: &str,
        payload: &Payload,
        out: &mut Outcome,
    ) {
        let metrics = birth(cx, Some(device), payload, out);
        let known = self.devices.entry(device.to_string()).or_default();
        known.metrics = metrics;
        known.online = true;
        known.birth_ms = Some(cx.received_ms);
    }

    /// An NDEATH of this session (its `bdSeq` matches, or either has none) turns the node and
    /// its devices offline and their tags `bad`; an older session's late will is ignored.
    fn node_death(&mut self, cx: &Context<'_>, payload: &Payload, out: &mut Outcome) {
        if let (Some(dead), Some(live)) = (bd_seq(payload), self.bd_seq) {
            if dead != live {
                out.problems.push(format!(
                    "an NDEATH of bdSeq {dead} while the session's is {live}: ignored"
                ));
                return;
            }
        }
        if !self.online {
            return;
        }
        self.online = false;
        self.death_ms = Some(cx.received_ms);
        turn_bad(&mut self.metrics, cx.received_ms, out);
        for device in self.devices.values_mut() {
            if device.online {
                device.online = false;
                turn_bad(&mut device.metrics, cx.received_ms, out);
            }
        }
    }

    /// The node's status under `host`.
    pub fn status(&self, host: &HostConfig, group: &str, node: &str) -> NodeStatus {
        let time = |ms: Option<i64>| ms.map(crate::historian::format_ms);
        NodeStatus {
            host: host.name.clone(),
            folder: host.folder(group, node, None),
            group: group.to_string(),
            node: node.to_string(),
            online: self.online,
            bd_seq: self.bd_seq,
            last_seq: self.seq,
            last_birth: time(self.birth_ms),
            last_death: time(self.death_ms),
            last_message: time(self.last_message_ms),
            rebirths_requested: self.rebirths_requested,
            last_rebirth_request: time(self.last_rebirth_ms),
            metrics: self.metrics.defs.len(),
            devices: self
                .devices
                .iter()
                .map(|(name, d)| DeviceStatus {
                    device: name.clone(),
                    folder: host.folder(group, node, Some(name)),
                    online: d.online,
                    last_birth: time(d.birth_ms),
                    metrics: d.metrics.defs.len(),
                })
                .collect(),
            last_problem: self.last_problem.clone(),
        }
    }
}

fn bd_seq(payload: &Payload) -> Option<u64> {
    let metric = payload
        .metrics
        .iter()
        .find(|m| m.name.as_deref() == Some(BD_SEQ))?;
    match metric.value {
        Some(srad_types::payload::metric::Value::LongValue(n)) => Some(n),
        Some(srad_types::payload::metric::Value::IntValue(n)) => Some(n.into()),
        _ => None,
    }
}

/// The metrics a BIRTH declares, their tags declared and their values published.
fn birth(cx: &Context<'_>, device: Option<&str>, payload: &Payload, out: &mut Outcome) -> Metrics {
    let mut metrics = Metrics::default();
    for metric in &payload.metrics {
        let Some(name) = metric.name.clone() else {
            out.problems.push("a BIRTH metric without a name".into());
            continue;
        };
        if device.is_none() && name == BD_SEQ {
            continue;
        }
        let Some(t) = metric.datatype.and_then(datatype) else {
            out.problems
                .push(format!("metric `{name}` has no datatype svc knows"));
            continue;
        };
        let tag = cx.config.tag(cx.group, cx.node, device, &name);
        match &tag {
            Some(tag) => out.declarations.push(Declaration {
                tag: tag.clone(),
                historize: cx.config.historize && metric.is_transient != Some(true),
                unit: metric
                    .properties
                    .as_ref()
                    .and_then(|p| unit(&properties_json(p))),
                description: format!("Sparkplug {} metric `{name}`", t.as_str_name()),
            }),
            None => out
                .problems
                .push(format!("metric `{name}` makes no tag path")),
        }
        let index = metrics.defs.len();
        if let Some(alias) = metric.alias {
            metrics.by_alias.insert(alias, index);
        }
        metrics.by_name.insert(name.clone(), index);
        metrics.defs.push(MetricDef {
            name,
            alias: metric.alias,
            datatype: t,
            tag,
            last: Value::Null,
        });
        read(cx, payload, &mut metrics.defs[index], metric, out);
    }
    metrics
}

/// A DATA message's metrics, found by alias (or name) among the BIRTH's; `false` when one was
/// not among them.
fn data(
    cx: &Context<'_>,
    device: Option<&str>,
    metrics: &mut Metrics,
    payload: &Payload,
    out: &mut Outcome,
) -> bool {
    let mut all_known = true;
    for metric in &payload.metrics {
        match metrics.find(metric) {
            Some(index) => read(cx, payload, &mut metrics.defs[index], metric, out),
            None => {
                all_known = false;
                out.problems.push(format!(
                    "a metric of {} with alias {:?} and name {:?} that no BIRTH declared",
                    device.map_or("the node".to_string(), |d| format!("device `{d}`")),
                    metric.alias,
                    metric.name
                ));
            }
        }
    }
    all_known
}

/// One metric's value into an update of its tag.
fn read(
    cx: &Context<'_>,
    payload: &Payload,
    def: &mut MetricDef,
    metric: &Metric,
    out: &mut Outcome,
) {
    let Some(tag) = &def.tag else { return };
    let value = match to_json(def.datatype, metric) {
        Ok(value) => value,
        Err(e) => {
            out.problems.push(format!("metric `{}`: {e}", def.name));
            return;
        }
    };
    if metric.value.is_none() && metric.is_null != Some(true) {
        // A metric declared without a value (a BIRTH may do that): nothing to publish.
        return;
    }
    let ts_ms = metric
        .timestamp
        .or(payload.timestamp)
        .and_then(|t| i64::try_from(t).ok())
        .unwrap_or(cx.received_ms);
    let quality = metric
        .properties
        .as_ref()
        .and_then(|p| quality(&properties_json(p)))
        .unwrap_or(Quality::GOOD);
    let historical = metric.is_historical == Some(true);
    if !historical {
        def.last = value.clone();
    }
    out.updates.push(Update {
        tag: tag.clone(),
        value,
        ts_ms,
        quality,
        historical,
    });
}

/// Every metric's tag turns `bad`, keeping its last value.
fn turn_bad(metrics: &mut Metrics, at_ms: i64, out: &mut Outcome) {
    for def in &metrics.defs {
        if let Some(tag) = &def.tag {
            out.updates.push(Update {
                tag: tag.clone(),
                value: def.last.clone(),
                ts_ms: at_ms,
                quality: Quality::BAD,
                historical: false,
            });
        }
    }
}

/// A metric's engineering unit, from the property names Ignition and others use.
fn unit(properties: &Value) -> Option<String> {
    let object = properties.as_object()?;
    object
        .iter()
        .find(|(k, _)| {
            ["engunit", "engunits", "unit", "units", "engineering units"]
                .contains(&k.to_ascii_lowercase().as_str())
        })
        .and_then(|(_, v)| v.as_str())
        .map(str::to_string)
}

/// The `Quality` property (Ignition's and OPC DA's codes): 192 good, 64–191 uncertain, else
/// bad.
fn quality(properties: &Value) -> Option<Quality> {
    let code = properties.get("Quality")?.as_i64()?;
    Some(match code {
        192..=255 => Quality::GOOD,
        64..=191 => Quality::UNCERTAIN,
        _ => Quality::BAD,
    })
}
