//! Several `svc serve` instances on one PostgreSQL database as one platform (issue 18): a
//! message published on one reaches MQTT subscribers, retained messages and last values of the
//! other and is historized once; a tag, function or flow declared on one is in force on the
//! other at once; timers fire on exactly one instance (the leader), and another takes over
//! within seconds when the leader dies.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ADMIN: &str = "domains:svc_admin";
const LEADS: &str = "this instance leads";

/// Two instances on a fresh database of a private PostgreSQL, each knowing the other is there
/// (a message published on `a` reaches a subscriber on `b`).
fn two_instances(pg: &Postgres) -> (Server, Server) {
    let url = pg.fresh_database();
    let a = Server::start_with(&["--database", &url]);
    let b = Server::start_with(&["--database", &url]);
    let mut probe_b = b.mqtt_admin(Proto::V5, Via::Tcp, "probe-b");
    probe_b.subscribe("probe/#", 0);
    let mut probe_a = a.mqtt_admin(Proto::V5, Via::Tcp, "probe-a");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        probe_a.publish("probe/hello", "1", 0, false);
        if probe_b.next_publish(Duration::from_millis(500)).is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a never reached b:\n{}\n{}",
            a.logs(),
            b.logs()
        );
    }
    (a, b)
}

fn create_function(server: &Server, domain: &str, body: &Value) {
    let resp = server
        .admin_in(domain, Method::POST, "/svc/processes")
        .json(body)
        .send()
        .expect("create a function");
    json_ok(resp, StatusCode::CREATED);
}

