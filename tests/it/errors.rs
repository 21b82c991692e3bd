//! Error handling: SQL-injection attempts in table names, RecordIDs, filter/sort/fields/expand
//! field names and values (→ 400 or no match, fixtures intact), malformed list queries (unknown
//! op or type, bad values, bad bracket syntax, bad sort/limit/offset, unknown parameters → 400
//! naming the parameter), non-JSON and non-object bodies, unknown routes (404), wrong methods
//! (405), oversize bodies (413), and `App-CorrelationID` on every response (generated, or reused
//! from the request, and logged).

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;

const EVIL_TABLES: [&str; 8] = [
    "x;DROP TABLE y",
    "a'--",
    "\"quoted\"",
    "a b",
    "products;DROP TABLE products",
    "demo.products",
    "1abc",
    "products/**/",
];

fn assert_fixtures_intact(server: &Server) {
    for table in FIXTURE_TABLES {
        assert_eq!(server.count(DEMO, table), fixture_len(table), "{table}");
        assert_eq!(
            keys(&server.get_json(DEMO, &format!("/svc/{table}/all"))).len() as u64,
            fixture_len(table),
            "{table}"
        );
    }
    assert_eq!(
        server.get_json(DEMO, &rec_path("demo.products:p01"))["sku"],
        json!("SKU-001")
    );
    // The users table survived too.
    server.login("admin", ADMIN_PASSWORD);
}

#[test]
fn injection_in_table_names_is_400() {
    let server = Server::start();
    server.load_fixtures();
    for evil in EVIL_TABLES {
        let t = enc(evil);
        for (method, path) in [
            (Method::GET, format!("/svc/{t}/all")),
            (Method::GET, format!("/svc/{t}/count")),
            (Method::POST, format!("/svc/{t}")),
        ] {
            let mut req = server.admin_in(DEMO, method.clone(), &path);
            if method == Method::POST {
                req = req.json(&json!({"name": "x"}));
            }
            let resp = req.send().unwrap();
            assert_error(resp, StatusCode::BAD_REQUEST, &[]);
        }
    }
    // Unencoded quote in the path.
    let resp = server
        .admin_in(DEMO, Method::GET, "/svc/a'--/all")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &[]);
    assert_fixtures_intact(&server);
}

#[test]
fn injection_in_record_ids_is_rejected() {
    let server = Server::start();
    server.load_fixtures();
    for evil in [
        "demo.products:p01' OR '1'='1",
        "demo.products:p01;DROP TABLE x",
        "demo.products--:p01",
        "demo.\"products\":p01",
        "demo.products:p01:extra",
    ] {
        for method in [Method::GET, Method::PUT, Method::DELETE] {
            let mut req = server.admin_in(DEMO, method.clone(), &rec_path(evil));
            if method == Method::PUT {
                req = req.json(&json!({"price": 0}));
            }
            let resp = req.send().unwrap();
            let status = resp.status();
            assert!(
                status == StatusCode::BAD_REQUEST || status == StatusCode::NOT_FOUND,
                "{method} {evil}: {status}"
            );
            assert_error(resp, status, &[]);
        }
    }
    assert_fixtures_intact(&server);
}

/// A table name where a record id belongs (`GET /svc/upstreams`) says how to list the table.
#[test]
fn a_table_name_where_a_record_belongs_says_how_to_list_it() {
    let server = Server::start();
    server.load_fixtures();
    for table in ["upstreams", "products"] {
        for method in [Method::GET, Method::PUT, Method::DELETE] {
            let mut req = server.admin_in(DEMO, method.clone(), &format!("/svc/{table}"));
            if method == Method::PUT {
                req = req.json(&json!({"price": 0}));
            }
            let message = assert_error(
                req.send().unwrap(),
                StatusCode::BAD_REQUEST,
                &[&format!("GET /svc/{table}/all")],
            );
            assert!(
                message.contains("is a table"),
                "{method} {table}: {message}"
            );
        }
    }
    assert_fixtures_intact(&server);
}

