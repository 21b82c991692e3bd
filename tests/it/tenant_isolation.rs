//! Tenant isolation, tried as an attacker with full rights in one domain would. Alice holds
//! every feature read-write in `acme`; Bob holds them in `beta`, which owns the tag
//! `plant/line/temp`, a record, a file, a function and a flow, all marked with [`SECRET`].
//!
//! - [`ROUTES`] is one table of "Alice tries to reach beta's X by route Y", run for every
//!   route family; a new route family adds its rows here.
//! - The tag-squatting sequence: Alice cannot declare beta's topic (409, beta not named) and so
//!   reaches it by no path: MQTT 3.1.1 and 5 subscriptions (direct and `#`), publishes,
//!   historian, tag routes, a function's `svc.tag.read`, `tag_change` triggers, flow `tag-in`.
//! - MQTT sessions belong to their user: another user's CONNECT with the same client id gets a
//!   session of its own; it neither disconnects the owner nor takes over its persistent session
//!   and queued messages.

#[path = "tenant_isolation_support/routes.rs"]
mod routes;

use crate::common::*;
use reqwest::{Method, StatusCode};
use routes::ROUTES;
use serde_json::{json, Value};
use std::time::Duration;

const ACME: &str = "domains:acme";
const BETA: &str = "domains:beta";
const BETA_TAG: &str = "plant/line/temp";
const ACME_TAG: &str = "acme/line/temp";
/// Every piece of beta's data carries this; no answer to Alice may.
const SECRET: &str = "beta-secret-4711";

const FEATURES: [&str; 5] = ["collections", "tags", "historian", "processes", "flows"];

struct World {
    server: Server,
    alice: String,
    alice_key: String,
    bob: String,
    bob_key: String,
    beta_record: String,
    beta_file: String,
}

fn grants() -> Vec<(&'static str, &'static str, &'static str)> {
    FEATURES.iter().map(|f| (*f, "read-write", "*")).collect()
}

/// `POST <path>` with `body` as the holder of `token` in `domain`, expecting 201; returns the
/// record.
fn create_as(server: &Server, token: &str, domain: &str, path: &str, body: Value) -> Value {
    let resp = server
        .with_token_in(token, domain, Method::POST, path)
        .json(&body)
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED)
}

/// Two domains, each with a user holding every feature; beta's data as the module doc says.
fn world() -> World {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    let alice = server.user_with_grants(ACME, "alice", &grants());
    let bob = server.user_with_grants(BETA, "bob", &grants());
    let alice_key = server.create_api_key(&alice, "alice-device").1;
    let bob_key = server.create_api_key(&bob, "bob-device").1;
    let as_bob = |method: Method, path: &str| server.with_token_in(&bob, BETA, method, path);
    create_as(
        &server,
        &bob,
        BETA,
        "/svc/tags",
        json!({"path": BETA_TAG, "historize": true, "description": SECRET}),
    );
    let form = reqwest::blocking::multipart::Form::new()
        .text("record", json!({"note": SECRET}).to_string())
        .part(
            "doc",
            reqwest::blocking::multipart::Part::bytes(SECRET.as_bytes().to_vec())
                .file_name("s.txt")
                .mime_str("text/plain")
                .unwrap(),
        );
    let resp = as_bob(Method::POST, "/svc/secrets")
        .multipart(form)
        .send()
        .unwrap();
    let record = json_ok(resp, StatusCode::CREATED);
    let beta_record = record["id"].as_str().unwrap().to_string();
    let beta_file = record["doc"].as_str().unwrap().to_string();
    create_as(
        &server,
        &bob,
        BETA,
        "/svc/processes",
        json!({"name": "beta_fn", "code": format!("function main() {{ return '{SECRET}'; }}")}),
    );
    create_as(
        &server,
        &bob,
        BETA,
        "/svc/flows",
        json!({"name": "beta_flow", "description": SECRET, "nodes": [
            {"id": "in", "type": "inject", "wires": ["dbg"]},
            {"id": "dbg", "type": "debug"}
        ]}),
    );
    let resp = as_bob(Method::POST, "/svc/processes/execute")
        .json(&json!({"name": "beta_fn"}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    let mut bob_device =
        server.mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "bob-seed").creds("bob", &bob_key));
    assert_eq!(bob_device.publish(BETA_TAG, "4711", 1, false), "Success");
    bob_device.disconnect();
    World {
        server,
        alice,
        alice_key,
        bob,
        bob_key,
        beta_record,
        beta_file,
    }
}

