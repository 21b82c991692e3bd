//! MQTT conformance, delivery guarantees (the broker behaviour decided for issue 13): delivered QoS
//! = min(publish QoS, subscription QoS) in both versions on every listener; QoS 2 exactly once in
//! both directions (a duplicate PUBLISH before PUBREL is not routed again, the outbound
//! PUBREC/PUBREL/PUBCOMP exchange completes without redelivery); unacknowledged deliveries of a
//! persistent session resent with DUP=1 and their original packet ids after reconnecting (PUBREL
//! for a QoS 2 delivery already PUBREC'd); overlapping subscriptions delivered once at the highest
//! granted QoS; `$share/<group>/…` round robin between two members.

use crate::common::*;
use rmqtt_codec::types::{Publish, QoS};
use rmqtt_codec::{v3, v5};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[test]
fn delivered_qos_is_the_minimum_on_every_listener_and_version() {
    let server = Server::start();
    for proto in [Proto::V3, Proto::V5] {
        for via in EVERY_VIA {
            let tag = format!("{proto:?}{}", via_tag(via)).to_lowercase();
            let filter = format!("qos/{tag}/#");
            let mut subs: Vec<Mqtt> = (0..=2u8)
                .map(|s| {
                    let mut c = server.mqtt_admin(proto, via, &format!("sub{s}-{tag}"));
                    assert_eq!(c.subscribe(&filter, s), Some(s), "{tag}: granted QoS");
                    c
                })
                .collect();
            let mut publ = server.mqtt_admin(proto, via, &format!("pub-{tag}"));
            for p in 0..=2u8 {
                let reason = publ.publish(&format!("qos/{tag}/p{p}"), format!("{p}"), p, false);
                assert_eq!(reason, "Success", "{tag}: ack of the QoS {p} publish");
            }
            for (s, sub) in subs.iter_mut().enumerate() {
                let s = s as u8;
                let got: BTreeMap<String, (String, u8)> = take_publishes(sub, 3)
                    .into_iter()
                    .map(|m| (m.topic.clone(), (m.text(), m.qos)))
                    .collect();
                let want: BTreeMap<String, (String, u8)> = (0..=2u8)
                    .map(|p| (format!("qos/{tag}/p{p}"), (format!("{p}"), p.min(s))))
                    .collect();
                assert_eq!(
                    got, want,
                    "{tag}: topic -> (payload, QoS) at subscription QoS {s}"
                );
            }
            publ.disconnect();
            for sub in subs {
                sub.disconnect();
            }
        }
    }
}

/// Sends `p` (QoS 2) twice before PUBREL, the second time with DUP=1, then completes it;
/// returns the reason codes of the two PUBRECs.
fn v5_publish_twice_before_pubrel(publ: &mut Raw5, mut p: Publish) -> Vec<v5::PublishAckReason> {
    let pid = publ.pid();
    p.packet_id = Some(pid);
    let mut reasons = Vec::new();
    for dup in [false, true] {
        p.dup = dup;
        publ.send(v5::Packet::Publish(Box::new(p.clone())));
        let rec = publ.expect(
            "PUBREC",
            |x| matches!(x, v5::Packet::PublishReceived(a) if a.packet_id == pid),
        );
        if let v5::Packet::PublishReceived(a) = rec {
            reasons.push(a.reason_code);
        }
    }
    publ.send(v5::Packet::PublishRelease(v5::PublishAck2 {
        packet_id: pid,
        ..Default::default()
    }));
    publ.expect(
        "PUBCOMP",
        |x| matches!(x, v5::Packet::PublishComplete(a) if a.packet_id == pid),
    );
    reasons
}

#[test]
fn v5_qos2_is_exactly_once_both_ways() {
    let server = Server::start();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let topic = format!("once5/{tag}");
        let mut sub = Raw5::admin(&server, via, &format!("once5-sub-{tag}"));
        sub.subscribe(&topic, 2);
        let mut publ = Raw5::admin(&server, via, &format!("once5-pub-{tag}"));
        let reasons =
            v5_publish_twice_before_pubrel(&mut publ, publish_packet(&topic, "once", 2, false));
        publ.publish(publish_packet(&topic, "end", 2, false));

        // Outbound: PUBLISH QoS 2, our PUBREC, the server's PUBREL, our PUBCOMP (in `ack`).
        sub.expect_exactly_once_then("once", "end", &tag);
        // MQTT-4.3.3: the duplicate is acknowledged with a PUBREC like the first one.
        assert_eq!(
            reasons,
            [v5::PublishAckReason::Success, v5::PublishAckReason::Success],
            "{tag}: PUBREC reason codes for the PUBLISH and its duplicate"
        );
    }
}

