//! MQTT 5 conformance, negotiated limits (the broker behaviour decided for issue 13): the CONNACK
//! announces Receive Maximum 128, Maximum Packet Size 1048576 and Topic Alias Maximum 64; client
//! topic aliases are resolved, an alias of 0 or above 64 gets DISCONNECT 0x94 and an unknown alias
//! 0x82; the server assigns outbound aliases up to the client's maximum and none when it allows
//! none; more unacknowledged QoS 2 publishes than the Receive Maximum get DISCONNECT 0x93; the
//! server never exceeds the client's Receive Maximum nor its own window of 128 (also for 3.1.1); an
//! inbound packet above 1 MiB gets DISCONNECT 0x95 (3.1.1: the connection is closed); a delivery
//! above the client's Maximum Packet Size is not sent; a malformed packet gets 0x81. The
//! DISCONNECT 0x93 reaches a client that is still writing (the server closes carefully, issue
//! 32), and the connection lingering then does not hold its session.

use crate::common::*;
use rmqtt_codec::types::{Publish, QoS};
use rmqtt_codec::{v3, v5};
use std::collections::BTreeMap;
use std::num::{NonZeroU16, NonZeroU32};
use std::time::{Duration, Instant};

const QUIET: Duration = Duration::from_millis(700);
const MAX_PACKET: usize = 1024 * 1024;

/// A PUBLISH carrying a topic alias (an empty `topic` sends the alias alone).
fn aliased(topic: &str, alias: u16, payload: &str) -> Publish {
    let mut p = publish_packet(topic, payload, 0, false);
    p.properties = Some(v5::PublishProperties {
        topic_alias: NonZeroU16::new(alias),
        ..Default::default()
    });
    p
}

/// A hand-made QoS 0 PUBLISH: `props` are the raw property bytes (for what the codec refuses
/// to encode).
fn raw_publish(topic: &str, props: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut body = (topic.len() as u16).to_be_bytes().to_vec();
    body.extend_from_slice(topic.as_bytes());
    body.push(props.len() as u8);
    body.extend_from_slice(props);
    body.extend_from_slice(payload);
    let mut out = vec![0x30, body.len() as u8];
    out.extend_from_slice(&body);
    out
}

/// Asserts the server answers with DISCONNECT `code` and closes the connection.
fn assert_disconnected(c: &mut Raw5, code: v5::DisconnectReasonCode, what: &str) {
    assert_eq!(c.ending(MQTT_WAIT), Ending::Disconnect(code), "{what}");
}

#[test]
fn connack_announces_the_servers_limits() {
    let server = Server::start();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let (_c, ack) = Raw5::connect_ok(&server, via, connect5(&format!("limits-{tag}")));
        let announced = (
            ack.receive_max.get(),
            ack.max_packet_size,
            ack.topic_alias_max,
            ack.max_qos,
            ack.retain_available,
            ack.wildcard_subscription_available,
            ack.subscription_identifiers_available,
            ack.shared_subscription_available,
            ack.assigned_client_id.is_some(),
        );
        assert_eq!(
            announced,
            (
                128,
                Some(1_048_576),
                64,
                QoS::ExactlyOnce,
                true,
                true,
                true,
                true,
                false
            ),
            "{tag}: (Receive Maximum, Maximum Packet Size, Topic Alias Maximum, Maximum QoS, \
             Retain / wildcard / subscription id / shared subscription available, assigned id)"
        );
        assert!(
            matches!(ack.server_keepalive_sec, None | Some(30)),
            "{tag}: keep alive 30 is within the maximum, yet Server Keep Alive is {:?}",
            ack.server_keepalive_sec
        );
    }
}

