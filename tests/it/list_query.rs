//! List queries on `GET /svc/:table/all` and `/count` over the demo fixtures: every filter
//! operator in word and symbol form, every value type, `in`/`nin` as JSON array and comma list,
//! dot paths, `filter_or`, multi-key sort (missing fields sort as null), limit/offset, `fields`
//! and `expand`. Malformed queries are covered in `errors.rs`.

use crate::common::*;
use serde_json::{json, Value};

fn get_list(server: &Server, table: &str, qs: &str) -> Value {
    server.get_json(DEMO, &format!("/svc/{table}/all{qs}"))
}

/// Record keys of `/svc/<table>/all` with `pairs` (brackets literal), in response order.
fn list(server: &Server, table: &str, pairs: &[(&str, &str)]) -> Vec<String> {
    keys(&get_list(server, table, &query(pairs)))
}

/// Like [`list`] but sorted, for queries whose order is not under test.
fn set(server: &Server, table: &str, pairs: &[(&str, &str)]) -> Vec<String> {
    sorted_keys(&get_list(server, table, &query(pairs)))
}

/// Like [`set`] but with every key fully percent-encoded (`%5B`/`%5D` for brackets), as
/// `URLSearchParams` sends them.
fn set_encoded(server: &Server, table: &str, pairs: &[(&str, &str)]) -> Vec<String> {
    let qs: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect();
    sorted_keys(&get_list(server, table, &format!("?{}", qs.join("&"))))
}

fn demo() -> Server {
    let server = Server::start();
    server.load_fixtures();
    server
}

#[test]
fn all_returns_fixture_records_in_default_order() {
    let server = demo();
    let list = get_list(&server, "products", "");
    let want: Vec<String> = (1..=10).map(|i| format!("p{i:02}")).collect();
    assert_eq!(keys(&list), want);
    let fx = fixture();
    for (got, rec) in list
        .as_array()
        .unwrap()
        .iter()
        .zip(fx["records"]["products"].as_array().unwrap())
    {
        for (k, v) in rec.as_object().unwrap() {
            if k != "id" {
                assert_eq!(&got[k], v, "{} field {k}", rec["id"]);
            }
        }
        assert!(is_rfc3339_millis_utc(got["created_dt"].as_str().unwrap()));
    }
    assert!(list[8].get("released").is_none(), "p09 has no released");
}

#[test]
fn eq_and_ne_word_and_symbol() {
    let server = demo();
    let machinery = ["p04", "p07", "p08"];
    let others = ["p01", "p02", "p03", "p05", "p06", "p09", "p10"];
    for op in ["eq", "=", "=="] {
        let key = format!("filter[category][{op}][string]");
        assert_eq!(
            set(&server, "products", &[(&key, "machinery")]),
            machinery,
            "{op}"
        );
        assert_eq!(
            set_encoded(&server, "products", &[(&key, "machinery")]),
            machinery,
            "{op}"
        );
    }
    for op in ["ne", "!="] {
        let key = format!("filter[category][{op}][string]");
        assert_eq!(
            set(&server, "products", &[(&key, "machinery")]),
            others,
            "{op}"
        );
        assert_eq!(
            set_encoded(&server, "products", &[(&key, "machinery")]),
            others,
            "{op}"
        );
    }
    // Strings with spaces.
    assert_eq!(
        set(
            &server,
            "products",
            &[("filter[name][eq][string]", "Steel Bolt M8")]
        ),
        ["p01"]
    );
}

