//! The request log (`GET /svc/logs`: route templates, statuses, users, filters, domain
//! isolation, no secrets) and the audit trail (`GET /svc/audit`: one entry per successful
//! administrative change with who, what and when and no secret; filters; domain isolation;
//! the `audit_retention` sweep), end to end against the real server.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const ACME: &str = "domains:acme";
const BETA: &str = "domains:beta";

fn entries(server: &Server, domain: &str, path: &str) -> Vec<Value> {
    server
        .get_json(domain, path)
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn logs_as(server: &Server, token: &str, domain: &str, query: &str) -> Vec<Value> {
    let resp = server
        .with_token_in(token, domain, Method::GET, &format!("/svc/logs{query}"))
        .send()
        .expect("GET /svc/logs");
    json_ok(resp, StatusCode::OK)
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn requests_appear_in_the_log_with_their_route_template_status_and_user() {
    let server = Server::start();
    server.create_domain("acme");
    let created = server
        .admin_in(ACME, Method::POST, "/svc/widgets")
        .json(&json!({"name": "w1"}))
        .send()
        .expect("create");
    let correlation = header(&created, CORRELATION);
    let record = json_ok(created, StatusCode::CREATED);
    let id = record["id"].as_str().expect("id");
    let missing = server
        .admin_in(ACME, Method::GET, &rec_path("acme.widgets:nope"))
        .send()
        .expect("get missing");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    server.get_json(ACME, &rec_path(id));

    let creates = entries(&server, ACME, "/svc/logs?method=post&status=201");
    let create = creates
        .iter()
        .find(|e| e["correlation_id"] == correlation.as_str())
        .unwrap_or_else(|| panic!("the create is not logged: {creates:?}"));
    assert_eq!(create["route"], "/svc/{target}", "{create}");
    assert_eq!(create["method"], "POST");
    assert_eq!(create["domain"], "acme");
    assert_eq!(create["username"], "admin");
    assert!(create["user_id"]
        .as_str()
        .unwrap()
        .starts_with("svc_admin.users:"));
    assert!(is_rfc3339_millis_utc(create["time"].as_str().unwrap()));
    assert!(create["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(creates
        .iter()
        .all(|e| e["status"] == 201 && e["method"] == "POST"));

    // Status classes, routes, limits and time windows narrow the list.
    let client_errors = entries(&server, ACME, "/svc/logs?status=4xx");
    assert!(
        client_errors.iter().any(|e| e["status"] == 404),
        "{client_errors:?}"
    );
    assert!(client_errors
        .iter()
        .all(|e| e["status"].as_u64().unwrap() / 100 == 4));
    let routed = entries(
        &server,
        ACME,
        &format!("/svc/logs?route={}", enc("/svc/{target}")),
    );
    assert!(routed.len() >= 3, "{routed:?}");
    assert!(routed.iter().all(|e| e["route"] == "/svc/{target}"));
    assert_eq!(entries(&server, ACME, "/svc/logs?limit=1").len(), 1);
    let future = entries(&server, ACME, "/svc/logs?since=2999-01-01T00:00:00Z");
    assert!(future.is_empty(), "{future:?}");
    let by_user = entries(&server, ACME, "/svc/logs?user=admin&status=2xx");
    assert!(by_user.iter().all(|e| e["username"] == "admin") && !by_user.is_empty());
    // Newest first.
    let all = entries(&server, ACME, "/svc/logs");
    let times: Vec<&str> = all.iter().map(|e| e["time"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");

    for (query, needle) in [
        ("status=abc", "status"),
        ("status=7xx", "status"),
        ("since=yesterday", "since"),
        ("limit=0", "limit"),
        ("colour=red", "colour"),
    ] {
        let resp = server
            .admin_in(ACME, Method::GET, &format!("/svc/logs?{query}"))
            .send()
            .expect("bad filter");
        assert_error(resp, StatusCode::BAD_REQUEST, &[needle]);
    }
}

#[test]
fn the_log_keeps_no_secret() {
    let server = Server::start();
    let token = server.admin_token();
    let (_, key) = server.create_api_key(&token, "probe");
    let resp = server
        .req(Method::GET, "/svc/tag/list?api_key=leaked-in-a-query")
        .header("X-Svc-Api-Key", &key)
        .send()
        .expect("GET with key");
    assert!(resp.status().is_success(), "{}", resp.status());
    let text = server
        .admin(Method::GET, "/svc/logs?limit=10000")
        .send()
        .expect("logs")
        .text()
        .expect("text");
    for secret in [
        ADMIN_PASSWORD,
        key.as_str(),
        token.as_str(),
        "leaked-in-a-query",
    ] {
        assert!(!text.contains(secret), "the log holds a secret: {text}");
    }
    assert!(text.contains("/auth/login"), "{text}");
}

#[test]
fn a_domain_reads_only_its_own_log_entries() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    server.create_record(BETA, "secrets", &json!({"v": 1}));
    server.create_record(ACME, "things", &json!({"v": 1}));
    let reader = server.user_with_grants(ACME, "ann", &[("logs", "read", "*")]);
    let nobody = server.user_with_grants(ACME, "bob", &[("collections", "read", "*")]);

    let seen = logs_as(&server, &reader, ACME, "?limit=10000");
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|e| e["domain"] == "acme"), "{seen:?}");
    // Asking for another domain's entries by filter changes nothing.
    let sneaky = logs_as(&server, &reader, ACME, "?domain=beta");
    assert!(sneaky.iter().all(|e| e["domain"] == "acme"), "{sneaky:?}");
    for (token, domain) in [(&reader, BETA), (&nobody, ACME)] {
        let resp = server
            .with_token_in(token, domain, Method::GET, "/svc/logs")
            .send()
            .expect("refused");
        assert_error(resp, StatusCode::UNAUTHORIZED, &["logs"]);
    }
    // The administrator sees every domain, or one.
    let all = entries(&server, ACME, "/svc/logs?limit=10000");
    assert!(all.iter().any(|e| e["domain"] == "beta"));
    let beta = entries(&server, ACME, "/svc/logs?domain=beta");
    assert!(!beta.is_empty() && beta.iter().all(|e| e["domain"] == "beta"));
}

/// The audit entries of `resource_type` with `action`, as the administrator sees them.
fn audit_of(server: &Server, resource_type: &str, action: &str) -> Vec<Value> {
    entries(
        server,
        ACME,
        &format!("/svc/audit?resource_type={resource_type}&action={action}&limit=10000"),
    )
}

#[test]
fn every_kind_of_administrative_change_is_audited_without_secrets() {
    const USER_PASSWORD: &str = "Zebra-Pass-9931";
    const UPSTREAM_PASSWORD: &str = "Upstream-S3cret-77";
    let server = Server::start();
    let token = server.admin_token();
    server.create_domain("acme");
    let uid = server.create_user("carol", USER_PASSWORD);
    let gid = server.create_group_with_grants(ACME, "ops", &[("tags", "read", "*")]);
    server.add_user_to_group(ACME, &gid, &uid);
    let granted = server
        .admin_in(ACME, Method::POST, "/auth/permission")
        .json(&json!({"group_id": gid, "permissions": [{"name": "flows", "action": "read", "scope": "*"}]}))
        .send()
        .expect("grant");
    json_ok(granted, StatusCode::OK);
    let (key_id, key) = server.create_api_key(&token, "deploy");
    server.create_record(
        ACME,
        "namespaces",
        &json!({"name": "site1", "path": "acme/site1"}),
    );
    let upstream = server.create_record(
        ACME,
        "upstreams",
        &json!({"name": "corp", "host": "broker.corp.example", "username": "edge",
                "password": UPSTREAM_PASSWORD, "enabled": false}),
    );
    let upstream_id = upstream["id"].as_str().expect("upstream id");
    let updated = server
        .admin_in(ACME, Method::PUT, &rec_path(upstream_id))
        .json(&json!({"description": "plant to corp", "password": UPSTREAM_PASSWORD}))
        .send()
        .expect("update upstream");
    json_ok(updated, StatusCode::OK);
    server.create_record(
        ACME,
        "processes",
        &json!({"name": "double", "code": "function main(i) { return i * 2; }"}),
    );
    server.create_record(
        ACME,
        "flows",
        &json!({"name": "f1", "nodes": [{"id": "in", "type": "inject", "wires": ["out"]},
                                        {"id": "out", "type": "debug"}]}),
    );
    server.create_record(
        ACME,
        "tags",
        &json!({"path": "acme/site1/temp", "historize": true}),
    );
    // A change made with an API key says so.
    let by_key = server
        .req(Method::POST, "/svc/collections")
        .header("X-Svc-Api-Key", &key)
        .header("Domain", ACME)
        .json(&json!({"name": "orders", "fields": [{"name": "n", "type": "number"}]}))
        .send()
        .expect("collection by key");
    json_ok(by_key, StatusCode::CREATED);
    // A key revoking itself: the entry still names the key's owner.
    let revoked = server
        .req(Method::DELETE, &format!("/auth/keys/{}", enc(&key_id)))
        .header("X-Svc-Api-Key", &key)
        .send()
        .expect("revoke by the key itself");
    json_ok(revoked, StatusCode::OK);
    let deleted = server
        .admin(Method::DELETE, &format!("/auth/user/{}", enc(&uid)))
        .send()
        .expect("delete user");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    // Data writes and failed changes are not administrative changes.
    server.create_record(ACME, "readings", &json!({"v": 1}));
    let twice = server
        .admin(Method::POST, "/auth/domains")
        .json(&json!({"name": "acme"}))
        .send()
        .expect("duplicate domain");
    assert!(twice.status().is_client_error(), "{}", twice.status());

    let expected = [
        ("domains", "create", "domains:acme"),
        ("users", "create", uid.as_str()),
        ("groups", "create", gid.as_str()),
        ("groups", "add_member", gid.as_str()),
        ("grants", "create", gid.as_str()),
        ("api_keys", "create", key_id.as_str()),
        ("api_keys", "delete", key_id.as_str()),
        ("namespaces", "create", "acme.namespaces:"),
        ("upstreams", "create", upstream_id),
        ("upstreams", "update", upstream_id),
        ("processes", "create", "acme.processes:"),
        ("flows", "create", "acme.flows:"),
        ("tags", "create", "acme.tags:"),
        ("collections", "create", ""),
        ("users", "delete", uid.as_str()),
    ];
    for (resource_type, action, id) in expected {
        let found = audit_of(&server, resource_type, action);
        assert_eq!(found.len(), 1, "{resource_type} {action}: {found:?}");
        let entry = &found[0];
        assert!(
            entry["resource_id"].as_str().unwrap().starts_with(id),
            "{resource_type} {action}: {entry}"
        );
        assert_eq!(entry["username"], "admin", "{entry}");
        assert!(entry["user_id"]
            .as_str()
            .unwrap()
            .starts_with("svc_admin.users:"));
        assert!(
            is_rfc3339_millis_utc(entry["time"].as_str().unwrap()),
            "{entry}"
        );
        assert!(
            !entry["correlation_id"].as_str().unwrap().is_empty(),
            "{entry}"
        );
        let by_key =
            resource_type == "collections" || (resource_type, action) == ("api_keys", "delete");
        let via = if by_key { "api_key" } else { "token" };
        assert_eq!(entry["via"], via, "{entry}");
    }
    let user = &audit_of(&server, "users", "create")[0];
    assert_eq!(user["summary"]["username"], "carol", "{user}");
    assert_eq!(user["domain"], "svc_admin");
    assert_eq!(
        audit_of(&server, "upstreams", "create")[0]["domain"],
        "acme"
    );
    assert!(audit_of(&server, "readings", "create").is_empty());
    assert_eq!(audit_of(&server, "domains", "create").len(), 1);

    let text = server
        .admin(Method::GET, "/svc/audit?limit=10000")
        .send()
        .expect("audit")
        .text()
        .expect("text");
    for secret in [
        USER_PASSWORD,
        UPSTREAM_PASSWORD,
        key.as_str(),
        token.as_str(),
    ] {
        assert!(
            !text.contains(secret),
            "the audit trail holds a secret: {text}"
        );
    }

    // Filters: user, time window, paging; bad filters are sentences.
    let mine = entries(&server, ACME, "/svc/audit?user=admin&limit=10000");
    assert_eq!(mine.len(), 15, "{mine:?}");
    let page: Vec<Value> = entries(&server, ACME, "/svc/audit?limit=2&offset=1");
    assert_eq!(page.len(), 2);
    assert_eq!(page[0]["id"], mine[1]["id"]);
    assert!(entries(&server, ACME, "/svc/audit?since=2999-01-01T00:00:00Z").is_empty());
    assert_eq!(
        entries(&server, ACME, "/svc/audit?until=2000-01-01T00:00:00Z").len(),
        0
    );
    assert!(entries(&server, ACME, "/svc/audit?user=nobody").is_empty());
    for query in ["since=soon", "limit=-1", "offset=x", "kind=users"] {
        let resp = server
            .admin(Method::GET, &format!("/svc/audit?{query}"))
            .send()
            .expect("bad filter");
        assert_error(resp, StatusCode::BAD_REQUEST, &[]);
    }
}

#[test]
fn a_domain_reads_only_its_own_audit_entries() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    server.create_record(BETA, "namespaces", &json!({"name": "b", "path": "beta/b"}));
    server.create_record(ACME, "namespaces", &json!({"name": "a", "path": "acme/a"}));
    let auditor = server.user_with_grants(ACME, "dora", &[("audit", "read", "*")]);
    let resp = server
        .with_token_in(
            &auditor,
            ACME,
            Method::GET,
            "/svc/audit?domain=beta&limit=10000",
        )
        .send()
        .expect("audit as dora");
    let seen = json_ok(resp, StatusCode::OK);
    let seen = seen.as_array().unwrap();
    assert!(
        seen.iter().any(|e| e["resource_type"] == "namespaces"),
        "{seen:?}"
    );
    assert!(seen.iter().all(|e| e["domain"] == "acme"), "{seen:?}");
    let refused = server
        .with_token_in(&auditor, BETA, Method::GET, "/svc/audit")
        .send()
        .expect("audit in beta");
    assert_error(refused, StatusCode::UNAUTHORIZED, &["audit"]);
    let beta = entries(&server, ACME, "/svc/audit?domain=beta");
    assert_eq!(beta.len(), 1, "{beta:?}");
    assert_eq!(beta[0]["resource_type"], "namespaces");
}

#[test]
fn the_retention_sweep_removes_old_entries() {
    let server = Server::start_with(&["--audit-retention", "2s"]);
    server.create_domain("acme");
    assert_eq!(audit_of(&server, "domains", "create").len(), 1);
    server.poll(
        Duration::from_secs(15),
        "the sweep to remove the entry",
        || {
            audit_of(&server, "domains", "create")
                .is_empty()
                .then_some(())
        },
    );
    // New changes are still recorded after a sweep.
    server.create_domain("beta");
    assert_eq!(audit_of(&server, "domains", "create").len(), 1);
}
