//! Property tests of flow parsing: a flow svc accepts reads back (`to_json`) as a flow that
//! parses to the same thing, wires and all; no JSON, however odd, makes parsing panic.

use super::*;
use proptest::prelude::*;

fn no_code_check(_: &str) -> Result<(), String> {
    Ok(())
}

/// A node of a kind that needs little config, with its number of output ports.
fn node_kind() -> impl Strategy<Value = (Value, usize)> {
    prop_oneof![
        Just((json!({"type": "debug"}), 0)),
        "[a-z]{1,4}(/([a-z]{1,3}|[+])){0,2}(/#)?"
            .prop_map(|t| (json!({"type": "tag-in", "config": {"topic": t}}), 1)),
        Just((
            json!({"type": "switch", "config": {"rules": [{"op": "gt", "value": 1}, {"op": "else"}]}}),
            2
        )),
        Just((
            json!({"type": "change", "config": {"rules": [{"action": "set", "property": "topic", "value": "a/b"}]}}),
            1
        )),
    ]
}

/// Flows whose wires only go forward (node i to nodes after it), optionally with names.
fn flow() -> impl Strategy<Value = Value> {
    prop::collection::vec(
        (
            node_kind(),
            prop::option::of("[A-Za-z ]{1,8}"),
            prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        ),
        1..8,
    )
    .prop_map(|nodes| {
        let count = nodes.len();
        let list: Vec<Value> = nodes
            .into_iter()
            .enumerate()
            .map(|(i, ((mut node, ports), name, targets))| {
                node["id"] = json!(format!("n{i}"));
                if let Some(name) = name {
                    node["name"] = json!(name);
                }
                let later = count - i - 1;
                let wires: Vec<Vec<String>> = (0..ports)
                    .map(|_| match later {
                        0 => Vec::new(),
                        _ => targets
                            .iter()
                            .map(|t| format!("n{}", i + 1 + t.index(later)))
                            .collect(),
                    })
                    .map(|mut port: Vec<String>| {
                        port.dedup();
                        port
                    })
                    .collect();
                node["wires"] = json!(wires);
                node
            })
            .collect();
        json!({"name": "prop-flow", "nodes": list})
    })
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "debug", "tag-in", "switch", "n0", "n1", "", "function"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "name", "nodes", "id", "type", "config", "wires", "topic", "rules"
                ])
                .prop_map(str::to_string),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn accepted_flows_read_back_as_themselves(value in flow()) {
        let parsed = parse(&value, &no_code_check).map_err(|e| TestCaseError::fail(format!("{value}: {e:?}")))?;
        let stored = parsed.to_json();
        let again = parse(&stored, &no_code_check).map_err(|e| TestCaseError::fail(format!("{stored}: {e:?}")))?;
        prop_assert_eq!(again.to_json(), stored.clone());
        for node in value["nodes"].as_array().into_iter().flatten() {
            let id = node["id"].as_str().unwrap_or_default();
            prop_assert!(parsed.node(id).is_some(), "{} lost", id);
        }
    }

    #[test]
    fn any_json_never_panics(value in arbitrary_json()) {
        let _ = parse(&value, &no_code_check);
        let _ = parse(&json!({"name": "f", "nodes": value}), &no_code_check);
    }
}