#[test]
fn no_route_reaches_another_domains_data() {
    let w = world();
    let mut failures = Vec::new();
    for a in ROUTES(&w) {
        let mut request = w
            .server
            .with_token_in(&w.alice, a.domain, a.method.clone(), &a.path);
        if let Some(body) = &a.body {
            request = request.json(body);
        }
        let resp = request.send().unwrap();
        let status = resp.status();
        let body = resp.text().unwrap_or_default();
        if status != a.status || body.contains(SECRET) || body.contains("4711") {
            failures.push(format!(
                "{} ({} {} as {}): {status} {body}",
                a.what, a.method, a.path, a.domain
            ));
        }
    }
    assert!(failures.is_empty(), "leaks:\n{}", failures.join("\n"));
    // Bob still has everything.
    let as_bob = |m: Method, p: &str| w.server.with_token_in(&w.bob, BETA, m, p);
    let resp = as_bob(Method::GET, &rec_path(&w.beta_record))
        .send()
        .unwrap();
    assert!(json_ok(resp, StatusCode::OK).to_string().contains(SECRET));
    let resp = as_bob(Method::PATCH, "/svc/historian/last")
        .json(&json!({"topic": BETA_TAG, "limit": 10}))
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK)[0]["value"], json!(4711));
}

fn received(client: &mut Mqtt) -> Vec<String> {
    client
        .collect_until_match("Alice's own sentinel", |m| m.topic == ACME_TAG)
        .iter()
        .map(|m| format!("{} {}", m.topic, m.text()))
        .collect()
}

