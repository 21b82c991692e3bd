//! Unit tests of flow parsing and whole-graph checks.

use super::*;

fn ok(_: &str) -> Result<(), String> {
    Ok(())
}

fn flow(nodes: Value) -> Value {
    json!({"name": "line1", "nodes": nodes})
}

fn error(nodes: Value) -> GraphError {
    parse(&flow(nodes), &ok).unwrap_err()
}

#[test]
fn parses_every_node_type_and_reads_back_as_given() {
    let value = json!({"name": "alarm-flow", "description": "threshold alarm", "nodes": [
        {"id": "in", "type": "tag-in", "config": {"topic": "plant/+/temp"}, "wires": ["sw"]},
        {"id": "tick", "type": "inject", "config": {"interval": {"value": 5, "unit": "s"}, "payload": 1, "topic": "plant/tick"}, "wires": [["fn"]]},
        {"id": "sw", "type": "switch", "config": {"rules": [{"op": "gt", "value": 80}, {"op": "else"}]}, "wires": [["fn"], ["dbg"]]},
        {"id": "fn", "type": "function", "name": "scale", "config": {"code": "return 1", "outputs": 2}, "wires": [["chg"], []]},
        {"id": "chg", "type": "change", "config": {"rules": [{"action": "set", "property": "topic", "value": "plant/alarm"}]}, "wires": ["out", "rec", "slow"]},
        {"id": "out", "type": "svc.tag.write", "config": {"qos": 1, "retain": true}},
        {"id": "rec", "type": "record-write", "config": {"table": "alarms"}},
        {"id": "slow", "type": "delay", "config": {"mode": "rate", "count": 2, "per": "1s", "drop": true}, "wires": ["dbg"]},
        {"id": "dbg", "type": "debug"}
    ]});
    let parsed = parse(&value, &ok).unwrap();
    assert_eq!(parsed.nodes.len(), 9);
    assert_eq!(
        parsed.node("sw").unwrap().wires,
        vec![vec!["fn".to_string()], vec!["dbg".to_string()]]
    );
    assert_eq!(parsed.node("chg").unwrap().wires[0].len(), 3);
    assert!(
        matches!(&parsed.node("tick").unwrap().kind, NodeKind::Inject(c) if c.schedule.is_some())
    );
    assert!(matches!(
        parsed.node("slow").unwrap().kind,
        NodeKind::Delay(DelayConfig::Rate {
            count: 2,
            drop: true,
            ..
        })
    ));
    let stored = parsed.to_json();
    assert_eq!(stored["nodes"][0]["wires"], json!([["sw"]]));
    assert_eq!(stored["nodes"][3]["name"], "scale");
    assert_eq!(stored["nodes"][8]["config"], json!({}));
    let again = parse(&stored, &ok).unwrap();
    assert_eq!(again.to_json(), stored);
}

#[test]
fn refuses_unknown_types_and_bad_configs_naming_the_node() {
    let e = error(
        json!([{"id": "a", "type": "tag-in", "config": {"topic": "t"}, "wires": ["b"]}, {"id": "b", "type": "modbus"}]),
    );
    assert_eq!(e.node.as_deref(), Some("b"));
    assert!(e.to_string().contains("unknown node type `modbus`"), "{e}");

    let cases = [
        (
            json!({"id": "x", "type": "tag-in", "config": {"topic": "a/#/b"}}),
            "#",
        ),
        (
            json!({"id": "x", "type": "tag-in", "config": {"topic": "t", "qos": 1}}),
            "unknown field",
        ),
        (
            json!({"id": "x", "type": "inject", "config": {"cron": "not cron"}}),
            "cron",
        ),
        (
            json!({"id": "x", "type": "inject", "config": {"cron": "* * * * *", "interval": {"value": 1, "unit": "s"}}}),
            "not both",
        ),
        (
            json!({"id": "x", "type": "function", "config": {"code": "1", "outputs": 0}}),
            "outputs",
        ),
        (
            json!({"id": "x", "type": "function", "config": {"code": "1", "timeout_ms": 0}}),
            "timeout_ms",
        ),
        (
            json!({"id": "x", "type": "switch", "config": {"rules": [{"op": "gt"}]}}),
            "needs `value`",
        ),
        (
            json!({"id": "x", "type": "switch", "config": {"rules": [{"op": "like", "value": 1}]}}),
            "unknown op",
        ),
        (
            json!({"id": "x", "type": "switch", "config": {"rules": [{"op": "regex", "value": "("}]}}),
            "rule 1",
        ),
        (
            json!({"id": "x", "type": "change", "config": {"rules": [{"action": "set", "property": "a"}]}}),
            "`value` or `from`",
        ),
        (
            json!({"id": "x", "type": "change", "config": {"rules": [{"action": "delete", "property": "a..b"}]}}),
            "property path",
        ),
        (
            json!({"id": "x", "type": "svc.tag.write", "config": {"topic": "a/+"}}),
            "+",
        ),
        (
            json!({"id": "x", "type": "svc.tag.write", "config": {"qos": 3}}),
            "qos",
        ),
        (
            json!({"id": "x", "type": "record-write", "config": {"table": "bad name"}}),
            "table name",
        ),
        (
            json!({"id": "x", "type": "delay", "config": {"ms": 0}}),
            "`ms`",
        ),
        (
            json!({"id": "x", "type": "delay", "config": {"mode": "rate", "count": 1, "per": "soon"}}),
            "soon",
        ),
        (json!({"id": "x", "type": "debug", "config": []}), "object"),
        (json!({"id": "x", "type": "debug", "wires": "y"}), "wires"),
        (
            json!({"id": "x", "type": "debug", "colour": "red"}),
            "unknown field",
        ),
    ];
    for (node, expected) in cases {
        let e = error(json!([node.clone()]));
        assert_eq!(e.node.as_deref(), Some("x"), "{node}");
        assert!(e.to_string().contains(expected), "{node}: {e}");
    }
}

