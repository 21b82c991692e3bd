//! The platform SDK's list queries, sent exactly as its `URLSearchParams` encodes them
//! (`form_urlencoded`: brackets, spaces, `=`, `@`, `~`, `?` percent-encoded, space as `+`, the
//! value as JavaScript's `String(value)`), against a running `svc serve`: every operator of the
//! SDK on strings, numbers, booleans, arrays and nested paths, in `filter` and `filter_or`,
//! `ARRAY_WHERE_*`, `typeof` `object` lists and null, and each malformed form → 400 naming the
//! parameter.

use crate::common::*;
use reqwest::StatusCode;
use serde_json::json;

const DOMAIN: &str = "domains:plant";

fn plant() -> Server {
    let server = Server::start();
    server.create_domain("plant");
    let records = [
        json!({"id": "r1", "name": "Main Pump 7", "kind": "pump", "power": 7.5, "active": true,
               "tags": ["north", "Critical"], "site": {"hall": "B", "floor": 2},
               "parts": [{"sku": "A1", "qty": 3}, {"sku": "B2", "qty": 10}]}),
        json!({"id": "r2", "name": "Boiler room feed", "kind": "valve", "power": 2, "active": false,
               "tags": ["south"], "site": {"hall": "A", "floor": 1},
               "parts": [{"sku": "A1", "qty": 1}]}),
        json!({"id": "r3", "name": "Spare pump", "kind": "pump", "power": 11, "active": true,
               "tags": [], "site": {"hall": "B", "floor": 3}, "parts": [], "note": null}),
        json!({"id": "r4", "name": "Compressor", "kind": "compressor", "active": false,
               "tags": ["north", "south"], "site": {"hall": "C", "floor": 1}}),
    ];
    for record in records {
        server.create_record(DOMAIN, "assets", &record);
    }
    server
}

/// What the SDK's `URLSearchParams` produces for these pairs.
fn search_params(pairs: &[(&str, &str)]) -> String {
    let mut params = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        params.append_pair(k, v);
    }
    params.finish()
}

/// `filter[<field>][<op>][<typeof>]=<value>` as the SDK's `filter()` sends it.
fn f(field: &str, op: &str, ty: &str, value: &str) -> (String, String) {
    (format!("filter[{field}][{op}][{ty}]"), value.to_string())
}

fn or(i: usize, field: &str, op: &str, ty: &str, value: &str) -> (String, String) {
    (
        format!("filter_or[{i}][{field}][{op}][{ty}]"),
        value.to_string(),
    )
}

fn get(server: &Server, pairs: &[(String, String)]) -> reqwest::blocking::Response {
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    server
        .admin_in(
            DOMAIN,
            reqwest::Method::GET,
            &format!("/svc/assets/all?{}", search_params(&pairs)),
        )
        .send()
        .expect("GET list")
}

fn matches(server: &Server, pairs: &[(String, String)]) -> Vec<String> {
    sorted_keys(&json_ok(get(server, pairs), StatusCode::OK))
}

#[track_caller]
fn check(server: &Server, pairs: &[(String, String)], want: &[&str]) {
    assert_eq!(matches(server, pairs), want, "{pairs:?}");
}

#[test]
fn the_encoding_is_what_url_search_params_sends() {
    let q = search_params(&[
        ("filter[name][~][string]", "pump 7"),
        ("filter[x][@1@][string]", "a?b"),
    ]);
    assert_eq!(
        q,
        "filter%5Bname%5D%5B%7E%5D%5Bstring%5D=pump+7&filter%5Bx%5D%5B%401%40%5D%5Bstring%5D=a%3Fb"
    );
}