#[test]
fn injection_in_field_names_is_400() {
    let server = Server::start();
    server.load_fixtures();
    let evil_fields = [
        "x;DROP TABLE y",
        "a'--",
        "\"quoted\"",
        "a b",
        "name) OR (1=1",
    ];
    for field in evil_fields {
        let filter = format!("filter[{field}][eq][string]");
        let filter_or = format!("filter_or[0][{field}][eq][string]");
        let sort = format!("[{field}][asc]");
        let fields = format!("name,{field}");
        for (param, pairs) in [
            ("filter", vec![(filter.as_str(), "1")]),
            ("filter_or", vec![(filter_or.as_str(), "1")]),
            ("sort", vec![("sort", sort.as_str())]),
            ("fields", vec![("fields", fields.as_str())]),
            ("expand", vec![("expand", field)]),
        ] {
            for path in ["/svc/products/all", "/svc/products/count"] {
                if path.ends_with("count")
                    && (param == "fields" || param == "expand" || param == "sort")
                {
                    continue;
                }
                let resp = server
                    .admin_in(DEMO, Method::GET, &format!("{path}{}", query(&pairs)))
                    .send()
                    .unwrap();
                assert_error(resp, StatusCode::BAD_REQUEST, &[param]);
            }
        }
    }
    assert_fixtures_intact(&server);
}

#[test]
fn injection_in_values_matches_nothing() {
    let server = Server::start();
    server.load_fixtures();
    let empty = json!([]);
    for (key, value) in [
        ("filter[name][eq][string]", "' OR '1'='1"),
        ("filter[sku][in][string]", "SKU-001') OR 1=1 --"),
        ("filter[name][contains][string]", "%' OR 1=1 --"),
        (
            "filter[category][eq][string]",
            "hardware; DROP TABLE products",
        ),
    ] {
        let got = server.get_json(
            DEMO,
            &format!("/svc/products/all{}", query(&[(key, value)])),
        );
        assert_eq!(got, empty, "{key}={value}");
    }
    // Values are stored verbatim.
    let evil = "Robert'); DROP TABLE products;--";
    let rec = server.create_record(DEMO, "sites", &json!({"name": evil}));
    assert_eq!(
        server.get_json(DEMO, &rec_path(rec["id"].as_str().unwrap()))["name"],
        json!(evil)
    );
    let found = server.get_json(
        DEMO,
        &format!(
            "/svc/sites/all{}",
            query(&[("filter[name][eq][string]", evil)])
        ),
    );
    assert_eq!(keys(&found).len(), 1);
    assert_eq!(server.count(DEMO, "sites"), fixture_len("sites") + 1);
    assert_eq!(server.count(DEMO, "products"), fixture_len("products"));
}

#[test]
fn non_json_and_non_object_bodies_are_400() {
    let server = Server::start();
    let rec = server.create_record("domains:svc_admin", "widgets", &json!({"id": "w1", "v": 1}));
    let put_path = rec_path(rec["id"].as_str().unwrap());
    for body in [
        "not json", "[1,2]", "\"str\"", "42", "null", "{\"a\":", "true",
    ] {
        for (method, path) in [
            (Method::POST, "/svc/widgets"),
            (Method::PUT, put_path.as_str()),
        ] {
            let resp = server
                .admin(method.clone(), path)
                .header("Content-Type", "application/json")
                .body(body)
                .send()
                .unwrap();
            assert_error(resp, StatusCode::BAD_REQUEST, &[]);
        }
    }
    let resp = server
        .admin(Method::POST, "/auth/domains")
        .header("Content-Type", "application/json")
        .body("{oops")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &[]);
    assert_eq!(server.count("domains:svc_admin", "widgets"), 1);
    assert_eq!(
        server.get_json("domains:svc_admin", &put_path)["v"],
        json!(1)
    );
}

