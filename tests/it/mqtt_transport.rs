//! MQTT transports and delivery: rumqttc clients in MQTT 3.1.1 and MQTT 5 over TCP, over
//! WebSocket on the `ws` port (any path) and at `/mqtt` on the HTTP port; `mosquitto_pub` and
//! `mosquitto_sub` in both versions; wildcards `+` and `#` at QoS 0/1/2 with the delivered QoS
//! being min(publish QoS, subscription QoS); a retained QoS 2 MQTT 5 publish with a content type
//! over WebSocket reaching a later subscriber; keep-alive 0; and `GET /svc/` reporting the bound
//! broker ports.

use crate::common::*;
use reqwest::{Method, StatusCode};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;

/// A subscriber and a publisher on the same listener and protocol; one message each way of QoS.
fn round_trip(proto: Proto, via: Via) {
    let server = Server::start();
    let tag = format!("{proto:?}-{via:?}")
        .to_lowercase()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let mut sub = server.mqtt_admin(proto, via, &format!("sub-{tag}"));
    let mut publ = server.mqtt_admin(proto, via, &format!("pub-{tag}"));
    let topic = format!("rt/{tag}/value");
    assert_eq!(sub.subscribe(&topic, 2), Some(2), "granted QoS");
    for qos in 0..=2u8 {
        let payload = format!("{{\"value\":{qos}}}");
        let reason = publ.publish(&topic, payload.clone(), qos, false);
        assert_eq!(reason, "Success", "ack of the QoS {qos} publish");
        let msg = sub.expect_publish(&topic);
        assert_eq!(msg.text(), payload, "payload of the QoS {qos} publish");
        assert_eq!(msg.qos, qos, "delivered QoS of a QoS {qos} publish");
        assert!(!msg.retain, "a live message is not retained");
    }
    publ.disconnect();
    sub.disconnect();
}

#[test]
fn v3_over_ws_port_root_path() {
    round_trip(Proto::V3, Via::Ws("/"));
}

#[test]
fn v5_over_ws_port_any_path() {
    round_trip(Proto::V5, Via::Ws("/some/other/path"));
}

#[test]
fn messages_cross_listeners_and_versions() {
    let server = Server::start();
    let vias = [Via::Tcp, Via::Ws("/mqtt"), Via::HttpMqtt];
    let mut subs = Vec::new();
    for (i, via) in vias.iter().enumerate() {
        for proto in [Proto::V3, Proto::V5] {
            let mut c = server.mqtt_admin(proto, *via, &format!("x-sub-{i}-{proto:?}"));
            assert_eq!(c.subscribe("cross/#", 1), Some(1));
            subs.push(c);
        }
    }
    for (i, via) in vias.iter().enumerate() {
        for proto in [Proto::V3, Proto::V5] {
            let mut p = server.mqtt_admin(proto, *via, &format!("x-pub-{i}-{proto:?}"));
            let topic = format!("cross/{i}/{proto:?}");
            p.publish(&topic, format!("from {via:?} {proto:?}"), 1, false);
            for s in subs.iter_mut() {
                let m = s.expect_publish(&topic);
                assert_eq!(m.text(), format!("from {via:?} {proto:?}"));
                assert_eq!(m.qos, 1);
            }
            p.disconnect();
        }
    }
}