#[test]
fn numeric_comparisons_word_and_symbol() {
    let server = demo();
    let cases: [(&str, &str, &str, &[&str]); 9] = [
        ("gt", ">", "45", &["p04", "p05", "p08"]),
        ("gte", ">=", "45", &["p04", "p05", "p07", "p08"]),
        ("lt", "<", "3.75", &["p01", "p09"]),
        ("lte", "<=", "3.75", &["p01", "p03", "p09"]),
        ("eq", "==", "12.5", &["p02"]),
        (
            "ne",
            "!=",
            "45",
            &[
                "p01", "p02", "p03", "p04", "p05", "p06", "p08", "p09", "p10",
            ],
        ),
        ("gt", ">", "1299.99", &[]),
        ("gte", ">=", "1299.99", &["p04"]),
        ("lt", "<", "0", &[]),
    ];
    for (word, symbol, value, want) in cases {
        for op in [word, symbol] {
            let key = format!("filter[price][{op}][number]");
            assert_eq!(
                set(&server, "products", &[(&key, value)]),
                want,
                "price {op} {value}"
            );
            assert_eq!(
                set_encoded(&server, "products", &[(&key, value)]),
                want,
                "price {op} {value}"
            );
        }
    }
    // Numbers compare as numbers, not strings: 1000 > 200 > 60.
    assert_eq!(
        set(&server, "products", &[("filter[qty][gt][number]", "100")]),
        ["p01", "p06", "p09"]
    );
}

#[test]
fn contains_on_strings_and_arrays() {
    let server = demo();
    for op in ["contains", "CONTAINS"] {
        let key = format!("filter[name][{op}][string]");
        assert_eq!(set(&server, "products", &[(&key, "Pump")]), ["p04"], "{op}");
        assert_eq!(
            set(&server, "products", &[(&key, "Safety Glo")]),
            ["p06"],
            "{op}"
        );
        assert_eq!(
            set_encoded(&server, "products", &[(&key, "Valve")]),
            ["p08"],
            "{op}"
        );
        // LIKE wildcards are literal characters.
        let none = Vec::<String>::new();
        for literal in ["%", "_", "Steel%M8"] {
            assert_eq!(
                set(&server, "products", &[(&key, literal)]),
                none,
                "{op} {literal}"
            );
        }
        let sku = format!("filter[sku][{op}][string]");
        assert_eq!(set(&server, "products", &[(&sku, "SKU_00")]), none, "{op}");
        assert_eq!(set(&server, "products", &[(&sku, "U-01")]), ["p10"], "{op}");
        let key = format!("filter[tags][{op}][string]");
        assert_eq!(
            set(&server, "products", &[(&key, "electrical")]),
            ["p02", "p05", "p09"],
            "{op}"
        );
        assert_eq!(
            set(&server, "products", &[(&key, "elec")]),
            Vec::<String>::new(),
            "{op}"
        );
    }
}

#[test]
fn in_and_nin_as_json_array_and_comma_list() {
    let server = demo();
    for op in ["in", "IN"] {
        let key = format!("filter[sku][{op}][string]");
        for value in [r#"["SKU-001","SKU-004"]"#, "SKU-001,SKU-004"] {
            assert_eq!(
                set(&server, "products", &[(&key, value)]),
                ["p01", "p04"],
                "{op} {value}"
            );
            assert_eq!(
                set_encoded(&server, "products", &[(&key, value)]),
                ["p01", "p04"]
            );
        }
        let key = format!("filter[qty][{op}][number]");
        for value in ["[0,3,7]", "0,3,7"] {
            assert_eq!(
                set(&server, "products", &[(&key, value)]),
                ["p03", "p04", "p08"],
                "{op} {value}"
            );
        }
    }
    for op in ["nin", "NOT IN"] {
        let key = format!("filter[category][{op}][string]");
        for value in [r#"["hardware","machinery"]"#, "hardware,machinery"] {
            assert_eq!(
                set(&server, "products", &[(&key, value)]),
                ["p02", "p05", "p06", "p09"],
                "{op} {value}"
            );
            assert_eq!(
                set_encoded(&server, "products", &[(&key, value)]),
                ["p02", "p05", "p06", "p09"]
            );
        }
    }
}

