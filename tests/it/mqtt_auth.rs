//! MQTT authentication (SPEC 7, docs/decisions/broker-and-tags.md): CONNECT without credentials is
//! refused unless `mqtt_allow_anonymous`; bad passwords, unknown users, unknown and revoked API
//! keys and forged JWTs are refused; an API key as password (any username), username + user
//! password and a JWT as password are accepted in both protocol versions and on every listener;
//! revoking an API key closes the connections made with it and only those.

use crate::common::*;
use std::time::Duration;

const VIAS: [Via; 3] = [Via::Tcp, Via::Ws("/"), Via::HttpMqtt];

/// Asserts the broker refuses the CONNECT with a CONNACK refusal code (not a timeout).
fn assert_refused(server: &Server, opts: MqttOpts, what: &str) {
    let label = format!("{what} ({:?} {:?})", opts.proto, opts.via);
    match server.try_mqtt(opts) {
        Ok(_) => panic!("{label}: CONNECT was accepted"),
        Err(e) => assert!(
            [
                "NotAuthorized",
                "BadUserNamePassword",
                "BadUsernamePassword"
            ]
            .iter()
            .any(|code| e.contains(code)),
            "{label}: expected a CONNACK refusal (not authorized / bad username or password), \
             got: {e}"
        ),
    }
}

/// Connects, then proves the session works with a QoS 1 round trip on `topic`.
fn assert_accepted(server: &Server, opts: MqttOpts, topic: &str, what: &str) {
    let label = format!("{what} ({:?} {:?})", opts.proto, opts.via);
    let mut c = server
        .try_mqtt(opts)
        .unwrap_or_else(|e| panic!("{label}: CONNECT refused: {e}"));
    assert_eq!(c.subscribe(topic, 1), Some(1), "{label}: SUBACK");
    assert_eq!(
        c.publish(topic, what, 1, false),
        "Success",
        "{label}: PUBACK"
    );
    assert_eq!(c.expect_publish(topic).text(), what, "{label}");
    c.disconnect();
}

#[test]
fn connect_without_credentials_is_refused_by_default() {
    let server = Server::start();
    for proto in [Proto::V3, Proto::V5] {
        for via in VIAS {
            assert_refused(
                &server,
                MqttOpts::new(proto, via, "anon"),
                "no username, no password",
            );
        }
    }
    let (ok, out) = server.mosquitto_pub(false, &["-t", "anon/x", "-m", "1", "-q", "1"]);
    assert!(!ok, "mosquitto_pub without credentials succeeded: {out}");
    let (ok, out) = server.mosquitto_pub(true, &["-t", "anon/x", "-m", "1", "-q", "1"]);
    assert!(
        !ok,
        "mosquitto_pub -V mqttv5 without credentials succeeded: {out}"
    );
}

#[test]
fn bad_credentials_are_refused() {
    // 28 refusals in a row: without the login throttle, which would lock `admin` and this
    // address part way (tests/it/login_throttle.rs covers it), every case is checked on its own.
    let server = Server::start_with(&[
        "--login-max-failures",
        "0",
        "--login-max-address-failures",
        "0",
    ]);
    let admin_jwt = server.admin_token();
    // Same header and claims as a real token, wrong signature.
    let mut forged = admin_jwt.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    let (key_id, key) = server.create_api_key(&admin_jwt, "to-revoke");
    server.revoke_api_key(&admin_jwt, &key_id);
    let cases: Vec<(&str, &str, &str)> = vec![
        ("admin", "wrong-password", "wrong password"),
        ("nobody", ADMIN_PASSWORD, "unknown user"),
        ("admin", "", "empty password"),
        (
            "admin",
            "svcx_0000000000000000000000000000000000000000000",
            "unknown API key",
        ),
        ("anyone", &key, "revoked API key"),
        ("anyone", "aaa.bbb.ccc", "JWT-shaped garbage"),
        ("anyone", &forged, "JWT with a bad signature"),
    ];
    for proto in [Proto::V3, Proto::V5] {
        for (user, password, what) in &cases {
            for via in [Via::Tcp, Via::HttpMqtt] {
                let opts = MqttOpts::new(proto, via, "bad-creds").creds(user, password);
                assert_refused(&server, opts, what);
            }
        }
    }
    let (ok, out) = server.mosquitto_pub(
        true,
        &["-u", "admin", "-P", "nope", "-t", "x", "-m", "1", "-q", "1"],
    );
    assert!(!ok, "mosquitto_pub with a bad password succeeded: {out}");
}