#[test]
fn mosquitto_clients_in_both_versions() {
    let server = Server::start();
    let mut sub5 = server.mosquitto_sub(true, "mosq/#", 1, "admin", ADMIN_PASSWORD);
    let mut sub3 = server.mosquitto_sub(false, "mosq/+/v", 2, "admin", ADMIN_PASSWORD);
    let mut rumq = server.mqtt_admin(Proto::V5, Via::Tcp, "rumq-sub");
    rumq.subscribe("mosq/#", 2);

    for (v5, topic, payload) in [
        (false, "mosq/a/v", "from-311"),
        (true, "mosq/b/v", "from-5"),
    ] {
        let (ok, out) = server.mosquitto_pub(
            v5,
            &[
                "-u",
                "admin",
                "-P",
                ADMIN_PASSWORD,
                "-q",
                "1",
                "-t",
                topic,
                "-m",
                payload,
            ],
        );
        assert!(ok, "mosquitto_pub (v5: {v5}) failed: {out}");
        let line = sub5.expect_msg(topic, payload);
        assert_eq!(line, format!("MSG {topic} 1 0 {payload}"), "v5 subscriber");
        let line = sub3.expect_msg(topic, payload);
        assert_eq!(
            line,
            format!("MSG {topic} 1 0 {payload}"),
            "v3.1.1 subscriber"
        );
        let m = rumq.expect_publish(topic);
        assert_eq!((m.text().as_str(), m.qos), (payload, 1));
    }

    // A rumqttc publish reaches the mosquitto subscribers at min(2, sub QoS).
    let mut rpub = server.mqtt_admin(Proto::V3, Via::Ws("/"), "rumq-pub");
    rpub.publish("mosq/c/v", "from-rumqttc", 2, false);
    assert_eq!(
        sub5.expect_msg("mosq/c/v", "from-rumqttc"),
        "MSG mosq/c/v 1 0 from-rumqttc"
    );
    assert_eq!(
        sub3.expect_msg("mosq/c/v", "from-rumqttc"),
        "MSG mosq/c/v 2 0 from-rumqttc"
    );
}

fn wildcards_and_qos(proto: Proto) {
    let server = Server::start();
    let mut publ = server.mqtt_admin(proto, Via::Tcp, "wild-pub");
    let mut subs: Vec<Mqtt> = (0..=2u8)
        .map(|s| {
            let mut c = server.mqtt_admin(proto, Via::Tcp, &format!("wild-sub-{s}"));
            assert_eq!(c.subscribe(&format!("p{s}/+/temp"), s), Some(s));
            assert_eq!(c.subscribe(&format!("h{s}/#"), s), Some(s));
            c
        })
        .collect();
    for s in 0..=2u8 {
        // Never matched: `+` is one level, and `h<s>x` is not under `h<s>/`.
        publ.publish(&format!("p{s}/a/b/temp"), "no", 2, false);
        publ.publish(&format!("p{s}/a/temperature"), "no", 2, false);
        publ.publish(&format!("h{s}x/a"), "no", 2, false);
        for p in 0..=2u8 {
            publ.publish(&format!("p{s}/line{p}/temp"), format!("{p}"), p, false);
            publ.publish(&format!("h{s}/a/b/c{p}"), format!("{p}"), p, false);
        }
        // `#` also matches the parent level itself.
        publ.publish(&format!("h{s}"), "parent", 1, false);
    }
    for (s, sub) in subs.iter_mut().enumerate() {
        let s = s as u8;
        let got = take_publishes(sub, 7);
        let mut by_topic: BTreeMap<String, (String, u8)> = BTreeMap::new();
        for m in &got {
            assert!(
                by_topic
                    .insert(m.topic.clone(), (m.text(), m.qos))
                    .is_none(),
                "`{}` delivered twice to the QoS {s} subscriber",
                m.topic
            );
        }
        let mut want = BTreeMap::new();
        for p in 0..=2u8 {
            want.insert(format!("p{s}/line{p}/temp"), (format!("{p}"), p.min(s)));
            want.insert(format!("h{s}/a/b/c{p}"), (format!("{p}"), p.min(s)));
        }
        want.insert(format!("h{s}"), ("parent".to_string(), 1.min(s)));
        assert_eq!(
            by_topic, want,
            "topic -> (payload, delivered QoS) for the QoS {s} subscriber"
        );
        // Nothing else arrives: a sentinel published last is the next message.
        publ.publish(&format!("h{s}/zz"), "end", 0, false);
        let tail = sub.collect_until(&format!("h{s}/zz"));
        assert_eq!(tail.len(), 1, "unexpected extra messages: {tail:?}");
    }
}