#[test]
fn ne_and_nin_match_records_lacking_the_field() {
    let server = demo();
    let all_but_p01: Vec<String> = (2..=10).map(|i| format!("p{i:02}")).collect();
    assert_eq!(
        set(
            &server,
            "products",
            &[("filter[released][ne][date]", "2023-01-15T08:00:00.000Z")]
        ),
        all_but_p01
    );
    assert_eq!(
        set(
            &server,
            "sites",
            &[("filter[manager][nin][string]", "Ann Lee,Bob Stone")]
        ),
        ["s1", "s2"]
    );
}

#[test]
fn boolean_filters() {
    let server = demo();
    assert_eq!(
        set(
            &server,
            "products",
            &[("filter[in_stock][eq][boolean]", "false")]
        ),
        ["p03", "p07", "p10"]
    );
    assert_eq!(
        set(
            &server,
            "products",
            &[("filter[in_stock][==][boolean]", "true")]
        ),
        ["p01", "p02", "p04", "p05", "p06", "p08", "p09"]
    );
    assert_eq!(
        set(&server, "sites", &[("filter[active][ne][boolean]", "true")]),
        ["s2"]
    );
}

#[test]
fn date_filters_compare_as_time() {
    let server = demo();
    // 17:00+01:00 is 16:00Z, p05's release instant: gt excludes it, gte includes it.
    let t = "2023-07-04T17:00:00+01:00";
    assert_eq!(
        set(&server, "products", &[("filter[released][gt][date]", t)]),
        ["p04", "p07"]
    );
    assert_eq!(
        set(&server, "products", &[("filter[released][>=][date]", t)]),
        ["p04", "p05", "p07"]
    );
    assert_eq!(
        set(
            &server,
            "products",
            &[("filter[released][eq][date]", "2023-01-15T09:00:00+01:00")]
        ),
        ["p01"]
    );
    assert_eq!(
        set(
            &server,
            "products",
            &[("filter[released][lt][date]", "2021-01-01T00:00:00Z")]
        ),
        ["p10"]
    );
    assert_eq!(
        set(
            &server,
            "products",
            &[("filter[released][<=][date]", "2020-12-31T23:00:00.000Z")]
        ),
        ["p10"]
    );
}