#[test]
fn v3_qos2_is_exactly_once_both_ways() {
    let server = Server::start();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let topic = format!("once3/{tag}");
        let mut sub = Raw3::admin(&server, via, &format!("once3-sub-{tag}"));
        assert_eq!(
            sub.subscribe(&topic, 2),
            v3::SubscribeReturnCode::Success(QoS::ExactlyOnce)
        );
        let mut publ = Raw3::admin(&server, via, &format!("once3-pub-{tag}"));
        let pid = publ.pid();
        let mut p = publish_packet(&topic, "once", 2, false);
        p.packet_id = Some(pid);
        for dup in [false, true] {
            p.dup = dup;
            publ.send(v3::Packet::Publish(Box::new(p.clone())));
            publ.expect(
                "PUBREC",
                |x| matches!(x, v3::Packet::PublishReceived { packet_id } if *packet_id == pid),
            );
        }
        publ.send(v3::Packet::PublishRelease { packet_id: pid });
        publ.expect(
            "PUBCOMP",
            |x| matches!(x, v3::Packet::PublishComplete { packet_id } if *packet_id == pid),
        );
        publ.publish(publish_packet(&topic, "end", 2, false));

        sub.expect_exactly_once_then("once", "end", &tag);
    }
}

/// The resent packets after reconnecting: PUBLISH topic -> (dup, packet id), and PUBREL ids.
struct Resent {
    publishes: BTreeMap<String, (bool, u16, QoS)>,
    pubrels: Vec<u16>,
}

#[test]
fn v5_unacknowledged_deliveries_are_resent_after_reconnect() {
    let server = Server::start();
    let connect = || v5::Connect {
        clean_start: false,
        session_expiry_interval_secs: 3600,
        ..connect5("resend5")
    };
    let (mut c, _) = Raw5::connect_ok(&server, Via::Tcp, connect());
    c.subscribe("resend5/#", 2);
    let mut publ = server.mqtt_admin(Proto::V5, Via::Tcp, "resend5-pub");
    publ.publish("resend5/a", "qos1", 1, false);
    publ.publish("resend5/b", "qos2-no-pubrec", 2, false);
    publ.publish("resend5/c", "qos2-pubrec", 2, false);
    let mut ids = BTreeMap::new();
    for _ in 0..3 {
        let p = c
            .recv_publish(MQTT_WAIT)
            .expect("a delivery before the drop");
        let pid = p.packet_id.expect("QoS 1/2 delivery has a packet id").get();
        ids.insert(p.topic.to_string(), pid);
        if p.topic == "resend5/c" {
            c.send(v5::Packet::PublishReceived(v5::PublishAck {
                packet_id: p.packet_id.expect("packet id"),
                ..Default::default()
            }));
            c.expect("PUBREL", |x| matches!(x, v5::Packet::PublishRelease(_)));
        }
    }
    c.drop_connection();

    let (mut c, ack) = Raw5::connect_ok(&server, Via::Tcp, connect());
    assert!(
        ack.session_present,
        "CONNACK session present after reconnect"
    );
    let mut resent = Resent {
        publishes: BTreeMap::new(),
        pubrels: Vec::new(),
    };
    let deadline = Instant::now() + MQTT_WAIT;
    while resent.publishes.len() < 2 || resent.pubrels.is_empty() {
        match c.next(deadline.saturating_duration_since(Instant::now())) {
            Ok(v5::Packet::Publish(p)) => {
                let pid = p.packet_id.map_or(0, |p| p.get());
                resent
                    .publishes
                    .insert(p.topic.to_string(), (p.dup, pid, p.qos));
                c.ack(&p);
            }
            Ok(v5::Packet::PublishRelease(r)) => {
                resent.pubrels.push(r.packet_id.get());
                c.send(v5::Packet::PublishComplete(v5::PublishAck2 {
                    packet_id: r.packet_id,
                    ..Default::default()
                }));
            }
            Ok(other) => panic!("unexpected packet after reconnect: {other:?}"),
            Err(end) => panic!(
                "resent so far: {:?}, PUBREL ids {:?}; then {end:?}",
                resent.publishes, resent.pubrels
            ),
        }
    }
    let want: BTreeMap<String, (bool, u16, QoS)> = [
        ("resend5/a", QoS::AtLeastOnce),
        ("resend5/b", QoS::ExactlyOnce),
    ]
    .into_iter()
    .map(|(t, q)| (t.to_string(), (true, ids[t], q)))
    .collect();
    assert_eq!(
        resent.publishes, want,
        "resent PUBLISHes: topic -> (DUP, packet id, QoS)"
    );
    assert_eq!(
        resent.pubrels,
        [ids["resend5/c"]],
        "PUBREL resent for the PUBREC'd delivery"
    );
    let (rest, _) = c.drain(Duration::from_millis(500));
    assert!(
        !rest.iter().any(|p| matches!(p, v5::Packet::Publish(_))),
        "deliveries after the resent ones: {rest:?}"
    );
}