#[test]
fn a_tenant_cannot_squat_another_tenants_topic() {
    let w = world();
    let server = &w.server;
    let as_alice = |m: Method, p: &str| server.with_token_in(&w.alice, ACME, m, p);
    // Declaring beta's topic is refused without naming beta, for Alice and for an admin.
    for resp in [
        as_alice(Method::POST, "/svc/tags"),
        server.admin_in(ACME, Method::POST, "/svc/tags"),
    ] {
        let resp = resp
            .json(&json!({"path": BETA_TAG, "historize": true}))
            .send()
            .unwrap();
        let text = assert_error(resp, StatusCode::CONFLICT, &[BETA_TAG, "another domain"]);
        assert!(
            !text.contains("beta"),
            "the refusal names the owner: {text}"
        );
    }
    // Renaming one of her own tags onto it is refused the same way.
    let own = create_as(
        server,
        &w.alice,
        ACME,
        "/svc/tags",
        json!({"path": ACME_TAG, "historize": true}),
    );
    let resp = as_alice(Method::PUT, &rec_path(own["id"].as_str().unwrap()))
        .json(&json!({"path": BETA_TAG}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::CONFLICT, &["another domain"]);

    // Automation in acme watching the whole namespace.
    create_as(
        server,
        &w.alice,
        ACME,
        "/svc/processes",
        json!({"name": "peek", "code": format!("function main() {{ return svc.tag.read('{BETA_TAG}'); }}")}),
    );
    create_as(
        server,
        &w.alice,
        ACME,
        "/svc/processes",
        json!({"name": "watch", "code": "function main(v) { return v; }",
                      "triggers": [{"type": "tag_change", "topic": "#"}]}),
    );
    create_as(
        server,
        &w.alice,
        ACME,
        "/svc/flows",
        json!({"name": "spy", "running": true, "nodes": [
            {"id": "in", "type": "tag-in", "config": {"topic": "#"}, "wires": ["dbg"]},
            {"id": "dbg", "type": "debug"}
        ]}),
    );
    let resp = as_alice(Method::POST, "/svc/processes/execute")
        .json(&json!({"name": "peek"}))
        .send()
        .unwrap();
    assert_error(
        resp,
        StatusCode::UNPROCESSABLE_ENTITY,
        &["not a tag of domain"],
    );

    // Alice's subscribers, both protocol versions, on the topic itself and on `#`.
    let mut subscribers: Vec<Mqtt> = [Proto::V3, Proto::V5]
        .into_iter()
        .map(|proto| {
            let opts = MqttOpts::new(proto, Via::Tcp, &format!("alice-sub-{proto:?}"))
                .creds("alice", &w.alice_key);
            let mut client = server.mqtt(opts);
            client.subscribe(BETA_TAG, 1);
            client.subscribe("#", 1);
            client
        })
        .collect();
    let mut bob =
        server.mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "bob-dev").creds("bob", &w.bob_key));
    bob.subscribe(BETA_TAG, 1);
    let mut alice_v5 =
        server.mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "alice-pub").creds("alice", &w.alice_key));
    let mut alice_v3 =
        server.mqtt(MqttOpts::new(Proto::V3, Via::Tcp, "alice-pub3").creds("alice", &w.alice_key));

    assert_eq!(bob.publish(BETA_TAG, "21.5", 1, false), "Success");
    assert_eq!(bob.expect_publish(BETA_TAG).text(), "21.5");
    alice_v3.publish(BETA_TAG, "667", 1, false);
    assert_eq!(alice_v3.publish(ACME_TAG, "1", 1, false), "Success");
    for subscriber in &mut subscribers {
        let got = received(subscriber);
        assert_eq!(
            got,
            [format!("{ACME_TAG} 1")],
            "Alice received beta's values"
        );
    }
    // MQTT 5 is told (rumqttc then drops the connection, so this comes last for this client).
    assert_eq!(alice_v5.publish(BETA_TAG, "666", 1, false), "NotAuthorized");
    bob.publish(BETA_TAG, "22.5", 1, false);
    let got = bob.collect_until_match("Bob's second value", |m| m.text() == "22.5");
    let texts: Vec<String> = got.iter().map(Msg::text).collect();
    assert_eq!(texts, ["22.5"], "Alice's publishes reached Bob");

    // beta's historian holds Bob's values only; acme's knows nothing of the topic.
    let resp = server
        .with_token_in(&w.bob, BETA, Method::PATCH, "/svc/historian/last")
        .json(&json!({"topic": BETA_TAG, "limit": 10}))
        .send()
        .unwrap();
    let values: Vec<Value> = json_ok(resp, StatusCode::OK)
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].clone())
        .collect();
    assert_eq!(values, [json!(22.5), json!(21.5), json!(4711)]);
    let resp = as_alice(Method::PATCH, "/svc/historian/last")
        .json(&json!({"topic": BETA_TAG, "limit": 10}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);

    // The trigger and the flow saw Alice's own tag, never beta's.
    server.poll(Duration::from_secs(10), "the run on Alice's tag", || {
        let runs = server.get_json(ACME, "/svc/processes/runs/watch");
        (!runs.as_array()?.is_empty()).then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    let runs = server.get_json(ACME, "/svc/processes/runs/watch");
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    let flow_runs = server.get_json(ACME, "/svc/flows/spy/runs").to_string();
    assert!(
        flow_runs.contains(ACME_TAG) && !flow_runs.contains(BETA_TAG),
        "{flow_runs}"
    );
}

#[test]
fn mqtt_sessions_belong_to_their_user() {
    let w = world();
    let server = &w.server;
    for proto in [Proto::V3, Proto::V5] {
        let id = format!("line-1-{proto:?}");
        // Bob's persistent session, subscribed, then offline with messages queued for it.
        let bob_opts = || {
            MqttOpts::new(proto, Via::Tcp, &id)
                .creds("bob", &w.bob_key)
                .persistent()
        };
        let mut bob = server.mqtt(bob_opts());
        bob.subscribe(BETA_TAG, 1);
        bob.disconnect();
        let mut admin = server.mqtt_admin(Proto::V3, Via::Tcp, &format!("feeder-{proto:?}"));
        for v in ["1", "2", "3"] {
            admin.publish(BETA_TAG, v, 1, false);
        }
        // Alice, then an admin, reuse the client id: each gets a fresh session of its own, and
        // Bob's session is untouched. (Until issue 13 the embedded engine keyed sessions by
        // client id alone, so this test could only ask for a refusal; issue 11 asks for
        // sessions per user, which svc's own broker keys by user and client id.)
        for (user, password) in [("alice", w.alice_key.as_str()), ("admin", ADMIN_PASSWORD)] {
            let other = MqttOpts::new(proto, Via::Tcp, &id)
                .creds(user, password)
                .persistent();
            let client = server
                .try_mqtt(other)
                .unwrap_or_else(|e| panic!("{proto:?} {user}: refused: {e}"));
            assert!(
                !client.session_present,
                "{proto:?}: {user} resumed a session under Bob's client id"
            );
            client.disconnect();
        }
        let mut bob = server.mqtt(bob_opts());
        assert!(bob.session_present, "{proto:?}: Bob's session was lost");
        let queued: Vec<String> = (0..3)
            .map(|_| bob.expect_publish(BETA_TAG).text())
            .collect();
        assert_eq!(queued, ["1", "2", "3"], "{proto:?}: Bob's queue");
        // Online: another user's CONNECT does not disconnect Bob.
        let other = MqttOpts::new(proto, Via::Tcp, &id).creds("alice", &w.alice_key);
        let alice = server
            .try_mqtt(other)
            .unwrap_or_else(|e| panic!("{proto:?} alice online: refused: {e}"));
        admin.publish(BETA_TAG, "4", 1, false);
        assert_eq!(
            bob.expect_publish(BETA_TAG).text(),
            "4",
            "{proto:?}: Bob was cut off"
        );
        alice.disconnect();
        // Bob himself may take his session over, as before.
        let mut again = server.mqtt(bob_opts());
        assert!(again.session_present);
        admin.publish(BETA_TAG, "5", 1, false);
        let got = again.collect_until_match("5 in the taken-over session", |m| m.text() == "5");
        // "4" may come again: its PUBACK can be in flight when the session changes hands.
        assert!(
            got[..got.len() - 1].iter().all(|m| m.text() == "4"),
            "{proto:?}: {got:?}"
        );
        again.disconnect();
    }
}
