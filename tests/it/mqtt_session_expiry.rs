//! MQTT conformance, session lifetime (the broker behaviour decided for issue 13): persistent
//! sessions queue messages while offline in both versions on every listener and report `session
//! present`; clean start / clean session discard a stored session; an MQTT 5 Session Expiry
//! Interval of 0 ends the session at disconnect, a short one ends it after that long, one above the
//! server's 2 h maximum is lowered and the CONNACK says so; an empty client id gets `svc-<random>`
//! (MQTT 5: Assigned Client Identifier), and MQTT 3.1.1 refuses it with return code 2 when the
//! session is to persist.

use crate::common::*;
use rmqtt_codec::types::QoS;
use rmqtt_codec::{v3, v5};
use std::collections::BTreeSet;
use std::time::Duration;

const QUIET: Duration = Duration::from_millis(700);

#[test]
fn offline_queue_on_every_listener_and_version() {
    let server = Server::start();
    let mut publ = server.mqtt_admin(Proto::V5, Via::Tcp, "oq-pub");
    for proto in [Proto::V3, Proto::V5] {
        for via in EVERY_VIA {
            let tag = format!("{proto:?}{}", via_tag(via)).to_lowercase();
            let opts = MqttOpts::new(proto, via, &format!("oq-{tag}"))
                .creds("admin", ADMIN_PASSWORD)
                .persistent();
            let mut c = server.mqtt(opts.clone());
            assert_eq!(c.subscribe(&format!("oq/{tag}/#"), 2), Some(2));
            c.disconnect();
            for (i, q) in [1u8, 2, 1].into_iter().enumerate() {
                publ.publish(&format!("oq/{tag}/{i}"), format!("m{i}"), q, false);
            }
            let mut c = server.mqtt(opts);
            assert!(c.session_present, "{tag}: session present");
            let mut got: Vec<(String, String, u8)> = take_publishes(&mut c, 3)
                .into_iter()
                .map(|m| (m.topic.clone(), m.text(), m.qos))
                .collect();
            // MQTT orders messages per topic and QoS only; the two QoS 1 ones keep their order.
            let qos1: Vec<&str> = got
                .iter()
                .filter(|m| m.2 == 1)
                .map(|m| m.1.as_str())
                .collect();
            assert_eq!(
                qos1,
                ["m0", "m2"],
                "{tag}: order of the queued QoS 1 messages"
            );
            got.sort();
            let want: Vec<(String, String, u8)> = [1u8, 2, 1]
                .into_iter()
                .enumerate()
                .map(|(i, q)| (format!("oq/{tag}/{i}"), format!("m{i}"), q))
                .collect();
            assert_eq!(got, want, "{tag}: the queued messages with their QoS");
            c.disconnect();
        }
    }
}

/// A v5 CONNECT resuming `id` with the given Session Expiry Interval.
fn resume5(id: &str, expiry: u32) -> v5::Connect {
    v5::Connect {
        clean_start: false,
        session_expiry_interval_secs: expiry,
        ..connect5(id)
    }
}

#[test]
fn v5_session_expiry_decides_how_long_a_session_outlives_its_connection() {
    let server = Server::start();
    // (client id, Session Expiry Interval): 0 ends at disconnect, 2 s ends before the
    // reconnect 3.5 s later, 60 s survives it.
    let cases = [("se-zero", 0u32), ("se-short", 2), ("se-long", 60)];
    for (id, expiry) in cases {
        let (mut c, ack) = Raw5::connect_ok(&server, Via::Tcp, resume5(id, expiry));
        assert!(!ack.session_present, "{id}: first CONNECT");
        c.subscribe("se/#", 1);
        c.disconnect(v5::DisconnectReasonCode::NormalDisconnection);
    }
    let mut publ = Raw5::admin(&server, Via::Tcp, "se-pub");
    publ.publish(publish_packet("se/x", "queued", 1, false));
    std::thread::sleep(Duration::from_millis(3500));
    for (id, expiry) in cases {
        let (mut c, ack) = Raw5::connect_ok(&server, Via::Tcp, resume5(id, expiry));
        let (got, _) = c.drain(QUIET);
        let texts: Vec<String> = got
            .iter()
            .filter_map(|p| match p {
                v5::Packet::Publish(p) => Some(text(p)),
                _ => None,
            })
            .collect();
        if expiry == 60 {
            assert!(
                ack.session_present,
                "{id}: the session outlived 3.5 s offline"
            );
            assert_eq!(texts, ["queued"], "{id}: the queued message");
        } else {
            assert!(
                !ack.session_present,
                "{id}: expiry {expiry} s, yet the session was kept"
            );
            assert!(
                texts.is_empty(),
                "{id}: an ended session delivered {texts:?}"
            );
        }
    }
}

