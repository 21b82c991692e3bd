//! Collections (schemas): `POST /svc/collections` (201, duplicate → 409, invalid → 400),
//! listing, validation of creates and updates against field types and `required` (→ 400 naming
//! the field), unique indexes (→ 409), per-domain schemas, and deleting a collection (schema
//! goes, data stays).

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

fn gauges_schema() -> Value {
    json!({
        "name": "gauges",
        "description": "Pressure gauges",
        "fields": [
            {"name": "label", "type": "string", "required": true},
            {"name": "reading", "type": "number", "required": false},
            {"name": "ok", "type": "boolean", "required": false},
            {"name": "checked", "type": "date", "required": false},
            {"name": "extra", "type": "json", "required": false}
        ],
        "indexDetails": [{"fields": ["label"], "isUnique": true}]
    })
}

fn with_gauges() -> Server {
    let server = Server::start();
    server.load_fixtures();
    let resp = server
        .admin_in(DEMO, Method::POST, "/svc/collections")
        .json(&gauges_schema())
        .send()
        .unwrap();
    let created = json_ok(resp, StatusCode::CREATED);
    assert_eq!(created["id"], json!("demo.collections:gauges"));
    assert_eq!(created["name"], json!("gauges"));
    server
}

fn post(server: &Server, domain: &str, table: &str, body: &Value) -> reqwest::blocking::Response {
    server
        .admin_in(domain, Method::POST, &format!("/svc/{table}"))
        .json(body)
        .send()
        .unwrap()
}

#[test]
fn collections_are_listed() {
    let server = with_gauges();
    let list = server.get_json(DEMO, "/svc/collections/all");
    let mut names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["gauges", "orders", "products"]);
    let gauges = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == json!("gauges"))
        .unwrap();
    assert_eq!(gauges["id"], json!("demo.collections:gauges"));
    assert_eq!(gauges["fields"], gauges_schema()["fields"]);
}

#[test]
fn duplicate_collection_is_409() {
    let server = with_gauges();
    let resp = server
        .admin_in(DEMO, Method::POST, "/svc/collections")
        .json(&gauges_schema())
        .send()
        .unwrap();
    assert_error(resp, StatusCode::CONFLICT, &["gauges"]);
    // The same name in another domain is fine.
    server.create_domain("acme");
    let resp = server
        .admin_in("domains:acme", Method::POST, "/svc/collections")
        .json(&gauges_schema())
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);
}

#[test]
fn invalid_collection_definitions_are_400() {
    let server = Server::start();
    let bad = [
        json!({"name": "bad name", "fields": []}),
        json!({"name": "x;DROP TABLE y", "fields": []}),
        json!({"fields": []}),
        json!({"name": "ok_name", "fields": [{"name": "f", "type": "float"}]}),
        json!({"name": "ok_name", "fields": [{"name": "a'--", "type": "string"}]}),
        json!({"name": "ok_name", "fields": [], "indexDetails": [{"fields": ["a b"], "isUnique": true}]}),
        json!(["not", "an", "object"]),
    ];
    for body in bad {
        let resp = server
            .admin(Method::POST, "/svc/collections")
            .json(&body)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::BAD_REQUEST, &[]);
    }
    let list = server.get_json("domains:svc_admin", "/svc/collections/all");
    for name in ["bad name", "x;DROP TABLE y", "ok_name"] {
        assert!(
            !list.to_string().contains(name),
            "{name} was defined: {list}"
        );
    }
}

#[test]
fn type_violations_are_400_naming_the_field() {
    let server = with_gauges();
    let cases = [
        (json!({"label": "g1", "reading": "high"}), "reading"),
        (json!({"reading": 3}), "label"),
        (json!({"label": 42}), "label"),
        (json!({"label": "g1", "ok": "yes"}), "ok"),
        (json!({"label": "g1", "checked": "last tuesday"}), "checked"),
        (json!({"label": null}), "label"),
    ];
    for (body, field) in cases {
        let resp = post(&server, DEMO, "gauges", &body);
        assert_error(resp, StatusCode::BAD_REQUEST, &[field]);
    }
    assert_eq!(server.count(DEMO, "gauges"), 0);
    // The fixture schema too: a string into products.price.
    let resp = post(
        &server,
        DEMO,
        "products",
        &json!({"name": "Bad", "sku": "SKU-X", "price": "cheap"}),
    );
    assert_error(resp, StatusCode::BAD_REQUEST, &["price"]);
    let resp = post(
        &server,
        DEMO,
        "products",
        &json!({"name": "No sku", "price": 1}),
    );
    assert_error(resp, StatusCode::BAD_REQUEST, &["sku"]);
    assert_eq!(server.count(DEMO, "products"), 10);
}

#[test]
fn valid_records_are_accepted() {
    let server = with_gauges();
    let rec = server.create_record(
        DEMO,
        "gauges",
        &json!({"label": "g1", "reading": 2.5, "ok": true, "checked": "2024-05-01T10:00:00.000Z", "extra": {"a": [1]}}),
    );
    assert_eq!(rec["reading"], json!(2.5));
    assert_eq!(rec["extra"], json!({"a": [1]}));
    // Only the required field.
    server.create_record(DEMO, "gauges", &json!({"label": "g2"}));
    assert_eq!(server.count(DEMO, "gauges"), 2);
}