#[test]
fn unknown_routes_are_404_text() {
    let server = Server::start();
    for (method, path) in [
        (Method::GET, "/nope"),
        (Method::GET, "/svc/a/b/c/d/e"),
        (Method::POST, "/auth/nothing-here"),
        (Method::GET, "/auth"),
    ] {
        let resp = server.admin(method, path).send().unwrap();
        assert_error(resp, StatusCode::NOT_FOUND, &[]);
    }
    // Unauthenticated too.
    let resp = server.req(Method::GET, "/nope").send().unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
}

#[test]
fn wrong_method_is_405_text() {
    let server = Server::start();
    for (method, path) in [
        (Method::PUT, "/auth/login"),
        (Method::DELETE, "/auth/login"),
        (Method::GET, "/svc/auth/login"),
        (Method::PUT, "/auth/keys"),
    ] {
        let resp = server.admin(method, path).send().unwrap();
        assert_error(resp, StatusCode::METHOD_NOT_ALLOWED, &[]);
    }
}

#[test]
fn oversize_body_is_413_text() {
    let server = Server::start_with(&["--max-body", "1024"]);
    let small = server.create_record("domains:svc_admin", "widgets", &json!({"name": "small"}));
    assert!(small["id"].is_string());
    let big = json!({"name": "x".repeat(4096)});
    let resp = server
        .admin(Method::POST, "/svc/widgets")
        .header(CORRELATION, "corr-413")
        .json(&big)
        .send()
        .unwrap();
    assert_eq!(header(&resp, CORRELATION), "corr-413");
    assert_error(resp, StatusCode::PAYLOAD_TOO_LARGE, &[]);
    let resp = server
        .req(Method::POST, "/auth/login")
        .json(&json!({"username": "admin", "password": "p".repeat(4096)}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::PAYLOAD_TOO_LARGE, &[]);
    // A multipart body with a known length (a streamed form may be cut off mid-send).
    let boundary = "svc-test-boundary-413";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"record\"\r\n\r\n{{}}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend(std::iter::repeat_n(7u8, 4096));
    body.extend(format!("\r\n--{boundary}--\r\n").into_bytes());
    let resp = server
        .admin(Method::POST, "/svc/widgets")
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::PAYLOAD_TOO_LARGE, &[]);
    assert_eq!(server.count("domains:svc_admin", "widgets"), 1);
}

#[test]
fn default_body_limit_accepts_a_megabyte() {
    let server = Server::start();
    let text = "y".repeat(1024 * 1024);
    let rec = server.create_record("domains:svc_admin", "blobs", &json!({ "text": text }));
    let got = server.get_json("domains:svc_admin", &rec_path(rec["id"].as_str().unwrap()));
    assert_eq!(got["text"].as_str().map(str::len), Some(1024 * 1024));
}