#[test]
fn v5_session_expiry_above_the_maximum_is_lowered() {
    let server = Server::start();
    for (i, asked) in [100_000u32, u32::MAX].into_iter().enumerate() {
        let (_c, ack) = Raw5::connect_ok(&server, Via::Tcp, resume5(&format!("sx-{i}"), asked));
        assert_eq!(
            ack.session_expiry_interval_secs,
            Some(7200),
            "Session Expiry Interval {asked} under a 2 h maximum"
        );
    }
    let (_c, ack) = Raw5::connect_ok(&server, Via::HttpMqtt, resume5("sx-ok", 600));
    assert!(
        matches!(ack.session_expiry_interval_secs, None | Some(600)),
        "600 s is within the maximum, yet CONNACK says {:?}",
        ack.session_expiry_interval_secs
    );
}

#[test]
fn clean_start_discards_a_stored_session() {
    let server = Server::start();
    let mut publ = Raw5::admin(&server, Via::Tcp, "cs-pub");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        // MQTT 3.1.1: clean_session=1 discards the stored session, and keeps none after it.
        let id = format!("cs3-{tag}");
        let persistent = || v3::Connect {
            clean_session: false,
            ..connect3(&id)
        };
        let (mut c, _) = Raw3::connect_ok(&server, via, persistent());
        c.subscribe(&format!("cs3/{tag}"), 1);
        c.disconnect();
        let (c, ack) = Raw3::connect_ok(&server, via, connect3(&id));
        assert!(
            !ack.session_present,
            "v3 {tag}: clean session reported a stored one"
        );
        c.disconnect();
        publ.publish(publish_packet(&format!("cs3/{tag}"), "lost", 1, false));
        let (mut c, ack) = Raw3::connect_ok(&server, via, persistent());
        assert!(
            !ack.session_present,
            "v3 {tag}: the discarded session came back"
        );
        let (got, _) = c.drain(QUIET);
        assert!(
            got.is_empty(),
            "v3 {tag}: the discarded subscription delivered {got:?}"
        );

        // MQTT 5: clean_start=1 starts an empty session (which may itself persist).
        let id = format!("cs5-{tag}");
        let (mut c, _) = Raw5::connect_ok(&server, via, resume5(&id, 3600));
        c.subscribe(&format!("cs5/{tag}"), 1);
        c.disconnect(v5::DisconnectReasonCode::NormalDisconnection);
        let fresh = v5::Connect {
            clean_start: true,
            ..resume5(&id, 3600)
        };
        let (c, ack) = Raw5::connect_ok(&server, via, fresh);
        assert!(
            !ack.session_present,
            "v5 {tag}: clean start reported a stored session"
        );
        c.disconnect(v5::DisconnectReasonCode::NormalDisconnection);
        publ.publish(publish_packet(&format!("cs5/{tag}"), "lost", 1, false));
        let (mut c, _) = Raw5::connect_ok(&server, via, resume5(&id, 3600));
        let (got, _) = c.drain(QUIET);
        assert!(
            got.is_empty(),
            "v5 {tag}: the discarded subscription delivered {got:?}"
        );
    }
}

#[test]
fn v5_empty_client_id_gets_an_assigned_identifier() {
    let server = Server::start();
    let mut assigned = BTreeSet::new();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let (mut c, ack) = Raw5::connect_ok(&server, via, connect5(""));
        let id = ack
            .assigned_client_id
            .as_ref()
            .map(|s| s.to_string())
            .unwrap_or_else(|| panic!("{tag}: no Assigned Client Identifier in {ack:?}"));
        assert!(assigned.insert(id.clone()), "{tag}: `{id}` assigned twice");
        let topic = format!("anon-id/{tag}");
        c.subscribe(&topic, 1);
        c.publish(publish_packet(&topic, "works", 1, false));
        assert_eq!(text(&c.expect_publish()), "works", "{tag}: client `{id}`");
        assert!(
            id.starts_with("svc-") && id.len() > 4,
            "{tag}: assigned `{id}`"
        );
    }
}

#[test]
fn v3_empty_client_id_needs_a_clean_session() {
    let server = Server::start();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let (mut c, _) = Raw3::connect_ok(&server, via, connect3(""));
        let topic = format!("anon-id/{tag}");
        assert_eq!(
            c.subscribe(&topic, 1),
            v3::SubscribeReturnCode::Success(QoS::AtLeastOnce),
            "v3 {tag}: empty client id with clean session"
        );
        c.publish(publish_packet(&topic, "works", 1, false));
        assert_eq!(text(&c.expect_publish()), "works", "{tag}");
        let keep = v3::Connect {
            clean_session: false,
            ..connect3("")
        };
        let (mut c, ack) = Raw3::try_connect(&server, via, keep).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ack.return_code,
            v3::ConnectAckReason::IdentifierRejected,
            "v3 {tag}: empty client id with clean_session=0"
        );
        c.expect_closed(MQTT_WAIT);
    }
}