#[test]
fn updates_are_validated() {
    let server = with_gauges();
    let rec = server.create_record(DEMO, "gauges", &json!({"label": "g1", "reading": 1}));
    let path = rec_path(rec["id"].as_str().unwrap());
    let resp = server
        .admin_in(DEMO, Method::PUT, &path)
        .json(&json!({"reading": "very high"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["reading"]);
    let resp = server
        .admin_in(DEMO, Method::PUT, &path)
        .json(&json!({"label": null}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["label"]);
    assert_eq!(server.get_json(DEMO, &path)["reading"], json!(1));
    // A valid partial update passes: the required label is kept from the stored record.
    let resp = server
        .admin_in(DEMO, Method::PUT, &path)
        .json(&json!({"reading": 9}))
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK)["reading"], json!(9));
}

#[test]
fn unique_index_violations_are_409() {
    let server = with_gauges();
    server.create_record(DEMO, "gauges", &json!({"id": "a", "label": "g1"}));
    let b = server.create_record(DEMO, "gauges", &json!({"id": "b", "label": "g2"}));
    let resp = post(&server, DEMO, "gauges", &json!({"label": "g1"}));
    assert_error(resp, StatusCode::CONFLICT, &[]);
    let resp = server
        .admin_in(DEMO, Method::PUT, &rec_path(b["id"].as_str().unwrap()))
        .json(&json!({"label": "g1"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::CONFLICT, &[]);
    assert_eq!(server.count(DEMO, "gauges"), 2);
    assert_eq!(
        server.get_json(DEMO, &rec_path("demo.gauges:b"))["label"],
        json!("g2")
    );
    // The fixture's unique sku.
    let resp = post(
        &server,
        DEMO,
        "products",
        &json!({"name": "Copy", "sku": "SKU-001", "price": 1}),
    );
    assert_error(resp, StatusCode::CONFLICT, &[]);
    assert_eq!(server.count(DEMO, "products"), 10);
}

#[test]
fn schemas_are_per_domain() {
    let server = with_gauges();
    server.create_domain("acme");
    // acme has no gauges collection: its gauges table is schemaless.
    let resp = post(
        &server,
        "domains:acme",
        "gauges",
        &json!({"reading": "high"}),
    );
    json_ok(resp, StatusCode::CREATED);
    let resp = post(
        &server,
        "domains:acme",
        "gauges",
        &json!({"reading": "high"}),
    );
    json_ok(resp, StatusCode::CREATED);
}

#[test]
fn deleting_a_collection_keeps_data() {
    let server = with_gauges();
    server.create_record(DEMO, "gauges", &json!({"id": "keep", "label": "g1"}));
    let resp = server
        .admin_in(DEMO, Method::DELETE, &rec_path("demo.collections:gauges"))
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));
    let names = server.get_json(DEMO, "/svc/collections/all").to_string();
    assert!(!names.contains("\"gauges\""), "{names}");
    assert_eq!(
        server.get_json(DEMO, &rec_path("demo.gauges:keep"))["label"],
        json!("g1")
    );
    // Schema and unique index are gone.
    let resp = post(&server, DEMO, "gauges", &json!({"reading": "high"}));
    json_ok(resp, StatusCode::CREATED);
    let resp = post(&server, DEMO, "gauges", &json!({"label": "g1"}));
    json_ok(resp, StatusCode::CREATED);
    assert_eq!(server.count(DEMO, "gauges"), 3);
    // It can be defined again.
    let resp = server
        .admin_in(DEMO, Method::POST, "/svc/collections")
        .json(&json!({"name": "gauges", "fields": [{"name": "label", "type": "string", "required": false}]}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);
}

/// `PUT` replaces a definition in one step: new fields validate at once, indexes are rebuilt,
/// records stay, and a new unique index that existing records break changes nothing.
#[test]
fn a_collection_is_replaced_in_place() {
    let server = with_gauges();
    server.create_record(
        DEMO,
        "gauges",
        &json!({"id": "a", "label": "g1", "reading": 1}),
    );
    server.create_record(
        DEMO,
        "gauges",
        &json!({"id": "b", "label": "g2", "reading": 1}),
    );
    let path = rec_path("demo.collections:gauges");
    let put = |body: Value| {
        server
            .admin_in(DEMO, Method::PUT, &path)
            .json(&body)
            .send()
            .unwrap()
    };
    let replaced = json_ok(
        put(json!({
            "fields": [
                {"name": "label", "type": "string", "required": false},
                {"name": "site", "type": "string", "required": true}
            ],
            "indexDetails": [{"fields": ["site"], "isUnique": false}]
        })),
        StatusCode::OK,
    );
    assert_eq!(replaced["name"], json!("gauges"));
    assert_eq!(replaced["fields"][1]["name"], json!("site"));
    // The new required field is enforced; the old unique label is not any more.
    assert_error(
        post(&server, DEMO, "gauges", &json!({"label": "g1"})),
        StatusCode::BAD_REQUEST,
        &["site"],
    );
    json_ok(
        post(
            &server,
            DEMO,
            "gauges",
            &json!({"label": "g1", "site": "north"}),
        ),
        StatusCode::CREATED,
    );
    assert_eq!(server.count(DEMO, "gauges"), 3);
    // A unique index that the stored records break is refused, and the definition stays.
    assert_error(
        put(json!({"fields": [], "indexDetails": [{"fields": ["reading"], "isUnique": true}]})),
        StatusCode::CONFLICT,
        &[],
    );
    let stored = server.get_json(DEMO, &path);
    assert_eq!(stored["fields"][1]["name"], json!("site"));
    // Renaming, bad definitions and unknown collections.
    assert_error(put(json!({"name": "other"})), StatusCode::BAD_REQUEST, &[]);
    assert_error(
        put(json!({"fields": [{"name": "x", "type": "colour"}]})),
        StatusCode::BAD_REQUEST,
        &[],
    );
    let resp = server
        .admin_in(DEMO, Method::PUT, &rec_path("demo.collections:nothing"))
        .json(&json!({"fields": []}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
}