#[test]
fn function_code_is_compiled_when_the_flow_is_checked() {
    let refuse = |code: &str| {
        if code.contains("syntax") {
            Err("SyntaxError".to_string())
        } else {
            Ok(())
        }
    };
    let value =
        flow(json!([{"id": "f1", "type": "function", "config": {"code": "syntax error here"}}]));
    let e = parse(&value, &refuse).unwrap_err();
    assert_eq!(e.node.as_deref(), Some("f1"));
    assert!(e.message.contains("does not compile: SyntaxError"), "{e}");
}

#[test]
fn refuses_broken_wiring() {
    let e = error(json!([{"id": "a", "type": "debug"}, {"id": "a", "type": "debug"}]));
    assert_eq!(
        (e.node.as_deref(), e.message.as_str()),
        (Some("a"), "the id is used by another node")
    );

    let e = error(
        json!([{"id": "a", "type": "change", "config": {"rules": [{"action": "delete", "property": "x"}]}, "wires": ["ghost"]}]),
    );
    assert_eq!(e.node.as_deref(), Some("a"));
    assert!(e.message.contains("missing node `ghost`"), "{e}");

    let e = error(json!([
        {"id": "s", "type": "switch", "config": {"rules": [{"op": "true"}]}, "wires": [["d"], ["d"]]},
        {"id": "d", "type": "debug"}
    ]));
    assert_eq!(e.node.as_deref(), Some("s"));
    assert!(e.message.contains("has 1"), "{e}");

    let e = error(
        json!([{"id": "d", "type": "debug", "wires": ["d2"]}, {"id": "d2", "type": "debug"}]),
    );
    assert_eq!(e.node.as_deref(), Some("d"));

    let e = error(json!([{"type": "debug"}]));
    assert_eq!(e.node.as_deref(), Some("#1"));
    let e = parse(&json!({"name": "bad name", "nodes": []}), &ok).unwrap_err();
    assert!(e.node.is_none() && e.message.contains("flow name"), "{e}");
}

#[test]
fn cycles_need_a_delay_node() {
    let change = json!({"rules": [{"action": "delete", "property": "x"}]});
    let e = error(json!([
        {"id": "in", "type": "tag-in", "config": {"topic": "t"}, "wires": ["a"]},
        {"id": "a", "type": "change", "config": change, "wires": ["b"]},
        {"id": "b", "type": "change", "config": change, "wires": ["a"]}
    ]));
    assert_eq!(e.node.as_deref(), Some("a"));
    assert!(e.message.contains("cycle"), "{e}");

    let e = error(json!([{"id": "self", "type": "change", "config": change, "wires": ["self"]}]));
    assert_eq!(e.node.as_deref(), Some("self"));

    let looped = flow(json!([
        {"id": "a", "type": "change", "config": change, "wires": ["wait"]},
        {"id": "wait", "type": "delay", "config": {"ms": 1000}, "wires": ["a"]}
    ]));
    assert!(parse(&looped, &ok).is_ok());

    let diamond = flow(json!([
        {"id": "a", "type": "change", "config": change, "wires": ["b", "c"]},
        {"id": "b", "type": "change", "config": change, "wires": ["d"]},
        {"id": "c", "type": "change", "config": change, "wires": ["d"]},
        {"id": "d", "type": "debug"}
    ]));
    assert!(parse(&diamond, &ok).is_ok(), "a diamond is not a cycle");
}