#[test]
fn client_topic_aliases_are_resolved() {
    let server = Server::start();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let mut sub = Raw5::admin(&server, via, &format!("ta-sub-{tag}"));
        sub.subscribe(&format!("ta/{tag}/#"), 1);
        let mut publ = Raw5::admin(&server, via, &format!("ta-pub-{tag}"));
        let t = |s: &str| format!("ta/{tag}/{s}");
        for (topic, alias, payload) in [
            (t("one"), 1, "1a"),
            (String::new(), 1, "1b"),
            (t("two"), 64, "2a"),
            (String::new(), 64, "2b"),
            (t("three"), 1, "3a"),
            (String::new(), 1, "3b"),
            (t("two"), 0, "2c"),
        ] {
            publ.publish(aliased(&topic, alias, payload));
        }
        let got: Vec<(String, String)> = (0..7)
            .map(|_| sub.expect_publish())
            .map(|p| (p.topic.to_string(), text(&p)))
            .collect();
        let want: Vec<(String, String)> = [
            ("one", "1a"),
            ("one", "1b"),
            ("two", "2a"),
            ("two", "2b"),
            ("three", "3a"),
            ("three", "3b"),
            ("two", "2c"),
        ]
        .iter()
        .map(|(s, p)| (t(s), p.to_string()))
        .collect();
        assert_eq!(got, want, "{tag}: (topic, payload) as routed");
    }
}

/// The hand-made PUBLISH is what the codec reads (so the refusals below are about the alias).
fn check_raw_publish() {
    use tokio_util::codec::Decoder;
    let mut buf = bytes::BytesMut::from(&raw_publish("bad/1", &[0x23, 0, 1], b"x")[..]);
    match v5::Codec::new(0, 0).decode(&mut buf) {
        Ok(Some((v5::Packet::Publish(p), _))) => {
            assert_eq!((p.topic.as_ref(), text(&p).as_str()), ("bad/1", "x"));
            assert_eq!(props(&p).topic_alias, NonZeroU16::new(1));
        }
        other => panic!("hand-made PUBLISH decoded as {other:?}"),
    }
    let mut buf = bytes::BytesMut::from(&raw_publish("bad/0", &[0x23, 0, 0], b"x")[..]);
    assert!(
        v5::Codec::new(0, 0).decode(&mut buf).is_err(),
        "alias 0 decoded"
    );
}

#[test]
fn invalid_topic_aliases_end_the_connection() {
    check_raw_publish();
    let server = Server::start();
    let mut watch = Raw5::admin(&server, Via::Tcp, "alias-watch");
    watch.subscribe("bad/#", 0);
    use v5::DisconnectReasonCode::{MalformedPacket, ProtocolError, TopicAliasInvalid};
    let mut cases = Vec::new();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let mut c = Raw5::admin(&server, via, &format!("alias65-{tag}"));
        c.send(v5::Packet::Publish(Box::new(aliased("bad/65", 65, "x"))));
        cases.push((
            format!("{tag}: alias 65 (maximum 64)"),
            c,
            TopicAliasInvalid,
        ));
        let mut c = Raw5::admin(&server, via, &format!("alias0-{tag}"));
        let _ = c.send_bytes(&raw_publish("bad/0", &[0x23, 0, 0], b"x"));
        // Alias 0 cannot be decoded at all (the property is a non-zero integer): malformed.
        cases.push((format!("{tag}: alias 0"), c, MalformedPacket));
        let mut c = Raw5::admin(&server, via, &format!("alias-unknown-{tag}"));
        c.send(v5::Packet::Publish(Box::new(aliased("", 5, "x"))));
        cases.push((format!("{tag}: alias 5 never set"), c, ProtocolError));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for (what, mut c, code) in cases {
        let ending = c.ending(deadline.saturating_duration_since(Instant::now()));
        got.push((what.clone(), ending));
        want.push((what, Ending::Disconnect(code)));
    }
    assert_eq!(got, want, "how each connection ended");
    let (got, _) = watch.drain(QUIET);
    assert!(
        got.is_empty(),
        "publishes with invalid aliases were routed: {got:?}"
    );
}

