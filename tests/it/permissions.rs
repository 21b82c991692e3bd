//! Permissions: the permission endpoint (built-in and custom verbs configured through
//! `POST /auth/permission`, admins, users without grants, scope matching), data-plane enforcement
//! (read-only users read but cannot write, by JWT and by API key; scoped and per-domain grants)
//! and admin-only routes.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

fn perm_path(feature: &str, scope: &str) -> String {
    format!("/auth/permission/action/feature/{feature}/scope/{scope}")
}

fn actions(server: &Server, token: &str, domain: &str, feature: &str, scope: &str) -> Value {
    let resp = server
        .with_token_in(token, domain, Method::GET, &perm_path(feature, scope))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK)
}

fn configure_export(server: &Server) {
    let resp = server
        .admin_in(DEMO, Method::POST, "/auth/permission")
        .json(&json!({
            "features": [{"name": "collections", "actions": ["export"]}],
            "scopes": ["products", "sites"]
        }))
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));
}

#[test]
fn admin_has_builtin_and_custom_verbs() {
    let server = Server::start();
    server.load_fixtures();
    let admin = server.admin_token();
    assert_eq!(
        actions(&server, &admin, DEMO, "collections", "products"),
        json!({"actions": ["read", "read-write"]})
    );
    configure_export(&server);
    assert_eq!(
        actions(&server, &admin, DEMO, "collections", "products"),
        json!({"actions": ["export", "read", "read-write"]})
    );
    // Also mounted under /svc/auth.
    let resp = server
        .admin_in(
            DEMO,
            Method::GET,
            &format!("/svc{}", perm_path("collections", "products")),
        )
        .send()
        .unwrap();
    assert_eq!(
        json_ok(resp, StatusCode::OK),
        json!({"actions": ["export", "read", "read-write"]})
    );
}

#[test]
fn user_without_grants_gets_empty_actions_with_200() {
    let server = Server::start();
    server.load_fixtures();
    let token = server.user_with_grants(DEMO, "nogrants", &[]);
    for (feature, scope) in [
        ("collections", "products"),
        ("tags", "*"),
        ("historian", "*"),
    ] {
        assert_eq!(
            actions(&server, &token, DEMO, feature, scope),
            json!({"actions": []}),
            "{feature}/{scope}"
        );
    }
    // And no data-plane access.
    let resp = server
        .with_token_in(&token, DEMO, Method::GET, "/svc/products/all")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
}

#[test]
fn permission_endpoint_needs_a_credential() {
    let server = Server::start();
    let resp = server
        .req(Method::GET, &perm_path("collections", "products"))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
}

#[test]
fn custom_verb_granted_through_a_group() {
    let server = Server::start();
    server.load_fixtures();
    configure_export(&server);
    let token = server.user_with_grants(
        DEMO,
        "exporter",
        &[
            ("collections", "export", "products"),
            ("collections", "read", "*"),
        ],
    );
    assert_eq!(
        actions(&server, &token, DEMO, "collections", "products"),
        json!({"actions": ["export", "read"]})
    );
    // The export grant is scoped to products; read is for every scope.
    assert_eq!(
        actions(&server, &token, DEMO, "collections", "sites"),
        json!({"actions": ["read"]})
    );
    assert_eq!(
        actions(&server, &token, DEMO, "tags", "*"),
        json!({"actions": []})
    );
}

#[test]
fn unconfigured_action_in_a_grant_is_rejected() {
    let server = Server::start();
    server.load_fixtures();
    let resp = server
        .admin_in(DEMO, Method::POST, "/auth/group")
        .json(&json!({
            "name": "launchers",
            "grants": [{"feature": "collections", "action": "launch", "scope": "*"}]
        }))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["launch"]);
    // Duplicate group names in a domain conflict.
    server.create_group_with_grants(DEMO, "readers", &[("collections", "read", "*")]);
    let resp = server
        .admin_in(DEMO, Method::POST, "/auth/group")
        .json(&json!({"name": "readers", "grants": []}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::CONFLICT, &[]);
}

#[test]
fn read_write_implies_read() {
    let server = Server::start();
    server.load_fixtures();
    let token = server.user_with_grants(DEMO, "writer", &[("collections", "read-write", "*")]);
    assert_eq!(
        actions(&server, &token, DEMO, "collections", "orders"),
        json!({"actions": ["read", "read-write"]})
    );
    let resp = server
        .with_token_in(&token, DEMO, Method::POST, "/svc/sites")
        .json(&json!({"name": "New Site"}))
        .send()
        .unwrap();
    let created = json_ok(resp, StatusCode::CREATED);
    let id = created["id"].as_str().unwrap();
    let resp = server
        .with_token_in(&token, DEMO, Method::DELETE, &rec_path(id))
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));
}

