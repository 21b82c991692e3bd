//! Tenancy: domain creation and listing, the `Domain` header (absent → `svc_admin`, malformed or
//! unknown → 400), `<domain>.<table>` naming in RecordIDs, and isolation: a domain can neither
//! read, update, delete nor list another domain's records, even by full RecordID.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;

const ACME: &str = "domains:acme";
const BETA: &str = "domains:beta";

#[test]
fn domains_are_created_listed_and_unique() {
    let server = Server::start();
    let created = server.create_domain("acme");
    assert_eq!(created["id"], json!("domains:acme"));
    assert_eq!(created["name"], json!("acme"));
    assert!(is_rfc3339_millis_utc(
        created["created_dt"].as_str().unwrap()
    ));
    let resp = server.admin(Method::GET, "/auth/domains").send().unwrap();
    let list = json_ok(resp, StatusCode::OK);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|d| d["id"] == json!("domains:acme")),
        "{list}"
    );
    let resp = server
        .admin(Method::POST, "/auth/domains")
        .json(&json!({"name": "acme"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::CONFLICT, &[]);
    for bad in ["Bad!", "1acme", "", "a-b", "acme.x"] {
        let resp = server
            .admin(Method::POST, "/auth/domains")
            .json(&json!({ "name": bad }))
            .send()
            .unwrap();
        assert_error(resp, StatusCode::BAD_REQUEST, &[]);
    }
}

#[test]
fn absent_domain_header_means_svc_admin() {
    let server = Server::start();
    let resp = server
        .admin(Method::POST, "/svc/things")
        .json(&json!({"name": "default"}))
        .send()
        .unwrap();
    let rec = json_ok(resp, StatusCode::CREATED);
    let id = rec["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("svc_admin.things:"), "{id}");
    let got = server.get_json("domains:svc_admin", &rec_path(&id));
    assert_eq!(got["name"], json!("default"));
    let resp = server.admin(Method::GET, "/svc/things/all").send().unwrap();
    assert_eq!(keys(&json_ok(resp, StatusCode::OK)).len(), 1);
}

#[test]
fn malformed_domain_headers_give_400() {
    let server = Server::start();
    server.create_domain("acme");
    for bad in [
        "acme",
        "domains:Bad!",
        "domains:",
        "domain:acme",
        "domains:acme extra",
        "domains:ACME",
        "domains:acme'; DROP TABLE users; --",
    ] {
        for (method, path) in [
            (Method::GET, "/svc/widgets/all"),
            (Method::GET, "/svc/widgets/count"),
            (Method::POST, "/svc/widgets"),
        ] {
            let mut req = server.admin(method.clone(), path).header("Domain", bad);
            if method == Method::POST {
                req = req.json(&json!({"name": "x"}));
            }
            let resp = req.send().unwrap();
            assert_error(resp, StatusCode::BAD_REQUEST, &[]);
        }
    }
    // Nothing was written anywhere.
    assert_eq!(server.count(ACME, "widgets"), 0);
    assert_eq!(server.count("domains:svc_admin", "widgets"), 0);
}

#[test]
fn malformed_domain_error_names_the_header() {
    let server = Server::start();
    let resp = server
        .admin(Method::GET, "/svc/widgets/all")
        .header("Domain", "acme")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["domain"]);
}

#[test]
fn unknown_domain_gives_400() {
    let server = Server::start();
    for (method, path) in [
        (Method::GET, "/svc/widgets/all".to_string()),
        (Method::POST, "/svc/widgets".to_string()),
        (Method::GET, rec_path("nope.widgets:k1")),
    ] {
        let mut req = server.admin_in("domains:nope", method.clone(), &path);
        if method == Method::POST {
            req = req.json(&json!({"name": "x"}));
        }
        let resp = req.send().unwrap();
        assert_error(resp, StatusCode::BAD_REQUEST, &["nope"]);
    }
}

#[test]
fn record_ids_carry_domain_and_table() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    let a = server.create_record(ACME, "widgets", &json!({"id": "k1", "owner": "acme"}));
    let b = server.create_record(BETA, "widgets", &json!({"id": "k1", "owner": "beta"}));
    assert_eq!(a["id"], json!("acme.widgets:k1"));
    assert_eq!(b["id"], json!("beta.widgets:k1"));
    let gen = server.create_record(ACME, "widgets", &json!({"owner": "acme"}));
    let id = gen["id"].as_str().unwrap();
    let key = id.strip_prefix("acme.widgets:").expect("acme prefix");
    assert_eq!(key.len(), 20, "{id}");
    assert!(key
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
    assert_eq!(
        server.get_json(ACME, &rec_path("acme.widgets:k1"))["owner"],
        json!("acme")
    );
    assert_eq!(
        server.get_json(BETA, &rec_path("beta.widgets:k1"))["owner"],
        json!("beta")
    );
}

#[test]
fn other_domain_cannot_read_update_or_delete_by_full_id() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    let rec = server.create_record(ACME, "widgets", &json!({"name": "secret", "qty": 1}));
    let id = rec["id"].as_str().unwrap().to_string();
    let path = rec_path(&id);
    for domain in [BETA, "domains:svc_admin"] {
        let resp = server.admin_in(domain, Method::GET, &path).send().unwrap();
        assert_error(resp, StatusCode::NOT_FOUND, &[]);
        let resp = server
            .admin_in(domain, Method::PUT, &path)
            .json(&json!({"name": "stolen"}))
            .send()
            .unwrap();
        assert_error(resp, StatusCode::NOT_FOUND, &[]);
        let resp = server
            .admin_in(domain, Method::DELETE, &path)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::NOT_FOUND, &[]);
    }
    // No Domain header at all is svc_admin: also 404.
    let resp = server.admin(Method::GET, &path).send().unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    // The record is intact in its own domain.
    let got = server.get_json(ACME, &path);
    assert_eq!(got, rec);
}