#[test]
fn server_assigns_topic_aliases_up_to_the_clients_maximum() {
    let server = Server::start();
    let mut publ = server.mqtt_admin(Proto::V5, Via::Tcp, "sa-pub");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let connect = v5::Connect {
            topic_alias_max: 2,
            ..connect5(&format!("sa-{tag}"))
        };
        let (mut c, _) = Raw5::connect_ok(&server, via, connect);
        c.subscribe(&format!("sa/{tag}/#"), 1);
        let mut plain = Raw5::admin(&server, via, &format!("sa-plain-{tag}"));
        plain.subscribe(&format!("sa/{tag}/#"), 1);
        let mut sent = Vec::new();
        for round in 0..3 {
            for name in ["one", "two", "three"] {
                let topic = format!("sa/{tag}/{name}");
                publ.publish(&topic, format!("{round}"), 1, false);
                sent.push((topic, round.to_string()));
            }
        }
        let mut aliases: BTreeMap<u16, String> = BTreeMap::new();
        let mut resolved = Vec::new();
        let mut alias_only = 0;
        for _ in 0..sent.len() {
            let p = c.expect_publish();
            let alias = props(&p).topic_alias.map(NonZeroU16::get);
            if let Some(a) = alias {
                assert!(
                    (1..=2).contains(&a),
                    "{tag}: alias {a} above the client's maximum 2"
                );
            }
            let topic = if p.topic.is_empty() {
                alias_only += 1;
                let a = alias.unwrap_or_else(|| panic!("{tag}: PUBLISH without topic or alias"));
                aliases
                    .get(&a)
                    .cloned()
                    .unwrap_or_else(|| panic!("{tag}: alias {a} used before it was set"))
            } else {
                if let Some(a) = alias {
                    aliases.insert(a, p.topic.to_string());
                }
                p.topic.to_string()
            };
            resolved.push((topic, text(&p)));
        }
        // MQTT orders messages per topic: compare each topic's sequence.
        resolved.sort_by(|a, b| a.0.cmp(&b.0));
        sent.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            resolved, sent,
            "{tag}: (topic, payload) after resolving the server's aliases"
        );
        assert!(
            alias_only > 0,
            "{tag}: the server never used an alias alone"
        );
        for _ in 0..sent.len() {
            let p = plain.expect_publish();
            assert_eq!(
                props(&p).topic_alias,
                None,
                "{tag}: alias sent to a client allowing none"
            );
            assert!(!p.topic.is_empty(), "{tag}");
        }
    }
}

#[test]
fn more_unacknowledged_publishes_than_receive_maximum_get_0x93() {
    let server = Server::start();
    let (mut c, ack) = Raw5::connect_ok(&server, Via::Tcp, connect5("flood"));
    let max = ack.receive_max.get();
    // QoS 2 publishes stay unacknowledged (in the Receive Maximum sense) until PUBCOMP; this
    // client never sends PUBREL.
    for i in 0..max {
        let mut p = publish_packet("flood/x", format!("{i}"), 2, false);
        p.packet_id = Some(c.pid());
        c.send(v5::Packet::Publish(Box::new(p)));
    }
    for _ in 0..max {
        c.expect("PUBREC", |p| matches!(p, v5::Packet::PublishReceived(_)));
    }
    let (rest, closed) = c.drain(Duration::from_millis(300));
    assert!(
        closed.is_none(),
        "closed at exactly Receive Maximum ({max}): {rest:?}"
    );
    let mut p = publish_packet("flood/x", "one too many", 2, false);
    p.packet_id = Some(c.pid());
    c.send(v5::Packet::Publish(Box::new(p)));
    assert_disconnected(
        &mut c,
        v5::DisconnectReasonCode::ReceiveMaximumExceeded,
        "Receive Maximum + 1",
    );
}

/// Connects `client_id` (with `connect`'s other fields) and writes, in one burst without
/// waiting, one QoS 2 publish more than the server's Receive Maximum and then 256 KiB of QoS 0
/// publishes: more than the server reads before it ends the connection.
fn exceed_receive_maximum(server: &Server, via: Via, connect: v5::Connect) -> Raw5 {
    let (mut c, ack) = Raw5::connect_ok(server, via, connect);
    let mut burst = bytes::BytesMut::new();
    for i in 0..=ack.receive_max.get() {
        let mut p = publish_packet("flood/still-writing", format!("{i}"), 2, false);
        p.packet_id = Some(c.pid());
        c.encode(v5::Packet::Publish(Box::new(p)), &mut burst);
    }
    for _ in 0..256 {
        let p = publish_packet("flood/filler", vec![b'x'; 1024], 0, false);
        c.encode(v5::Packet::Publish(Box::new(p)), &mut burst);
    }
    let name = c.name.clone();
    c.send_bytes(&burst)
        .unwrap_or_else(|e| panic!("{name}: writing the burst: {e}"));
    c
}

