//! The Sparkplug host against a second, independent edge node: PyPI's mqtt-spb-wrapper (not
//! Eclipse Tahu's code), which names birth metrics `DATA/<name>`, sends data by name and alias,
//! masks signed integers to their own width (Int8 −12 is 244 on the wire) and puts UInt32 in
//! `int_value`: svc reads what it means all the same, and its death turns the tags bad.

use crate::common::*;
use crate::sparkplug::{setup, wait_point, wait_value, ACME, PREFIX};
use serde_json::json;
use std::time::Duration;

#[test]
fn births_data_and_deaths_of_the_python_wrapper_become_tags() {
    let server = setup();
    let port = server.listener_port("mqtt");
    let node = SparkplugPeer::python_edge_node_with(
        port,
        "admin",
        ADMIN_PASSWORD,
        "Plant",
        "py1",
        &["--match-bdseq"],
    );
    let metrics = json!([
        {"name": "Small", "alias": 1, "type": "Int8", "value": -12},
        {"name": "Word", "alias": 2, "type": "Int16", "value": -12},
        {"name": "Count", "alias": 3, "type": "UInt32", "value": 4_294_967_295u64},
        {"name": "Big", "alias": 4, "type": "UInt64", "value": "18446744073709551615"},
        {"name": "Flow", "alias": 5, "type": "Double", "value": 12.5},
        {"name": "Mode", "alias": 6, "type": "String", "value": "auto"},
    ]);
    node.send(json!({"cmd": "nbirth", "metrics": metrics}));
    let tag = |name: &str| format!("{PREFIX}/py1/DATA/{name}");
    for (name, value) in [
        ("Small", json!(-12)),
        ("Word", json!(-12)),
        ("Count", json!(u32::MAX)),
        ("Big", json!(u64::MAX)),
        ("Flow", json!(12.5)),
        ("Mode", json!("auto")),
    ] {
        wait_value(&server, ACME, &tag(name), |v| *v == value);
    }
    // Its data names the metric differently from its birth; the alias finds it.
    node.send(json!({"cmd": "ndata", "metrics": [
        {"name": "Flow", "alias": 5, "type": "Double", "value": 13.75},
        {"name": "Small", "alias": 1, "type": "Int8", "value": -128},
    ]}));
    wait_value(&server, ACME, &tag("Flow"), |v| *v == json!(13.75));
    wait_value(&server, ACME, &tag("Small"), |v| *v == json!(-128));
    // The connection drops: its will is an NDEATH of the session's bdSeq.
    node.send(json!({"cmd": "drop"}));
    let bad = wait_point(&server, &tag("Flow"), |p| p["quality"] == "bad");
    assert_eq!(bad["value"], json!(13.75), "{bad}");
    let nodes = server.get_json(ACME, "/svc/sparkplug/nodes");
    let status = nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node"] == "py1")
        .unwrap()
        .clone();
    assert_eq!(status["online"], false, "{status}");
    assert_eq!(status["rebirths_requested"], 0, "{status}");
    drop(node);
    std::thread::sleep(Duration::from_millis(100));
}