#[test]
fn null_and_object_filters() {
    let server = demo();
    let nulls = set(&server, "sites", &[("filter[manager][eq][null]", "null")]);
    assert!(nulls.contains(&"s1".to_string()), "{nulls:?}");
    assert!(
        !nulls.contains(&"s3".to_string()) && !nulls.contains(&"s4".to_string()),
        "{nulls:?}"
    );
    assert_eq!(
        set(
            &server,
            "products",
            &[("filter[dims][eq][object]", r#"{"h":40,"w":8}"#)]
        ),
        ["p01"]
    );
    assert_eq!(
        set(
            &server,
            "sites",
            &[(
                "filter[location][eq][object]",
                r#"{"lat":59.91,"lon":10.75}"#
            )]
        ),
        ["s1"]
    );
}

#[test]
fn omitted_type_is_inferred() {
    let server = demo();
    assert_eq!(
        set(&server, "products", &[("filter[qty][gt]", "100")]),
        ["p01", "p06", "p09"]
    );
    assert_eq!(
        set(&server, "products", &[("filter[category][eq]", "safety")]),
        ["p06"]
    );
    assert_eq!(
        set(&server, "products", &[("filter[in_stock][eq]", "false")]),
        ["p03", "p07", "p10"]
    );
}

#[test]
fn dot_paths_filter_and_sort() {
    let server = demo();
    assert_eq!(
        set(&server, "products", &[("filter[dims.w][gt][number]", "50")]),
        ["p04", "p08", "p10"]
    );
    assert_eq!(
        set(
            &server,
            "products",
            &[("filter[dims.h][lte][number]", "20")]
        ),
        ["p03", "p09"]
    );
    assert_eq!(
        set(
            &server,
            "sites",
            &[("filter[location.lat][lt][number]", "45")]
        ),
        ["s2", "s4"]
    );
    assert_eq!(
        list(
            &server,
            "products",
            &[("sort", "[dims.w][desc]"), ("limit", "3")]
        ),
        ["p04", "p08", "p10"]
    );
}

#[test]
fn filters_are_anded_and_filter_or_is_one_group() {
    let server = demo();
    assert_eq!(
        set(
            &server,
            "products",
            &[
                ("filter[category][eq][string]", "electrical"),
                ("filter[price][gt][number]", "10")
            ]
        ),
        ["p02", "p05"]
    );
    assert_eq!(
        set(
            &server,
            "products",
            &[
                ("filter_or[0][sku][eq][string]", "SKU-003"),
                ("filter_or[1][sku][eq][string]", "SKU-008")
            ]
        ),
        ["p03", "p08"]
    );
    // (hardware OR safety) AND in_stock.
    assert_eq!(
        set(
            &server,
            "products",
            &[
                ("filter_or[0][category][eq][string]", "hardware"),
                ("filter_or[1][category][eq][string]", "safety"),
                ("filter[in_stock][eq][boolean]", "true"),
            ]
        ),
        ["p01", "p06"]
    );
}

#[test]
fn sort_single_and_multi_key() {
    let server = demo();
    assert_eq!(
        list(&server, "products", &[("sort", "[price][desc]")]),
        ["p04", "p08", "p05", "p07", "p10", "p02", "p06", "p03", "p09", "p01"]
    );
    assert_eq!(
        list(&server, "products", &[("sort", "[name][asc]")]),
        ["p09", "p08", "p02", "p07", "p04", "p05", "p03", "p06", "p10", "p01"]
    );
    assert_eq!(
        list(
            &server,
            "products",
            &[("sort", "[category][asc]"), ("sort", "[price][desc]")]
        ),
        ["p05", "p02", "p09", "p10", "p03", "p01", "p04", "p08", "p07", "p06"]
    );
    assert_eq!(
        list(
            &server,
            "products",
            &[("sort", "[category][desc]"), ("sort", "[qty][asc]")]
        ),
        ["p06", "p04", "p08", "p07", "p03", "p10", "p01", "p05", "p02", "p09"]
    );
}

#[test]
fn missing_sort_field_sorts_as_null() {
    let server = demo();
    // p09 has no `released`: first ascending, last descending.
    assert_eq!(
        list(&server, "products", &[("sort", "[released][asc]")]),
        ["p09", "p10", "p06", "p08", "p03", "p01", "p02", "p05", "p04", "p07"]
    );
    assert_eq!(
        list(&server, "products", &[("sort", "[released][desc]")]),
        ["p07", "p04", "p05", "p02", "p01", "p03", "p08", "p06", "p10", "p09"]
    );
}

#[test]
fn limit_and_offset() {
    let server = demo();
    assert_eq!(list(&server, "products", &[("limit", "2")]), ["p01", "p02"]);
    assert_eq!(
        list(&server, "products", &[("offset", "8")]),
        ["p09", "p10"]
    );
    assert_eq!(
        list(
            &server,
            "products",
            &[("sort", "[price][asc]"), ("limit", "3"), ("offset", "2")]
        ),
        ["p03", "p06", "p02"]
    );
    assert_eq!(
        list(&server, "products", &[("offset", "50")]),
        Vec::<String>::new()
    );
    assert_eq!(list(&server, "products", &[("limit", "10000")]).len(), 10);
}

#[test]
fn fields_projection_keeps_id() {
    let server = demo();
    let rows = get_list(
        &server,
        "products",
        &query(&[
            ("fields", "name,price"),
            ("filter[category][eq][string]", "machinery"),
        ]),
    );
    assert_eq!(keys(&rows), ["p04", "p07", "p08"]);
    for row in rows.as_array().unwrap() {
        let mut members: Vec<&str> = row
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        members.sort();
        assert_eq!(members, ["id", "name", "price"], "{row}");
    }
    assert_eq!(rows[0]["name"], json!("Industrial Pump X200"));
    assert_eq!(rows[0]["price"], json!(1299.99));
    let rows = get_list(&server, "sites", &query(&[("fields", "city")]));
    assert_eq!(rows.as_array().unwrap().len(), 4);
    assert_eq!(rows[0], json!({"id": "demo.sites:s1", "city": "Oslo"}));
}

#[test]
fn expand_replaces_record_ids() {
    let server = demo();
    let plain = get_list(&server, "orders", "");
    assert_eq!(plain[0]["product"], json!("demo.products:p01"));
    let rows = get_list(&server, "orders", &query(&[("expand", "product")]));
    assert_eq!(keys(&rows), ["o1", "o2", "o3", "o4", "o5"]);
    assert_eq!(rows[0]["product"]["id"], json!("demo.products:p01"));
    assert_eq!(rows[0]["product"]["sku"], json!("SKU-001"));
    assert_eq!(rows[1]["product"]["name"], json!("Industrial Pump X200"));
    assert_eq!(rows[0]["site"], json!("demo.sites:s1"), "site not expanded");
    assert_eq!(
        rows[4]["items"],
        json!(["demo.products:p02", "demo.products:p03"])
    );

    let rows = get_list(
        &server,
        "orders",
        &query(&[("expand", "product,site,items")]),
    );
    assert_eq!(rows[0]["site"]["city"], json!("Oslo"));
    assert_eq!(rows[3]["site"]["id"], json!("demo.sites:s4"));
    let items = rows[4]["items"].as_array().expect("items stays an array");
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["id"], json!("demo.products:p02"));
    assert_eq!(items[1]["sku"], json!("SKU-003"));
    assert!(rows[4].get("site").is_none(), "absent field stays absent");
    assert_eq!(rows[0]["quantity"], json!(100));
}

#[test]
fn count_honours_filters() {
    let server = demo();
    let count = |qs: &str| server.get_json(DEMO, &format!("/svc/products/count{qs}"));
    assert_eq!(count(""), json!({"count": 10}));
    assert_eq!(
        count(&query(&[("filter[category][eq][string]", "electrical")])),
        json!({"count": 3})
    );
    assert_eq!(
        count(&query(&[
            ("filter[price][>][number]", "45"),
            ("filter[in_stock][eq][boolean]", "true")
        ])),
        json!({"count": 3})
    );
    assert_eq!(
        count(&query(&[
            ("filter_or[0][category][eq][string]", "safety"),
            ("filter_or[1][tags][contains][string]", "rubber"),
        ])),
        json!({"count": 3})
    );
    assert_eq!(
        count(&query(&[("filter[sku][eq][string]", "nope")])),
        json!({"count": 0})
    );
    assert_eq!(
        server.get_json(DEMO, "/svc/sites/count"),
        json!({"count": 4})
    );
    assert_eq!(
        server.get_json(DEMO, "/svc/orders/count"),
        json!({"count": 5})
    );
}

#[test]
fn get_by_id_expands_and_projects_like_the_list() {
    let server = demo();
    let one = |qs: &str| server.get_json(DEMO, &format!("{}{qs}", rec_path("demo.orders:o5")));
    let plain = one("");
    assert_eq!(plain["product"], json!("demo.products:p08"));
    let expanded = one(&query(&[("expand", "product,items")]));
    assert_eq!(expanded["product"]["id"], json!("demo.products:p08"));
    assert_eq!(expanded["product"]["sku"], json!("SKU-008"));
    assert_eq!(expanded["items"][1]["sku"], json!("SKU-003"));
    assert_eq!(expanded["quantity"], plain["quantity"]);
    let projected = one(&query(&[("expand", "product"), ("fields", "product")]));
    assert_eq!(
        projected.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["id", "product"]
    );
    assert_eq!(projected["product"]["id"], json!("demo.products:p08"));
    let resp = server
        .admin_in(
            DEMO,
            reqwest::Method::GET,
            &format!("{}?limit=3", rec_path("demo.orders:o5")),
        )
        .send()
        .unwrap();
    assert_error(
        resp,
        reqwest::StatusCode::BAD_REQUEST,
        &["`limit`", "one record"],
    );
}