/// Reads up to the server's DISCONNECT, answering every PUBREC with PUBREL on the way as
/// Paho's client does; panics when a write fails or no DISCONNECT comes.
fn release_until_disconnect(c: &mut Raw5) -> v5::DisconnectReasonCode {
    loop {
        match c.next(MQTT_WAIT) {
            Ok(v5::Packet::PublishReceived(rec)) => {
                let rel = v5::Packet::PublishRelease(v5::PublishAck2 {
                    packet_id: rec.packet_id,
                    ..Default::default()
                });
                if let Err(e) = c.try_send(rel) {
                    panic!("{}: a PUBREL before the DISCONNECT was read: {e}", c.name);
                }
            }
            Ok(v5::Packet::Disconnect(d)) => return d.reason_code,
            Ok(other) => panic!("{}: {other:?} before the DISCONNECT", c.name),
            Err(end) => panic!("{}: no DISCONNECT ({end:?})", c.name),
        }
    }
}

/// Paho's interoperability test `test_flow_control2`: the server's DISCONNECT 0x93 crosses what
/// the client still writes (PUBRELs, and the publishes behind the one too many). The server
/// closes carefully: its side closes (FIN, WebSocket Close) and what the client still sends is
/// taken and thrown away for a while, so no reset makes the client's writes fail before it
/// has read the DISCONNECT (a close with unread bytes in the socket is a reset).
#[test]
fn the_receive_maximum_disconnect_reaches_a_client_still_writing() {
    let server = Server::start();
    for round in 0..3 {
        for via in EVERY_VIA {
            let id = format!("still-writing-{round}-{}", via_tag(via));
            let mut c = exceed_receive_maximum(&server, via, connect5(&id));
            assert_eq!(
                release_until_disconnect(&mut c),
                v5::DisconnectReasonCode::ReceiveMaximumExceeded,
                "{id}"
            );
            c.keep_writing("DISCONNECT");
            c.expect_clean_close(MQTT_WAIT, "DISCONNECT");
        }
    }
}

/// A connection the server ended goes on reading for a while (see above), but its session is
/// free at once: the same client id connects again while it lingers, finds its session, and
/// gets what was published to it meanwhile.
#[test]
fn a_lingering_connection_does_not_hold_its_session() {
    let server = Server::start();
    let mut publisher = Raw5::admin(&server, Via::Tcp, "linger-publisher");
    for via in EVERY_VIA {
        let id = format!("lingering-{}", via_tag(via));
        let topic = format!("linger/{}", via_tag(via));
        let persistent = v5::Connect {
            clean_start: false,
            session_expiry_interval_secs: 300,
            ..connect5(&id)
        };
        let (mut first, _) = Raw5::connect_ok(&server, via, persistent.clone());
        first.subscribe(&topic, 1);
        drop(first);
        let mut first = exceed_receive_maximum(&server, via, persistent.clone());
        assert_eq!(
            release_until_disconnect(&mut first),
            v5::DisconnectReasonCode::ReceiveMaximumExceeded,
            "{id}"
        );
        // `first` stays open and quiet: the server's side lingers for its full second.
        let started = Instant::now();
        publisher.publish(publish_packet(&topic, "meanwhile", 1, false));
        let (mut second, ack) = Raw5::connect_ok(&server, via, persistent);
        assert!(ack.session_present, "{id}: the session is there");
        let got = second.expect_publish();
        assert_eq!(&got.payload[..], b"meanwhile", "{id}");
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "{id}: the reconnection took {:?}, as long as the old connection lingers",
            started.elapsed()
        );
        drop(first);
    }
}

/// Every PUBLISH arriving until `quiet` passes without one (not acknowledged).
fn unacked(c: &mut Raw5, quiet: Duration) -> Vec<Publish> {
    std::iter::from_fn(|| c.recv_publish(quiet)).collect()
}

