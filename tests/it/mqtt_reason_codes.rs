//! MQTT conformance, reason codes (the broker behaviour decided for issue 13): a bad password gets
//! CONNACK 0x86 with a reason string (3.1.1: return code 4); an invalid filter gets SUBACK 0x8F
//! (3.1.1: 0x80) beside granted ones, and a shared subscription with No Local is a protocol error
//! (DISCONNECT 0x82); a publish refused by authorization gets PUBACK/PUBREC 0x87 naming the topic
//! (3.1.1 and QoS 0: acknowledged or dropped silently) and the connection stays up; the server's
//! DISCONNECT says 0x8E on takeover, 0x87 when the client's API key is revoked and 0x8B on
//! shutdown; a client id another user's session uses names a separate session for a second user
//! (sessions are keyed by user and client id, issue 11), without disturbing the first. A refused
//! CONNECT's CONNACK reaches a client that sent more behind its CONNECT (issue 32).

use crate::common::*;
use rmqtt_codec::types::QoS;
use rmqtt_codec::{v3, v5};
use std::time::Duration;

const QUIET: Duration = Duration::from_millis(700);

fn with_password(mut c: v5::Connect, user: &str, password: &str) -> v5::Connect {
    c.username = Some(user.to_string().into());
    c.password = Some(password.to_string().into());
    c
}

fn with_password3(mut c: v3::Connect, user: &str, password: &str) -> v3::Connect {
    c.username = Some(user.to_string().into());
    c.password = Some(password.to_string().into());
    c
}

#[test]
fn bad_password_gets_0x86_with_a_reason_string() {
    // Two refusals per listener: without the login throttle, which would lock `admin` part
    // way (tests/it/login_throttle.rs covers it), every refusal is the bad password's own.
    let server = Server::start_with(&[
        "--login-max-failures",
        "0",
        "--login-max-address-failures",
        "0",
    ]);
    let mut reasons = Vec::new();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let connect = with_password3(connect3(&format!("bad3-{tag}")), "admin", "wrong");
        let (mut c, ack) =
            Raw3::try_connect(&server, via, connect).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ack.return_code,
            v3::ConnectAckReason::BadUserNameOrPassword,
            "v3 {tag}"
        );
        c.expect_closed(MQTT_WAIT);

        let connect = with_password(connect5(&format!("bad-{tag}")), "admin", "wrong");
        let (mut c, ack) = Raw5::connect(&server, via, connect);
        assert_eq!(
            ack.reason_code,
            v5::ConnectAckReason::BadUserNameOrPassword,
            "{tag}"
        );
        c.expect_closed(MQTT_WAIT);
        reasons.push((tag, ack.reason_string.map(|s| s.to_string())));
    }
    for (tag, reason) in reasons {
        let lower = reason.clone().unwrap_or_default().to_lowercase();
        assert!(
            lower.contains("password"),
            "{tag}: CONNACK 0x86 reason string {reason:?}"
        );
    }
}

/// A client that sends more behind its CONNECT without waiting (256 KiB of publishes) reads
/// the refusal, and its writes that cross it do not fail: the server closes its side and takes
/// what the client still sends for a while instead of closing with unread bytes (a reset).
#[test]
fn a_refused_connect_reaches_a_client_still_writing() {
    let server = Server::start_with(&[
        "--login-max-failures",
        "0",
        "--login-max-address-failures",
        "0",
    ]);
    for round in 0..3 {
        for via in EVERY_VIA {
            let id = format!("pipelined-{round}-{}", via_tag(via));
            let mut c = Raw5::open(&server, via, v5::Codec::new(0, 0), &id)
                .unwrap_or_else(|e| panic!("{e}"));
            let mut burst = bytes::BytesMut::new();
            let connect = with_password(connect5(&id), "admin", "wrong");
            c.encode(v5::Packet::Connect(Box::new(connect)), &mut burst);
            for _ in 0..256 {
                let p = publish_packet("pipelined/filler", vec![b'x'; 1024], 0, false);
                c.encode(v5::Packet::Publish(Box::new(p)), &mut burst);
            }
            c.send_bytes(&burst)
                .unwrap_or_else(|e| panic!("{id}: writing the burst: {e}"));
            match c.next(MQTT_WAIT) {
                Ok(v5::Packet::ConnectAck(ack)) => assert_eq!(
                    ack.reason_code,
                    v5::ConnectAckReason::BadUserNameOrPassword,
                    "{id}"
                ),
                other => panic!("{id}: no CONNACK: {other:?}"),
            }
            c.keep_writing("CONNACK");
            c.expect_clean_close(MQTT_WAIT, "CONNACK");
        }
    }
}

