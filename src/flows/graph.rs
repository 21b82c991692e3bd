//! A flow's graph: parsing the stored JSON (`{"name","description","nodes":[{"id","type",
//! "config","wires"}]}`) into typed nodes and checking it whole — known node types, valid
//! configs, unique ids, wires to existing nodes on existing ports, and no cycle a message could
//! run round without passing a delay node. Every error names the node it is about.

use super::config::parse_kind;
pub use super::config::*;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::fmt;

/// Most nodes a flow may have.
pub const MAX_NODES: usize = 1000;

#[derive(Debug, Clone)]
pub struct Flow {
    pub name: String,
    pub description: Option<String>,
    pub nodes: Vec<Node>,
    index: HashMap<String, usize>,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub id: String,
    /// A label for people; the id is what wires use.
    pub label: Option<String>,
    pub kind: NodeKind,
    /// The config as written, kept so the stored flow reads back as it was given.
    config: Value,
    /// Per output port, the ids of the nodes it feeds.
    pub wires: Vec<Vec<String>>,
}

/// Why a flow was refused; `node` names the node at fault when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphError {
    pub node: Option<String>,
    pub message: String,
}

impl GraphError {
    fn flow(message: impl Into<String>) -> GraphError {
        GraphError {
            node: None,
            message: message.into(),
        }
    }

    fn node(id: &str, message: impl Into<String>) -> GraphError {
        GraphError {
            node: Some(id.to_string()),
            message: message.into(),
        }
    }
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.node {
            Some(id) => write!(f, "node `{id}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for GraphError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    name: String,
    #[serde(default)]
    description: Option<String>,
    nodes: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    config: Value,
    #[serde(default)]
    wires: Value,
}

/// Parses and checks a flow; `check_js` compiles a function node's code.
pub fn parse(
    value: &Value,
    check_js: &dyn Fn(&str) -> Result<(), String>,
) -> Result<Flow, GraphError> {
    let raw: RawFlow = serde_json::from_value(value.clone())
        .map_err(|e| GraphError::flow(format!("not a flow: {e}")))?;
    crate::ids::check_name("flow", &raw.name).map_err(GraphError::flow)?;
    if raw.nodes.len() > MAX_NODES {
        return Err(GraphError::flow(format!(
            "a flow has at most {MAX_NODES} nodes"
        )));
    }
    let mut nodes = Vec::with_capacity(raw.nodes.len());
    let mut index = HashMap::new();
    for (position, value) in raw.nodes.into_iter().enumerate() {
        let node = parse_node(position, value, check_js)?;
        if index.insert(node.id.clone(), nodes.len()).is_some() {
            return Err(GraphError::node(&node.id, "the id is used by another node"));
        }
        nodes.push(node);
    }
    let flow = Flow {
        name: raw.name,
        description: raw.description,
        nodes,
        index,
    };
    flow.check_wires()?;
    flow.check_cycles()?;
    Ok(flow)
}

fn parse_node(
    position: usize,
    value: Value,
    check_js: &dyn Fn(&str) -> Result<(), String>,
) -> Result<Node, GraphError> {
    let label = match value.get("id").and_then(Value::as_str) {
        Some(id) => id.to_string(),
        None => format!("#{}", position + 1),
    };
    let raw: RawNode =
        serde_json::from_value(value).map_err(|e| GraphError::node(&label, e.to_string()))?;
    let id = raw.id;
    let id_ok = (1..=64).contains(&id.len()) && !id.chars().any(char::is_control);
    if !id_ok {
        return Err(GraphError::node(
            &label,
            "an id is 1 to 64 printable characters",
        ));
    }
    let config = match raw.config {
        Value::Null => Value::Object(Map::new()),
        config @ Value::Object(_) => config,
        _ => return Err(GraphError::node(&id, "`config` must be an object")),
    };
    let kind = parse_kind(&raw.kind, &config, check_js).map_err(|e| GraphError::node(&id, e))?;
    let wires = parse_wires(raw.wires).map_err(|e| GraphError::node(&id, e))?;
    Ok(Node {
        id,
        label: raw.name,
        kind,
        config,
        wires,
    })
}

/// Wires as `["a","b"]` (all on port 0) or per port `[["a"],["b","c"]]`.
fn parse_wires(wires: Value) -> Result<Vec<Vec<String>>, String> {
    let bad =
        || "`wires` must be a list of node ids or a list of such lists (one per port)".to_string();
    let Value::Array(items) = wires else {
        return if wires.is_null() {
            Ok(Vec::new())
        } else {
            Err(bad())
        };
    };
    if items.iter().all(Value::is_string) {
        let port: Vec<String> = items
            .into_iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect();
        return Ok(if port.is_empty() {
            Vec::new()
        } else {
            vec![port]
        });
    }
    items
        .into_iter()
        .map(|port| match port {
            Value::Array(ids) => ids
                .into_iter()
                .map(|id| id.as_str().map(String::from).ok_or_else(bad))
                .collect(),
            _ => Err(bad()),
        })
        .collect()
}

impl Flow {
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.index.get(id).map(|&i| &self.nodes[i])
    }

    /// The flow as stored: wires always per port.
    pub fn to_json(&self) -> Value {
        let nodes: Vec<Value> = self
            .nodes
            .iter()
            .map(|node| {
                let mut out = json!({
                    "id": node.id,
                    "type": node.kind.type_name(),
                    "config": node.config,
                    "wires": node.wires,
                });
                if let Some(label) = &node.label {
                    out["name"] = Value::String(label.clone());
                }
                out
            })
            .collect();
        let mut flow = json!({"name": self.name, "nodes": nodes});
        if let Some(description) = &self.description {
            flow["description"] = Value::String(description.clone());
        }
        flow
    }

    fn check_wires(&self) -> Result<(), GraphError> {
        for node in &self.nodes {
            let ports = node.kind.ports();
            if node.wires.len() > ports {
                return Err(GraphError::node(
                    &node.id,
                    format!(
                        "wires {} output ports but a {} node here has {ports}",
                        node.wires.len(),
                        node.kind.type_name()
                    ),
                ));
            }
            for target in node.wires.iter().flatten() {
                if self.node(target).is_none() {
                    return Err(GraphError::node(
                        &node.id,
                        format!("wired to missing node `{target}`"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A message must not be able to circle back to a node without passing a delay node.
    fn check_cycles(&self) -> Result<(), GraphError> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let mut marks = vec![Mark::New; self.nodes.len()];
        for start in 0..self.nodes.len() {
            if marks[start] != Mark::New {
                continue;
            }
            // Iterative depth-first search: (node, next edge to follow).
            let mut stack = vec![(start, 0usize)];
            marks[start] = Mark::Open;
            while let Some(&mut (at, ref mut edge)) = stack.last_mut() {
                let node = &self.nodes[at];
                let targets: Vec<&String> = if matches!(node.kind, NodeKind::Delay(_)) {
                    Vec::new()
                } else {
                    node.wires.iter().flatten().collect()
                };
                if let Some(target) = targets.get(*edge) {
                    *edge += 1;
                    let Some(&next) = self.index.get(target.as_str()) else {
                        continue;
                    };
                    match marks[next] {
                        Mark::Open => {
                            return Err(GraphError::node(
                                &self.nodes[next].id,
                                "is on a cycle without a delay node; a message would loop forever",
                            ))
                        }
                        Mark::New => {
                            marks[next] = Mark::Open;
                            stack.push((next, 0));
                        }
                        Mark::Done => {}
                    }
                } else {
                    marks[at] = Mark::Done;
                    stack.pop();
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "graph_props.rs"]
mod props;