#[test]
fn retained_qos2_v5_with_content_type_over_websocket() {
    let server = Server::start();
    // Like the client SDK: MQTT 5 over WebSocket, QoS 2, retain, content type.
    let mut sdk = server.mqtt_admin(Proto::V5, Via::HttpMqtt, "sdk-like");
    let mut live = server.mqtt_admin(Proto::V5, Via::Ws("/mqtt"), "live-sub");
    assert_eq!(live.subscribe("plant/+/setpoint", 2), Some(2));
    let payload = r#"{"value":42.5,"unit":"C"}"#;
    let reason = sdk.publish_ct(
        "plant/line1/setpoint",
        payload,
        2,
        true,
        Some("application/json"),
    );
    assert_eq!(reason, "Success", "PUBCOMP reason");
    let m = live.expect_publish("plant/line1/setpoint");
    assert_eq!(m.text(), payload);
    assert_eq!(m.qos, 2);
    assert_eq!(m.content_type.as_deref(), Some("application/json"));

    // Later subscribers get the retained copy: MQTT 5 over both WebSocket endpoints, 3.1.1 too.
    for (i, (proto, via)) in [
        (Proto::V5, Via::Ws("/")),
        (Proto::V5, Via::HttpMqtt),
        (Proto::V3, Via::Tcp),
    ]
    .into_iter()
    .enumerate()
    {
        let mut late = server.mqtt_admin(proto, via, &format!("late-{i}"));
        late.subscribe("plant/#", 2);
        let m = late.expect_publish("plant/line1/setpoint");
        assert_eq!(m.text(), payload, "{proto:?} {via:?}: retained payload");
        assert!(
            m.retain,
            "{proto:?} {via:?}: retain flag on the retained copy"
        );
        assert_eq!(m.qos, 2, "{proto:?} {via:?}: QoS of the retained copy");
        if proto == Proto::V5 {
            assert_eq!(
                m.content_type.as_deref(),
                Some("application/json"),
                "{via:?}: content type of the retained copy"
            );
        }
        late.disconnect();
    }

    // An empty retained publish clears it: a new subscriber gets nothing but a later message.
    sdk.publish("plant/line1/setpoint", "", 2, true);
    let mut after = server.mqtt_admin(Proto::V3, Via::Tcp, "after-clear");
    after.subscribe("plant/#", 1);
    sdk.publish("plant/line2/marker", "m", 1, false);
    let got = after.collect_until("plant/line2/marker");
    assert_eq!(got.len(), 1, "retained message not cleared: {got:?}");
}

/// An MQTT string: two length bytes and the UTF-8 bytes.
fn mqtt_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A packet: `first` byte, variable-length remaining length, body.
fn packet(first: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![first];
    let mut len = body.len();
    loop {
        let mut byte = (len % 128) as u8;
        len /= 128;
        if len > 0 {
            byte |= 0x80;
        }
        out.push(byte);
        if len == 0 {
            break;
        }
    }
    out.extend_from_slice(body);
    out
}