#[test]
fn every_operator_on_every_kind_of_field() {
    let s = plant();
    // Comparisons on numbers, strings, booleans and nested paths.
    check(&s, &[f("power", ">", "number", "5")], &["r1", "r3"]);
    check(&s, &[f("power", "<=", "number", "7.5")], &["r1", "r2"]);
    check(&s, &[f("kind", "==", "string", "pump")], &["r1", "r3"]);
    check(&s, &[f("kind", "!=", "string", "pump")], &["r2", "r4"]);
    check(&s, &[f("active", "=", "boolean", "false")], &["r2", "r4"]);
    check(&s, &[f("site.floor", ">=", "number", "2")], &["r1", "r3"]);
    check(&s, &[f("site.hall", "eq", "string", "B")], &["r1", "r3"]);
    // ~ and !~: case-insensitive substring; on arrays of strings, any element.
    check(&s, &[f("name", "~", "string", "PUMP")], &["r1", "r3"]);
    check(&s, &[f("name", "!~", "string", "pump")], &["r2", "r4"]);
    check(&s, &[f("tags", "~", "string", "crit")], &["r1"]);
    check(&s, &[f("tags", "!~", "string", "nor")], &["r2", "r3"]);
    // ?~ / *~ / ?= / *= on arrays.
    check(&s, &[f("tags", "?~", "string", "OUT")], &["r2", "r4"]);
    check(&s, &[f("tags", "*~", "string", "o")], &["r2", "r3", "r4"]);
    check(&s, &[f("tags", "?=", "string", "north")], &["r1", "r4"]);
    check(&s, &[f("tags", "*=", "string", "south")], &["r2", "r3"]);
    // CONTAINS / CONTAINSNOT: array element, or substring of a string.
    check(
        &s,
        &[f("tags", "CONTAINS", "string", "south")],
        &["r2", "r4"],
    );
    check(
        &s,
        &[f("tags", "CONTAINSNOT", "string", "south")],
        &["r1", "r3"],
    );
    check(&s, &[f("name", "CONTAINS", "string", "pump")], &["r3"]);
    // CONTAINSALL / ANY / NONE with typeof-object lists (comma-joined) and JSON arrays.
    check(
        &s,
        &[f("tags", "CONTAINSALL", "object", "north,south")],
        &["r4"],
    );
    check(
        &s,
        &[f("tags", "CONTAINSANY", "object", "Critical,south")],
        &["r1", "r2", "r4"],
    );
    check(
        &s,
        &[f("tags", "CONTAINSNONE", "object", "north")],
        &["r2", "r3"],
    );
    check(
        &s,
        &[f("tags", "CONTAINSALL", "string", "[\"north\"]")],
        &["r1", "r4"],
    );
    // INSIDE / NOTINSIDE / IN / NOT IN on scalars.
    check(
        &s,
        &[f("kind", "INSIDE", "object", "valve,compressor")],
        &["r2", "r4"],
    );
    check(
        &s,
        &[f("kind", "NOTINSIDE", "object", "valve,compressor")],
        &["r1", "r3"],
    );
    check(&s, &[f("power", "IN", "object", "2,11")], &["r2", "r3"]);
    check(&s, &[f("power", "NOT IN", "number", "2,11")], &["r1", "r4"]);
    // ALLINSIDE / ANYINSIDE / NONEINSIDE on arrays (an empty array is all-inside).
    check(
        &s,
        &[f("tags", "ALLINSIDE", "object", "north,south")],
        &["r2", "r3", "r4"],
    );
    check(&s, &[f("tags", "ANYINSIDE", "object", "Critical")], &["r1"]);
    check(
        &s,
        &[f("tags", "NONEINSIDE", "object", "north")],
        &["r2", "r3"],
    );
    // Full text: every word, case-insensitive, whole words; @n@ is the same operator.
    check(&s, &[f("name", "@@", "string", "pump MAIN")], &["r1"]);
    check(&s, &[f("name", "@2@", "string", "room")], &["r2"]);
    check(&s, &[f("name", "@@", "string", "pum")], &[]);
    // typeof null is `object`.
    check(&s, &[f("power", "=", "object", "null")], &["r4"]);
    check(
        &s,
        &[f("power", "!=", "object", "null")],
        &["r1", "r2", "r3"],
    );
}

