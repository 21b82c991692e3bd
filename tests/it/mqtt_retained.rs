//! MQTT conformance, retained messages (the broker behaviour decided for issue 13): a new
//! subscription gets the latest retained message of each matching topic with retain=1 at
//! min(message QoS, subscription QoS), in both versions on every listener; an empty retained
//! payload clears the topic; live forwarding clears the retain flag unless the MQTT 5 subscription
//! asked for Retain As Published; MQTT 5 Retain Handling 0 (always), 1 (only for a new
//! subscription), 2 (never); retained messages survive a graceful restart and, once acknowledged, a
//! kill -9.

use crate::common::*;
use rmqtt_codec::types::QoS;
use rmqtt_codec::{v3, v5};
use std::time::Duration;

/// How long a client must stay quiet for "nothing (more) arrives" checks.
const QUIET: Duration = Duration::from_millis(700);

#[test]
fn retained_messages_on_every_listener_and_version() {
    let server = Server::start();
    let mut publ = server.mqtt_admin(Proto::V5, Via::Tcp, "ret-pub");
    publ.publish("ret/a", "old", 1, true);
    publ.publish("ret/a", "new", 2, true);
    publ.publish("ret/b", "b", 0, true);
    publ.publish("ret/gone", "soon cleared", 1, true);
    publ.publish("ret/gone", "", 1, true);
    for proto in [Proto::V3, Proto::V5] {
        for via in EVERY_VIA {
            let tag = format!("{proto:?}{}", via_tag(via)).to_lowercase();
            let mut c = server.mqtt_admin(proto, via, &format!("ret-{tag}"));
            assert_eq!(c.subscribe("ret/+", 1), Some(1));
            let mut got: Vec<(String, String, u8, bool)> = take_publishes(&mut c, 2)
                .into_iter()
                .map(|m| (m.topic.clone(), m.text(), m.qos, m.retain))
                .collect();
            got.sort();
            assert_eq!(
                got,
                [
                    ("ret/a".into(), "new".into(), 1, true),
                    ("ret/b".into(), "b".into(), 0, true),
                ],
                "{tag}: retained copies (topic, payload, QoS, retain); `ret/gone` was cleared"
            );
            let extra = publishes_until_quiet(&mut c, QUIET);
            assert!(extra.is_empty(), "{tag}: unexpected {:?}", summary(&extra));

            // A retained publish to a topic the client already subscribes to is forwarded live
            // with retain=0.
            let live = format!("live/{tag}");
            assert_eq!(c.subscribe(&live, 2), Some(2));
            publ.publish(&live, "now", 2, true);
            let m = c.expect_publish(&live);
            assert_eq!(
                (m.text().as_str(), m.qos, m.retain),
                ("now", 2, false),
                "{tag}: live copy"
            );
            publ.publish(&live, "", 1, true);
            c.disconnect();
        }
    }
}

/// Subscribes with `options`, then returns how many retained copies of `rh/x` arrived.
fn retained_copies(c: &mut Raw5, filter: &str, options: v5::SubscriptionOptions) -> usize {
    let ack = c.subscribe_with(None, &[(filter, options)]);
    assert_eq!(
        ack.status,
        [v5::SubscribeAckReason::GrantedQos1],
        "SUBACK for `{filter}`"
    );
    let mut n = 0;
    while let Some(p) = c.recv_publish(QUIET) {
        c.ack(&p);
        assert_eq!(p.topic, "rh/x", "only `rh/x` is retained");
        assert!(p.retain, "a copy sent on subscribe carries retain=1");
        n += 1;
    }
    n
}

#[test]
fn v5_retain_handling() {
    let server = Server::start();
    let mut publ = server.mqtt_admin(Proto::V5, Via::Tcp, "rh-pub");
    publ.publish("rh/x", "kept", 1, true);
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let mut c = Raw5::admin(&server, via, &format!("rh-{tag}"));
        let opts = |retain_handling| v5::SubscriptionOptions {
            qos: QoS::AtLeastOnce,
            retain_handling,
            ..Default::default()
        };
        use v5::RetainHandling::{AtSubscribe, AtSubscribeNew, NoAtSubscribe};
        let steps = [
            ("rh/#", AtSubscribe, 1, "0 on a new subscription"),
            ("rh/#", AtSubscribe, 1, "0 on an existing subscription"),
            ("rh/+", AtSubscribeNew, 1, "1 on a new subscription"),
            ("rh/+", AtSubscribeNew, 0, "1 on an existing subscription"),
            ("+/x", NoAtSubscribe, 0, "2 on a new subscription"),
        ];
        for (filter, rh, want, what) in steps {
            let n = retained_copies(&mut c, filter, opts(rh));
            assert_eq!(n, want, "{tag}: retain handling {what} (`{filter}`)");
        }
        // The subscriptions are live whatever their retain handling: one copy, retain cleared.
        publ.publish("rh/x", "live", 1, false);
        let p = c.expect_publish();
        assert_eq!((text(&p).as_str(), p.retain), ("live", false), "{tag}");
        publ.publish("rh/x", "kept", 1, true);
        let (rest, _) = c.drain(QUIET);
        let publishes = rest
            .iter()
            .filter(|p| matches!(p, v5::Packet::Publish(_)))
            .count();
        assert_eq!(
            publishes, 1,
            "{tag}: one delivery for three overlapping subscriptions: {rest:?}"
        );
        c.disconnect(v5::DisconnectReasonCode::NormalDisconnection);
    }
}

