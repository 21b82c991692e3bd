//! MQTT 5 conformance, publish properties and subscription options (the broker behaviour decided
//! for issue 13): user properties (order and repeats kept), content type, payload format indicator,
//! response topic and correlation data forwarded unchanged on every listener (an MQTT 3.1.1
//! subscriber gets the same payload); Message Expiry Interval forwarded as the remaining whole
//! seconds, expired queued and retained messages dropped; subscription identifiers (all of the
//! matching subscriptions on one delivery, replaced by a new SUBSCRIBE of the same filter); No
//! Local.

use crate::common::*;
use rmqtt_codec::types::{Publish, QoS};
use rmqtt_codec::v5;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

const USER_PROPS: [(&str, &str); 4] = [("b", "2"), ("a", "1"), ("b", "3"), ("ünï", "çødé")];

/// A PUBLISH carrying every forwarded property and a 300 s expiry.
fn rich(topic: &str, q: u8) -> Publish {
    let mut p = publish_packet(topic, r#"{"v":1}"#, q, false);
    p.properties = Some(v5::PublishProperties {
        user_properties: USER_PROPS
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
        content_type: Some("application/json".into()),
        is_utf8_payload: true,
        response_topic: Some("reply/here".into()),
        correlation_data: Some(bytes::Bytes::from_static(b"\x00\x01corr\xff")),
        message_expiry_interval: NonZeroU32::new(300),
        ..Default::default()
    });
    p
}

/// A PUBLISH with only a message expiry (seconds).
fn expiring(topic: &str, payload: &str, secs: Option<u32>, retain: bool) -> Publish {
    let mut p = publish_packet(topic, payload, 1, retain);
    p.properties = Some(v5::PublishProperties {
        message_expiry_interval: secs.and_then(NonZeroU32::new),
        ..Default::default()
    });
    p
}

fn expiry(p: &Publish) -> Option<u32> {
    props(p).message_expiry_interval.map(NonZeroU32::get)
}

#[test]
fn properties_are_forwarded_unchanged_on_every_listener() {
    let server = Server::start();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let topic = format!("props/{tag}");
        let mut sub = Raw5::admin(&server, via, &format!("props-sub-{tag}"));
        sub.subscribe(&topic, 2);
        let mut old = Raw3::admin(&server, via, &format!("props-v3-{tag}"));
        old.subscribe(&topic, 2);
        let mut publ = Raw5::admin(&server, via, &format!("props-pub-{tag}"));
        for q in 0..=2u8 {
            publ.publish(rich(&topic, q));
            let p = sub.expect_publish();
            let got = props(&p);
            let want_user: Vec<(String, String)> = USER_PROPS
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let got_user: Vec<(String, String)> = got
                .user_properties
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(
                got_user, want_user,
                "{tag} QoS {q}: user properties in order"
            );
            assert_eq!(
                got.content_type.as_deref(),
                Some("application/json"),
                "{tag}"
            );
            assert!(got.is_utf8_payload, "{tag}: payload format indicator");
            assert_eq!(got.response_topic.as_deref(), Some("reply/here"), "{tag}");
            assert_eq!(
                got.correlation_data.as_deref(),
                Some(&b"\x00\x01corr\xff"[..]),
                "{tag}: correlation data"
            );
            let left = expiry(&p);
            assert!(
                matches!(left, Some(298..=300)),
                "{tag}: message expiry 300 forwarded as {left:?}"
            );
            assert!(
                got.subscription_ids.is_empty(),
                "{tag}: no subscription id was given"
            );
            assert_eq!(
                got.topic_alias, None,
                "{tag}: the client allowed no topic alias"
            );
            assert_eq!((text(&p).as_str(), p.qos), (r#"{"v":1}"#, qos(q)), "{tag}");
            let p3 = old.expect_publish();
            assert_eq!(
                (text(&p3).as_str(), p3.qos),
                (r#"{"v":1}"#, qos(q)),
                "{tag}: v3 copy"
            );
        }
    }
}

#[test]
fn message_expiry_counts_down_while_queued() {
    let server = Server::start();
    let c5 = || v5::Connect {
        clean_start: false,
        session_expiry_interval_secs: 3600,
        ..connect5("exp5")
    };
    let c3 = || rmqtt_codec::v3::Connect {
        clean_session: false,
        ..connect3("exp3")
    };
    let (mut s5, _) = Raw5::connect_ok(&server, Via::Tcp, c5());
    s5.subscribe("exp/#", 1);
    s5.disconnect(v5::DisconnectReasonCode::NormalDisconnection);
    let (mut s3, _) = Raw3::connect_ok(&server, Via::HttpMqtt, c3());
    s3.subscribe("exp/#", 1);
    s3.disconnect();

    let mut publ = Raw5::admin(&server, Via::Tcp, "exp-pub");
    publ.publish(expiring("exp/short", "dies", Some(1), false));
    publ.publish(expiring("exp/long", "lives", Some(10), false));
    publ.publish(expiring("exp/none", "forever", None, false));
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(2500));

    let (mut s5, ack) = Raw5::connect_ok(&server, Via::Tcp, c5());
    assert!(ack.session_present, "v5 session present");
    let waited = t0.elapsed().as_secs();
    let got: Vec<(String, Option<u32>)> = [s5.expect_publish(), s5.expect_publish()]
        .iter()
        .map(|p| (text(p), expiry(p)))
        .collect();
    let long_left = got.iter().find(|(t, _)| t == "lives").and_then(|(_, e)| *e);
    assert!(
        matches!(long_left, Some(n) if n >= 1 && u64::from(n) <= 10 - waited),
        "a 10 s expiry queued for {waited}+ s was forwarded as {long_left:?} (all: {got:?})"
    );
    let mut texts: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
    texts.sort();
    assert_eq!(
        texts,
        ["forever", "lives"],
        "v5: the expired message is dropped"
    );
    let forever = got.iter().find(|(t, _)| t == "forever").map(|(_, e)| *e);
    assert_eq!(forever, Some(None), "no expiry stays no expiry");
    let (rest, _) = s5.drain(Duration::from_millis(500));
    assert!(
        rest.is_empty(),
        "v5: more after the queued messages: {rest:?}"
    );

    let (mut s3, ack) = Raw3::connect_ok(&server, Via::HttpMqtt, c3());
    assert!(ack.session_present, "v3 session present");
    let mut got: Vec<String> = [s3.expect_publish(), s3.expect_publish()]
        .iter()
        .map(text)
        .collect();
    got.sort();
    assert_eq!(
        got,
        ["forever", "lives"],
        "v3: the expired message is dropped"
    );
}

#[test]
fn expired_retained_messages_are_not_delivered() {
    let server = Server::start();
    let mut publ = Raw5::admin(&server, Via::Tcp, "rexp-pub");
    publ.publish(expiring("rexp/short", "dies", Some(1), true));
    publ.publish(expiring("rexp/long", "lives", Some(60), true));
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(2200));
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let mut c = Raw5::admin(&server, via, &format!("rexp-{tag}"));
        c.subscribe("rexp/#", 1);
        let p = c.expect_publish();
        let waited = t0.elapsed().as_secs() as u32;
        assert_eq!((p.topic.as_ref(), p.retain), ("rexp/long", true), "{tag}");
        let left = expiry(&p);
        assert!(
            matches!(left, Some(n) if n >= 50 && n <= 60 - 2.min(waited)),
            "{tag}: retained 60 s expiry after {waited}+ s forwarded as {left:?}"
        );
        let (rest, _) = c.drain(Duration::from_millis(700));
        assert!(
            rest.is_empty(),
            "{tag}: an expired retained message was delivered: {rest:?}"
        );
    }
}