#[test]
fn v3_unacknowledged_deliveries_are_resent_after_reconnect() {
    let server = Server::start();
    let connect = || v3::Connect {
        clean_session: false,
        ..connect3("resend3")
    };
    let (mut c, _) = Raw3::connect_ok(&server, Via::Ws("/"), connect());
    c.subscribe("resend3/#", 2);
    let mut publ = server.mqtt_admin(Proto::V3, Via::Tcp, "resend3-pub");
    publ.publish("resend3/a", "qos1", 1, false);
    publ.publish("resend3/b", "qos2", 2, false);
    let mut ids = BTreeMap::new();
    for _ in 0..2 {
        let p = c
            .recv_publish(MQTT_WAIT)
            .expect("a delivery before the drop");
        ids.insert(p.topic.to_string(), p.packet_id.map_or(0, |p| p.get()));
    }
    c.drop_connection();

    let (mut c, ack) = Raw3::connect_ok(&server, Via::Tcp, connect());
    assert!(
        ack.session_present,
        "CONNACK session present after reconnect"
    );
    let mut got = BTreeMap::new();
    while got.len() < 2 {
        let p = c
            .recv_publish(MQTT_WAIT)
            .unwrap_or_else(|| panic!("resent so far: {got:?}"));
        got.insert(
            p.topic.to_string(),
            (p.dup, p.packet_id.map_or(0, |p| p.get()), text(&p)),
        );
        c.ack(&p);
    }
    let want: BTreeMap<String, (bool, u16, String)> =
        [("resend3/a", "qos1"), ("resend3/b", "qos2")]
            .into_iter()
            .map(|(t, body)| (t.to_string(), (true, ids[t], body.to_string())))
            .collect();
    assert_eq!(
        got, want,
        "resent PUBLISHes: topic -> (DUP, packet id, payload)"
    );
}

#[test]
fn overlapping_subscriptions_deliver_once_at_the_highest_qos() {
    let server = Server::start();
    for proto in [Proto::V3, Proto::V5] {
        let mut c = server.mqtt_admin(proto, Via::Tcp, &format!("overlap-{proto:?}"));
        assert_eq!(c.subscribe("ov/#", 0), Some(0));
        assert_eq!(c.subscribe("ov/+/x", 2), Some(2));
        assert_eq!(c.subscribe("ov/a/+", 1), Some(1));
        let mut publ = server.mqtt_admin(Proto::V3, Via::Tcp, &format!("overlap-pub-{proto:?}"));
        for q in [2u8, 1, 0] {
            publ.publish("ov/a/x", format!("q{q}"), q, false);
        }
        let mut got: Vec<(String, u8)> = take_publishes(&mut c, 3)
            .iter()
            .map(|m| (m.text(), m.qos))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [("q0".into(), 0), ("q1".into(), 1), ("q2".into(), 2)],
            "{proto:?}: each message once, at min(publish QoS, highest matching subscription QoS)"
        );
        let extra = publishes_until_quiet(&mut c, Duration::from_millis(700));
        assert!(
            extra.is_empty(),
            "{proto:?}: duplicates {:?}",
            summary(&extra)
        );
        c.disconnect();
    }
}

#[test]
fn shared_subscription_round_robin_between_two_members() {
    let server = Server::start();
    let mut members = [
        server.mqtt_admin(Proto::V5, Via::Tcp, "member-tcp"),
        server.mqtt_admin(Proto::V5, Via::HttpMqtt, "member-ws"),
    ];
    for m in members.iter_mut() {
        assert_eq!(m.subscribe("$share/g/rr/#", 1), Some(1));
    }
    let mut plain = server.mqtt_admin(Proto::V3, Via::Ws("/"), "not-shared");
    assert_eq!(plain.subscribe("rr/#", 1), Some(1));
    let mut publ = server.mqtt_admin(Proto::V5, Via::Tcp, "rr-pub");
    for i in 0..10 {
        publ.publish(&format!("rr/{i}"), format!("{i}"), 1, false);
    }
    let mut all: Vec<usize> = take_publishes(&mut plain, 10)
        .iter()
        .map(|m| m.text().parse().expect("numeric payload"))
        .collect();
    all.sort();
    assert_eq!(
        all,
        (0..10).collect::<Vec<_>>(),
        "a plain subscriber gets every message"
    );
    let mut shares: Vec<Vec<usize>> = members
        .iter_mut()
        .map(|m| {
            publishes_until_quiet(m, Duration::from_secs(1))
                .iter()
                .map(|m| m.text().parse().expect("numeric payload"))
                .collect()
        })
        .collect();
    let mut union: Vec<usize> = shares.concat();
    union.sort();
    assert_eq!(
        union,
        (0..10).collect::<Vec<_>>(),
        "each message to exactly one member"
    );
    shares.sort();
    assert_eq!(
        shares,
        [vec![0, 2, 4, 6, 8], vec![1, 3, 5, 7, 9]],
        "members take turns"
    );
}
