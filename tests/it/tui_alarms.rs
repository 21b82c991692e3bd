//! `svc tui`'s status bar counts the domain's alarms waiting for acknowledgement (issue 37): the
//! real binary inside `tmux` (see `tui_support`), alarms raised by values published over MQTT
//! and acknowledged through REST, the screen read with `capture-pane` as the count goes from
//! none to one, two, and back.

use crate::tui_support::*;
use reqwest::blocking::Client;
use serde_json::{json, Value};

/// `POST <path>` with the admin's API key in domain `acme` (none: no domain); returns the body.
fn post(serve: &Serve, key: &str, domain: bool, path: &str, body: Value) -> Value {
    let http = Client::builder().no_proxy().build().unwrap();
    let mut req = http
        .post(format!("{}{path}", serve.url()))
        .header("X-Svc-Api-Key", key)
        .json(&body);
    if domain {
        req = req.header("Domain", "domains:acme");
    }
    let resp = req.send().unwrap();
    let status = resp.status();
    let text = resp.text().unwrap();
    assert!(status.is_success(), "POST {path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The state of alarm `name` as `GET /svc/alarms/active` in `acme` lists it, once it is
/// `wanted` (panics after [`WAIT`]).
fn wait_state(serve: &Serve, key: &str, name: &str, wanted: &str) {
    let http = Client::builder().no_proxy().build().unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let active: Value = http
            .get(format!("{}/svc/alarms/active", serve.url()))
            .header("X-Svc-Api-Key", key)
            .header("Domain", "domains:acme")
            .send()
            .unwrap()
            .json()
            .unwrap();
        let state = active
            .as_array()
            .and_then(|list| list.iter().find(|a| a["name"] == name))
            .map_or("normal", |a| a["state"].as_str().unwrap_or(""));
        if state == wanted {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} is {state}, not {wanted}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn tui_counts_the_alarms_waiting_for_acknowledgement() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let key = setup(&serve);
    post(
        &serve,
        &key,
        false,
        "/auth/domains",
        json!({"name": "acme"}),
    );
    let namespace = json!({"name": "plant", "path": "acme/plant"});
    post(&serve, &key, true, "/svc/namespaces", namespace);
    for alarm in [
        json!({"name": "hot", "tag": "acme/plant/temp", "kind": "high", "setpoint": 80,
            "priority": "high"}),
        json!({"name": "dry", "tag": "acme/plant/level", "kind": "low", "setpoint": 10,
            "priority": "medium"}),
    ] {
        post(&serve, &key, true, "/svc/alarms", alarm);
    }
    publish(
        serve.mqtt,
        &key,
        &[
            ("acme/plant/temp", b"20", false),
            ("acme/plant/level", b"50", false),
        ],
    );
    let tmux = Tmux::start(
        dir.path(),
        &format!(
            "--url {} --api-key {key} --domain acme --topic 'acme/#'",
            serve.url()
        ),
    );
    tmux.wait_for("the monitor with no alarm waiting", |s| {
        s.contains("● connected") && s.contains("no alarms unacknowledged")
    });

    publish(serve.mqtt, &key, &[("acme/plant/temp", b"85", false)]);
    tmux.wait_for("one alarm", |s| s.contains("▲ 1 alarm unacknowledged"));
    publish(serve.mqtt, &key, &[("acme/plant/level", b"4", false)]);
    let screen = tmux.wait_for("two alarms", |s| s.contains("▲ 2 alarms unacknowledged"));
    // On the status line, beside the connection.
    let bar = screen
        .lines()
        .find(|l| l.contains("● connected"))
        .unwrap_or("");
    assert!(bar.contains("▲ 2 alarms unacknowledged"), "{screen}");

    // Acknowledged (through REST): the count goes down, then away.
    post(
        &serve,
        &key,
        true,
        "/svc/alarms/acknowledge",
        json!({"alarm": "hot"}),
    );
    tmux.wait_for("one alarm left", |s| s.contains("▲ 1 alarm unacknowledged"));
    // Back to normal before anyone acknowledged: it still waits for acknowledgement.
    publish(serve.mqtt, &key, &[("acme/plant/level", b"40", false)]);
    wait_state(&serve, &key, "dry", "returned_unacknowledged");
    // Longer than the monitor takes to count again.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        tmux.capture().contains("▲ 1 alarm unacknowledged"),
        "{}",
        tmux.capture()
    );
    post(
        &serve,
        &key,
        true,
        "/svc/alarms/acknowledge",
        json!({"alarm": "dry"}),
    );
    tmux.wait_for("no alarm waiting", |s| {
        s.contains("no alarms unacknowledged")
    });
    tmux.keys(&["q"]);
    tmux.wait_for("the exit", |s| s.contains("TUI-EXITED-0"));
}
