//! Sparkplug across tenants: another domain's group, nodes, metric tags, BIRTH certificates and
//! node list stay invisible by every route (REST, MQTT wildcards, `$sparkplug/certificates/`),
//! and its edge nodes cannot publish into a group they have no rights in.

use crate::common::*;
use crate::sparkplug::{setup, tahu, wait_value, ACME, PREFIX};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const BETA: &str = "domains:beta";

/// A beta user's API key (tags and sparkplug rights in beta only), made in beta.
fn beta_key(server: &Server) -> (String, String) {
    let token = server.user_with_grants(
        BETA,
        "bob",
        &[("tags", "read-write", "*"), ("sparkplug", "read", "*")],
    );
    let created = server
        .with_token_in(&token, BETA, Method::POST, "/auth/keys")
        .json(&json!({"name": "edge"}))
        .send()
        .unwrap();
    let key = json_ok(created, StatusCode::CREATED)["key"]
        .as_str()
        .unwrap()
        .to_string();
    (token, key)
}

#[test]
fn another_domains_sparkplug_stays_invisible_by_every_route() {
    let server = setup();
    server.create_domain("beta");
    for (name, path) in [("plant", "beta/plant"), ("sparkplug", "spBv1.0/Other")] {
        server.create_record(BETA, "namespaces", &json!({"name": name, "path": path}));
    }
    server.create_record(
        BETA,
        "sparkplug",
        &json!({"name": "b", "namespace": "beta/plant/sp"}),
    );
    let (token, key) = beta_key(&server);
    let port = server.listener_port("mqtt");
    // Beta's eyes on MQTT, with wildcards over every Sparkplug topic and certificate.
    let watch = |filter: &str| SparkplugPeer::listener(port, "bob", &key, filter);
    let spb = watch("spBv1.0/#");
    let certificates = watch("$sparkplug/certificates/#");
    let everything = watch("#");

    let acme = tahu(&server, "secret");
    acme.send(json!({"cmd": "nbirth", "metrics": [
        {"name": "Recipe", "alias": 1, "type": "String", "value": "acme-only"}]}));
    wait_value(&server, ACME, &format!("{PREFIX}/secret/Recipe"), |v| {
        *v == json!("acme-only")
    });

    // Beta's own node, with beta's key, works beside it.
    let beta = SparkplugPeer::edge_node(port, "bob", &key, "Other", "mine");
    beta.send(json!({"cmd": "nbirth", "metrics": [
        {"name": "Level", "alias": 1, "type": "Int32", "value": -3}]}));
    wait_value(&server, BETA, "beta/plant/sp/Other/mine/Level", |v| {
        *v == json!(-3)
    });
    spb.wait_event(
        |e| e["topic"] == "spBv1.0/Other/NBIRTH/mine",
        Duration::from_secs(10),
    );
    certificates.wait_event(
        |e| e["topic"] == "$sparkplug/certificates/spBv1.0/Other/NBIRTH/mine",
        Duration::from_secs(10),
    );
    // A beta node cannot publish into acme's group: nothing of it reaches acme's host.
    let intruder = SparkplugPeer::edge_node(port, "bob", &key, "Plant", "intruder");
    intruder.send(json!({"cmd": "nbirth", "metrics": [
        {"name": "X", "alias": 1, "type": "Int32", "value": 1}]}));
    std::thread::sleep(Duration::from_millis(500));

    let seen: Vec<Value> = [&spb, &certificates, &everything]
        .iter()
        .flat_map(|peer| peer.events())
        .collect();
    let text = serde_json::to_string(&seen).unwrap();
    for secret in ["secret", "acme-only", "acme/", "spBv1.0/Plant"] {
        assert!(!text.contains(secret), "beta saw `{secret}`: {text}");
    }
    // REST: beta's node list, tags and values hold nothing of acme; acme's are out of reach.
    let nodes = server.get_json(BETA, "/svc/sparkplug/nodes");
    assert_eq!(nodes.as_array().unwrap().len(), 1, "{nodes}");
    assert_eq!(nodes[0]["node"], "mine");
    let acme_nodes = server.get_json(ACME, "/svc/sparkplug/nodes");
    let names: Vec<&str> = acme_nodes
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["node"].as_str())
        .collect();
    assert_eq!(names, ["secret"], "the intruder made no node: {acme_nodes}");
    let values = server
        .with_token_in(&token, BETA, Method::GET, "/svc/tag/values")
        .send()
        .unwrap();
    let values = json_ok(values, StatusCode::OK).to_string();
    assert!(!values.contains("acme"), "{values}");
    let refused = server
        .with_token_in(&token, ACME, Method::GET, "/svc/sparkplug/nodes")
        .send()
        .unwrap();
    assert!(
        refused.status().is_client_error(),
        "beta's credential reads no acme nodes: {}",
        refused.status()
    );
    // Writing acme's metric tag from beta: not beta's tag.
    let write = server
        .with_token_in(&token, BETA, Method::POST, "/svc/tag/write")
        .json(&json!({"topic": format!("{PREFIX}/secret/Recipe"), "value": "stolen"}))
        .send()
        .unwrap();
    assert_error(write, StatusCode::NOT_FOUND, &["not a tag"]);
    assert!(
        !acme.events().iter().any(|e| e["event"] == "ncmd"),
        "no command reached acme's node: {}",
        acme.output()
    );
}