#[test]
fn server_never_exceeds_the_clients_receive_maximum() {
    let server = Server::start();
    let mut publ = Raw5::admin(&server, Via::Tcp, "rm-pub");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let topic = format!("rm/{tag}");
        let connect = v5::Connect {
            receive_max: NonZeroU16::new(3),
            ..connect5(&format!("rm-{tag}"))
        };
        let (mut c, _) = Raw5::connect_ok(&server, via, connect);
        c.subscribe(&topic, 1);
        for i in 0..10 {
            publ.publish(publish_packet(&topic, format!("{i}"), 1, false));
        }
        let first = unacked(&mut c, QUIET);
        assert_eq!(
            first.len(),
            3,
            "{tag}: deliveries in flight with Receive Maximum 3"
        );
        c.ack(&first[0]);
        let more = unacked(&mut c, QUIET);
        assert_eq!(more.len(), 1, "{tag}: one PUBACK frees one slot");
        let mut got: Vec<String> = first.iter().chain(&more).map(text).collect();
        for p in first[1..].iter().chain(&more) {
            c.ack(p);
        }
        while got.len() < 10 {
            got.push(text(&c.expect_publish()));
        }
        assert_eq!(
            got,
            (0..10).map(|i| i.to_string()).collect::<Vec<_>>(),
            "{tag}: all, in order"
        );
    }

    // QoS 2: PUBREC does not free a slot, PUBCOMP does.
    let connect = v5::Connect {
        receive_max: NonZeroU16::new(2),
        ..connect5("rm-qos2")
    };
    let (mut c, _) = Raw5::connect_ok(&server, Via::Tcp, connect);
    c.subscribe("rm2/x", 2);
    for i in 0..4 {
        publ.publish(publish_packet("rm2/x", format!("{i}"), 2, false));
    }
    let first = unacked(&mut c, QUIET);
    assert_eq!(
        first.len(),
        2,
        "QoS 2 deliveries in flight with Receive Maximum 2"
    );
    for p in &first {
        c.send(v5::Packet::PublishReceived(v5::PublishAck {
            packet_id: p.packet_id.expect("QoS 2 packet id"),
            ..Default::default()
        }));
    }
    let (after_pubrec, _) = c.drain(QUIET);
    let publishes = after_pubrec
        .iter()
        .filter(|p| matches!(p, v5::Packet::Publish(_)))
        .count();
    assert_eq!(publishes, 0, "a PUBREC freed a slot: {after_pubrec:?}");
    let pid = first[0].packet_id.expect("QoS 2 packet id");
    c.send(v5::Packet::PublishComplete(v5::PublishAck2 {
        packet_id: pid,
        ..Default::default()
    }));
    let next = c.recv_publish(MQTT_WAIT).map(|p| text(&p));
    assert_eq!(next.as_deref(), Some("2"), "PUBCOMP frees a slot");
}

#[test]
fn outbound_window_is_128_in_both_versions() {
    let server = Server::start();
    let mut s3 = Raw3::admin(&server, Via::Tcp, "win3");
    assert_eq!(
        s3.subscribe("win/#", 1),
        v3::SubscribeReturnCode::Success(QoS::AtLeastOnce)
    );
    let mut s5 = Raw5::admin(&server, Via::HttpMqtt, "win5");
    s5.subscribe("win/#", 1);
    let mut publ = Raw5::admin(&server, Via::Tcp, "win-pub");
    for i in 0..200 {
        publ.publish(publish_packet("win/x", format!("{i}"), 1, false));
    }
    let in_flight5 = unacked(&mut s5, Duration::from_secs(1));
    assert_eq!(
        in_flight5.len(),
        128,
        "v5 deliveries in flight without PUBACK"
    );
    let in_flight3: Vec<Publish> = std::iter::from_fn(|| s3.recv_publish(QUIET)).collect();
    assert_eq!(
        in_flight3.len(),
        128,
        "v3.1.1 deliveries in flight without PUBACK"
    );
    let mut got5: Vec<String> = in_flight5.iter().map(text).collect();
    in_flight5.iter().for_each(|p| s5.ack(p));
    while got5.len() < 200 {
        got5.push(text(&s5.expect_publish()));
    }
    let want: Vec<String> = (0..200).map(|i| i.to_string()).collect();
    assert_eq!(got5, want, "v5: all 200 in order once acknowledged");
    let mut got3: Vec<String> = in_flight3.iter().map(text).collect();
    in_flight3.iter().for_each(|p| s3.ack(p));
    while got3.len() < 200 {
        got3.push(text(&s3.expect_publish()));
    }
    assert_eq!(got3, want, "v3.1.1: all 200 in order once acknowledged");
}

