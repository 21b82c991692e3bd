//! Functions and flows that trigger each other through tags: the chain is cut after
//! `MAX_CHAIN` (8) automations, so a loop between two of them cannot run for ever, while a
//! device's next publish starts a fresh chain.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::Duration;

#[test]
fn a_loop_between_a_function_and_a_flow_stops_after_eight_steps() {
    let server = Server::start();
    let resp = server
        .admin(Method::POST, "/svc/processes")
        .json(&json!({
            "name": "a-to-b",
            "code": "function main(v) { svc.tag.write('loop/b', v + 1); }",
            "triggers": [{"type": "tag_change", "topic": "loop/a"}]
        }))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);
    let resp = server
        .admin(Method::POST, "/svc/flows")
        .json(&json!({"name": "b-to-a", "running": true, "nodes": [
            {"id": "in", "type": "tag-in", "config": {"topic": "loop/b"}, "wires": ["inc"]},
            {"id": "inc", "type": "function", "config": {"code": "function main(msg) { return msg.payload + 1; }"}, "wires": ["out"]},
            {"id": "out", "type": "svc.tag.write", "config": {"topic": "loop/a"}}
        ]}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);

    let mut watcher = server.mqtt_admin(Proto::V5, Via::Tcp, "loop-watcher");
    watcher.subscribe("loop/+", 1);
    let mut device = server.mqtt_admin(Proto::V3, Via::Tcp, "loop-device");
    for start in [0, 100] {
        device.publish("loop/a", start.to_string(), 1, false);
        let mut seen = Vec::new();
        while let Some(m) = watcher.next_publish(Duration::from_millis(1500)) {
            seen.push(format!("{}={}", m.topic, m.text()));
        }
        let expected: Vec<String> = (0..=8)
            .map(|i| {
                let topic = if i % 2 == 0 { "loop/a" } else { "loop/b" };
                format!("{topic}={}", start + i)
            })
            .collect();
        // Each topic's values come in order; across the two topics MQTT promises no order
        // (different publishers: the function and the flow), and on a loaded machine `a=8`
        // was once delivered before `b=7`, so the chain is compared topic by topic.
        for topic in ["loop/a", "loop/b"] {
            let of_topic = |list: &[String]| -> Vec<String> {
                list.iter()
                    .filter(|m| m.starts_with(&format!("{topic}=")))
                    .cloned()
                    .collect()
            };
            assert_eq!(
                of_topic(&seen),
                of_topic(&expected),
                "the chain stops after 8 automations: {seen:?}"
            );
        }
        assert_eq!(seen.len(), expected.len(), "nothing else: {seen:?}");
    }
    let runs = server.get_json("domains:svc_admin", "/svc/processes/runs/a-to-b");
    assert_eq!(
        runs.as_array().unwrap().len(),
        8,
        "4 runs per chain: {runs}"
    );
    assert!(
        server.wait_for_log("not triggering more"),
        "the cut is logged"
    );
}