#[test]
fn v5_retain_as_published() {
    let server = Server::start();
    let mut publ = Raw5::admin(&server, Via::Tcp, "rap-pub");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let topic = format!("rap/{tag}");
        let mut rap = Raw5::admin(&server, via, &format!("rap-{tag}"));
        let ack = rap.subscribe_with(
            None,
            &[(
                topic.as_str(),
                v5::SubscriptionOptions {
                    qos: QoS::AtLeastOnce,
                    retain_as_published: true,
                    ..Default::default()
                },
            )],
        );
        assert_eq!(ack.status, [v5::SubscribeAckReason::GrantedQos1]);
        let mut plain = Raw5::admin(&server, via, &format!("plain-{tag}"));
        plain.subscribe(&topic, 1);
        let mut old = Raw3::admin(&server, via, &format!("v3-{tag}"));
        assert_eq!(
            old.subscribe(&topic, 1),
            v3::SubscribeReturnCode::Success(QoS::AtLeastOnce)
        );

        publ.publish(publish_packet(&topic, "r1", 1, true));
        publ.publish(publish_packet(&topic, "r0", 1, false));
        let flags = |got: Vec<rmqtt_codec::types::Publish>| -> Vec<(String, bool)> {
            got.iter().map(|p| (text(p), p.retain)).collect()
        };
        let got = vec![rap.expect_publish(), rap.expect_publish()];
        assert_eq!(
            flags(got),
            [("r1".into(), true), ("r0".into(), false)],
            "{tag}: Retain As Published keeps the publisher's flag"
        );
        let got = vec![plain.expect_publish(), plain.expect_publish()];
        assert_eq!(
            flags(got),
            [("r1".into(), false), ("r0".into(), false)],
            "{tag}: MQTT 5 without Retain As Published"
        );
        let got = vec![old.expect_publish(), old.expect_publish()];
        assert_eq!(
            flags(got),
            [("r1".into(), false), ("r0".into(), false)],
            "{tag}: MQTT 3.1.1 live forwarding"
        );
        publ.publish(publish_packet(&topic, "", 1, true));
    }
}

/// Subscribes a fresh client to `keep/#` and returns `topic payload` of the retained copies.
fn retained_now(server: &Server, id: &str) -> Vec<String> {
    let mut c = server.mqtt_admin(Proto::V5, Via::Tcp, id);
    assert_eq!(c.subscribe("keep/#", 1), Some(1));
    let got = publishes_until_quiet(&mut c, Duration::from_secs(1));
    assert!(got.iter().all(|m| m.retain), "retain flags: {got:?}");
    let mut got = summary(&got);
    got.sort();
    c.disconnect();
    got
}

#[test]
fn retained_messages_survive_restart_and_kill() {
    let mut server = Server::start();
    let mut publ = server.mqtt_admin(Proto::V3, Via::Tcp, "keep-pub");
    assert_eq!(publ.publish("keep/a", "graceful", 1, true), "Success");
    publ.publish("keep/b", "cleared before the restart", 1, true);
    publ.publish("keep/b", "", 1, true);
    publ.disconnect();
    server.terminate();
    server.restart();
    assert_eq!(
        retained_now(&server, "keep-1"),
        ["keep/a graceful"],
        "after SIGTERM"
    );

    let mut publ = server.mqtt_admin(Proto::V5, Via::HttpMqtt, "keep-pub-2");
    assert_eq!(publ.publish("keep/c", "acknowledged", 1, true), "Success");
    assert_eq!(publ.publish("keep/d", "exactly once", 2, true), "Success");
    server.kill9();
    server.restart();
    assert_eq!(
        retained_now(&server, "keep-2"),
        [
            "keep/a graceful",
            "keep/c acknowledged",
            "keep/d exactly once"
        ],
        "after kill -9"
    );
}
