//! `GET /svc/broker/clients` against real MQTT clients (rumqttc in both versions over TCP and
//! both WebSocket endpoints, and `mosquitto_sub`): every connected client is listed with its
//! id, user, domains, protocol, transport, address, keep-alive, session and counters; one that
//! disconnects is gone; an administrator sees every client, a domain's user manager only the
//! clients of that domain's users, listed in that domain only; everyone else is refused.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::time::Duration;

const ALPHA: &str = "domains:alpha";
const BETA: &str = "domains:beta";
const PATH: &str = "/svc/broker/clients";
/// The right to see a domain's users, which is what seeing their connections needs.
const SEES_USERS: (&str, &str, &str) = ("users", "read", "*");

fn list(server: &Server, token: &str, domain: &str) -> Vec<Value> {
    let resp = server
        .with_token_in(token, domain, Method::GET, PATH)
        .send()
        .expect("GET /svc/broker/clients");
    let body = json_ok(resp, StatusCode::OK);
    body.as_array()
        .unwrap_or_else(|| panic!("not a list: {body}"))
        .clone()
}

fn ids(clients: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = clients
        .iter()
        .map(|c| c["client_id"].as_str().expect("client_id").to_string())
        .collect();
    ids.sort();
    ids
}

fn find<'a>(clients: &'a [Value], id: &str) -> &'a Value {
    clients
        .iter()
        .find(|c| c["client_id"] == id)
        .unwrap_or_else(|| panic!("`{id}` is not listed: {clients:?}"))
}

/// The port of a listed `address` (`127.0.0.1:port`).
fn port_of(client: &Value) -> u16 {
    let address = client["address"].as_str().expect("address");
    assert!(address.starts_with("127.0.0.1:"), "{address}");
    address
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {address}"))
}

