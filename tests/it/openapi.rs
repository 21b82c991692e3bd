//! The OpenAPI 3.1 document at `GET /svc/openapi.json`: served without credentials, covering
//! every route the server serves, and describing what the server really sends (real responses
//! validated against the documented schemas).

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::Path;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

fn document(server: &Server) -> Value {
    let resp = server
        .req(Method::GET, "/svc/openapi.json")
        .send()
        .expect("GET openapi.json");
    assert_eq!(header(&resp, "content-type"), "application/json");
    json_ok(resp, StatusCode::OK)
}

/// Every documented (method, path template).
fn operations(doc: &Value) -> Vec<(String, String)> {
    let paths = doc["paths"].as_object().expect("paths");
    let mut ops = Vec::new();
    for (path, item) in paths {
        for method in METHODS {
            if item.get(method).is_some() {
                ops.push((method.to_string(), path.clone()));
            }
        }
    }
    ops
}

/// Validates `instance` against the schema documented for `status` of the operation, resolving
/// the document's `#/components/...` references.
fn validate(doc: &Value, method: &str, path: &str, status: u16, instance: &Value) {
    let response = &doc["paths"][path][method]["responses"][status.to_string()];
    let schema = &response["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} documents no JSON schema for {status}: {response}"
    );
    let mut root = json!({"components": doc["components"].clone()});
    root["allOf"] = json!([schema]);
    let validator = jsonschema::draft202012::new(&root)
        .unwrap_or_else(|e| panic!("schema of {method} {path} {status} does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path} {status}: {instance} violates {schema}: {errors:?}"
    );
}

#[test]
fn the_document_is_served_without_credentials_as_openapi_3_1() {
    let server = Server::start();
    let doc = document(&server);
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1.")),
        "openapi version: {}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["title"], "svc");
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    assert_eq!(schemes["apiKey"]["name"], "X-Svc-Api-Key");
    // A protected route names both credentials, the Domain header and its plain-text errors.
    let list = &doc["paths"]["/svc/{table}/all"]["get"];
    assert_eq!(list["security"], json!([{"bearer": []}, {"apiKey": []}]));
    let params = list["parameters"].as_array().expect("parameters");
    assert!(params
        .iter()
        .any(|p| p["name"] == "table" && p["in"] == "path"));
    assert!(params
        .iter()
        .any(|p| p["name"] == "Domain" && p["in"] == "header"));
    for status in ["400", "401", "403", "404"] {
        let content = &list["responses"][status]["content"];
        assert_eq!(
            content[TEXT_PLAIN]["schema"]["type"], "string",
            "{status} of GET /svc/{{table}}/all: {content}"
        );
    }
    // Login needs no credential and documents its refusals.
    let login = &doc["paths"]["/svc/auth/login"]["post"];
    assert_eq!(login["security"], json!([{}]));
    for status in ["200", "401", "429"] {
        assert!(login["responses"][status].is_object(), "login {status}");
    }
    let ids: Vec<&str> = operations(&doc)
        .iter()
        .map(|(m, p)| doc["paths"][p][m]["operationId"].as_str().unwrap_or(""))
        .collect();
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "operation ids repeat: {ids:?}");
}

