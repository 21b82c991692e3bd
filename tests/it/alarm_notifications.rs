//! Alarm notification pipelines (issue 37) against real peers: an SMTP server (Python's
//! aiosmtpd, tests/peers/smtp_sink.py, which prints each message it accepts) and an HTTP
//! webhook receiver inside the test (axum on port 0) that can be made to answer 500 and then
//! recover. Alarms are raised by writing their tags through `POST /svc/tag/write`. Covered:
//! delivery by webhook and by mail with their content, retries across a receiver outage and an
//! svc restart with nothing lost, the rate limit folding the rest into a digest, a burst as one
//! digest mail, escalation of an unacknowledged alarm (and none for an acknowledged one), the
//! write-only SMTP password, bad records refused with a 400 naming the field, and /metrics.

use crate::alarms::{act, alarm, setup, wait_state, ACME};
use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TABLE: &str = "alarm_notifications";
const WAIT: Duration = Duration::from_secs(20);

/// A webhook receiver: records every request (path, JSON body, the status it answered).
struct Hook {
    _runtime: tokio::runtime::Runtime,
    port: u16,
    failing: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<(String, Value, u16)>>>,
}

impl Hook {
    fn start() -> Hook {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the webhook receiver");
        let failing = Arc::new(AtomicBool::new(false));
        let requests: Arc<Mutex<Vec<(String, Value, u16)>>> = Arc::default();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind the webhook receiver");
        let port = listener.local_addr().unwrap().port();
        let (fail, seen) = (failing.clone(), requests.clone());
        let app =
            axum::Router::new().fallback(move |uri: axum::http::Uri, body: axum::body::Bytes| {
                let (fail, seen) = (fail.clone(), seen.clone());
                async move {
                    let status = if fail.load(Ordering::SeqCst) {
                        500
                    } else {
                        200
                    };
                    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    seen.lock()
                        .unwrap()
                        .push((uri.path().to_string(), json, status));
                    axum::http::StatusCode::from_u16(status).unwrap()
                }
            });
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Hook {
            _runtime: runtime,
            port,
            failing,
            requests,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn fail(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// The bodies answered 200 on `path`.
    fn delivered(&self, path: &str) -> Vec<Value> {
        let requests = self.requests.lock().unwrap();
        requests
            .iter()
            .filter(|(p, _, status)| p == path && *status == 200)
            .map(|(_, body, _)| body.clone())
            .collect()
    }

    fn refused(&self) -> usize {
        let requests = self.requests.lock().unwrap();
        requests
            .iter()
            .filter(|(_, _, status)| *status != 200)
            .count()
    }
}

fn smtp_sink(port: u16) -> DevicePeer {
    DevicePeer::python_at(port, "smtp_sink.py", &[])
}

/// Every message the SMTP sink accepted so far: `{mail_from, rcpt_tos, data}`.
fn mails(sink: &DevicePeer) -> Vec<Value> {
    let lines = sink.output.lock().unwrap();
    lines
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m.get("data").is_some())
        .collect()
}

fn mails_to(sink: &DevicePeer, to: &str) -> Vec<String> {
    mails(sink)
        .into_iter()
        .filter(|m| m["rcpt_tos"] == json!([to]))
        .map(|m| m["data"].as_str().unwrap().replace("\r\n", "\n"))
        .collect()
}

fn wait_mails(server: &Server, sink: &DevicePeer, to: &str, count: usize) -> Vec<String> {
    server.poll(WAIT, &format!("{count} mails to {to}"), || {
        let got = mails_to(sink, to);
        (got.len() >= count).then_some(got)
    })
}

fn wait_hooks(server: &Server, hook: &Hook, path: &str, count: usize) -> Vec<Value> {
    server.poll(WAIT, &format!("{count} webhook calls on {path}"), || {
        let got = hook.delivered(path);
        (got.len() >= count).then_some(got)
    })
}

fn email(port: u16, to: &[&str]) -> Value {
    json!({"host": "127.0.0.1", "port": port, "tls": "none", "from": "svc@plant.test", "to": to})
}

fn pipeline(server: &Server, body: Value) -> Value {
    server.create_record(ACME, TABLE, &body)
}

fn write(server: &Server, topic: &str, value: Value) {
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/tag/write")
        .json(&json!({"topic": topic, "value": value}))
        .send()
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.text().unwrap());
}

/// A `high` alarm `name` on `tag` above `setpoint`.
fn high(server: &Server, name: &str, tag: &str, setpoint: i64) {
    alarm(
        server,
        json!({"name": name, "tag": tag, "kind": "high", "setpoint": setpoint, "priority": "high"}),
    );
}

fn queued_rows(server: &Server) -> u64 {
    let sql = "SELECT COUNT(*) FROM alarm_notification_queue";
    server.store_sql(sql, sql).unwrap().parse().unwrap()
}

/// Waits long enough for anything more to have arrived, then checks nothing did.
fn settle() {
    std::thread::sleep(Duration::from_millis(1500));
}

#[test]
fn a_raised_alarm_is_delivered_by_webhook_and_by_mail() {
    let server = setup();
    let hook = Hook::start();
    let sink = smtp_sink(0);
    server.create_record(
        ACME,
        "tags",
        &json!({"path": "acme/plant/temp", "unit": "degC"}),
    );
    pipeline(
        &server,
        json!({"name": "ops", "webhook": {"url": hook.url("/alarm"), "headers": {"X-Token": "t0k"}},
               "email": email(sink.port, &["ops@plant.test"])}),
    );
    alarm(
        &server,
        json!({"name": "boiler_hot", "tag": "acme/plant/temp", "kind": "high", "setpoint": 80,
               "priority": "critical", "message": "boiler at {value} {unit}"}),
    );
    write(&server, "acme/plant/temp", json!(97.5));
    let calls = wait_hooks(&server, &hook, "/alarm", 1);
    let call = &calls[0];
    assert_eq!(call["type"], "alarm", "{call}");
    assert_eq!(call["domain"], "acme");
    assert_eq!(call["pipeline"], "ops");
    let event = &call["event"];
    assert_eq!(
        (
            event["alarm"].as_str(),
            event["state"].as_str(),
            event["value"].as_f64()
        ),
        (
            Some("boiler_hot"),
            Some("active_unacknowledged"),
            Some(97.5)
        )
    );
    assert_eq!(event["unit"], "degC");
    let mail = &wait_mails(&server, &sink, "ops@plant.test", 1)[0];
    for needle in [
        "Subject: [svc] critical alarm boiler_hot: active_unacknowledged",
        "From: svc@plant.test",
        "To: ops@plant.test",
        "Alarm:    boiler_hot",
        "State:    active_unacknowledged (was normal; raised)",
        "Priority: critical",
        "Tag:      acme/plant/temp",
        "Value:    97.5 degC (quality good)",
        "Message:  boiler at 97.5 degC",
        "Time:     ",
    ] {
        assert!(
            mail.contains(needle),
            "`{needle}` is not in the mail:\n{mail}"
        );
    }
    // Back to normal after an acknowledgement: one more of each, saying so.
    json_ok(
        act(
            &server,
            "acknowledge",
            json!({"alarm": "boiler_hot", "comment": "valve opened"}),
        ),
        StatusCode::OK,
    );
    write(&server, "acme/plant/temp", json!(20));
    wait_state(&server, ACME, "boiler_hot", "normal");
    let calls = wait_hooks(&server, &hook, "/alarm", 2);
    assert_eq!(calls[1]["event"]["state"], "normal");
    let mails = wait_mails(&server, &sink, "ops@plant.test", 2);
    assert!(mails[1].contains("State:    normal"), "{}", mails[1]);
    settle();
    assert_eq!(
        hook.delivered("/alarm").len(),
        2,
        "the acknowledgement is not a state the pipeline notifies"
    );
    let metrics = server.scrape();
    assert_eq!(
        sample(&metrics, "svc_alarm_notifications_sent_total"),
        4.0,
        "{metrics}"
    );
    assert_eq!(sample(&metrics, "svc_alarm_notifications_queued"), 0.0);
    assert_eq!(queued_rows(&server), 0);
}

#[test]
fn notifications_are_retried_until_the_receivers_are_back_even_across_a_restart() {
    let mut server = setup();
    let hook = Hook::start();
    hook.fail(true);
    // The mail server is not there yet: svc finds its port closed.
    let smtp_port = free_port();
    pipeline(
        &server,
        json!({"name": "ops", "webhook": {"url": hook.url("/alarm")},
               "email": email(smtp_port, &["ops@plant.test"])}),
    );
    high(&server, "hot", "acme/plant/temp", 80);
    write(&server, "acme/plant/temp", json!(95));
    // Each message failed twice (the second try a backoff later), and both wait in the queue.
    server.poll(WAIT, "two failed attempts of each message", || {
        let metrics = server.scrape();
        let failed = sample(&metrics, "svc_alarm_notifications_failed_total");
        let queued = sample(&metrics, "svc_alarm_notifications_queued");
        (hook.refused() >= 2 && failed >= 4.0 && queued == 2.0).then_some(())
    });
    assert_eq!(
        queued_rows(&server),
        2,
        "both messages are in the durable queue"
    );
    server.terminate();
    server.restart();
    hook.fail(false);
    let sink = smtp_sink(smtp_port);
    let calls = wait_hooks(&server, &hook, "/alarm", 1);
    assert_eq!(calls[0]["event"]["alarm"], "hot");
    let mails = wait_mails(&server, &sink, "ops@plant.test", 1);
    assert!(mails[0].contains("Alarm:    hot"), "{}", mails[0]);
    server.poll(WAIT, "an empty queue", || {
        (queued_rows(&server) == 0).then_some(())
    });
    settle();
    assert_eq!(
        (
            hook.delivered("/alarm").len(),
            mails_to(&sink, "ops@plant.test").len()
        ),
        (1, 1)
    );
}

#[test]
fn over_the_rate_limit_a_recipient_gets_the_rest_in_one_digest() {
    let server = setup();
    let sink = smtp_sink(0);
    pipeline(
        &server,
        json!({"name": "ops", "email": email(sink.port, &["a@plant.test", "b@plant.test"]),
               "rate_limit": {"count": 2, "per": "8s"}}),
    );
    for i in 0..5 {
        high(&server, &format!("a{i}"), &format!("acme/plant/t{i}"), 10);
    }
    for i in 0..5 {
        write(&server, &format!("acme/plant/t{i}"), json!(50));
        wait_state(&server, ACME, &format!("a{i}"), "active_unacknowledged");
    }
    for to in ["a@plant.test", "b@plant.test"] {
        wait_mails(&server, &sink, to, 2);
    }
    settle();
    for to in ["a@plant.test", "b@plant.test"] {
        let first = mails_to(&sink, to);
        assert_eq!(
            first.len(),
            2,
            "at most the limit within the period: {first:?}"
        );
        for name in ["a0", "a1"] {
            let alarm = format!("Alarm:    {name}\n");
            assert!(
                first.iter().any(|m| m.contains(&alarm)),
                "{name}: {first:?}"
            );
        }
    }
    assert_eq!(
        sample(&server.scrape(), "svc_alarm_notifications_held"),
        6.0
    );
    for to in ["a@plant.test", "b@plant.test"] {
        let all = wait_mails(&server, &sink, to, 3);
        let digest = &all[2];
        assert!(
            digest.contains("Subject: [svc] 3 alarm notifications of acme"),
            "{digest}"
        );
        for name in ["a2", "a3", "a4"] {
            assert!(
                digest.contains(&format!("Alarm:    {name}")),
                "{name} missing:\n{digest}"
            );
        }
    }
    settle();
    assert_eq!(mails(&sink).len(), 6, "nothing more, nothing lost");
}

#[test]
fn alarms_raised_together_go_as_one_digest() {
    let server = setup();
    let sink = smtp_sink(0);
    let hook = Hook::start();
    pipeline(
        &server,
        json!({"name": "ops", "email": email(sink.port, &["ops@plant.test"]),
               "webhook": {"url": hook.url("/digest")}, "digest": {"window": "2s", "min": 3}}),
    );
    for (i, setpoint) in [10, 20, 30, 40].into_iter().enumerate() {
        high(&server, &format!("level{i}"), "acme/plant/level", setpoint);
    }
    write(&server, "acme/plant/level", json!(50));
    let mails = wait_mails(&server, &sink, "ops@plant.test", 1);
    let digest = &mails[0];
    assert!(
        digest.contains("Subject: [svc] 4 alarm notifications of acme"),
        "{digest}"
    );
    for i in 0..4 {
        assert!(
            digest.contains(&format!("Alarm:    level{i}")),
            "level{i}:\n{digest}"
        );
    }
    let calls = wait_hooks(&server, &hook, "/digest", 1);
    assert_eq!(
        (calls[0]["type"].as_str(), calls[0]["count"].as_u64()),
        (Some("digest"), Some(4))
    );
    settle();
    assert_eq!(
        (
            mails_to(&sink, "ops@plant.test").len(),
            hook.delivered("/digest").len()
        ),
        (1, 1)
    );
}

#[test]
fn an_alarm_left_unacknowledged_escalates_and_an_acknowledged_one_does_not() {
    let server = setup();
    let sink = smtp_sink(0);
    let hook = Hook::start();
    pipeline(
        &server,
        json!({"name": "ops", "email": email(sink.port, &["ops@plant.test"]),
               "states": ["active_unacknowledged"],
               "escalation": {"after": "3s", "to": ["boss@plant.test"],
                              "webhook": {"url": hook.url("/page")}}}),
    );
    high(&server, "hot", "acme/plant/temp", 80);
    high(&server, "full", "acme/plant/level", 90);
    write(&server, "acme/plant/temp", json!(95));
    write(&server, "acme/plant/level", json!(99));
    wait_state(&server, ACME, "full", "active_unacknowledged");
    json_ok(
        act(&server, "acknowledge", json!({"alarm": "full"})),
        StatusCode::OK,
    );
    wait_mails(&server, &sink, "ops@plant.test", 2);
    let escalated = wait_mails(&server, &sink, "boss@plant.test", 1);
    assert!(
        escalated[0].contains("Subject: [svc] ESCALATION: high alarm hot not acknowledged for 3s"),
        "{}",
        escalated[0]
    );
    assert!(escalated[0].contains("Alarm:    hot"));
    let pages = wait_hooks(&server, &hook, "/page", 1);
    assert_eq!(
        (
            pages[0]["type"].as_str(),
            pages[0]["event"]["alarm"].as_str()
        ),
        (Some("escalation"), Some("hot"))
    );
    // `full` was acknowledged in time: its escalation never comes, and `hot`'s comes once.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(mails_to(&sink, "boss@plant.test").len(), 1);
    assert_eq!(hook.delivered("/page").len(), 1);
}

#[test]
fn the_password_is_write_only_and_bad_records_are_refused_naming_the_field() {
    let server = setup();
    let secret = "s3cret-Pw-never-shown";
    let closed = free_port();
    let mut body =
        json!({"name": "ops", "email": email(closed, &["ops@plant.test"]), "password": secret});
    body["email"]["username"] = json!("svc");
    let created = pipeline(&server, body);
    assert_eq!(created["password_set"], true, "{created}");
    assert!(created.get("password").is_none(), "{created}");
    let id = created["id"].as_str().unwrap();
    let read = server.get_json(ACME, &rec_path(id));
    let listed = server.get_json(ACME, &format!("/svc/{TABLE}/all"));
    for shown in [&created, &read, &listed] {
        assert!(!shown.to_string().contains(secret), "{shown}");
    }
    let sql = "SELECT password FROM alarm_notification_secrets";
    assert_eq!(
        server.store_sql(sql, sql).as_deref(),
        Some(secret),
        "kept apart, for delivery"
    );
    // A delivery fails (the port is closed) and is logged, without the password.
    high(&server, "hot", "acme/plant/temp", 80);
    write(&server, "acme/plant/temp", json!(95));
    assert!(server.wait_for_log("not delivered"), "{}", server.logs());
    assert!(!server.logs().contains(secret));
    // An update without the password keeps it; an empty one clears it.
    let updated = server
        .admin_in(ACME, Method::PUT, &rec_path(id))
        .json(&json!({"enabled": false}))
        .send()
        .unwrap();
    assert_eq!(json_ok(updated, StatusCode::OK)["password_set"], true);
    let cleared = server
        .admin_in(ACME, Method::PUT, &rec_path(id))
        .json(&json!({"password": ""}))
        .send()
        .unwrap();
    assert_eq!(json_ok(cleared, StatusCode::OK)["password_set"], false);
    assert_eq!(server.store_sql(sql, sql), None);
    let update = |body: Value| {
        let resp = server
            .admin_in(ACME, Method::PUT, &rec_path(id))
            .json(&body)
            .send()
            .unwrap();
        json_ok(resp, StatusCode::OK)
    };
    assert_eq!(
        update(json!({"password_set": true}))["password_set"],
        false,
        "a claim without a password"
    );
    // An optional part set to null is removed; another field set to null keeps its value.
    let limited = update(json!({"rate_limit": {"count": 3}}));
    assert_eq!(limited["rate_limit"], json!({"count": 3, "per": "10m"}));
    let unlimited = update(json!({"rate_limit": null, "priorities": null}));
    assert!(unlimited.get("rate_limit").is_none(), "{unlimited}");
    assert_eq!(
        unlimited["priorities"],
        json!(["low", "medium", "high", "critical"])
    );
    // Deleting the pipeline deletes its password.
    update(json!({"password": "again"}));
    assert_eq!(server.store_sql(sql, sql).as_deref(), Some("again"));
    let deleted = server
        .admin_in(ACME, Method::DELETE, &rec_path(id))
        .send()
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::OK);
    assert_eq!(server.store_sql(sql, sql), None);
    let mail = email(25, &["ops@plant.test"]);
    for (bad, field) in [
        (json!({"name": "x"}), "`webhook` or field `email`"),
        (
            json!({"name": "x", "webhook": {"url": "ftp://h/x"}}),
            "`webhook.url`",
        ),
        (
            json!({"name": "x", "email": mail, "priorities": ["urgent"]}),
            "`priorities`",
        ),
        (
            json!({"name": "x", "email": {"host": "m", "from": "a@b.c", "to": ["nobody"]}}),
            "`email.to`",
        ),
        (
            json!({"name": "x", "email": {"host": "m", "from": "a@b.c", "to": ["d@e.f"], "tls": "ssl"}}),
            "`email.tls`",
        ),
        (
            json!({"name": "x", "email": mail, "rate_limit": {"count": 0}}),
            "`rate_limit.count`",
        ),
        (
            json!({"name": "x", "email": mail, "digest": {"window": "soon"}}),
            "`digest.window`",
        ),
        (
            json!({"name": "x", "email": mail, "escalation": {"after": "15m"}}),
            "`escalation.to`",
        ),
        (
            json!({"name": "x", "email": mail, "password": 5}),
            "`password`",
        ),
        (
            json!({"name": "x", "email": mail, "colour": "red"}),
            "`colour`",
        ),
    ] {
        let resp = server
            .admin_in(ACME, Method::POST, &format!("/svc/{TABLE}"))
            .json(&bad)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::BAD_REQUEST, &[field]);
    }
}
