//! Sparkplug B topics: `spBv1.0/<group>/<message type>/<edge node>[/<device>]` and the host's
//! `spBv1.0/STATE/<host id>`, parsed into what they name and written back.

use std::fmt;

/// The Sparkplug B namespace, the first level of every Sparkplug topic.
pub const NAMESPACE: &str = "spBv1.0";

/// The eight message types of an edge node and its devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    NBirth,
    NDeath,
    NData,
    NCmd,
    DBirth,
    DDeath,
    DData,
    DCmd,
}

impl Verb {
    const ALL: [Verb; 8] = [
        Verb::NBirth,
        Verb::NDeath,
        Verb::NData,
        Verb::NCmd,
        Verb::DBirth,
        Verb::DDeath,
        Verb::DData,
        Verb::DCmd,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::NBirth => "NBIRTH",
            Verb::NDeath => "NDEATH",
            Verb::NData => "NDATA",
            Verb::NCmd => "NCMD",
            Verb::DBirth => "DBIRTH",
            Verb::DDeath => "DDEATH",
            Verb::DData => "DDATA",
            Verb::DCmd => "DCMD",
        }
    }

    /// Whether the message is about a device (its topic has a fifth level).
    pub fn is_device(self) -> bool {
        matches!(self, Verb::DBirth | Verb::DDeath | Verb::DData | Verb::DCmd)
    }
}

/// What a Sparkplug topic names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SparkplugTopic {
    /// A message of (or to) an edge node or one of its devices.
    Edge {
        group: String,
        verb: Verb,
        node: String,
        device: Option<String>,
    },
    /// A host application's state (Sparkplug 3.0).
    State { host_id: String },
}

impl SparkplugTopic {
    /// The topic, if it is a well-formed Sparkplug B topic; a topic under `spBv1.0/` of another
    /// shape is not one (the host leaves it alone, as any other message).
    pub fn parse(topic: &str) -> Option<SparkplugTopic> {
        let rest = topic.strip_prefix(NAMESPACE)?.strip_prefix('/')?;
        let levels: Vec<&str> = rest.split('/').collect();
        if levels.iter().any(|l| l.is_empty()) {
            return None;
        }
        match levels.as_slice() {
            ["STATE", host_id] => Some(SparkplugTopic::State {
                host_id: host_id.to_string(),
            }),
            [group, verb, node, device @ ..] if device.len() <= 1 => {
                let verb = Verb::ALL.into_iter().find(|v| v.as_str() == *verb)?;
                if verb.is_device() != (device.len() == 1) {
                    return None;
                }
                Some(SparkplugTopic::Edge {
                    group: group.to_string(),
                    verb,
                    node: node.to_string(),
                    device: device.first().map(|d| d.to_string()),
                })
            }
            _ => None,
        }
    }

    /// The topic of `verb` for `node` of `group` (and `device`).
    pub fn edge(group: &str, verb: Verb, node: &str, device: Option<&str>) -> String {
        match device {
            Some(device) => format!("{NAMESPACE}/{group}/{}/{node}/{device}", verb.as_str()),
            None => format!("{NAMESPACE}/{group}/{}/{node}", verb.as_str()),
        }
    }

    /// The state topic of host `host_id`.
    pub fn state(host_id: &str) -> String {
        format!("{NAMESPACE}/STATE/{host_id}")
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `id` may be a group, edge node, device or host id: one non-empty topic level
/// without wildcards (Sparkplug forbids `/`, `+` and `#` in them).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && !id.contains(['/', '+', '#']) && !id.starts_with('$')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_topics_parse_with_and_without_a_device() {
        assert_eq!(
            SparkplugTopic::parse("spBv1.0/Plant/NBIRTH/edge1"),
            Some(SparkplugTopic::Edge {
                group: "Plant".into(),
                verb: Verb::NBirth,
                node: "edge1".into(),
                device: None
            })
        );
        assert_eq!(
            SparkplugTopic::parse("spBv1.0/Plant/DDATA/edge1/pump"),
            Some(SparkplugTopic::Edge {
                group: "Plant".into(),
                verb: Verb::DData,
                node: "edge1".into(),
                device: Some("pump".into())
            })
        );
        assert_eq!(
            SparkplugTopic::parse("spBv1.0/STATE/scada"),
            Some(SparkplugTopic::State {
                host_id: "scada".into()
            })
        );
    }

    #[test]
    fn malformed_topics_are_not_sparkplug() {
        for topic in [
            "spBv1.0",
            "spBv1.0/",
            "spBv1.0/Plant",
            "spBv1.0/Plant/NBIRTH",
            "spBv1.0/Plant/NBIRTH/edge1/pump",
            "spBv1.0/Plant/DBIRTH/edge1",
            "spBv1.0/Plant/XDATA/edge1",
            "spBv1.0/Plant/DDATA/edge1/pump/extra",
            "spBv1.0//NDATA/edge1",
            "spBv1.0/STATE",
            "spAv1.0/Plant/NDATA/edge1",
            "plant/spBv1.0/Plant/NDATA/edge1",
        ] {
            assert_eq!(SparkplugTopic::parse(topic), None, "{topic}");
        }
    }

    #[test]
    fn topics_are_written_as_they_are_parsed() {
        let topic = SparkplugTopic::edge("G", Verb::DCmd, "n", Some("d"));
        assert_eq!(topic, "spBv1.0/G/DCMD/n/d");
        assert!(matches!(
            SparkplugTopic::parse(&topic),
            Some(SparkplugTopic::Edge {
                verb: Verb::DCmd,
                ..
            })
        ));
        assert_eq!(SparkplugTopic::state("h"), "spBv1.0/STATE/h");
    }
}
