//! `POST /svc/historian/query`: a read-only SQL SELECT over the active domain's historian and
//! tables, checked against values computed here; every forbidden statement, relation and
//! function refused with a sentence naming it; the time and row limits (422); permissions; and
//! a determined attempt to reach another domain's data; and the `historian` relation over
//! points closed into compressed blocks (issue 33), on both engines.

use crate::common::*;
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

// ---- The historian relation over compressed blocks ----

const TEMP2: &str = "plant/line2/temp";
const SPEED2: &str = "plant/line2/speed";
const STATE2: &str = "plant/line2/state";
const BETA2: &str = "beta/line2/temp";
const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

/// The relation's `timestamp` text of a time.
fn ts_text(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("a time")
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// Points published, as (topic, ms, value).
type Points = Vec<(&'static str, i64, Value)>;

/// Each tag's points from `base`, a minute apart: two-decimal temperatures, integer speeds,
/// and states that are strings, objects and booleans; beta's temperature is always 9999.
fn series(base: i64, n: i64, salt: i64) -> Points {
    let mut points = Points::new();
    for i in 0..n {
        let ts = base + i * MINUTE;
        let temp = (2000 + (i * 37 + salt * 11) % 1000) as f64 / 100.0;
        points.push((TEMP2, ts, json!(temp)));
        points.push((SPEED2, ts, json!(100 + (i * 7 + salt) % 50)));
        let state = match i % 3 {
            0 => json!(if i % 2 == 0 { "run" } else { "stop" }),
            1 => json!({"mode": "auto", "n": i}),
            _ => json!(i % 2 == 0),
        };
        points.push((STATE2, ts, state));
        points.push((BETA2, ts, json!(9999)));
    }
    points
}

fn publish(mqtt: &mut Mqtt, points: &Points) {
    for (topic, ts, value) in points {
        let payload = json!({"value": value, "timestamp": ts}).to_string();
        assert_eq!(mqtt.publish(topic, payload, 1, false), "Success");
    }
}

/// Waits until every point published so far sits in a block (`hist_blocks` counts them all
/// and no hot row is left).
fn wait_all_in_blocks(s: &Server, points: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let sealed = s.store_sql(
            "SELECT coalesce(sum(count), 0) FROM hist_blocks",
            "SELECT coalesce(sum(count), 0) FROM hist_blocks",
        );
        let hot = s.store_sql(
            "SELECT count(*) FROM hist_points",
            "SELECT count(*) FROM hist_points",
        );
        if sealed == Some(points.to_string()) && hot.as_deref() == Some("0") {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{sealed:?} of {points} points in blocks, {hot:?} hot rows"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Count, sum, min, max and mean of a numeric topic's points whose timestamp text passes
/// `keep` (the test's own text comparison, as SQL compares it).
fn expected_stats(points: &Points, topic: &str, keep: impl Fn(&str) -> bool) -> Value {
    let values: Vec<f64> = points
        .iter()
        .filter(|(t, ts, _)| *t == topic && keep(&ts_text(*ts)))
        .map(|(_, _, v)| v.as_f64().expect("a number"))
        .collect();
    let sum: f64 = values.iter().sum();
    json!({
        "topic": topic,
        "n": values.len(),
        "total": sum,
        "lo": values.iter().copied().fold(f64::INFINITY, f64::min),
        "hi": values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        "mean": sum / values.len() as f64,
    })
}

/// Numbers compared to 1e-9 of their size (sums run in another order, or exactly), the rest
/// exactly.
fn assert_close(got: &Value, want: &Value, what: &str) {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) => {
            let (g, w) = (g.as_f64().unwrap(), w.as_f64().unwrap());
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{what}: {g} vs {w}"
            );
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (g, w) in g.iter().zip(w) {
                assert_close(g, w, what);
            }
        }
        (Value::Object(g), Value::Object(w)) if g.len() == w.len() => {
            for (key, w) in w {
                assert_close(&g[key], w, &format!("{what}.{key}"));
            }
        }
        _ => assert_eq!(got, want, "{what}"),
    }
}

/// A state value as the relation shows it: SQLite's `value` (strings, JSON text, 1/0), or
/// PostgreSQL's `value_json` (the JSON itself).
fn state_as_sql(value: &Value) -> Value {
    match value {
        _ if on_postgres() => value.clone(),
        Value::Bool(b) => json!(i64::from(*b)),
        Value::Object(_) => json!(value.to_string()),
        other => other.clone(),
    }
}

/// Aggregates and rows of the SQL route over `points` (every plant point stored), checked
/// against values computed here, plus beta's points never showing.
fn check_reports_over(s: &Server, points: &Points) {
    let plant: Points = points.iter().filter(|p| p.0 != BETA2).cloned().collect();
    // A range that straddles the blocks of both rounds (text bounds with milliseconds).
    let (from, to) = (
        ts_text(T0 + 100 * MINUTE),
        ts_text(T0 + 3 * HOUR + 30 * MINUTE),
    );
    let got = rows(
        s,
        &format!(
            "SELECT topic, count(*) AS n, sum(value) AS total, min(value) AS lo, \
             max(value) AS hi, avg(value) AS mean FROM historian \
             WHERE topic IN ('{SPEED2}', '{TEMP2}') AND timestamp >= '{from}' \
             AND timestamp < '{to}' GROUP BY topic ORDER BY topic"
        ),
    );
    let keep = |t: &str| t >= from.as_str() && t < to.as_str();
    let want = json!([
        expected_stats(&plant, SPEED2, keep),
        expected_stats(&plant, TEMP2, keep)
    ]);
    assert_close(&got, &want, "straddling range");
    // Bounds without milliseconds compare as text: '…00:05:00Z' sorts after '…00:05:00.000Z'.
    let (after, upto) = ("2026-01-01T00:05:00Z", "2026-01-01T05:03");
    let got = rows(
        s,
        &format!(
            "SELECT h.topic AS topic, count(*) AS n, sum(h.value) AS total, min(h.value) AS lo, \
             max(h.value) AS hi, avg(h.value) AS mean FROM historian AS h \
             WHERE h.timestamp > '{after}' AND '{upto}' >= h.timestamp AND h.topic = '{TEMP2}' \
             GROUP BY h.topic"
        ),
    );
    let want = json!([expected_stats(&plant, TEMP2, |t| t > after && t <= upto)]);
    assert_close(&got, &want, "text bounds");
    // Everything, with no condition to push down.
    let got = rows(
        s,
        "SELECT topic, count(*) AS n FROM historian GROUP BY topic ORDER BY topic",
    );
    let count = |topic| plant.iter().filter(|p| p.0 == topic).count();
    assert_eq!(
        got,
        json!([
            {"topic": SPEED2, "n": count(SPEED2)},
            {"topic": STATE2, "n": count(STATE2)},
            {"topic": TEMP2, "n": count(TEMP2)}
        ])
    );
    // Rows of every kind, in order, across the end of one round and the start of the next.
    let column = if on_postgres() { "value_json" } else { "value" };
    for (lo, hi) in [
        (T0, T0 + 12 * MINUTE),
        (T0 + 115 * MINUTE, T0 + 3 * HOUR + 5 * MINUTE),
    ] {
        let got = rows(
            s,
            &format!(
                "SELECT timestamp, {column} AS value FROM historian WHERE topic = '{STATE2}' \
                 AND timestamp BETWEEN '{}' AND '{}' ORDER BY timestamp",
                ts_text(lo),
                ts_text(hi)
            ),
        );
        let mut want: Vec<&(&str, i64, Value)> = plant
            .iter()
            .filter(|(t, ts, _)| *t == STATE2 && (lo..=hi).contains(ts))
            .collect();
        want.sort_by_key(|p| p.1);
        let want: Vec<Value> = want
            .iter()
            .map(|(_, ts, v)| json!({"timestamp": ts_text(*ts), "value": state_as_sql(v)}))
            .collect();
        assert!(want.len() > 5);
        assert_eq!(got, Value::Array(want), "rows {lo}..={hi}");
    }
    // Beta's points are in the same blocks' table at the same times, and never here.
    assert_eq!(
        rows(s, "SELECT count(*) AS n FROM historian WHERE value = 9999"),
        json!([{"n": 0}])
    );
    let beta = json_ok(
        ask(
            s,
            &s.admin_token(),
            BETA,
            &format!("SELECT topic, count(*) AS n, min(value) AS lo FROM historian WHERE timestamp >= '{from}' GROUP BY topic"),
        ),
        StatusCode::OK,
    );
    let n = points
        .iter()
        .filter(|(t, ts, _)| *t == BETA2 && ts_text(*ts) >= from)
        .count();
    assert_eq!(beta, json!([{"topic": BETA2, "n": n, "lo": 9999}]));
}

#[test]
fn the_historian_relation_reads_points_closed_into_blocks() {
    let s = Server::start_with(&["--historian-seal-idle", "1s"]);
    s.create_domain("plant");
    s.create_domain("beta");
    for topic in [TEMP2, SPEED2, STATE2] {
        s.create_tag(PLANT, topic, true);
    }
    s.create_tag(BETA, BETA2, true);
    let mut mqtt = s.mqtt_admin(Proto::V5, Via::Tcp, "blocks-feed");
    // Two rounds, each closed into blocks before the next is written: every series then has
    // points from both in blocks, whatever sizes blocks are closed at (both rounds lie in one
    // UTC day, so once it is closed they are merged into one block in pages a series).
    let mut points = series(T0, 120, 0);
    publish(&mut mqtt, &points);
    wait_all_in_blocks(&s, points.len());
    let second = series(T0 + 3 * HOUR, 120, 1);
    publish(&mut mqtt, &second);
    points.extend(second);
    wait_all_in_blocks(&s, points.len());
    let blocks = s.store_sql(
        "SELECT count(*) FROM hist_blocks",
        "SELECT count(*) FROM hist_blocks",
    );
    assert!(blocks.and_then(|n| n.parse::<u32>().ok()).unwrap_or(0) >= 4);
    check_reports_over(&s, &points);
    // Late points among the first round's blocks and newer ones, checked while they are
    // (likely) still hot rows and again once they are closed into blocks too.
    let mut third = series(T0 + 30_000, 10, 2);
    third.extend(series(T0 + 5 * HOUR, 10, 3));
    publish(&mut mqtt, &third);
    points.extend(third);
    check_reports_over(&s, &points);
    wait_all_in_blocks(&s, points.len());
    check_reports_over(&s, &points);
}