#[test]
fn other_domain_lists_its_own_empty_table() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    for i in 0..3 {
        server.create_record(ACME, "widgets", &json!({"n": i}));
    }
    assert_eq!(server.get_json(BETA, "/svc/widgets/all"), json!([]));
    assert_eq!(server.count(BETA, "widgets"), 0);
    assert_eq!(
        server.get_json(BETA, "/svc/widgets/all?filter[n][gte][number]=0"),
        json!([])
    );
    assert_eq!(keys(&server.get_json(ACME, "/svc/widgets/all")).len(), 3);
    assert_eq!(server.count(ACME, "widgets"), 3);
    // Beta writes its own table; acme's is unaffected.
    server.create_record(BETA, "widgets", &json!({"n": 99}));
    assert_eq!(server.count(BETA, "widgets"), 1);
    assert_eq!(server.count(ACME, "widgets"), 3);
}

#[test]
fn other_domain_cannot_read_files() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    let form = reqwest::blocking::multipart::Form::new()
        .text("record", json!({"title": "private"}).to_string())
        .part(
            "doc",
            reqwest::blocking::multipart::Part::bytes(b"top secret".to_vec())
                .file_name("s.txt")
                .mime_str("text/plain")
                .unwrap(),
        );
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/docs")
        .multipart(form)
        .send()
        .unwrap();
    let rec = json_ok(resp, StatusCode::CREATED);
    let id = rec["id"].as_str().unwrap();
    let name = rec["doc"]
        .as_str()
        .expect("file field holds the stored name");
    let path = format!("/svc/file/{}/doc/{}", enc(id), enc(name));
    let resp = server.admin_in(BETA, Method::GET, &path).send().unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    let resp = server
        .admin_in(BETA, Method::PATCH, "/svc/file")
        .json(&json!({"fileName": name, "collectionName": "docs", "fieldName": "doc", "recordID": id}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    let resp = server.admin_in(ACME, Method::GET, &path).send().unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.bytes().unwrap().as_ref(), b"top secret");
}

#[test]
fn expand_never_crosses_domains() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    server.create_record(ACME, "parts", &json!({"id": "a1", "secret": "acme-only"}));
    server.create_record(BETA, "parts", &json!({"id": "b1", "name": "beta part"}));
    server.create_record(
        BETA,
        "orders",
        &json!({"id": "o1", "part": "acme.parts:a1", "own": "beta.parts:b1"}),
    );
    let rows = server.get_json(BETA, "/svc/orders/all?expand=part,own");
    assert_eq!(rows[0]["own"]["name"], json!("beta part"));
    assert!(
        !rows[0].to_string().contains("acme-only"),
        "another domain's record was expanded: {}",
        rows[0]
    );
}