#[test]
fn invalid_filters_are_refused_beside_valid_ones() {
    let server = Server::start();
    let mut publ = Raw5::admin(&server, Via::Tcp, "filter-pub");
    let mut acks = Vec::new();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let good = format!("good/{tag}/#");
        let mut c = Raw5::admin(&server, via, &format!("filters-{tag}"));
        let ack = c.subscribe_with(
            None,
            &[
                (good.as_str(), sub_opts(1)),
                ("bad/#/x", sub_opts(1)),
                ("bad+/x", sub_opts(0)),
            ],
        );
        let mut c3 = Raw3::admin(&server, via, &format!("filters3-{tag}"));
        assert_eq!(
            c3.subscribe("bad/#/x", 1),
            v3::SubscribeReturnCode::Failure,
            "v3 {tag}"
        );
        assert_eq!(
            c3.subscribe(&good, 1),
            v3::SubscribeReturnCode::Success(QoS::AtLeastOnce)
        );

        let topic = format!("good/{tag}/x");
        publ.publish(publish_packet(&topic, "ok", 1, false));
        assert_eq!(
            text(&c.expect_publish()),
            "ok",
            "{tag}: the valid filter works"
        );
        assert_eq!(
            text(&c3.expect_publish()),
            "ok",
            "v3 {tag}: the connection stays up"
        );
        acks.push((tag, ack));
    }
    use v5::SubscribeAckReason::{GrantedQos1, TopicFilterInvalid};
    for (tag, ack) in acks {
        assert_eq!(
            ack.status,
            [GrantedQos1, TopicFilterInvalid, TopicFilterInvalid],
            "{tag}"
        );
        assert!(
            ack.reason_string.as_deref().is_some_and(|s| !s.is_empty()),
            "{tag}: SUBACK with refusals has no reason string"
        );
    }
}

#[test]
fn shared_subscription_with_no_local_is_a_protocol_error() {
    let server = Server::start();
    for via in EVERY_VIA {
        let mut c = Raw5::admin(&server, via, &format!("share-nl-{}", via_tag(via)));
        let opts = v5::SubscriptionOptions {
            no_local: true,
            ..sub_opts(1)
        };
        let pid = c.pid();
        c.send(v5::Packet::Subscribe(v5::Subscribe {
            packet_id: pid,
            id: None,
            user_properties: Vec::new(),
            topic_filters: vec![("$share/g/nl/#".into(), opts)],
        }));
        let ending = c.ending(MQTT_WAIT);
        assert_eq!(
            ending,
            Ending::Disconnect(v5::DisconnectReasonCode::ProtocolError),
            "{via:?}"
        );
    }
}

const TAG_A: &str = "a/line/temp";

/// Domain `a` with one tag and a user `reader` allowed only to read tags; returns its API key.
fn reader(server: &Server) -> String {
    server.create_domain("a");
    server.create_tag("domains:a", TAG_A, false);
    let jwt = server.user_with_grants("domains:a", "reader", &[("tags", "read", "*")]);
    server.create_api_key(&jwt, "reader-key").1
}