#[test]
fn array_where_matches_a_member_of_some_element() {
    let s = plant();
    check(
        &s,
        &[f("parts.sku", "ARRAY_WHERE_=", "string", "A1")],
        &["r1", "r2"],
    );
    check(
        &s,
        &[f("parts.qty", "ARRAY_WHERE_>", "number", "5")],
        &["r1"],
    );
    check(
        &s,
        &[f("parts.qty", "ARRAY_WHERE_<=", "number", "1")],
        &["r2"],
    );
    check(
        &s,
        &[f("parts.sku", "ARRAY_WHERE_!=", "string", "A1")],
        &["r1"],
    );
    check(
        &s,
        &[f("parts.sku", "ARRAY_WHERE_CONTAINS", "string", "2")],
        &["r1"],
    );
    check(
        &s,
        &[f("parts.sku", "ARRAY_WHERE_IN", "object", "B2,Z9")],
        &["r1"],
    );
    // In an OR group (the SDK's orFilterInArray) and mixed with a plain OR filter.
    check(
        &s,
        &[
            or(0, "parts.qty", "ARRAY_WHERE_>=", "number", "10"),
            or(1, "kind", "=", "string", "compressor"),
        ],
        &["r1", "r4"],
    );
}

#[test]
fn filter_or_groups_every_operator_and_ands_with_filters() {
    let s = plant();
    check(
        &s,
        &[
            or(0, "tags", "CONTAINS", "string", "Critical"),
            or(1, "name", "~", "string", "boiler"),
        ],
        &["r1", "r2"],
    );
    check(
        &s,
        &[
            f("kind", "=", "string", "pump"),
            or(0, "power", ">", "number", "10"),
            or(1, "tags", "?=", "string", "Critical"),
        ],
        &["r1", "r3"],
    );
}

#[test]
fn malformed_sdk_filters_are_400_naming_the_parameter() {
    let s = plant();
    let cases = [
        (f("site", "=", "object", "[object Object]"), "plain object"),
        (
            f("tags", "CONTAINSALL", "object", "[object Object]"),
            "plain object",
        ),
        (f("name", "=~", "string", "x"), "unknown operator `=~`"),
        (
            f("name", "~", "number", "1"),
            "does not apply to type `number`",
        ),
        (
            f("power", ">", "object", "null"),
            "does not apply to type `object`",
        ),
        (
            f("tags", "CONTAINSALL", "null", "x"),
            "does not apply to type `null`",
        ),
        (
            f("parts", "ARRAY_WHERE_=", "string", "x"),
            "needs `[<array>.<field>]`",
        ),
        (
            f("parts.sku", "ARRAY_WHERE_?~", "string", "x"),
            "ARRAY_WHERE_",
        ),
        (f("power", ">", "number", "abc"), "`abc` is not a number"),
        (f("kind", "IN", "string", ""), "empty list"),
    ];
    for ((key, value), needle) in cases {
        let resp = get(&s, &[(key.clone(), value.clone())]);
        assert_error(resp, StatusCode::BAD_REQUEST, &[&key, needle]);
    }
    // Nothing stored was touched by the refused queries.
    assert_eq!(s.count(DOMAIN, "assets"), 4);
}

#[test]
fn full_text_on_a_searchable_field_uses_its_index_and_answers_the_same() {
    let s = Server::start();
    s.create_domain("plant");
    let resp = s
        .admin_in(DOMAIN, reqwest::Method::POST, "/svc/collections")
        .json(&json!({"name": "assets", "fields": [
            {"name": "name", "type": "string", "searchable": true}
        ]}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::CREATED);
    for (id, name) in [
        ("r1", "Main Pump 7"),
        ("r2", "Boiler room feed"),
        ("r3", "Spare pump"),
    ] {
        s.create_record(DOMAIN, "assets", &json!({"id": id, "name": name}));
    }
    check(&s, &[f("name", "@@", "string", "pump MAIN")], &["r1"]);
    check(&s, &[f("name", "@1@", "string", "pump")], &["r1", "r3"]);
    check(&s, &[f("name", "@@", "string", "pum")], &[]);
    check(
        &s,
        &[
            or(0, "name", "@@", "string", "boiler"),
            or(1, "name", "@@", "string", "spare"),
        ],
        &["r2", "r3"],
    );
}
