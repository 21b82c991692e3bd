//! Namespaces (issue 14): a domain's branches of the Unified Namespace. Records of the
//! `namespaces` system table under the `namespace` feature; paths of different domains never
//! overlap (409 naming the owner), nor cover another tenant's tags; a topic under a namespace
//! belongs to its domain: publishing it registers the tag there, a credential with `tags`
//! rights in the domain publishes and receives under the whole branch (and `#` shows nothing
//! of another domain's), and its first value reaches the domain's processes;
//! `GET /svc/namespaces/tree` draws the branch.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

fn post_namespace(server: &Server, domain: &str, body: Value) -> reqwest::blocking::Response {
    server
        .admin_in(domain, Method::POST, "/svc/namespaces")
        .json(&body)
        .send()
        .expect("POST /svc/namespaces")
}

#[test]
fn namespaces_are_records_whose_paths_never_overlap_between_domains() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    let created = json_ok(
        post_namespace(
            &server,
            "domains:acme",
            json!({"name": "site1", "path": "acme/site1"}),
        ),
        StatusCode::CREATED,
    );
    assert_eq!(created["path"], "acme/site1");
    let listed = server.get_json("domains:acme", "/svc/namespaces/all");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");

    for path in ["acme", "acme/site1", "acme/site1/line"] {
        assert_error(
            post_namespace(&server, "domains:beta", json!({"name": "x", "path": path})),
            StatusCode::CONFLICT,
            &["overlaps", "acme/site1", "domain `acme`"],
        );
    }
    assert_error(
        post_namespace(
            &server,
            "domains:acme",
            json!({"name": "site1", "path": "acme/other"}),
        ),
        StatusCode::CONFLICT,
        &[],
    );
    for (path, needle) in [("acme/+", "path"), ("/acme", "path"), ("", "path")] {
        assert_error(
            post_namespace(
                &server,
                "domains:acme",
                json!({"name": "bad", "path": path}),
            ),
            StatusCode::BAD_REQUEST,
            &[needle],
        );
    }
    // Its own branch below an existing namespace is fine; another domain's neighbour too.
    let line = json_ok(
        post_namespace(
            &server,
            "domains:acme",
            json!({"name": "line", "path": "acme/site1/line"}),
        ),
        StatusCode::CREATED,
    );
    json_ok(
        post_namespace(
            &server,
            "domains:beta",
            json!({"name": "b", "path": "acme/site10"}),
        ),
        StatusCode::CREATED,
    );

    // Another domain cannot declare a tag inside the branch, nor a namespace over its tags.
    let resp = server
        .admin_in("domains:beta", Method::POST, "/svc/tags")
        .json(&json!({"path": "acme/site1/x"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::CONFLICT, &["namespace"]);
    server.create_tag("domains:beta", "shared/valve", false);
    assert_error(
        post_namespace(
            &server,
            "domains:acme",
            json!({"name": "s", "path": "shared"}),
        ),
        StatusCode::CONFLICT,
        &["shared/valve", "domain `beta`"],
    );

    // Deleting the namespaces frees the branch.
    for record in [&created, &line] {
        let id = record["id"].as_str().expect("record id");
        let resp = server
            .admin_in("domains:acme", Method::DELETE, &rec_path(id))
            .send()
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
    json_ok(
        post_namespace(
            &server,
            "domains:beta",
            json!({"name": "now", "path": "acme/site1"}),
        ),
        StatusCode::CREATED,
    );
}

/// A new topic's first value reaches its domain's processes, before its registration as a tag
/// is stored, and only its domain's.
#[test]
fn a_new_topics_first_value_reaches_its_domains_processes() {
    let server = Server::start();
    let (alice_key, _) = two_tenants(&server);
    let code = "function main(v) { console.log('got', v); }";
    for domain in ["domains:acme", "domains:beta"] {
        let resp = server
            .admin_in(domain, Method::POST, "/svc/processes")
            .json(&json!({
                "name": "watch",
                "code": code,
                "triggers": [{"type": "tag_change", "topic": "acme/#"}]
            }))
            .send()
            .unwrap();
        json_ok(resp, StatusCode::CREATED);
    }
    let runs = |domain: &str| -> Vec<Value> {
        server
            .get_json(domain, "/svc/processes/runs/watch?limit=100")
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let mut alice =
        server.mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "alice-dev").creds("alice", &alice_key));
    for value in ["21.5", "22.5"] {
        assert_eq!(
            alice.publish("acme/site1/new/temp", value, 1, false),
            "Success"
        );
    }
    let log = server.poll(Duration::from_secs(10), "two runs in acme", || {
        let log = runs("domains:acme");
        (log.len() >= 2).then_some(log)
    });
    let mut seen: Vec<Value> = log.iter().map(|r| r["logs"].clone()).collect();
    seen.sort_by_key(|l| l.to_string());
    assert_eq!(seen, [json!(["got 21.5"]), json!(["got 22.5"])], "{log:?}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(runs("domains:acme").len(), 2);
    assert!(
        runs("domains:beta").is_empty(),
        "beta's process saw acme's topic"
    );
}

/// Domains `acme` (namespace `acme/site1`) and `beta` (namespace `beta/site`), and a user of
/// each with `tags` read-write in its own domain; returns their API keys.
fn two_tenants(server: &Server) -> (String, String) {
    for (domain, path) in [("acme", "acme/site1"), ("beta", "beta/site")] {
        server.create_domain(domain);
        json_ok(
            post_namespace(
                server,
                &format!("domains:{domain}"),
                json!({"name": domain, "path": path}),
            ),
            StatusCode::CREATED,
        );
    }
    let alice = server.user_with_grants("domains:acme", "alice", &[("tags", "read-write", "*")]);
    let bob = server.user_with_grants("domains:beta", "bob", &[("tags", "read-write", "*")]);
    (
        server.create_api_key(&alice, "alice-key").1,
        server.create_api_key(&bob, "bob-key").1,
    )
}

fn tag_list(server: &Server, domain: Option<&str>) -> Vec<String> {
    server.string_list(domain, "/svc/tag/list")
}

#[test]
fn a_namespace_gives_its_domain_the_whole_branch_over_mqtt() {
    let server = Server::start();
    let (alice_key, bob_key) = two_tenants(&server);
    let mut alice =
        server.mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "alice-dev").creds("alice", &alice_key));
    let mut bob =
        server.mqtt(MqttOpts::new(Proto::V3, Via::HttpMqtt, "bob-dev").creds("bob", &bob_key));
    assert_eq!(alice.subscribe("#", 1), Some(1));

    // An undeclared topic under acme's namespace: published, received, registered in acme.
    assert_eq!(
        alice.publish("acme/site1/line1/temp", "21.5", 1, false),
        "Success"
    );
    let got = alice.expect_publish("acme/site1/line1/temp");
    assert_eq!(got.text(), "21.5");
    server.poll(
        Duration::from_secs(10),
        "the tag registered in acme",
        || {
            tag_list(&server, Some("domains:acme"))
                .contains(&"acme/site1/line1/temp".to_string())
                .then_some(())
        },
    );
    assert!(
        !tag_list(&server, None).contains(&"acme/site1/line1/temp".to_string()),
        "a namespaced topic went to svc_admin"
    );

    // beta's branch stays beta's: alice may not publish there (and stays connected), and
    // her `#` never shows it.
    assert_eq!(
        alice.publish("beta/site/valve", "1", 1, false),
        "NotAuthorized"
    );
    bob.publish("beta/site/valve", "2", 1, false);
    bob.publish("acme/site1/line1/temp", "99", 0, false);
    assert_eq!(
        alice.publish("acme/site1/line1/temp", "22.5", 1, false),
        "Success"
    );
    let seen = alice.collect_until_match("the sentinel", |m| m.text() == "22.5");
    let topics: Vec<String> = seen
        .iter()
        .map(|m| format!("{} {}", m.topic, m.text()))
        .collect();
    assert_eq!(
        topics,
        ["acme/site1/line1/temp 22.5"],
        "alice's `#` saw: {topics:?}"
    );
    server.poll(
        Duration::from_secs(10),
        "beta's topic registered in beta",
        || {
            tag_list(&server, Some("domains:beta"))
                .contains(&"beta/site/valve".to_string())
                .then_some(())
        },
    );

    // A topic no namespace covers is svc_admin's, as before.
    let mut admin = server.mqtt_admin(Proto::V3, Via::Tcp, "admin-dev");
    admin.publish("loose/topic", "1", 1, false);
    server.poll(
        Duration::from_secs(10),
        "a loose topic registered in svc_admin",
        || {
            tag_list(&server, None)
                .contains(&"loose/topic".to_string())
                .then_some(())
        },
    );

    // Writing through REST follows the same rule.
    let resp = server
        .with_token_in(
            &server.login("alice", "alice-pw-123"),
            "domains:acme",
            Method::POST,
            "/svc/tag/write",
        )
        .json(&json!({"topic": "acme/site1/line2/flow", "value": 3}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    alice.expect_publish("acme/site1/line2/flow");
}

#[test]
fn the_tree_draws_a_branch_with_settings_and_last_values() {
    let server = Server::start();
    let (alice_key, _) = two_tenants(&server);
    let declared = server.create_record(
        "domains:acme",
        "tags",
        &json!({"path": "acme/site1/line1/temp", "historize": true, "unit": "°C"}),
    );
    assert_eq!(declared["unit"], "°C");
    let mut alice =
        server.mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "alice-dev").creds("alice", &alice_key));
    alice.publish("acme/site1/line1/temp", "21.5", 1, false);
    alice.publish("acme/site1/line1/pump/state", "\"on\"", 1, false);
    alice.publish("acme/site1/status", "1", 1, false);
    server.poll(Duration::from_secs(10), "three tags in acme", || {
        (tag_list(&server, Some("domains:acme")).len() == 3).then_some(())
    });

    let tree = server.get_json("domains:acme", "/svc/namespaces/tree?path=acme/site1");
    assert_eq!(
        (tree["name"].as_str(), tree["path"].as_str()),
        (Some("site1"), Some("acme/site1"))
    );
    assert_eq!(tree["tags"][0]["name"], "status");
    let line1 = &tree["folders"][0];
    assert_eq!(line1["path"], "acme/site1/line1", "{tree}");
    let temp = &line1["tags"][0];
    assert_eq!(temp["path"], "acme/site1/line1/temp");
    assert_eq!(temp["historize"], true);
    assert_eq!(temp["unit"], "°C");
    assert_eq!(temp["value"], 21.5);
    assert!(
        is_rfc3339_millis_utc(temp["timestamp"].as_str().unwrap_or_default()),
        "{temp}"
    );
    assert_eq!(line1["folders"][0]["tags"][0]["value"], "on");

    let shallow = server.get_json(
        "domains:acme",
        "/svc/namespaces/tree?path=acme/site1&depth=0",
    );
    assert_eq!(shallow["folders"][0]["truncated"], true, "{shallow}");
    assert_eq!(shallow["folders"][0]["tags"], json!([]));
    let whole = server.get_json("domains:acme", "/svc/namespaces/tree");
    assert_eq!(whole["folders"][0]["path"], "acme");

    // Another domain's tree shows none of it; bad parameters are refused.
    let beta = server.get_json("domains:beta", "/svc/namespaces/tree");
    assert_eq!(
        (beta["folders"].clone(), beta["tags"].clone()),
        (json!([]), json!([]))
    );
    for (query, needle) in [("depth=deep", "depth"), ("path=acme/%2B", "path")] {
        let resp = server
            .admin_in(
                "domains:acme",
                Method::GET,
                &format!("/svc/namespaces/tree?{query}"),
            )
            .send()
            .unwrap();
        assert_error(resp, StatusCode::BAD_REQUEST, &[needle]);
    }
}