#[test]
fn refused_publishes_get_0x87_and_the_connection_stays() {
    let server = Server::start();
    let key = reader(&server);
    let mut admin = Raw5::admin(&server, Via::Tcp, "authz-admin");
    admin.subscribe("a/#", 2);
    let mut reasons = Vec::new();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let connect = with_password(connect5(&format!("r5-{tag}")), "reader", &key);
        let (mut c, _) = Raw5::connect_ok(&server, via, connect);
        c.subscribe("a/#", 1);
        for q in [1u8, 2] {
            let ack = c
                .publish(publish_packet(TAG_A, "nope", q, false))
                .expect("ack");
            assert_eq!(
                ack.reason_code,
                v5::PublishAckReason::NotAuthorized,
                "{tag} QoS {q}"
            );
            reasons.push((
                format!("{tag} QoS {q}"),
                ack.reason_string.map(|s| s.to_string()),
            ));
        }
        c.publish(publish_packet(TAG_A, "nope", 0, false));

        let connect = with_password3(connect3(&format!("r3-{tag}")), "reader", &key);
        let (mut c3, _) = Raw3::connect_ok(&server, via, connect);
        c3.subscribe("a/#", 1);
        for q in [0u8, 1, 2] {
            // Completes the exchange (PUBACK, or PUBREC/PUBREL/PUBCOMP) or panics.
            c3.publish(publish_packet(TAG_A, "nope", q, false));
        }
        // Nothing was routed, and both connections still work.
        admin.publish(publish_packet(TAG_A, "from admin", 1, false));
        let routed = admin.collect_until(TAG_A);
        assert_eq!(
            routed.iter().map(text).collect::<Vec<_>>(),
            ["from admin"],
            "{tag}"
        );
        assert_eq!(
            text(&c.expect_publish()),
            "from admin",
            "v5 {tag}: still connected"
        );
        assert_eq!(
            text(&c3.expect_publish()),
            "from admin",
            "v3 {tag}: still connected"
        );
    }
    for (what, reason) in reasons {
        let named = reason.as_deref().is_some_and(|r| r.contains(TAG_A));
        assert!(
            named,
            "{what}: reason string {reason:?} does not name the topic"
        );
    }
}

#[test]
fn takeover_gets_0x8e() {
    let server = Server::start();
    let mut endings = Vec::new();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let id = format!("twin3-{tag}");
        let mut first = Raw3::admin(&server, via, &id);
        let _second = Raw3::admin(&server, Via::Tcp, &id);
        first.expect_closed(MQTT_WAIT);

        let id = format!("twin5-{tag}");
        let mut first = Raw5::admin(&server, via, &id);
        let mut second = Raw5::admin(&server, Via::Tcp, &id);
        endings.push((tag.clone(), first.ending(MQTT_WAIT)));
        second.subscribe(&format!("twin/{tag}"), 1);
        second.publish(publish_packet(&format!("twin/{tag}"), "mine", 1, false));
        assert_eq!(
            text(&second.expect_publish()),
            "mine",
            "{tag}: the new connection works"
        );
    }
    let want: Vec<(String, Ending)> = EVERY_VIA
        .iter()
        .map(|v| {
            (
                via_tag(*v),
                Ending::Disconnect(v5::DisconnectReasonCode::SessionTakenOver),
            )
        })
        .collect();
    assert_eq!(endings, want, "how the taken-over MQTT 5 connections ended");
}

