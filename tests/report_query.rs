//! `POST /svc/historian/query`: a read-only SQL SELECT over the active domain's historian and
//! tables, checked against values computed here; every forbidden statement, relation and
//! function refused with a sentence naming it; the time and row limits (422); permissions; and
//! a determined attempt to reach another domain's data.

mod common;

use common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const PLANT: &str = "domains:plant";
const BETA: &str = "domains:beta";
const TEMP: &str = "plant/line1/temp";
const SPEED: &str = "plant/line1/speed";
/// 2026-01-01T00:00:00Z in epoch milliseconds.
const T0: i64 = 1_767_225_600_000;

fn setup() -> Server {
    let server = Server::start();
    server.create_domain("plant");
    server.create_domain("beta");
    server.create_tag(PLANT, TEMP, true);
    server.create_tag(PLANT, SPEED, true);
    server.create_tag(BETA, "beta/secret", true);
    let mut mqtt = server.mqtt_admin(Proto::V5, Via::Tcp, "report-feed");
    for (i, v) in [20.0, 22.0, 27.0, 19.0].iter().enumerate() {
        let payload = json!({"value": v, "timestamp": T0 + i as i64 * 1000}).to_string();
        assert_eq!(mqtt.publish(TEMP, payload, 1, false), "Success");
    }
    for (i, v) in [100.0, 120.0].iter().enumerate() {
        let payload = json!({"value": v, "timestamp": T0 + i as i64 * 1000}).to_string();
        assert_eq!(mqtt.publish(SPEED, payload, 1, false), "Success");
    }
    let payload = json!({"value": 999, "timestamp": T0}).to_string();
    assert_eq!(mqtt.publish("beta/secret", payload, 1, false), "Success");
    server.create_record(
        PLANT,
        "orders",
        &json!({"id": "o1", "line": TEMP, "qty": 3}),
    );
    server.create_record(
        PLANT,
        "orders",
        &json!({"id": "o2", "line": SPEED, "qty": 5}),
    );
    server.create_record(BETA, "secrets", &json!({"id": "s1", "code": "hunter2"}));
    server
}

fn ask(server: &Server, token: &str, domain: &str, sql: &str) -> reqwest::blocking::Response {
    server
        .with_token_in(token, domain, Method::POST, "/svc/historian/query")
        .json(&json!({ "query": sql }))
        .send()
        .expect("POST query")
}

fn rows(server: &Server, sql: &str) -> Value {
    json_ok(
        ask(server, &server.admin_token(), PLANT, sql),
        StatusCode::OK,
    )
}

#[test]
fn aggregates_joins_and_windows_match_values_computed_here() {
    let s = setup();
    let by_topic = rows(
        &s,
        "SELECT topic, count(*) AS n, avg(value) AS mean, max(value) AS top, min(timestamp) AS first \
         FROM historian GROUP BY topic ORDER BY topic",
    );
    assert_eq!(
        by_topic,
        json!([
            {"topic": SPEED, "n": 2, "mean": 110.0, "top": 120.0, "first": "2026-01-01T00:00:00.000Z"},
            {"topic": TEMP, "n": 4, "mean": 22.0, "top": 27.0, "first": "2026-01-01T00:00:00.000Z"}
        ])
    );
    let joined = rows(
        &s,
        "SELECT o.id, o.qty, sum(h.value) * o.qty AS weighted FROM orders o \
         JOIN historian h ON h.topic = o.line GROUP BY o.id, o.qty ORDER BY o.id",
    );
    assert_eq!(
        joined,
        json!([
            {"id": "plant.orders:o1", "qty": 3, "weighted": 264.0},
            {"id": "plant.orders:o2", "qty": 5, "weighted": 1100.0}
        ])
    );
    let deltas = rows(
        &s,
        &format!(
            "WITH t AS (SELECT timestamp, value FROM historian WHERE topic = '{TEMP}') \
             SELECT value - lag(value) OVER (ORDER BY timestamp) AS delta FROM t ORDER BY timestamp"
        ),
    );
    assert_eq!(
        deltas,
        json!([{"delta": null}, {"delta": 2.0}, {"delta": 5.0}, {"delta": -8.0}])
    );
    let fields = rows(&s, "SELECT * FROM orders ORDER BY id LIMIT 1");
    let mut columns: Vec<&String> = fields[0].as_object().unwrap().keys().collect();
    columns.sort();
    assert_eq!(columns, ["created_dt", "id", "line", "qty", "updated_dt"]);
}