/// A raw MQTT 5 CONNECT with keep-alive 0 over TCP (rumqttc's v5 client refuses keep-alive
/// below 5 s); returns the socket after checking the CONNACK reason code is 0.
fn raw_v5_connect_keep_alive_zero(server: &Server, client_id: &str) -> TcpStream {
    let mut body = Vec::new();
    mqtt_str(&mut body, "MQTT");
    body.push(5); // protocol level
    body.push(0x80 | 0x40 | 0x02); // username, password, clean start
    body.extend_from_slice(&[0, 0]); // keep-alive 0
    body.push(0); // no properties
    mqtt_str(&mut body, client_id);
    mqtt_str(&mut body, "admin");
    mqtt_str(&mut body, ADMIN_PASSWORD);
    let mut tcp = TcpStream::connect(server.listener("mqtt")).expect("connect to the mqtt port");
    tcp.set_read_timeout(Some(MQTT_WAIT)).unwrap();
    tcp.write_all(&packet(0x10, &body)).unwrap();
    let mut head = [0u8; 2];
    tcp.read_exact(&mut head)
        .expect("CONNACK for a keep-alive 0 MQTT 5 CONNECT");
    assert_eq!(
        head[0], 0x20,
        "expected CONNACK, got packet type {:#x}",
        head[0]
    );
    let mut rest = vec![0u8; head[1] as usize];
    tcp.read_exact(&mut rest).expect("CONNACK body");
    assert_eq!(rest[1], 0, "CONNACK reason code for keep-alive 0 (MQTT 5)");
    tcp
}

#[test]
fn keep_alive_zero_is_accepted() {
    let server = Server::start();
    for via in [Via::Tcp, Via::Ws("/"), Via::HttpMqtt] {
        let id = format!("ka0-{via:?}").replace(|c: char| !c.is_ascii_alphanumeric(), "");
        let opts = MqttOpts::new(Proto::V3, via, &id)
            .creds("admin", ADMIN_PASSWORD)
            .keep_alive(0);
        let mut c = server
            .try_mqtt(opts)
            .unwrap_or_else(|e| panic!("v3.1.1 {via:?} keep-alive 0 refused: {e}"));
        let topic = format!("ka0/{id}");
        c.subscribe(&topic, 1);
        c.publish(&topic, "alive", 1, false);
        assert_eq!(c.expect_publish(&topic).text(), "alive");
        c.disconnect();
    }

    // MQTT 5: a raw client with keep-alive 0 publishes; a subscriber receives it.
    let mut sub = server.mqtt_admin(Proto::V5, Via::Tcp, "ka0-sub");
    sub.subscribe("ka0/v5", 1);
    let mut raw = raw_v5_connect_keep_alive_zero(&server, "ka0-raw-v5");
    let mut body = Vec::new();
    mqtt_str(&mut body, "ka0/v5");
    body.push(0); // no properties
    body.extend_from_slice(b"alive-5");
    raw.write_all(&packet(0x30, &body)).unwrap();
    let m = sub.expect_publish("ka0/v5");
    assert_eq!(m.text(), "alive-5");
    raw.write_all(&[0xE0, 0x00]).unwrap(); // DISCONNECT
}

#[test]
fn device_info_reports_bound_broker_ports() {
    let server = Server::start();
    let resp = server.admin(Method::GET, "/svc/").send().unwrap();
    let info = json_ok(resp, StatusCode::OK);
    let bind = &info["uns"]["bind"];
    for (name, enabled) in [
        ("mqtt", true),
        ("ws", true),
        ("mqtts", false),
        ("wss", false),
    ] {
        assert_eq!(
            bind[name]["enabled"],
            serde_json::json!(enabled),
            "{name}: {info}"
        );
    }
    let port = |name: &str| {
        bind[name]["port"]
            .as_u64()
            .unwrap_or_else(|| panic!("{info}"))
    };
    assert_eq!(port("mqtt"), u64::from(server.listener_port("mqtt")));
    assert_eq!(port("ws"), u64::from(server.listener_port("ws")));
    assert_ne!(server.listener_port("mqtt"), server.listener_port("ws"));
    // The reported ports are the ones clients reach.
    let mut c = server.mqtt_admin(Proto::V3, Via::Tcp, "info-check");
    c.subscribe("info/x", 0);
    c.disconnect();
}

for_both_versions! {
    over_tcp => |proto| round_trip(proto, Via::Tcp);
    over_http_mqtt_path => |proto| round_trip(proto, Via::HttpMqtt);
    wildcards_and_delivered_qos => wildcards_and_qos;
}