fn sub_ids(p: &Publish) -> Vec<u32> {
    let mut ids: Vec<u32> = props(p).subscription_ids.iter().map(|i| i.get()).collect();
    ids.sort();
    ids
}

#[test]
fn subscription_identifiers() {
    let server = Server::start();
    let mut publ = Raw5::admin(&server, Via::Tcp, "sid-pub");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let mut c = Raw5::admin(&server, via, &format!("sid-{tag}"));
        let all = format!("sid/{tag}/#");
        let x = format!("sid/{tag}/+/x");
        let none = format!("sid/{tag}/none");
        for (id, filter, q) in [(Some(7), &all, 1), (Some(9), &x, 2), (None, &none, 0)] {
            let ack = c.subscribe_with(id, &[(filter.as_str(), sub_opts(q))]);
            assert_eq!(u8::from(ack.status[0]), q, "{tag}: SUBACK for `{filter}`");
        }
        let cases = [
            ("a/x", 2, vec![7, 9], QoS::ExactlyOnce),
            ("a/y", 1, vec![7], QoS::AtLeastOnce),
            ("none", 1, vec![7], QoS::AtLeastOnce),
        ];
        for (suffix, q, ids, delivered) in cases {
            let topic = format!("sid/{tag}/{suffix}");
            publ.publish(publish_packet(&topic, suffix, q, false));
            let p = c.expect_publish();
            assert_eq!(
                (p.topic.to_string(), sub_ids(&p), p.qos),
                (topic.clone(), ids, delivered),
                "{tag}: (topic, subscription ids, QoS), one delivery for all matches"
            );
        }
        // SUBSCRIBE to an existing filter replaces its identifier.
        c.subscribe_with(Some(8), &[(all.as_str(), sub_opts(1))]);
        let topic = format!("sid/{tag}/b");
        publ.publish(publish_packet(&topic, "b", 1, false));
        let p = c.expect_publish();
        assert_eq!(
            (p.topic.to_string(), sub_ids(&p)),
            (topic, vec![8]),
            "{tag}: replaced id"
        );
        let (rest, _) = c.drain(Duration::from_millis(500));
        assert!(rest.is_empty(), "{tag}: duplicate deliveries {rest:?}");
    }
}

#[test]
fn no_local_keeps_a_clients_own_messages_from_it() {
    let server = Server::start();
    let mut other = Raw5::admin(&server, Via::Tcp, "nl-other");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let filter = format!("nl/{tag}/#");
        let mut c = Raw5::admin(&server, via, &format!("nl-{tag}"));
        let opts = v5::SubscriptionOptions {
            no_local: true,
            ..sub_opts(1)
        };
        c.subscribe_with(None, &[(filter.as_str(), opts)]);
        c.publish(publish_packet(&format!("nl/{tag}/own"), "own", 1, false));
        other.publish(publish_packet(
            &format!("nl/{tag}/other"),
            "other",
            1,
            false,
        ));
        let got = c.collect_until(&format!("nl/{tag}/other"));
        assert_eq!(
            got.iter().map(text).collect::<Vec<_>>(),
            ["other"],
            "{tag}: No Local"
        );

        // The same client without No Local receives its own message.
        c.subscribe(&filter, 1);
        c.publish(publish_packet(
            &format!("nl/{tag}/own"),
            "own again",
            1,
            false,
        ));
        let p = c.expect_publish();
        assert_eq!(text(&p), "own again", "{tag}: without No Local");
    }
}
