//! Operations endpoints (issue 17): `GET /metrics` in the Prometheus text format needs an
//! administrator's credential unless `--metrics-public`; its values move when traffic flows
//! (HTTP requests by route template, never by raw path; MQTT connects, messages by QoS, bytes
//! and subscriptions; historian folds; function runs); `GET /healthz` and `GET /readyz`.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::Duration;

const ADMIN_DOMAIN: &str = "domains:svc_admin";

/// Scrapes until `series` exceeds `above` (values folded or run in the background).
fn wait_above(server: &Server, series: &str, above: f64) -> f64 {
    server.poll(Duration::from_secs(10), series, || {
        let value = sample(&server.scrape(), series);
        (value > above).then_some(value)
    })
}

#[test]
fn metrics_need_an_administrator_unless_public() {
    let server = Server::start();
    assert_error(
        server.req(Method::GET, "/metrics").send().unwrap(),
        StatusCode::UNAUTHORIZED,
        &["credential"],
    );
    server.create_domain("plant");
    let reader = server.user_with_grants("domains:plant", "reader", &[("tags", "read", "*")]);
    assert_error(
        server
            .with_token(&reader, Method::GET, "/metrics")
            .send()
            .unwrap(),
        StatusCode::UNAUTHORIZED,
        &["administrator"],
    );
    let text = server.scrape();
    assert!(
        text.contains("# TYPE svc_http_requests_total counter"),
        "{text}"
    );

    let public = Server::start_with(&["--metrics-public"]);
    let resp = public.req(Method::GET, "/metrics").send().unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.text().unwrap().contains("svc_mqtt_connections"));
}

#[test]
fn http_requests_are_counted_by_route_template() {
    let server = Server::start();
    server.load_fixtures();
    let series = r#"svc_http_requests_total{route="/svc/{table}/count",method="GET",status="200"}"#;
    let before = sample(&server.scrape(), series);
    for table in FIXTURE_TABLES {
        server.count(DEMO, table);
    }
    let missing = server
        .req(Method::GET, "/no/such/route/4711")
        .send()
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let text = server.scrape();
    assert_eq!(sample(&text, series) - before, 3.0, "{text}");
    let latency =
        r#"svc_http_request_duration_seconds_count{route="/svc/{table}/count",method="GET"}"#;
    assert!(sample(&text, latency) >= 3.0, "{text}");
    assert!(
        sample(
            &text,
            r#"svc_http_requests_total{route="unmatched",method="GET",status="404"}"#
        ) >= 1.0,
        "{text}"
    );
    // Raw paths never become labels. Only the labels are searched: a sample's
    // value (a latency sum such as 0.004711414) may hold any digits.
    let labels: Vec<&str> = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| Some(&line[line.find('{')?..=line.rfind('}')?]))
        .collect();
    assert!(!labels.is_empty(), "{text}");
    for raw in ["/svc/products/count", "/svc/orders/count", "4711"] {
        assert!(
            labels.iter().all(|set| !set.contains(raw)),
            "`{raw}` leaked into a label:\n{text}"
        );
    }
}