#[test]
fn forbidden_statements_relations_and_functions_are_400_naming_them() {
    let s = setup();
    let admin = s.admin_token();
    for (sql, needle) in [
        ("DELETE FROM orders", "only a SELECT"),
        ("UPDATE orders SET qty = 0", "only a SELECT"),
        ("DROP TABLE orders", "only a SELECT"),
        ("PRAGMA user_version = 7", "only a SELECT"),
        ("ATTACH DATABASE '/tmp/x.db' AS x", "only a SELECT"),
        ("SELECT 1; DELETE FROM orders", "one statement"),
        ("SELECT * FROM sqlite_master", "sqlite_master"),
        ("SELECT * FROM sqlite_schema", "sqlite_schema"),
        ("SELECT * FROM main.orders", "qualified name"),
        ("SELECT * FROM pragma_table_list()", "pragma_table_list"),
        ("SELECT load_extension('/tmp/evil')", "load_extension"),
        ("SELECT readfile('/etc/passwd')", "readfile"),
        ("SELECT * FROM nothing_here", "nothing_here"),
        // The engine's own sentence: SQLite's, or PostgreSQL's.
        (
            "SELECT nope FROM orders",
            if on_postgres() {
                "column \"nope\" does not exist"
            } else {
                "no such column"
            },
        ),
        ("SELECT * FROM historian WHERE topic = ?", "parameters"),
    ] {
        let resp = ask(&s, &admin, PLANT, sql);
        assert_error(resp, StatusCode::BAD_REQUEST, &[needle]);
    }
    assert_eq!(s.count(PLANT, "orders"), 2, "nothing was changed");
}

#[test]
fn another_domain_is_unreachable() {
    let s = setup();
    let admin = s.admin_token();
    let topics = rows(&s, "SELECT DISTINCT topic FROM historian ORDER BY topic");
    assert_eq!(topics, json!([{"topic": SPEED}, {"topic": TEMP}]));
    assert_eq!(
        rows(&s, "SELECT count(*) AS n FROM historian WHERE value = 999"),
        json!([{"n": 0}])
    );
    for (sql, needle) in [
        ("SELECT * FROM secrets", "secrets"),
        ("SELECT * FROM \"beta.secrets\"", "beta.secrets"),
        ("SELECT * FROM beta.secrets", "qualified name"),
        ("SELECT * FROM hist_points", "hist_points"),
        ("SELECT * FROM hist_series", "hist_series"),
        ("SELECT * FROM auth_users", "auth_users"),
        (
            "SELECT topic FROM historian UNION SELECT name FROM sqlite_master",
            "sqlite_master",
        ),
        (
            "SELECT (SELECT group_concat(data) FROM \"beta.secrets\")",
            "beta.secrets",
        ),
        (
            "WITH x AS (SELECT * FROM hist_points) SELECT * FROM x",
            "hist_points",
        ),
    ] {
        assert_error(
            ask(&s, &admin, PLANT, sql),
            StatusCode::BAD_REQUEST,
            &[needle],
        );
    }
    // In beta the same query sees beta's own values only.
    let beta = json_ok(
        ask(&s, &admin, BETA, "SELECT topic, value FROM historian"),
        StatusCode::OK,
    );
    assert_eq!(beta, json!([{"topic": "beta/secret", "value": 999}]));
}

#[test]
fn row_and_time_limits_are_422_saying_which() {
    let s = setup();
    let admin = s.admin_token();
    let many = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) \
                SELECT i FROM n";
    assert_error(
        ask(&s, &admin, PLANT, many),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["10000 rows"],
    );
    let exactly =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) \
                   SELECT i FROM n";
    assert_eq!(rows(&s, exactly).as_array().unwrap().len(), 10_000);
    let forever = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
                   SELECT count(*) FROM n";
    let started = std::time::Instant::now();
    assert_error(
        ask(&s, &admin, PLANT, forever),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["time limit"],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    // The server is fine afterwards.
    assert_eq!(rows(&s, "SELECT 1 AS one"), json!([{"one": 1}]));
}

#[test]
fn reports_need_read_access_to_what_they_name() {
    let s = setup();
    let historian_only = s.user_with_grants(PLANT, "analyst", &[("historian", "read", "*")]);
    let ok = ask(
        &s,
        &historian_only,
        PLANT,
        "SELECT count(*) AS n FROM historian",
    );
    assert_eq!(json_ok(ok, StatusCode::OK), json!([{"n": 6}]));
    let denied = ask(&s, &historian_only, PLANT, "SELECT * FROM orders");
    assert_error(denied, StatusCode::UNAUTHORIZED, &["orders"]);
    let nobody = s.user_with_grants(PLANT, "nobody", &[("collections", "read", "orders")]);
    let denied = ask(&s, &nobody, PLANT, "SELECT * FROM historian");
    assert_error(denied, StatusCode::UNAUTHORIZED, &["historian"]);
    assert_eq!(
        json_ok(
            ask(&s, &nobody, PLANT, "SELECT qty FROM orders ORDER BY qty"),
            StatusCode::OK
        ),
        json!([{"qty": 3}, {"qty": 5}])
    );
}