#[test]
fn connected_clients_are_listed_per_domain_and_leave_the_list_when_they_go() {
    let server = Server::start();
    server.create_domain("alpha");
    server.create_domain("beta");
    let admin = server.admin_token();
    // alice manages alpha's users; bob beta's; dave is a member of both with tag rights only;
    // carol is in alpha without the right to see its users.
    let alice = server.user_with_grants(ALPHA, "alice", &[SEES_USERS]);
    let bob = server.user_with_grants(BETA, "bob", &[SEES_USERS]);
    let carol = server.user_with_grants(ALPHA, "carol", &[("tags", "read", "*")]);
    let dave = server.create_user("dave", "dave-pw-123");
    for domain in [ALPHA, BETA] {
        let group = server.create_group_with_grants(domain, "dave_group", &[("tags", "read", "*")]);
        server.add_user_to_group(domain, &group, &dave);
    }
    let (alice_key_id, alice_key) = server.create_api_key(&alice, "alice-device");

    let before = chrono::Utc::now().timestamp_millis();
    let alice_tcp = server.mqtt(
        MqttOpts::new(Proto::V5, Via::Tcp, "alice-tcp")
            .creds("alice", "alice-pw-123")
            .persistent()
            .keep_alive(45),
    );
    let mut alice_ws = server
        .mqtt(MqttOpts::new(Proto::V3, Via::Ws("/"), "alice-ws").creds("alice-device", &alice_key));
    assert_eq!(alice_ws.subscribe("alpha/one", 1), Some(1));
    assert_eq!(alice_ws.subscribe("alpha/two/#", 0), Some(0));
    let bob_http =
        server.mqtt(MqttOpts::new(Proto::V5, Via::HttpMqtt, "bob-http").creds("bob", "bob-pw-123"));
    let dave_tcp =
        server.mqtt(MqttOpts::new(Proto::V3, Via::Tcp, "dave-tcp").creds("dave", "dave-pw-123"));
    let bob_mosquitto = MosquittoSub::start(&[
        "-h",
        "127.0.0.1",
        "-p",
        &server.listener_port("mqtt").to_string(),
        "-V",
        "mqttv5",
        "-i",
        "bob-mosquitto",
        "-u",
        "bob",
        "-P",
        "bob-pw-123",
        "-t",
        "beta/#",
    ]);
    // The administrator publishes three messages and receives them back: the counters move.
    let mut operator = server.mqtt_admin(Proto::V5, Via::Tcp, "operator");
    assert_eq!(operator.subscribe("counted/#", 1), Some(1));
    for n in 0..3 {
        operator.publish(&format!("counted/{n}"), "1", 1, false);
    }
    for n in 0..3 {
        operator.expect_publish(&format!("counted/{n}"));
    }
    let after = chrono::Utc::now().timestamp_millis();

    // The administrator sees everyone, with every domain of each user.
    let all = list(&server, &admin, "domains:svc_admin");
    assert_eq!(
        ids(&all),
        [
            "alice-tcp",
            "alice-ws",
            "bob-http",
            "bob-mosquitto",
            "dave-tcp",
            "operator"
        ]
    );
    let tcp = find(&all, "alice-tcp");
    assert_eq!(tcp["username"], "alice");
    assert!(tcp["user"]
        .as_str()
        .unwrap_or("")
        .starts_with("svc_admin.users:"));
    assert_eq!(tcp["admin"], false);
    assert_eq!(tcp["domains"], serde_json::json!(["alpha"]));
    assert_eq!(tcp["protocol"], "5");
    assert_eq!(tcp["transport"], "tcp");
    assert_eq!(tcp["listener"], "mqtt");
    assert_eq!(tcp["keep_alive_secs"], 45);
    assert_eq!(tcp["clean_start"], false);
    assert_eq!(tcp["session_expiry_secs"], 3600);
    assert_eq!(tcp["subscriptions"], 0);
    assert!(tcp.get("api_key").is_none(), "{tcp}");
    let since = tcp["connected_since"].as_str().expect("connected_since");
    assert!(is_rfc3339_millis_utc(since), "{since}");
    let since_ms = chrono::DateTime::parse_from_rfc3339(since)
        .expect("RFC 3339")
        .timestamp_millis();
    assert!((before..=after).contains(&since_ms), "{since}");
    assert_ne!(port_of(tcp), server.listener_port("mqtt"));

    let ws = find(&all, "alice-ws");
    assert_eq!(ws["username"], "alice");
    assert_eq!(
        ws["api_key"],
        format!("svc_admin.api_keys:{}", bare(&alice_key_id))
    );
    assert_eq!(ws["protocol"], "3.1.1");
    assert_eq!(ws["transport"], "ws");
    assert_eq!(ws["listener"], "ws");
    assert_eq!(ws["clean_start"], true);
    assert_eq!(ws["session_expiry_secs"], 0);
    assert_eq!(ws["keep_alive_secs"], 30);
    assert_eq!(ws["subscriptions"], 2);

    let http = find(&all, "bob-http");
    assert_eq!(http["transport"], "ws");
    assert_eq!(http["listener"], "http /mqtt");
    assert_eq!(http["domains"], serde_json::json!(["beta"]));
    let mosquitto = find(&all, "bob-mosquitto");
    assert_eq!(mosquitto["username"], "bob");
    assert_eq!(mosquitto["protocol"], "5");
    assert_eq!(mosquitto["transport"], "tcp");
    assert_eq!(mosquitto["subscriptions"], 1);
    assert_eq!(
        find(&all, "dave-tcp")["domains"],
        serde_json::json!(["alpha", "beta"])
    );
    let op = find(&all, "operator");
    assert_eq!(op["admin"], true);
    assert_eq!(op["username"], "admin");
    assert_eq!(op["domains"], serde_json::json!([]));
    assert_eq!(op["messages_in"], 3);
    assert_eq!(op["messages_out"], 3);
    assert_eq!(tcp["messages_in"], 0);
    assert_eq!(tcp["messages_out"], 0);

    // alpha's user manager sees alpha's users only, and only alpha among their domains.
    let in_alpha = list(&server, &alice, ALPHA);
    assert_eq!(ids(&in_alpha), ["alice-tcp", "alice-ws", "dave-tcp"]);
    assert_eq!(
        find(&in_alpha, "dave-tcp")["domains"],
        serde_json::json!(["alpha"])
    );
    // beta's sees beta's: bob's two clients and dave's, never alice's or the operator's.
    let in_beta = list(&server, &bob, BETA);
    assert_eq!(ids(&in_beta), ["bob-http", "bob-mosquitto", "dave-tcp"]);
    assert_eq!(
        find(&in_beta, "dave-tcp")["domains"],
        serde_json::json!(["beta"])
    );
    // An administrator in a domain still sees everyone.
    assert_eq!(ids(&list(&server, &admin, ALPHA)).len(), 6);

    // Refused: without the right, in a domain where the right is not held, without or with a
    // bad credential, in an unknown domain.
    let refused = |token: Option<&str>, domain: &str, status: StatusCode, needle: &str| {
        let request = match token {
            Some(token) => server.with_token_in(token, domain, Method::GET, PATH),
            None => server.req(Method::GET, PATH).header("Domain", domain),
        };
        assert_error(request.send().expect("GET"), status, &[needle]);
    };
    refused(Some(&carol), ALPHA, StatusCode::UNAUTHORIZED, "users");
    refused(Some(&alice), BETA, StatusCode::UNAUTHORIZED, "users");
    refused(None, ALPHA, StatusCode::UNAUTHORIZED, "credential");
    refused(
        Some("not.a.token"),
        ALPHA,
        StatusCode::UNAUTHORIZED,
        "token",
    );
    refused(
        Some(&alice),
        "domains:nowhere",
        StatusCode::BAD_REQUEST,
        "domain",
    );
    let with_key = server
        .req(Method::GET, PATH)
        .header("Domain", ALPHA)
        .header("X-Svc-Api-Key", "svcx_wrong")
        .send()
        .expect("GET");
    assert_error(with_key, StatusCode::UNAUTHORIZED, &["API key"]);
    // The device's API key acts as alice: it may list alpha's clients too.
    let by_key = server
        .req(Method::GET, PATH)
        .header("Domain", ALPHA)
        .header("X-Svc-Api-Key", &alice_key)
        .send()
        .expect("GET");
    assert_eq!(
        json_ok(by_key, StatusCode::OK).as_array().map(Vec::len),
        Some(3)
    );

    // Clients that go are no longer listed (a persistent session stays, offline, unlisted).
    alice_tcp.disconnect();
    drop(bob_http);
    drop(bob_mosquitto);
    server.poll(
        Duration::from_secs(10),
        "the three clients to leave",
        || {
            let now = ids(&list(&server, &admin, ALPHA));
            (now == ["alice-ws", "dave-tcp", "operator"]).then_some(())
        },
    );
    assert_eq!(ids(&list(&server, &bob, BETA)), ["dave-tcp"]);
    drop((alice_ws, dave_tcp, operator));
    server.poll(Duration::from_secs(10), "every client to leave", || {
        list(&server, &admin, ALPHA).is_empty().then_some(())
    });
}

/// The key part of a RecordID (`domain.table:key` → `key`), or the text itself.
fn bare(id: &str) -> &str {
    id.rsplit_once(':').map_or(id, |(_, key)| key)
}