#[test]
fn a_message_published_on_one_instance_reaches_the_other_and_is_historized_once() {
    let pg = Postgres::start();
    let (a, b) = two_instances(&pg);
    a.create_domain("plant");
    a.create_tag("domains:plant", "plant/line1/temp", true);
    let mut watcher = b.mqtt_admin(Proto::V5, Via::Tcp, "watcher-b");
    watcher.subscribe("plant/#", 1);

    let mut device = a.mqtt_admin(Proto::V5, Via::Tcp, "device-a");
    let payload = json!({"value": 21.5, "timestamp": 1_767_225_600_000i64}).to_string();
    assert_eq!(
        device.publish("plant/line1/temp", payload.clone(), 1, true),
        "Success"
    );
    let heard = watcher.expect_publish("plant/line1/temp");
    assert_eq!(String::from_utf8_lossy(&heard.payload), payload);

    // The retained message is b's too: a subscriber that comes later gets it from b.
    let mut late = b.mqtt_admin(Proto::V5, Via::Tcp, "late-b");
    late.subscribe("plant/line1/temp", 1);
    let retained = late.expect_publish("plant/line1/temp");
    assert!(retained.retain, "not retained on b");
    assert_eq!(String::from_utf8_lossy(&retained.payload), payload);

    // b's last values hold it, and the historian (shared) holds it once.
    let values = b.poll(Duration::from_secs(5), "the last value on b", || {
        let values = b.get_json("domains:plant", "/svc/tag/values");
        (values.as_array().is_some_and(|v| !v.is_empty())).then_some(values)
    });
    assert_eq!(values[0]["topic"], "plant/line1/temp", "{values}");
    assert_eq!(values[0]["value"], 21.5, "{values}");
    let history = || {
        let answer = b
            .admin_in("domains:plant", Method::PATCH, "/svc/historian")
            .json(&json!({"topic": "plant/line1/temp", "start_time": "2026-01-01T00:00:00Z", "range": "1m"}))
            .send()
            .expect("historian query");
        json_ok(answer, StatusCode::OK)
    };
    // Stored by the writer that took it (within a fold, slower on a loaded machine), then
    // given a moment in which a second copy would show.
    b.poll(Duration::from_secs(10), "the value historized", || {
        history()
            .as_array()
            .is_some_and(|p| !p.is_empty())
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    let points = history();
    assert_eq!(points.as_array().map(Vec::len), Some(1), "{points}");
}

/// A tag declared historized and a `tag_change` function created on `a` after both started are
/// in force on `b` at once: a value published on `b` is historized, and the function runs once
/// (on `b`, where the value arrived; `a` only delivers what `b` relays).
#[test]
fn what_one_instance_declares_is_in_force_on_the_other() {
    let pg = Postgres::start();
    let (a, b) = two_instances(&pg);
    a.create_tag(ADMIN, "line/speed", true);
    create_function(
        &a,
        ADMIN,
        &json!({
            "name": "count_speeds",
            "code": "function main(i) { svc.records.create('speeds', {value: i.value}); }",
            "triggers": [{"type": "tag_change", "topic": "line/speed"}]
        }),
    );
    b.poll(Duration::from_secs(5), "b knowing the tag", || {
        b.string_list(Some(ADMIN), "/svc/tag/list")
            .iter()
            .any(|t| t == "line/speed")
            .then_some(())
    });
    // The function is deployed on b once b heard of it: poll by publishing until it runs.
    let mut device = b.mqtt_admin(Proto::V5, Via::Tcp, "device-b");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut sent = 0i64;
    while a.count(ADMIN, "speeds") == 0 {
        assert!(
            Instant::now() < deadline,
            "the function never ran on b:\n{}",
            b.logs()
        );
        sent += 1;
        let payload = json!({"value": sent, "timestamp": 1_767_225_600_000i64 + sent});
        assert_eq!(
            device.publish("line/speed", payload.to_string(), 1, false),
            "Success"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        a.count(ADMIN, "speeds"),
        1,
        "one run per value: a must not run it again for the relayed message"
    );
    // b historized what it took in, each value once.
    let history = a
        .admin_in(ADMIN, Method::PATCH, "/svc/historian")
        .json(&json!({"topic": "line/speed", "start_time": "2026-01-01T00:00:00Z", "range": "1m"}))
        .send()
        .expect("historian query");
    let points = json_ok(history, StatusCode::OK);
    assert_eq!(
        points.as_array().map(Vec::len),
        Some(sent as usize),
        "{points}"
    );
}

/// A function's interval timer fires on one instance only; when that instance is killed, the
/// other takes the lead within seconds and the timer goes on firing there.
#[test]
fn timers_fire_on_exactly_one_instance_and_move_when_the_leader_dies() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let mut a = Server::start_with(&["--database", &url]);
    create_function(
        &a,
        ADMIN,
        &json!({
            "name": "tick",
            "code": "function main(i) { svc.records.create('ticks', {trigger: i.trigger}); }",
            "triggers": [{"type": "interval", "value": 250, "unit": "ms"}]
        }),
    );
    // b deploys the function as it starts.
    let mut b = Server::start_with(&["--database", &url]);
    a.poll(Duration::from_secs(10), "one instance leading", || {
        (a.logs().contains(LEADS) || b.logs().contains(LEADS)).then_some(())
    });
    assert!(
        !(a.logs().contains(LEADS) && b.logs().contains(LEADS)),
        "both lead"
    );
    // 4 s at one firing per 250 ms: 16 from one instance, twice that from two.
    let before = a.count(ADMIN, "ticks");
    std::thread::sleep(Duration::from_secs(4));
    let fired = a.count(ADMIN, "ticks") - before;
    assert!(
        (4..=22).contains(&fired),
        "{fired} firings in 4 s: expected about 16, one instance's"
    );

    let (leader, follower) = if a.logs().contains(LEADS) {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    leader.kill9();
    follower.poll(
        Duration::from_secs(10),
        "the other instance leading",
        || follower.logs().contains(LEADS).then_some(()),
    );
    let before = follower.count(ADMIN, "ticks");
    follower.poll(Duration::from_secs(10), "the timer firing on", || {
        (follower.count(ADMIN, "ticks") >= before + 4).then_some(())
    });
}

/// An instance that starts after values were published on another one has them as last values:
/// it asks the instances already there for theirs.
#[test]
fn an_instance_that_starts_later_takes_the_last_values_of_the_others() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let a = Server::start_with(&["--database", &url]);
    a.create_tag(ADMIN, "line/pressure", false);
    let mut device = a.mqtt_admin(Proto::V5, Via::Tcp, "device-a");
    assert_eq!(device.publish("line/pressure", "4.5", 1, false), "Success");
    a.poll(Duration::from_secs(5), "the value on a", || {
        let values = a.get_json(ADMIN, "/svc/tag/values");
        values
            .as_array()
            .is_some_and(|v| !v.is_empty())
            .then_some(())
    });

    let b = Server::start_with(&["--database", &url]);
    let values = b.poll(Duration::from_secs(5), "the value on b", || {
        let values = b.get_json(ADMIN, "/svc/tag/values");
        values
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["topic"] == "line/pressure")
            .cloned()
    });
    assert_eq!(values["value"], 4.5, "{values}");
}

/// Records read by id are cached on each instance, and a change made through another instance
/// reaches the readers of this one at once (within a second): the record tables' triggers
/// tell every instance which table changed.
#[test]
fn a_record_changed_on_one_instance_is_read_new_on_the_other() {
    let pg = Postgres::start();
    let (a, b) = two_instances(&pg);
    a.create_domain("plant");
    let record = a.create_record("domains:plant", "orders", &json!({"qty": 1}));
    let path = rec_path(record["id"].as_str().expect("id"));
    let qty = |server: &Server| server.get_json("domains:plant", &path)["qty"].clone();
    // Read twice on b: the second read is answered from b's cache.
    assert_eq!(qty(&b), 1);
    assert_eq!(qty(&b), 1);
    let patched = a
        .admin_in("domains:plant", Method::PUT, &path)
        .json(&json!({"qty": 2}))
        .send()
        .expect("update on a");
    json_ok(patched, StatusCode::OK);
    assert_eq!(qty(&a), 2, "a reads its own write at once");
    b.poll(Duration::from_secs(1), "b reading the new quantity", || {
        (qty(&b) == 2).then_some(())
    });
    let deleted = a
        .admin_in("domains:plant", Method::DELETE, &path)
        .send()
        .expect("delete on a");
    assert!(deleted.status().is_success());
    b.poll(
        Duration::from_secs(1),
        "b not finding the deleted record",
        || {
            let status = b
                .admin_in("domains:plant", Method::GET, &path)
                .send()
                .ok()?
                .status();
            (status == StatusCode::NOT_FOUND).then_some(())
        },
    );
}

/// Issue 32: a tag declared on one instance right after a second one started is a tag of the
/// second one too. The second instance is started once the first is ready and nothing waits for
/// the two to have seen each other (as a plant's operator would do it): the change notice must
/// not depend on the first instance having noticed the second yet.
#[test]
fn a_tag_declared_right_after_a_second_instance_started_is_known_there() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let a = Server::start_with(&["--database", &url]);
    // Logged in before b starts, so what follows b's start is quick: a learns of b within a
    // second by itself, and the change must not depend on that.
    a.admin_token();
    let b = Server::start_with(&["--database", &url]);
    a.create_domain("acme");
    let created = a
        .admin_in("domains:acme", Method::POST, "/svc/tags")
        .json(&json!({"path": "acme/x/t", "historize": true}))
        .send()
        .expect("create the tag on a");
    assert!(created.status().is_success(), "{:?}", created.text());
    let written = a
        .admin_in("domains:acme", Method::POST, "/svc/tag/write")
        .json(&json!({"topic": "acme/x/t", "value": 3.5}))
        .send()
        .expect("write the tag on a");
    assert!(written.status().is_success(), "{:?}", written.text());
    let last = |server: &Server| {
        let resp = server
            .admin_in("domains:acme", Method::PATCH, "/svc/historian/last")
            .json(&json!({"topic": "acme/x/t", "limit": 5}))
            .send()
            .expect("last values");
        let status = resp.status();
        (status, resp.text().unwrap_or_default())
    };
    a.poll(Duration::from_secs(5), "the value in a's historian", || {
        let (status, body) = last(&a);
        (status == StatusCode::OK && body.contains("3.5")).then_some(())
    });
    // Half a second is many times what a notice between the instances takes.
    std::thread::sleep(Duration::from_millis(500));
    let (status, body) = last(&b);
    assert_eq!(
        (status, body.contains("3.5")),
        (StatusCode::OK, true),
        "b does not know the tag: {body}\n{}",
        b.logs()
    );
}

/// A message published on one instance right after a second one said it is ready reaches the
/// second one's subscribers: the second instance makes itself known before it is ready.
#[test]
fn a_message_published_right_after_a_second_instance_started_reaches_it() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let a = Server::start_with(&["--database", &url]);
    let mut device = a.mqtt_admin(Proto::V5, Via::Tcp, "device-a");
    let b = Server::start_with(&["--database", &url]);
    let mut watcher = b.mqtt_admin(Proto::V5, Via::Tcp, "watcher-b");
    watcher.subscribe("early/#", 1);
    assert_eq!(device.publish("early/one", "1", 1, false), "Success");
    let heard = watcher.next_publish(Duration::from_secs(3));
    assert_eq!(
        heard.map(|m| m.topic),
        Some("early/one".to_string()),
        "the first message never reached b:\n{}",
        a.logs()
    );
}