#[test]
fn mqtt_traffic_moves_the_broker_counters() {
    let server = Server::start();
    let before = server.scrape();
    let mut sub = server.mqtt_admin(Proto::V5, Via::Tcp, "metrics-sub");
    assert_eq!(sub.subscribe("plant/line1/#", 1), Some(1));
    let mut publisher = server.mqtt_admin(Proto::V3, Via::Tcp, "metrics-pub");
    for i in 0..3 {
        assert_eq!(
            publisher.publish("plant/line1/speed", i.to_string(), 1, false),
            "Success"
        );
    }
    for _ in 0..3 {
        sub.expect_publish("plant/line1/speed");
    }
    let refused = server.try_mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "bad").creds("admin", "nope"));
    assert!(refused.is_err());
    let text = server.scrape();
    let moved = |series: &str| sample(&text, series) - sample(&before, series);
    assert!(sample(&text, "svc_mqtt_connections") >= 2.0, "{text}");
    assert!(sample(&text, "svc_mqtt_sessions") >= 2.0, "{text}");
    assert!(sample(&text, "svc_mqtt_subscriptions") >= 1.0, "{text}");
    assert_eq!(moved("svc_mqtt_connects_total"), 2.0, "{text}");
    assert_eq!(moved("svc_mqtt_connects_refused_total"), 1.0, "{text}");
    assert_eq!(
        moved(r#"svc_mqtt_messages_received_total{qos="1"}"#),
        3.0,
        "{text}"
    );
    assert!(
        moved(r#"svc_mqtt_messages_sent_total{qos="1"}"#) >= 3.0,
        "{text}"
    );
    assert!(moved("svc_mqtt_received_bytes_total") > 0.0, "{text}");
    assert!(moved("svc_mqtt_sent_bytes_total") > 0.0, "{text}");
    assert!(
        text.contains(r#"svc_mqtt_messages_dropped_total{cause="slow_consumer"}"#),
        "{text}"
    );
    assert!(
        moved(r#"svc_logins_refused_total{surface="mqtt",outcome="failure"}"#) >= 1.0,
        "{text}"
    );
    sub.disconnect();
    publisher.disconnect();
}

#[test]
fn a_historized_publish_moves_the_historian_metrics() {
    let server = Server::start();
    server.create_domain("plant");
    server.create_tag("domains:plant", "plant/boiler/temp", true);
    let before = sample(&server.scrape(), "svc_historian_batch_values_count");
    let mut publisher = server.mqtt_admin(Proto::V5, Via::Tcp, "historian-pub");
    assert_eq!(
        publisher.publish("plant/boiler/temp", "71.5", 1, false),
        "Success"
    );
    wait_above(&server, "svc_historian_batch_values_count", before);
    let text = server.scrape();
    assert!(
        sample(&text, "svc_historian_batch_values_sum") >= 1.0,
        "{text}"
    );
    assert!(
        sample(&text, "svc_historian_commit_duration_seconds_count") >= 1.0,
        "{text}"
    );
    assert!(text.contains("svc_historian_queue_values "), "{text}");
    assert!(
        sample(
            &text,
            r#"svc_store_operation_duration_seconds_count{op="run"}"#
        ) >= 1.0,
        "{text}"
    );
    publisher.disconnect();
}

#[test]
fn a_function_run_moves_the_function_metrics() {
    let server = Server::start();
    let ok = r#"svc_runs_total{kind="function",outcome="success"}"#;
    let failed = r#"svc_runs_total{kind="function",outcome="failure"}"#;
    for (name, code) in [
        ("double", "function main(i) { return i * 2; }"),
        ("broken", "function main(i) { throw new Error('no'); }"),
    ] {
        let resp = server
            .admin_in(ADMIN_DOMAIN, Method::POST, "/svc/processes")
            .json(&json!({"name": name, "code": code}))
            .send()
            .unwrap();
        json_ok(resp, StatusCode::CREATED);
    }
    let before = server.scrape();
    let resp = server
        .admin_in(ADMIN_DOMAIN, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": "double", "input": 21}))
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK)["output"], json!(42));
    let resp = server
        .admin_in(ADMIN_DOMAIN, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": "broken", "input": 1}))
        .send()
        .unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());
    let text = server.scrape();
    assert_eq!(sample(&text, ok) - sample(&before, ok), 1.0, "{text}");
    assert_eq!(
        sample(&text, failed) - sample(&before, failed),
        1.0,
        "{text}"
    );
    let durations = r#"svc_run_duration_seconds_count{kind="function"}"#;
    assert_eq!(
        sample(&text, durations) - sample(&before, durations),
        2.0,
        "{text}"
    );
}

#[test]
fn health_and_readiness_answer_without_a_credential() {
    let server = Server::start();
    let resp = server.req(Method::GET, "/healthz").send().unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "content-type"), TEXT_PLAIN);
    assert_eq!(resp.text().unwrap(), "ok");
    let resp = server.req(Method::GET, "/readyz").send().unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.text().unwrap(), "ready");
    let text = server.scrape();
    assert!(
        sample(
            &text,
            r#"svc_http_requests_total{route="/readyz",method="GET",status="200"}"#
        ) >= 1.0,
        "{text}"
    );
    for state in ["connected", "connecting", "backoff", "error", "disabled"] {
        assert!(
            text.contains(&format!("svc_upstreams{{state=\"{state}\"}} 0")),
            "{text}"
        );
    }
}
