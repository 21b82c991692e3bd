//! Login protection (issue 17): failed password logins are counted per user name and per client
//! address (`login_max_failures`, `login_max_address_failures`, `login_window`); past a limit
//! `POST /auth/login` answers 429 with `Retry-After` and a sentence, even for the right
//! password, until the window has passed; a success clears the name's count. MQTT CONNECTs with
//! a user name and password count the same and, locked, are refused after a delay (MQTT 5
//! "quota exceeded"), while API keys are not throttled.

use crate::common::*;
use reqwest::blocking::Response;
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::{Duration, Instant};

fn login(server: &Server, username: &str, password: &str) -> Response {
    server
        .req(Method::POST, "/auth/login")
        .json(&json!({"username": username, "password": password}))
        .send()
        .unwrap()
}

/// Asserts a 429 with a plain-text sentence and a `Retry-After` of 1..=`most` seconds; returns
/// the seconds to wait.
fn assert_throttled(resp: Response, most: u64) -> u64 {
    let retry_after = header(&resp, "retry-after");
    let secs: u64 = retry_after
        .parse()
        .unwrap_or_else(|_| panic!("Retry-After `{retry_after}` is not whole seconds"));
    assert!((1..=most).contains(&secs), "Retry-After {secs}");
    assert_error(
        resp,
        StatusCode::TOO_MANY_REQUESTS,
        &["too many failed logins", "try again in"],
    );
    secs
}

#[test]
fn failed_logins_lock_the_name_for_the_window_then_it_recovers() {
    let server = Server::start_with(&[
        "--login-max-failures",
        "3",
        "--login-max-address-failures",
        "100",
        "--login-window",
        "2s",
    ]);
    server.create_user("ann", "ann-pw-123");
    server.create_user("bob", "bob-pw-123");
    for _ in 0..3 {
        assert_error(
            login(&server, "ann", "wrong"),
            StatusCode::UNAUTHORIZED,
            &["invalid username or password"],
        );
    }
    let locked_at = Instant::now();
    // Locked: the right password is refused too, without a check.
    let wait = assert_throttled(login(&server, "ann", "ann-pw-123"), 2);
    // Another name from the same address is not affected.
    assert_eq!(login(&server, "bob", "bob-pw-123").status(), StatusCode::OK);
    std::thread::sleep(Duration::from_secs(wait).saturating_sub(locked_at.elapsed()));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(login(&server, "ann", "ann-pw-123").status(), StatusCode::OK);

    // A success clears the count: 2 failures, a success, 2 failures stay under 3.
    for _ in 0..2 {
        assert_eq!(
            login(&server, "bob", "x").status(),
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(login(&server, "bob", "bob-pw-123").status(), StatusCode::OK);
    for _ in 0..2 {
        assert_eq!(
            login(&server, "bob", "x").status(),
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(login(&server, "bob", "bob-pw-123").status(), StatusCode::OK);
}

#[test]
fn the_address_limit_covers_every_name_from_it() {
    let server = Server::start_with(&[
        "--login-max-failures",
        "100",
        "--login-max-address-failures",
        "4",
        "--login-window",
        "2s",
    ]);
    for name in ["a1", "a2", "nobody", "admin"] {
        assert_eq!(
            login(&server, name, "guess").status(),
            StatusCode::UNAUTHORIZED
        );
    }
    let started = Instant::now();
    let wait = assert_throttled(login(&server, "admin", ADMIN_PASSWORD), 2);
    std::thread::sleep(Duration::from_secs(wait).saturating_sub(started.elapsed()));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        login(&server, "admin", ADMIN_PASSWORD).status(),
        StatusCode::OK
    );
}

#[test]
fn mqtt_connects_are_refused_after_too_many_failures_and_recover() {
    let server = Server::start_with(&[
        "--login-max-failures",
        "3",
        "--login-max-address-failures",
        "100",
        "--login-window",
        "5s",
    ]);
    let token = server.admin_token();
    let (_, api_key) = server.create_api_key(&token, "device");
    refuse_wrong_passwords(&server, Proto::V5, 3);
    let locked_at = Instant::now();
    // HTTP and MQTT share the count: the name is locked for both.
    assert_throttled(login(&server, "admin", ADMIN_PASSWORD), 5);
    // An API key is no password guess: it still connects.
    let device = server
        .try_mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "device").creds("any", &api_key))
        .expect("an API key is not throttled");
    device.disconnect();
    // The right password, locked: refused as over quota, after a delay.
    let asked = Instant::now();
    let opts = MqttOpts::new(Proto::V5, Via::Tcp, "good").creds("admin", ADMIN_PASSWORD);
    let refused = server
        .try_mqtt(opts)
        .err()
        .expect("a locked name connected");
    assert!(refused.contains("QuotaExceeded"), "{refused}");
    assert!(
        asked.elapsed() >= Duration::from_millis(900),
        "the refusal was not delayed: {:?}",
        asked.elapsed()
    );
    // Once the window has passed, the right password connects again (MQTT 3.1.1 here).
    std::thread::sleep(Duration::from_millis(5_200).saturating_sub(locked_at.elapsed()));
    let ok = server
        .try_mqtt(MqttOpts::new(Proto::V3, Via::Tcp, "good-again").creds("admin", ADMIN_PASSWORD))
        .expect("the right password after the window");
    ok.disconnect();
}

#[test]
fn a_locked_mqtt_311_client_is_told_not_authorized() {
    let server = Server::start_with(&[
        "--login-max-failures",
        "2",
        "--login-max-address-failures",
        "100",
        "--login-window",
        "10s",
    ]);
    refuse_wrong_passwords(&server, Proto::V3, 2);
    let opts = MqttOpts::new(Proto::V3, Via::Tcp, "good").creds("admin", ADMIN_PASSWORD);
    let refused = server
        .try_mqtt(opts)
        .err()
        .expect("a locked name connected");
    assert!(refused.contains("NotAuthorized"), "{refused}");
}

/// `count` MQTT CONNECTs as admin with a wrong password, each refused as such.
fn refuse_wrong_passwords(server: &Server, proto: Proto, count: usize) {
    for i in 0..count {
        let opts = MqttOpts::new(proto, Via::Tcp, &format!("bad-{i}")).creds("admin", "wrong");
        let refused = server
            .try_mqtt(opts)
            .err()
            .expect("a wrong password was accepted");
        assert!(refused.contains("BadUserNamePassword"), "{refused}");
    }
}