#[test]
fn inbound_packets_above_the_maximum_size_are_refused() {
    let server = Server::start();
    let mut sub = Raw5::admin(&server, Via::Tcp, "big-sub");
    sub.subscribe("big/#", 1);
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let mut c = Raw5::admin(&server, via, &format!("big5-{tag}"));
        let fits = publish_packet("big/fits", vec![b'f'; MAX_PACKET - 1024], 1, false);
        let ack = c.publish(fits).expect("PUBACK");
        assert_eq!(
            ack.reason_code,
            v5::PublishAckReason::Success,
            "{tag}: just under 1 MiB"
        );
        let p = sub.expect_publish();
        assert_eq!(p.payload.len(), MAX_PACKET - 1024, "{tag}");
        // The server may close while the packet is still being written.
        let too_big = publish_packet("big/over", vec![b'o'; MAX_PACKET + 1024], 1, false);
        let _ = c.try_send(v5::Packet::Publish(Box::new({
            let mut p = too_big;
            p.packet_id = NonZeroU16::new(99);
            p
        })));
        assert_disconnected(
            &mut c,
            v5::DisconnectReasonCode::PacketTooLarge,
            &format!("{tag}: 1 MiB + 1 KiB"),
        );
    }
    let mut c3 = Raw3::admin(&server, Via::Tcp, "big3");
    let mut p = publish_packet("big/over3", vec![b'o'; MAX_PACKET + 1024], 1, false);
    p.packet_id = NonZeroU16::new(1);
    let _ = c3.try_send(v3::Packet::Publish(Box::new(p)));
    let got = c3.expect_closed(MQTT_WAIT);
    assert!(got.is_empty(), "v3.1.1: packets before the close {got:?}");
    let (rest, _) = sub.drain(QUIET);
    assert!(rest.is_empty(), "an oversized publish was routed: {rest:?}");
}

#[test]
fn deliveries_above_the_clients_maximum_packet_size_are_not_sent() {
    let server = Server::start();
    let mut publ = Raw5::admin(&server, Via::Tcp, "mps-pub");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let topic = format!("mps/{tag}");
        let connect = v5::Connect {
            max_packet_size: NonZeroU32::new(512),
            ..connect5(&format!("mps-{tag}"))
        };
        let (mut c, _) = Raw5::connect_ok(&server, via, connect);
        c.subscribe(&topic, 1);
        publ.publish(publish_packet(&topic, vec![b'x'; 2000], 1, false));
        publ.publish(publish_packet(&topic, "small", 1, false));
        let p = c.expect_publish();
        assert_eq!(
            text(&p),
            "small",
            "{tag}: the 2000-byte delivery was sent to a 512-byte client"
        );
        let (rest, closed) = c.drain(QUIET);
        assert!(
            rest.is_empty() && closed.is_none(),
            "{tag}: then {rest:?} (closed: {closed:?})"
        );
    }
}

#[test]
fn malformed_packet_gets_0x81() {
    let server = Server::start();
    for via in EVERY_VIA {
        let mut c = Raw5::admin(&server, via, &format!("malformed-{}", via_tag(via)));
        // Session Expiry Interval (0x11) is not a PUBLISH property.
        let _ = c.send_bytes(&raw_publish("mf/x", &[0x11, 0, 0, 0, 10], b"x"));
        assert_disconnected(
            &mut c,
            v5::DisconnectReasonCode::MalformedPacket,
            &format!("{via:?}"),
        );
    }
}
