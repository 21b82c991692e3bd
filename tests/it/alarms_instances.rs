//! Alarms with two instances on one PostgreSQL (issue 37): the leading instance evaluates
//! every alarm once, whichever instance accepted the value; the other mirrors the states for
//! its readers and its MQTT subscribers; an operator acting on the follower is answered by the
//! leader.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ACME: &str = "domains:acme";
const LEADS: &str = "this instance leads";

fn state_on(server: &Server, name: &str) -> String {
    let active = server.get_json(ACME, "/svc/alarms/active");
    active
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .map_or("normal".into(), |a| {
            a["state"].as_str().unwrap().to_string()
        })
}

fn wait_on(server: &Server, name: &str, wanted: &str) {
    server.poll(Duration::from_secs(15), &format!("{name} {wanted}"), || {
        (state_on(server, name) == wanted).then_some(())
    });
}

#[test]
fn two_instances_raise_each_alarm_once() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let a = Server::start_with(&["--database", &url]);
    let b = Server::start_with(&["--database", &url]);
    a.poll(Duration::from_secs(15), "a leader", || {
        (a.logs().contains(LEADS) || b.logs().contains(LEADS)).then_some(())
    });
    let (leader, follower) = if a.logs().contains(LEADS) {
        (&a, &b)
    } else {
        (&b, &a)
    };
    // The follower must know the leader is there before values relayed to it count.
    let mut probe_in = leader.mqtt_admin(Proto::V5, Via::Tcp, "probe-in");
    probe_in.subscribe("probe/#", 0);
    let mut probe_out = follower.mqtt_admin(Proto::V5, Via::Tcp, "probe-out");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        probe_out.publish("probe/x", "1", 0, false);
        if probe_in.next_publish(Duration::from_millis(500)).is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the follower never reached the leader"
        );
    }
    follower.create_domain("acme");
    follower.create_record(
        ACME,
        "namespaces",
        &json!({"name": "plant", "path": "acme/plant"}),
    );
    for name in ["one", "two"] {
        follower.create_record(ACME, "alarms", &json!({"name": name, "tag": format!("acme/plant/{name}"), "kind": "high", "setpoint": 10}));
    }
    let mut watch_follower = follower.mqtt_admin(Proto::V5, Via::Tcp, "watch-f");
    watch_follower.subscribe("$SYS/svc/alarms/acme/#", 1);
    // One value through each instance.
    let mut on_leader = leader.mqtt_admin(Proto::V5, Via::Tcp, "plc-l");
    let mut on_follower = follower.mqtt_admin(Proto::V5, Via::Tcp, "plc-f");
    on_leader.publish("acme/plant/one", "50", 1, false);
    on_follower.publish("acme/plant/two", "50", 1, false);
    for server in [leader, follower] {
        wait_on(server, "one", "active_unacknowledged");
        wait_on(server, "two", "active_unacknowledged");
    }
    // The follower's own subscribers hear the changes too.
    let heard = watch_follower.collect_until_match("both alarms", |m| {
        m.topic.ends_with("/two") || m.topic.ends_with("/one")
    });
    assert!(!heard.is_empty());
    // Acknowledged on the follower: carried out by the leader, answered with its state.
    let resp = follower
        .admin_in(ACME, Method::POST, "/svc/alarms/acknowledge")
        .json(&json!({"alarm": "two", "comment": "from b"}))
        .send()
        .unwrap();
    assert_eq!(
        json_ok(resp, StatusCode::OK)["state"],
        "active_acknowledged"
    );
    wait_on(leader, "two", "active_acknowledged");
    std::thread::sleep(Duration::from_millis(500));
    // Each alarm was raised once: one journal entry each, whichever instance is asked.
    for server in [leader, follower] {
        let journal: Value =
            server.get_json(ACME, "/svc/alarms/journal?state=active_unacknowledged");
        let names: Vec<&str> = journal
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["alarm"].as_str().unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(sorted, ["one", "two"], "{journal}");
    }
    let acked = leader.get_json(ACME, "/svc/alarms/journal?state=active_acknowledged");
    assert_eq!(acked.as_array().unwrap().len(), 1, "{acked}");
    assert_eq!(acked[0]["comment"], "from b");
}