#[test]
fn revoked_api_key_gets_0x87() {
    let server = Server::start();
    let jwt = server.admin_token();
    let (key_id, key) = server.create_api_key(&jwt, "doomed");
    let mut v5s: Vec<Raw5> = EVERY_VIA
        .iter()
        .map(|via| {
            let connect =
                with_password(connect5(&format!("doomed5-{}", via_tag(*via))), "dev", &key);
            Raw5::connect_ok(&server, *via, connect).0
        })
        .collect();
    let connect = with_password3(connect3("doomed3"), "dev", &key);
    let mut c3 = Raw3::connect_ok(&server, Via::HttpMqtt, connect).0;
    server.revoke_api_key(&jwt, &key_id);
    c3.expect_closed(MQTT_WAIT);
    let endings: Vec<(String, Ending)> = v5s
        .iter_mut()
        .map(|c| (c.name.clone(), c.ending(MQTT_WAIT)))
        .collect();
    let want: Vec<(String, Ending)> = v5s
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                Ending::Disconnect(v5::DisconnectReasonCode::NotAuthorized),
            )
        })
        .collect();
    assert_eq!(
        endings, want,
        "how the MQTT 5 connections of the revoked key ended"
    );
}

#[test]
fn the_same_client_id_under_another_user_is_another_session() {
    let server = Server::start();
    server.create_domain("a");
    server.user_with_grants("domains:a", "mallory", &[]);
    let resume = || v5::Connect {
        clean_start: false,
        session_expiry_interval_secs: 3600,
        ..connect5("contested")
    };
    let (mut holder, _) = Raw5::connect_ok(&server, Via::Tcp, resume());
    holder.subscribe("held/#", 1);
    let mut publ = Raw5::admin(&server, Via::Tcp, "held-pub");
    // Mallory connects with the holder's client id over every listener and version: accepted,
    // with a fresh session of her own (nothing to resume), and the holder is not disconnected.
    let other_user = |via: Via| {
        let connect = v5::Connect {
            clean_start: false,
            session_expiry_interval_secs: 3600,
            ..with_password(connect5("contested"), "mallory", "mallory-pw-123")
        };
        let (c, ack) = Raw5::connect(&server, via, connect);
        assert_eq!(
            ack.reason_code,
            v5::ConnectAckReason::Success,
            "{via:?}: v5"
        );
        assert!(
            !ack.session_present,
            "{via:?}: v5 resumed the holder's session"
        );
        c.disconnect(v5::DisconnectReasonCode::NormalDisconnection);
        let connect = with_password3(connect3("contested"), "mallory", "mallory-pw-123");
        let (c, ack) = Raw3::try_connect(&server, via, connect).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ack.return_code,
            v3::ConnectAckReason::ConnectionAccepted,
            "{via:?}: v3"
        );
        assert!(
            !ack.session_present,
            "{via:?}: v3 resumed the holder's session"
        );
        drop(c);
    };
    for via in EVERY_VIA {
        other_user(via);
    }
    publ.publish(publish_packet("held/live", "still mine", 1, false));
    assert_eq!(
        text(&holder.expect_publish()),
        "still mine",
        "the holder was disturbed"
    );

    // Offline, the stored session is just as separate.
    holder.disconnect(v5::DisconnectReasonCode::NormalDisconnection);
    other_user(Via::Tcp);
    publ.publish(publish_packet("held/queued", "kept for me", 1, false));
    let (mut holder, ack) = Raw5::connect_ok(&server, Via::Tcp, resume());
    assert!(
        ack.session_present,
        "the holder's session survived the other user's connections"
    );
    assert_eq!(text(&holder.expect_publish()), "kept for me");
    let (rest, _) = holder.drain(QUIET);
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn shutdown_gets_0x8b() {
    let mut server = Server::start();
    let mut clients: Vec<Raw5> = EVERY_VIA
        .iter()
        .map(|via| Raw5::admin(&server, *via, &format!("bye-{}", via_tag(*via))))
        .collect();
    server.terminate();
    let endings: Vec<(String, Ending)> = clients
        .iter_mut()
        .map(|c| (c.name.clone(), c.ending(MQTT_WAIT)))
        .collect();
    let want: Vec<(String, Ending)> = clients
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                Ending::Disconnect(v5::DisconnectReasonCode::ServerShuttingDown),
            )
        })
        .collect();
    assert_eq!(
        endings, want,
        "how MQTT 5 connections end when the server shuts down"
    );
}