#[test]
fn correlation_id_is_generated_on_every_response() {
    let server = Server::start();
    let token = server.admin_token();
    let mut seen = Vec::new();
    let requests = [
        (
            server.with_token(&token, Method::GET, "/svc/widgets/all"),
            StatusCode::OK,
        ),
        (
            server.req(Method::GET, "/svc/widgets/all"),
            StatusCode::UNAUTHORIZED,
        ),
        (
            server.with_token(&token, Method::GET, "/nope"),
            StatusCode::NOT_FOUND,
        ),
        (
            server.req(Method::PUT, "/auth/login"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            server
                .req(Method::POST, "/auth/login")
                .header("Content-Type", "application/json")
                .body("nope"),
            StatusCode::BAD_REQUEST,
        ),
        (
            server
                .with_token(&token, Method::GET, "/svc/widgets/all")
                .header("Domain", "bad"),
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (req, status) in requests {
        let resp = req.send().unwrap();
        assert_eq!(resp.status(), status);
        let id = header(&resp, CORRELATION);
        assert!(
            uuid::Uuid::parse_str(&id).is_ok(),
            "{status}: correlation id `{id}` is not a UUID"
        );
        assert!(!seen.contains(&id), "correlation id {id} repeated");
        seen.push(id);
    }
}

#[test]
fn incoming_correlation_id_is_reused_and_logged() {
    let server = Server::start();
    let token = server.admin_token();
    let cases = [
        (
            "corr-ok-1",
            server.with_token(&token, Method::GET, "/svc/widgets/all"),
            StatusCode::OK,
        ),
        (
            "corr-401-2",
            server.req(Method::GET, "/svc/widgets/all"),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "corr-404-3",
            server.req(Method::GET, "/nope"),
            StatusCode::NOT_FOUND,
        ),
        (
            "corr-405-4",
            server.req(Method::DELETE, "/auth/login"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            "corr-400-5",
            server
                .with_token(&token, Method::POST, "/svc/widgets")
                .header("Content-Type", "application/json")
                .body("[]"),
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (id, req, status) in cases {
        let resp = req.header(CORRELATION, id).send().unwrap();
        assert_eq!(resp.status(), status, "{id}");
        assert_eq!(header(&resp, CORRELATION), id);
    }
    for id in ["corr-ok-1", "corr-401-2", "corr-404-3"] {
        assert!(
            server.wait_for_log(id),
            "correlation id {id} not in the server log"
        );
    }
}

fn bad_query(server: &Server, table: &str, qs: &str, needle: &str) {
    let resp = server
        .admin_in(DEMO, Method::GET, &format!("/svc/{table}/all{qs}"))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &[needle]);
}

#[test]
fn malformed_filters_are_400_naming_the_parameter() {
    let server = Server::start();
    server.load_fixtures();
    for pairs in [
        [("filter[price][between][number]", "1")],
        [("filter[price][eq][decimal]", "1")],
        [("filter[price][gt][number]", "abc")],
        [("filter[released][gt][date]", "yesterday")],
        [("filter[in_stock][eq][boolean]", "yes")],
        [("filter[price][eq][number][x]", "1")],
        [("filter[price]", "1")],
        [("filter", "1")],
        [("filter[][eq][string]", "x")],
        // `typeof` object: a plain object arrives as `[object Object]`; JSON must be valid.
        [("filter[dims][eq][object]", "[object Object]")],
        [("filter[dims][eq][object]", "{not json")],
        [("filter[qty][in][number]", "1,abc")],
    ] {
        bad_query(&server, "products", &query(&pairs), "filter");
    }
    bad_query(&server, "products", "?filter[price[eq]=1", "filter");
    bad_query(&server, "products", "?filter[price]eq]=1", "filter");
    bad_query(
        &server,
        "products",
        &query(&[("filter_or[x][sku][eq][string]", "a")]),
        "filter_or",
    );
    bad_query(
        &server,
        "products",
        &query(&[("filter_or[0][sku][like][string]", "a")]),
        "filter_or",
    );
}

#[test]
fn malformed_sort_limit_offset_are_400() {
    let server = Server::start();
    server.load_fixtures();
    for value in ["[price][up]", "[][asc]", "[price]asc", "[price][asc][x]"] {
        bad_query(&server, "products", &query(&[("sort", value)]), "sort");
    }
    for value in ["-1", "abc", "10001", "1.5"] {
        bad_query(&server, "products", &query(&[("limit", value)]), "limit");
    }
    for value in ["-1", "x"] {
        bad_query(&server, "products", &query(&[("offset", value)]), "offset");
    }
    bad_query(
        &server,
        "products",
        &query(&[("frobnicate", "1")]),
        "frobnicate",
    );
    // The same rules on /count.
    let resp = server
        .admin_in(
            DEMO,
            Method::GET,
            &format!(
                "/svc/products/count{}",
                query(&[("filter[price][zz][number]", "1")])
            ),
        )
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["filter"]);
}