#[test]
fn api_key_password_and_jwt_are_accepted() {
    let server = Server::start();
    let admin_jwt = server.admin_token();
    let (_, admin_key) = server.create_api_key(&admin_jwt, "mqtt");
    for proto in [Proto::V3, Proto::V5] {
        for (i, via) in VIAS.into_iter().enumerate() {
            let id = |kind: &str| format!("{kind}-{proto:?}-{i}");
            let topic = |kind: &str| format!("creds/{kind}/{proto:?}/{i}");
            for (n, username) in ["anything", "admin", ""].into_iter().enumerate() {
                let opts =
                    MqttOpts::new(proto, via, &id(&format!("key{n}"))).creds(username, &admin_key);
                assert_accepted(
                    &server,
                    opts,
                    &topic("key"),
                    &format!("API key as password, username `{username}`"),
                );
            }
            let opts = MqttOpts::new(proto, via, &id("pw")).creds("admin", ADMIN_PASSWORD);
            assert_accepted(&server, opts, &topic("pw"), "username + password");
            let opts = MqttOpts::new(proto, via, &id("jwt")).creds("whoever", &admin_jwt);
            assert_accepted(&server, opts, &topic("jwt"), "JWT as password");
        }
    }
    // mosquitto clients with an API key and with a JWT.
    for (v5, password) in [(false, admin_key.as_str()), (true, admin_jwt.as_str())] {
        let mut sub = server.mosquitto_sub(v5, "mosq/creds", 1, "x", password);
        let (ok, out) = server.mosquitto_pub(
            v5,
            &[
                "-u",
                "y",
                "-P",
                password,
                "-t",
                "mosq/creds",
                "-m",
                "hello",
                "-q",
                "1",
            ],
        );
        assert!(ok, "mosquitto_pub (v5: {v5}) failed: {out}");
        sub.expect_msg("mosq/creds", "hello");
    }
}

#[test]
fn non_admin_user_credentials_are_accepted() {
    let server = Server::start();
    server.create_domain("a");
    let jwt = server.user_with_grants("domains:a", "alice", &[("tags", "read", "*")]);
    let (_, key) = server.create_api_key(&jwt, "alice-mqtt");
    for proto in [Proto::V3, Proto::V5] {
        // Distinct client ids: quick reconnects with one id are covered in mqtt_sessions.rs.
        for (n, (user, password, what)) in [
            ("alice", "alice-pw-123", "user password"),
            ("x", key.as_str(), "user API key"),
            ("x", jwt.as_str(), "user JWT"),
        ]
        .into_iter()
        .enumerate()
        {
            let opts = MqttOpts::new(proto, Via::Tcp, &format!("alice-{proto:?}-{n}"))
                .creds(user, password);
            let c = server
                .try_mqtt(opts)
                .unwrap_or_else(|e| panic!("{proto:?} {what}: CONNECT refused: {e}"));
            c.disconnect();
        }
        let opts = MqttOpts::new(proto, Via::Tcp, "alice-c").creds("alice", "wrong");
        assert_refused(&server, opts, "user with a wrong password");
    }
}

#[test]
fn revoking_an_api_key_closes_its_connections() {
    let server = Server::start();
    let admin_jwt = server.admin_token();
    let (doomed_id, doomed) = server.create_api_key(&admin_jwt, "doomed");
    let (_, kept) = server.create_api_key(&admin_jwt, "kept");
    let mut victims: Vec<Mqtt> = [
        (Proto::V3, Via::Tcp),
        (Proto::V5, Via::Tcp),
        (Proto::V5, Via::HttpMqtt),
        (Proto::V3, Via::Ws("/")),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (proto, via))| {
        let opts = MqttOpts::new(proto, via, &format!("doomed-{i}")).creds("dev", &doomed);
        server.mqtt(opts)
    })
    .collect();
    let mut survivor = server.mqtt(MqttOpts::new(Proto::V5, Via::Tcp, "kept").creds("dev", &kept));
    let mut by_password = server.mqtt_admin(Proto::V3, Via::Tcp, "by-password");
    for v in victims.iter_mut() {
        v.subscribe("revoke/#", 1);
    }

    server.revoke_api_key(&admin_jwt, &doomed_id);
    for v in victims.iter_mut() {
        let reason = v.wait_closed(Duration::from_secs(10));
        eprintln!("{}: closed after revocation: {reason}", v.client_id);
    }

    // Other credentials of the same user keep working.
    survivor.subscribe("revoke/still", 1);
    by_password.publish("revoke/still", "here", 1, false);
    assert_eq!(survivor.expect_publish("revoke/still").text(), "here");

    // And the revoked key cannot connect again.
    for proto in [Proto::V3, Proto::V5] {
        let opts = MqttOpts::new(proto, Via::Tcp, "doomed-again").creds("dev", &doomed);
        assert_refused(&server, opts, "revoked API key");
    }
}

#[test]
fn anonymous_connect_is_accepted_when_enabled() {
    let server = Server::start_with(&["--mqtt-allow-anonymous", "true"]);
    for proto in [Proto::V3, Proto::V5] {
        let mut c = server
            .try_mqtt(MqttOpts::new(proto, Via::Tcp, "anon"))
            .unwrap_or_else(|e| panic!("{proto:?} anonymous CONNECT refused: {e}"));
        c.subscribe("anon/#", 1);
        c.publish("anon/x", "1", 1, false);
        assert_eq!(c.expect_publish("anon/x").text(), "1");
        c.disconnect();
        // Bad credentials are still refused.
        let opts = MqttOpts::new(proto, Via::Tcp, "anon-bad").creds("admin", "wrong");
        assert_refused(&server, opts, "bad password with anonymous allowed");
    }
    let (ok, out) = server.mosquitto_pub(true, &["-t", "anon/m", "-m", "1", "-q", "1"]);
    assert!(ok, "anonymous mosquitto_pub failed: {out}");
}
