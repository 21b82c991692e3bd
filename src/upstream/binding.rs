//! A namespace binding of an upstream, read from its normalised record: which local topics go
//! out (and under which remote topic), which remote topics come in (and under which local
//! topic), at which QoS, with or without the retain flag.
//!
//! A binding maps the branch `local` onto the branch `remote` (an empty `remote` keeps the
//! local path). `filter` selects topics inside the branch, relative to it: `#` (the default)
//! is the whole branch, the branch's own topic included, as `local/#` would be in MQTT.

use crate::topic::filter_matches;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub outgoing: bool,
    pub incoming: bool,
    pub local: String,
    pub remote: String,
    pub filter: String,
    pub qos: u8,
    /// `retain: preserve`: the retain flag is carried; `clear`: never set.
    pub keep_retain: bool,
}

impl Binding {
    /// The bindings of a normalised upstream record, in order.
    pub fn all_of(record: &Map<String, Value>) -> Vec<Binding> {
        let Some(list) = record.get("bindings").and_then(Value::as_array) else {
            return Vec::new();
        };
        list.iter()
            .map(|b| {
                let text = |name: &str| b.get(name).and_then(Value::as_str).unwrap_or_default();
                let direction = text("direction");
                let local = text("local").to_string();
                let remote = match text("remote") {
                    "" => local.clone(),
                    remote => remote.to_string(),
                };
                Binding {
                    outgoing: matches!(direction, "out" | "both"),
                    incoming: matches!(direction, "in" | "both"),
                    filter: match text("filter") {
                        "" => "#".to_string(),
                        filter => filter.to_string(),
                    },
                    qos: b.get("qos").and_then(Value::as_u64).unwrap_or(1).min(2) as u8,
                    keep_retain: text("retain") != "clear",
                    local,
                    remote,
                }
            })
            .collect()
    }

    /// The remote topic a local topic goes out as, when this binding carries it out.
    pub fn to_remote(&self, local_topic: &str) -> Option<String> {
        if !self.outgoing {
            return None;
        }
        map_branch(local_topic, &self.local, &self.remote, &self.filter)
    }

    /// The local topic a remote topic comes in as, when this binding carries it in.
    pub fn to_local(&self, remote_topic: &str) -> Option<String> {
        if !self.incoming {
            return None;
        }
        map_branch(remote_topic, &self.remote, &self.local, &self.filter)
    }

    /// The subscription an incoming binding makes on the upstream.
    pub fn remote_filter(&self) -> String {
        format!("{}/{}", self.remote, self.filter)
    }
}

/// `topic` moved from branch `from` to branch `to` when it lies in `from` and its part below
/// `from` matches `filter`.
fn map_branch(topic: &str, from: &str, to: &str, filter: &str) -> Option<String> {
    let rest = topic.strip_prefix(from)?;
    if rest.is_empty() {
        // The branch's own topic: `from/#` matches it in MQTT, and so does a `#` filter here.
        return (filter == "#").then(|| to.to_string());
    }
    let below = rest.strip_prefix('/')?;
    filter_matches(filter, below).then(|| format!("{to}/{below}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn binding(direction: &str, local: &str, remote: &str, filter: &str) -> Binding {
        let record = json!({"bindings": [{
            "direction": direction, "local": local, "remote": remote, "filter": filter,
            "qos": 1, "retain": "preserve"
        }]});
        Binding::all_of(record.as_object().expect("object"))
            .pop()
            .expect("one binding")
    }

    #[test]
    fn a_branch_maps_onto_the_remote_branch_and_back() {
        let b = binding("both", "acme/site1", "corp/acme/site1", "#");
        assert_eq!(
            b.to_remote("acme/site1/line/temp").as_deref(),
            Some("corp/acme/site1/line/temp")
        );
        assert_eq!(
            b.to_remote("acme/site1").as_deref(),
            Some("corp/acme/site1")
        );
        assert_eq!(b.to_remote("acme/site10/x"), None);
        assert_eq!(b.to_remote("acme/other"), None);
        assert_eq!(
            b.to_local("corp/acme/site1/line/temp").as_deref(),
            Some("acme/site1/line/temp")
        );
        assert_eq!(b.remote_filter(), "corp/acme/site1/#");
    }

    #[test]
    fn the_filter_selects_inside_the_branch_and_directions_are_kept() {
        let b = binding("out", "acme", "", "+/temp");
        assert_eq!(b.to_remote("acme/l1/temp").as_deref(), Some("acme/l1/temp"));
        assert_eq!(b.to_remote("acme/l1/pressure"), None);
        assert_eq!(b.to_remote("acme"), None);
        assert_eq!(
            b.to_local("acme/l1/temp"),
            None,
            "an out binding brings nothing in"
        );
        let incoming = binding("in", "acme/sp", "cloud/sp", "#");
        assert_eq!(incoming.to_remote("acme/sp/x"), None);
    }

    proptest! {
        #[test]
        fn what_goes_out_comes_back_as_the_same_topic(
            levels in proptest::collection::vec("[a-z0-9]{1,6}", 0..5)
        ) {
            let b = binding("both", "acme/site1", "corp/acme/site1", "#");
            let mut topic = "acme/site1".to_string();
            for level in &levels {
                topic.push('/');
                topic.push_str(level);
            }
            let remote = b.to_remote(&topic).expect("inside the branch");
            prop_assert!(remote.starts_with("corp/acme/site1"));
            prop_assert_eq!(b.to_local(&remote), Some(topic));
        }
    }
}