fn assert_read_only(
    server: &Server,
    auth: &dyn Fn(Method, &str) -> reqwest::blocking::RequestBuilder,
) {
    let p01 = rec_path("demo.products:p01");
    let resp = auth(Method::GET, "/svc/products/all").send().unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK).as_array().unwrap().len(), 10);
    let resp = auth(Method::GET, "/svc/products/count").send().unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"count": 10}));
    let resp = auth(Method::GET, &p01).send().unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK)["sku"], json!("SKU-001"));

    let resp = auth(Method::POST, "/svc/products")
        .json(&json!({"name": "Hack", "sku": "SKU-999", "price": 1}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = auth(Method::PUT, &p01)
        .json(&json!({"price": 0}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = auth(Method::DELETE, &p01).send().unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);

    // Nothing changed.
    let p = server.get_json(DEMO, &p01);
    assert_eq!(p["price"], json!(0.25));
    assert_eq!(server.count(DEMO, "products"), 10);
}

#[test]
fn read_only_user_reads_but_cannot_write_with_jwt() {
    let server = Server::start();
    server.load_fixtures();
    let token = server.user_with_grants(DEMO, "reader", &[("collections", "read", "*")]);
    assert_read_only(&server, &|m, p| server.with_token_in(&token, DEMO, m, p));
}

#[test]
fn read_only_user_reads_but_cannot_write_with_api_key() {
    let server = Server::start();
    server.load_fixtures();
    let token = server.user_with_grants(DEMO, "keyreader", &[("collections", "read", "*")]);
    let resp = server
        .with_token(&token, Method::POST, "/auth/keys")
        .json(&json!({"name": "reader-key"}))
        .send()
        .unwrap();
    let key = json_ok(resp, StatusCode::CREATED)["key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_read_only(&server, &|m, p| {
        server
            .req(m, p)
            .header("Domain", DEMO)
            .header("X-Svc-Api-Key", &key)
    });
}

#[test]
fn grants_are_scoped_to_a_table() {
    let server = Server::start();
    server.load_fixtures();
    let token = server.user_with_grants(DEMO, "scoped", &[("collections", "read", "products")]);
    let resp = server
        .with_token_in(&token, DEMO, Method::GET, "/svc/products/all")
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    for path in ["/svc/sites/all", "/svc/orders/count"] {
        let resp = server
            .with_token_in(&token, DEMO, Method::GET, path)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    }
    let resp = server
        .with_token_in(&token, DEMO, Method::GET, &rec_path("demo.sites:s1"))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
}

#[test]
fn grants_are_per_domain() {
    let server = Server::start();
    server.load_fixtures();
    server.create_domain("acme");
    server.create_record(
        "domains:acme",
        "products",
        &json!({"id": "a1", "name": "Acme thing"}),
    );
    let token = server.user_with_grants(DEMO, "demoonly", &[("collections", "read-write", "*")]);
    let resp = server
        .with_token_in(&token, "domains:acme", Method::GET, "/svc/products/all")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = server
        .with_token_in(&token, "domains:acme", Method::POST, "/svc/products")
        .json(&json!({"name": "x"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    assert_eq!(
        actions(&server, &token, "domains:acme", "collections", "products"),
        json!({"actions": []})
    );
    // Without a Domain header the user is in svc_admin, where it has no grant either.
    let resp = server
        .with_token(&token, Method::GET, "/svc/products/all")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
}

#[test]
fn admin_routes_need_an_admin() {
    let server = Server::start();
    server.load_fixtures();
    let token = server.user_with_grants(DEMO, "plain", &[("collections", "read-write", "*")]);
    let attempts: Vec<(Method, &str, Value)> = vec![
        (Method::GET, "/auth/user", Value::Null),
        (
            Method::POST,
            "/auth/user",
            json!({"username": "x", "password": "y-long-pass"}),
        ),
        (Method::POST, "/auth/domains", json!({"name": "evil"})),
        (
            Method::POST,
            "/auth/group",
            json!({"name": "g", "grants": []}),
        ),
        (
            Method::POST,
            "/auth/permission",
            json!({"features": [{"name": "collections", "actions": ["x"]}], "scopes": []}),
        ),
    ];
    for (method, path, body) in attempts {
        let mut req = server.with_token_in(&token, DEMO, method.clone(), path);
        if !body.is_null() {
            req = req.json(&body);
        }
        let resp = req.send().unwrap();
        assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    }
    // Still able to use the routes any credential may call.
    let resp = server
        .with_token(&token, Method::GET, "/auth/keys")
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    let resp = server.admin(Method::GET, "/auth/domains").send().unwrap();
    assert!(!json_ok(resp, StatusCode::OK).to_string().contains("evil"));
}

#[test]
fn files_follow_record_permissions() {
    use reqwest::blocking::multipart::{Form, Part};
    let server = Server::start();
    server.load_fixtures();
    let form = || {
        Form::new().text("record", r#"{"title":"spec"}"#).part(
            "doc",
            Part::bytes(b"spec sheet".to_vec())
                .file_name("spec.txt")
                .mime_str("text/plain")
                .unwrap(),
        )
    };
    let resp = server
        .admin_in(DEMO, Method::POST, "/svc/docs")
        .multipart(form())
        .send()
        .unwrap();
    let rec = json_ok(resp, StatusCode::CREATED);
    let id = rec["id"].as_str().unwrap().to_string();
    let name = rec["doc"].as_str().unwrap().to_string();
    let path = format!("/svc/file/{}/doc/{}", enc(&id), enc(&name));
    let patch =
        json!({"fileName": name, "collectionName": "docs", "fieldName": "doc", "recordID": id});

    let reader = server.user_with_grants(DEMO, "docreader", &[("collections", "read", "docs")]);
    let resp = server
        .with_token_in(&reader, DEMO, Method::GET, &path)
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.bytes().unwrap().as_ref(), b"spec sheet");
    let resp = server
        .with_token_in(&reader, DEMO, Method::PATCH, "/svc/file")
        .json(&patch)
        .send()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let resp = server
        .with_token_in(&reader, DEMO, Method::POST, "/svc/docs")
        .multipart(form())
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);

    let other = server.user_with_grants(DEMO, "noreader", &[("collections", "read", "products")]);
    let resp = server
        .with_token_in(&other, DEMO, Method::GET, &path)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = server
        .with_token_in(&other, DEMO, Method::PATCH, "/svc/file")
        .json(&patch)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    assert_eq!(server.count(DEMO, "docs"), 1);
}