/// Every documented operation is served (none falls to the router's fallbacks), and no route
/// is registered outside the documenting router except the console's files and `/mqtt`.
#[test]
fn every_route_is_documented_and_every_documented_route_is_served() {
    let server = Server::start();
    server.create_domain("oa");
    let doc = document(&server);
    let ops = operations(&doc);
    assert!(ops.len() >= 70, "only {} operations documented", ops.len());
    for (method, template) in &ops {
        let path = template
            .split('/')
            .map(|s| if s.starts_with('{') { "x" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
        let resp = server
            .admin_in("domains:oa", method.clone(), &path)
            .send()
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status();
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        if status == StatusCode::NOT_FOUND {
            let body = resp.text().unwrap_or_default();
            assert_ne!(body, "no such route", "{method} {path} is not served");
        }
    }
    // The public ones answer without a credential.
    for path in ["/svc/openapi.json", "/healthz", "/readyz"] {
        let status = server.req(Method::GET, path).send().expect(path).status();
        assert_eq!(status, StatusCode::OK, "GET {path} without credential");
    }

    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server");
    let mut outside = Vec::new();
    for file in rust_files(&src) {
        let text = std::fs::read_to_string(&file).expect("read source");
        let name = file
            .strip_prefix(&src)
            .expect("prefix")
            .display()
            .to_string();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim().replace("OpenApiRouter", "OpenApi");
            let registers = [
                ".route(",
                ".route_service(",
                ".nest_service(",
                "Router::new()",
            ]
            .iter()
            .any(|r| line.contains(r));
            if registers && !line.starts_with("//") {
                outside.push(format!("{name}:{}: {line}", n + 1));
            }
        }
    }
    let allowed = |entry: &String| {
        entry.starts_with("routes/console.rs:")
            || entry.contains(".route(\"/mqtt\", get(mqtt_bridge))")
    };
    let undocumented: Vec<&String> = outside.iter().filter(|e| !allowed(e)).collect();
    assert!(
        undocumented.is_empty(),
        "routes registered outside the OpenAPI router (register them with utoipa_axum's \
         routes! and a #[utoipa::path] annotation): {undocumented:#?}"
    );
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The SDK-facing shapes the server really sends validate against the document.
#[test]
fn real_responses_match_the_documented_schemas() {
    let server = Server::start();
    let doc = document(&server);
    let domain = "domains:shapes";
    server.create_domain("shapes");

    let resp = server
        .req(Method::POST, "/svc/auth/login")
        .json(&json!({"username": "admin", "password": ADMIN_PASSWORD}))
        .send()
        .expect("login");
    let login = json_ok(resp, StatusCode::OK);
    validate(&doc, "post", "/svc/auth/login", 200, &login);
    // A document that would accept anything proves nothing: a wrong shape must fail.
    let wrong = std::panic::catch_unwind(|| {
        validate(
            &doc,
            "post",
            "/svc/auth/login",
            200,
            &json!({"success": "yes"}),
        )
    });
    assert!(
        wrong.is_err(),
        "the login schema accepts a body without tkn"
    );

    let me = server.get_json(domain, "/svc/auth/me");
    validate(&doc, "get", "/svc/auth/me", 200, &me);
    let perm = server.get_json(domain, "/auth/permission/action/feature/records/scope/*");
    validate(
        &doc,
        "get",
        "/auth/permission/action/feature/{feature}/scope/{scope}",
        200,
        &perm,
    );
    let info = server.get_json(domain, "/svc/");
    validate(&doc, "get", "/svc/", 200, &info);

    let created = server.create_record(domain, "machines", &json!({"name": "press", "rpm": 120}));
    validate(&doc, "post", "/svc/{target}", 201, &created);
    let id = created["id"].as_str().expect("id");
    let one = server.get_json(domain, &format!("/svc/{}", enc(id)));
    validate(&doc, "get", "/svc/{target}", 200, &one);
    let all = server.get_json(domain, "/svc/machines/all");
    validate(&doc, "get", "/svc/{table}/all", 200, &all);
    let count = server.get_json(domain, "/svc/machines/count");
    validate(&doc, "get", "/svc/{table}/count", 200, &count);

    server.create_tag(domain, "line/temp", true);
    let resp = server
        .admin_in(domain, Method::POST, "/svc/tag/write")
        .json(&json!({"topic": "line/temp", "value": 21.5, "qos": 1, "retain": false}))
        .send()
        .expect("tag write");
    let written = json_ok(resp, StatusCode::OK);
    validate(&doc, "post", "/svc/tag/write", 200, &written);
    server.poll(std::time::Duration::from_secs(10), "the tag value", || {
        let values = server.get_json(domain, "/svc/tag/values");
        (values.as_array().is_some_and(|v| !v.is_empty())).then_some(())
    });
    let values = server.get_json(domain, "/svc/tag/values");
    validate(&doc, "get", "/svc/tag/values", 200, &values);
    let tags = server.get_json(domain, "/svc/tag/list");
    validate(&doc, "get", "/svc/tag/list", 200, &tags);
    let last = server.history(domain, "line/temp", 1);
    validate(&doc, "patch", "/svc/historian/last", 200, &last);
    let resp = server
        .admin_in(domain, Method::PATCH, "/svc/historian")
        .json(&json!({"topic": "line/temp", "range": "1h"}))
        .send()
        .expect("historian query");
    let window = json_ok(resp, StatusCode::OK);
    assert_eq!(window.as_array().map(Vec::len), Some(1), "{window}");
    validate(&doc, "patch", "/svc/historian", 200, &window);
    let tree = server.get_json(domain, "/svc/namespaces/tree");
    validate(&doc, "get", "/svc/namespaces/tree", 200, &tree);
    let users = server.get_json(domain, "/auth/user");
    validate(&doc, "get", "/auth/user", 200, &users);
    let groups = server.get_json(domain, "/auth/group");
    validate(&doc, "get", "/auth/group", 200, &groups);

    // Processes in the SDK's shape: RecordID objects where the records have strings.
    let process = server.create_record(
        domain,
        "processes",
        &json!({"name": "twice", "code": "function main(x){ return 2 * x; }"}),
    );
    let processes = server.get_json(domain, "/svc/processes/domain");
    validate(&doc, "get", "/svc/processes/domain", 200, &processes);
    let path = format!(
        "/svc/processes/triggers/{}",
        enc(process["id"].as_str().expect("id"))
    );
    let resp = server
        .admin_in(domain, Method::PUT, &path)
        .json(&json!({"triggers": [{"type": "manual", "config": {}}]}))
        .send()
        .expect("PUT triggers");
    let changed = json_ok(resp, StatusCode::OK);
    validate(&doc, "put", "/svc/processes/triggers/{id}", 200, &changed);
    let as_record = std::panic::catch_unwind(|| {
        validate(&doc, "put", "/svc/processes/triggers/{id}", 200, &process)
    });
    assert!(as_record.is_err(), "the process schema accepts a string id");
}
