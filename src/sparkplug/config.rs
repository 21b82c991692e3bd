//! A `sparkplug` record: one Sparkplug host application of a domain. It names the UNS branch
//! its edge nodes' metrics become tags in (`namespace`), which Sparkplug groups it takes
//! (`groups`, every group in the domain's reach when empty), how a metric's tag path is made
//! (`tag_template`), whether the tags are historized, the primary host id it announces on
//! `spBv1.0/STATE/<host id>` (none: svc is a host, not the primary one) and how often a node
//! may be asked to rebirth. Every field is checked with an error naming it; what is stored is
//! complete.

use super::topic::valid_id;
use crate::duration::parse_duration;
use crate::fields::*;
use crate::topic::validate_topic_name;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The system table of Sparkplug hosts, and the permission feature over them and their nodes.
pub const TABLE: &str = "sparkplug";
pub const FEATURE: &str = "sparkplug";

/// The default path of a metric's tag below the namespace. A level that is only `{device}`
/// is left out for a node's own metrics.
pub const DEFAULT_TEMPLATE: &str = "{group}/{node}/{device}/{metric}";

const PLACEHOLDERS: [&str; 4] = ["{group}", "{node}", "{device}", "{metric}"];

/// A host's record, read for running it.
#[derive(Debug, Clone, PartialEq)]
pub struct HostConfig {
    pub name: String,
    pub domain: String,
    pub enabled: bool,
    pub namespace: String,
    /// Empty: every group.
    pub groups: Vec<String>,
    pub tag_template: String,
    pub historize: bool,
    pub host_id: Option<String>,
    pub rebirth_throttle: Duration,
}

impl HostConfig {
    /// The host of a stored (normalised) record of `domain`.
    pub fn from_record(domain: &str, record: &Value) -> Option<HostConfig> {
        let text = |name: &str| record.get(name).and_then(Value::as_str).map(str::to_string);
        Some(HostConfig {
            name: text("name")?,
            domain: domain.to_string(),
            enabled: record
                .get("enabled")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            namespace: text("namespace")?,
            groups: record
                .get("groups")
                .and_then(Value::as_array)
                .map(|g| {
                    g.iter()
                        .filter_map(|g| g.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            tag_template: text("tag_template").unwrap_or_else(|| DEFAULT_TEMPLATE.into()),
            historize: record
                .get("historize")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            host_id: text("host_id"),
            rebirth_throttle: text("rebirth_throttle")
                .and_then(|t| parse_duration(&t).ok())
                .unwrap_or(Duration::from_secs(5)),
        })
    }

    /// Whether this host takes the messages of `group`.
    pub fn takes(&self, group: &str) -> bool {
        self.enabled && (self.groups.is_empty() || self.groups.iter().any(|g| g == group))
    }

    /// The tag of `metric` of `node` (and `device`) in `group`; `None` when the metric's name
    /// makes no topic (an empty level, a wildcard).
    pub fn tag(
        &self,
        group: &str,
        node: &str,
        device: Option<&str>,
        metric: &str,
    ) -> Option<String> {
        let mut levels = vec![self.namespace.clone()];
        for level in self.tag_template.split('/') {
            if level == "{device}" && device.is_none() {
                continue;
            }
            levels.push(
                level
                    .replace("{group}", group)
                    .replace("{node}", node)
                    .replace("{device}", device.unwrap_or(""))
                    .replace("{metric}", metric),
            );
        }
        let tag = levels.join("/");
        validate_topic_name(&tag).ok()?;
        (!tag.split('/').any(str::is_empty)).then_some(tag)
    }
}

impl HostConfig {
    /// The folder of the tree that holds the metrics' tags of `node` (or of its `device`):
    /// their tag path without the metric, when the template's last level is `{metric}` alone
    /// and the path names the node. The console marks that folder with the node's state.
    pub fn folder(&self, group: &str, node: &str, device: Option<&str>) -> Option<String> {
        let template = self.tag_template.strip_suffix("/{metric}")?;
        if !template.contains("{node}") || template.contains("{metric}") {
            return None;
        }
        let tag = self.tag(group, node, device, "m")?;
        tag.strip_suffix("/m").map(str::to_string)
    }
}

/// Checks a `sparkplug` record and rewrites it normalised (known fields, defaults filled in).
pub fn normalise(fields: &mut Map<String, Value>) -> Result<(), String> {
    let known = [
        "name",
        "description",
        "enabled",
        "namespace",
        "groups",
        "tag_template",
        "historize",
        "host_id",
        "rebirth_throttle",
    ];
    let mut out = named_record(fields, &known)?;
    let namespace = text(fields, "namespace")?.ok_or("field `namespace` is required")?;
    validate_topic_name(&namespace)
        .ok()
        .filter(|_| !namespace.starts_with('$') && !namespace.split('/').any(str::is_empty))
        .ok_or_else(|| format!("field `namespace` must be a topic path such as `plant/sparkplug`, not `{namespace}`"))?;
    out.insert("namespace".into(), json!(namespace));
    out.insert("groups".into(), json!(groups(fields.get("groups"))?));
    let template = text(fields, "tag_template")?.unwrap_or_else(|| DEFAULT_TEMPLATE.into());
    check_template(&template)?;
    out.insert("tag_template".into(), json!(template));
    out.insert(
        "historize".into(),
        json!(flag(fields, "historize")?.unwrap_or(true)),
    );
    if let Some(host_id) = text(fields, "host_id")? {
        if !valid_id(&host_id) {
            return Err(format!(
                "field `host_id` must be one topic level without `/`, `+` or `#`, not `{host_id}`"
            ));
        }
        out.insert("host_id".into(), json!(host_id));
    }
    let throttle = text(fields, "rebirth_throttle")
        .map_err(|_| "field `rebirth_throttle` must be a duration such as \"5s\"".to_string())?
        .unwrap_or_else(|| "5s".into());
    parse_duration(&throttle).map_err(|e| format!("field `rebirth_throttle`: {e}"))?;
    out.insert("rebirth_throttle".into(), json!(throttle));
    *fields = out;
    Ok(())
}

fn groups(value: Option<&Value>) -> Result<Vec<String>, String> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("field `groups` must be an array of Sparkplug group ids".into()),
    };
    items
        .iter()
        .map(|g| match g.as_str() {
            Some(g) if valid_id(g) => Ok(g.to_string()),
            _ => Err(format!(
                "field `groups` must hold group ids (one topic level without `/`, `+` or `#`), not {g}"
            )),
        })
        .collect()
}

/// A template is levels of text and placeholders that ends in a level holding `{metric}`.
fn check_template(template: &str) -> Result<(), String> {
    let wrong = |why: &str| format!("field `tag_template` {why}, not `{template}`");
    if !template.contains("{metric}") {
        return Err(wrong("must hold `{metric}`"));
    }
    let mut rest = template.to_string();
    for placeholder in PLACEHOLDERS {
        rest = rest.replace(placeholder, "x");
    }
    if rest.contains(['{', '}']) {
        return Err(wrong("may use only {group}, {node}, {device} and {metric}"));
    }
    if rest.starts_with('/')
        || rest.split('/').any(str::is_empty)
        || validate_topic_name(&rest).is_err()
    {
        return Err(wrong("must be topic levels below the namespace"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(body: Value) -> Result<Value, String> {
        let mut fields = body.as_object().cloned().unwrap();
        normalise(&mut fields).map(|()| Value::Object(fields))
    }

    #[test]
    fn defaults_are_filled_in() {
        let record = normalised(json!({"name": "site", "namespace": "plant/sp"})).unwrap();
        assert_eq!(
            record,
            json!({"name": "site", "enabled": true, "namespace": "plant/sp", "groups": [],
                   "tag_template": DEFAULT_TEMPLATE, "historize": true, "rebirth_throttle": "5s"})
        );
    }

    #[test]
    fn bad_fields_are_named() {
        for (body, field) in [
            (json!({"namespace": "a"}), "name"),
            (json!({"name": "x"}), "namespace"),
            (json!({"name": "x", "namespace": "a/+"}), "namespace"),
            (json!({"name": "x", "namespace": "$SYS/a"}), "namespace"),
            (
                json!({"name": "x", "namespace": "a", "groups": "G"}),
                "groups",
            ),
            (
                json!({"name": "x", "namespace": "a", "groups": ["a/b"]}),
                "groups",
            ),
            (
                json!({"name": "x", "namespace": "a", "tag_template": "{node}"}),
                "tag_template",
            ),
            (
                json!({"name": "x", "namespace": "a", "tag_template": "{metric}/{x}"}),
                "tag_template",
            ),
            (
                json!({"name": "x", "namespace": "a", "tag_template": "/{metric}"}),
                "tag_template",
            ),
            (
                json!({"name": "x", "namespace": "a", "host_id": "a/b"}),
                "host_id",
            ),
            (
                json!({"name": "x", "namespace": "a", "rebirth_throttle": "soon"}),
                "rebirth_throttle",
            ),
            (
                json!({"name": "x", "namespace": "a", "colour": 1}),
                "colour",
            ),
        ] {
            let error = normalised(body.clone()).unwrap_err();
            assert!(error.contains(&format!("`{field}`")), "{body}: {error}");
        }
    }

    #[test]
    fn tags_follow_the_template_and_leave_out_an_absent_device() {
        let record = normalised(json!({"name": "s", "namespace": "plant/sp"})).unwrap();
        let host = HostConfig::from_record("d", &record).unwrap();
        assert_eq!(
            host.tag("G", "n1", Some("pump"), "Temp").as_deref(),
            Some("plant/sp/G/n1/pump/Temp")
        );
        assert_eq!(
            host.tag("G", "n1", None, "Node Control/Rebirth").as_deref(),
            Some("plant/sp/G/n1/Node Control/Rebirth")
        );
        assert_eq!(host.tag("G", "n1", None, "bad/+/name"), None);
        assert_eq!(host.tag("G", "n1", None, "a//b"), None);
        let flat =
            normalised(json!({"name": "s", "namespace": "p", "tag_template": "{node}-{metric}"}))
                .unwrap();
        let flat = HostConfig::from_record("d", &flat).unwrap();
        assert_eq!(
            flat.tag("G", "n1", Some("x"), "T").as_deref(),
            Some("p/n1-T")
        );
    }
}
