//! MQTT conformance, wills and keep alive (the broker behaviour decided for issue 13): a will is
//! published when the connection ends without a normal DISCONNECT (both versions, every listener),
//! not after a normal DISCONNECT, and after an MQTT 5 DISCONNECT 0x04; the MQTT 5 Will Delay
//! Interval delays it, a reconnect of the session in time cancels it, and the session's expiry
//! bounds it; keep alive 0 means no timeout; a client silent for 1.5 × its keep alive is
//! disconnected (MQTT 5: DISCONNECT 0x8D) and its will published, while a pinging client stays;
//! with `--mqtt-max-keepalive 10` a larger keep alive is lowered and announced as Server Keep
//! Alive.

use crate::common::*;
use rmqtt_codec::types::QoS;
use rmqtt_codec::{v3, v5};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// An MQTT 5 CONNECT as admin carrying a QoS 1 will with a content type.
fn will5(client_id: &str, topic: &str, delay: Option<u32>) -> v5::Connect {
    v5::Connect {
        last_will: Some(v5::LastWill {
            qos: QoS::AtLeastOnce,
            retain: false,
            topic: topic.to_string().into(),
            message: format!("will of {client_id}").into(),
            will_delay_interval_sec: delay,
            correlation_data: None,
            message_expiry_interval: None,
            content_type: Some("text/plain".into()),
            user_properties: Vec::new(),
            is_utf8_payload: None,
            response_topic: None,
        }),
        ..connect5(client_id)
    }
}

/// An MQTT 3.1.1 CONNECT as admin carrying a QoS 1 will.
fn will3(client_id: &str, topic: &str) -> v3::Connect {
    v3::Connect {
        last_will: Some(v3::LastWill {
            qos: QoS::AtLeastOnce,
            retain: false,
            topic: topic.to_string().into(),
            message: format!("will of {client_id}").into(),
        }),
        ..connect3(client_id)
    }
}

/// A watcher of `will/#` (MQTT 5, so content types are visible).
fn watcher(server: &Server, id: &str, filter: &str) -> Mqtt {
    let mut w = server.mqtt_admin(Proto::V5, Via::Tcp, id);
    assert_eq!(w.subscribe(filter, 1), Some(1));
    w
}

#[test]
fn will_is_published_when_the_connection_drops() {
    let server = Server::start();
    let mut w = watcher(&server, "will-watch", "will/#");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let (c5, _) = Raw5::connect_ok(
            &server,
            via,
            will5(&format!("w5{tag}"), &format!("will/5/{tag}"), None),
        );
        c5.drop_connection();
        let m = w.expect_publish(&format!("will/5/{tag}"));
        assert_eq!(
            (m.text(), m.qos, m.content_type.as_deref()),
            (format!("will of w5{tag}"), 1, Some("text/plain")),
            "{tag}: MQTT 5 will"
        );
        let (c3, _) = Raw3::connect_ok(
            &server,
            via,
            will3(&format!("w3{tag}"), &format!("will/3/{tag}")),
        );
        c3.drop_connection();
        let m = w.expect_publish(&format!("will/3/{tag}"));
        assert_eq!(
            (m.text(), m.qos),
            (format!("will of w3{tag}"), 1),
            "{tag}: MQTT 3.1.1 will"
        );
    }
}

#[test]
fn normal_disconnect_discards_the_will() {
    let server = Server::start();
    let mut w = watcher(&server, "will-watch", "will/#");
    let mut publ = server.mqtt_admin(Proto::V3, Via::Tcp, "will-end");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let (c5, _) = Raw5::connect_ok(
            &server,
            via,
            will5(&format!("n5{tag}"), "will/normal5", None),
        );
        c5.disconnect(v5::DisconnectReasonCode::NormalDisconnection);
        let (c3, _) = Raw3::connect_ok(&server, via, will3(&format!("n3{tag}"), "will/normal3"));
        c3.disconnect();
    }
    // Wills of a dropped connection are published at once, so a sentinel after this long
    // catches any stray one.
    std::thread::sleep(Duration::from_millis(500));
    publ.publish("will/end", "end", 1, false);
    let got = w.collect_until("will/end");
    assert_eq!(
        summary(&got),
        ["will/end end"],
        "a will was published after a normal DISCONNECT"
    );
}

#[test]
fn v5_disconnect_with_will_message_publishes_it() {
    let server = Server::start();
    let mut w = watcher(&server, "will-watch", "will/#");
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let (c, _) = Raw5::connect_ok(
            &server,
            via,
            will5(&format!("x5{tag}"), &format!("will/x04/{tag}"), None),
        );
        c.disconnect(v5::DisconnectReasonCode::DisconnectWithWillMessage);
        let m = w.expect_publish(&format!("will/x04/{tag}"));
        assert_eq!(
            m.text(),
            format!("will of x5{tag}"),
            "{tag}: DISCONNECT 0x04"
        );
    }
}

#[test]
fn v5_will_delay_session_resume_and_session_expiry() {
    let server = Server::start();
    let mut w = watcher(&server, "delay-watch", "delay/#");
    // Delayed 2 s in a session kept 60 s; delayed 3 s but resumed after 1 s; delayed 30 s but
    // the session ends after 2 s. (A session that ends at disconnect publishes its will at once.)
    let delayed = Raw5::connect_ok(
        &server,
        Via::Tcp,
        v5::Connect {
            session_expiry_interval_secs: 60,
            ..will5("d-plain", "delay/plain", Some(2))
        },
    )
    .0;
    let resumed_connect = |will: bool| {
        let base = if will {
            will5("d-resumed", "delay/resumed", Some(3))
        } else {
            connect5("d-resumed")
        };
        v5::Connect {
            clean_start: false,
            session_expiry_interval_secs: 60,
            ..base
        }
    };
    let resumed = Raw5::connect_ok(&server, Via::Ws("/"), resumed_connect(true)).0;
    let bounded = Raw5::connect_ok(
        &server,
        Via::HttpMqtt,
        v5::Connect {
            session_expiry_interval_secs: 2,
            ..will5("d-bounded", "delay/bounded", Some(30))
        },
    )
    .0;
    let t0 = Instant::now();
    delayed.drop_connection();
    resumed.drop_connection();
    bounded.drop_connection();

    let mut arrived: BTreeMap<String, f64> = BTreeMap::new();
    let mut watch_until = |end: Duration, arrived: &mut BTreeMap<String, f64>| {
        while let Some(m) = w.next_publish((t0 + end).saturating_duration_since(Instant::now())) {
            arrived.insert(m.topic.clone(), t0.elapsed().as_secs_f64());
        }
    };
    watch_until(Duration::from_secs(1), &mut arrived);
    let (again, ack) = Raw5::connect_ok(&server, Via::Tcp, resumed_connect(false));
    assert!(ack.session_present, "the resumed session is present");
    watch_until(Duration::from_secs(6), &mut arrived);

    let at = |topic: &str| arrived.get(topic).copied();
    let plain = at("delay/plain").unwrap_or_else(|| panic!("delayed will never came: {arrived:?}"));
    assert!(
        (1.8..=4.0).contains(&plain),
        "a 2 s will delay published it after {plain:.2} s (all, in s after the drop: {arrived:?})"
    );
    assert_eq!(
        at("delay/resumed"),
        None,
        "a resumed session's delayed will was published (all: {arrived:?})"
    );
    let bounded =
        at("delay/bounded").unwrap_or_else(|| panic!("bounded will never came: {arrived:?}"));
    assert!(
        (1.8..=4.0).contains(&bounded),
        "a will delayed 30 s in a session expiring after 2 s came after {bounded:.2} s \
         (all: {arrived:?})"
    );
    again.disconnect(v5::DisconnectReasonCode::NormalDisconnection);
}

/// A silent client's outcome: listener/version tag, seconds until closed, DISCONNECT reason.
type Outcome = (String, f64, Option<v5::DisconnectReasonCode>);

/// Watches `raw` (v5) until the server closes it; measures from `t0`.
fn watch5(mut raw: Raw5, tag: String, t0: Instant, within: Duration) -> Outcome {
    let got = raw.expect_closed(within);
    let reason = got.iter().find_map(|p| match p {
        v5::Packet::Disconnect(d) => Some(d.reason_code),
        _ => None,
    });
    (tag, t0.elapsed().as_secs_f64(), reason)
}

fn watch3(mut raw: Raw3, tag: String, t0: Instant, within: Duration) -> Outcome {
    raw.expect_closed(within);
    (tag, t0.elapsed().as_secs_f64(), None)
}

#[test]
fn silent_clients_are_dropped_after_one_and_a_half_keep_alive() {
    let server = Server::start();
    let mut w = watcher(&server, "ka-watch", "ka/#");
    let within = Duration::from_secs(8);
    let mut threads = Vec::new();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let c5 = v5::Connect {
            keep_alive: 2,
            ..will5(&format!("ka5{tag}"), &format!("ka/5/{tag}"), None)
        };
        let (raw, _) = Raw5::connect_ok(&server, via, c5);
        let (t0, label) = (Instant::now(), format!("v5 {tag}"));
        threads.push(in_thread(move || watch5(raw, label, t0, within)));
        let c3 = v3::Connect {
            keep_alive: 2,
            ..will3(&format!("ka3{tag}"), &format!("ka/3/{tag}"))
        };
        let (raw, _) = Raw3::connect_ok(&server, via, c3);
        let (t0, label) = (Instant::now(), format!("v3 {tag}"));
        threads.push(in_thread(move || watch3(raw, label, t0, within)));
    }
    // Meanwhile a client with the same keep alive that pings every second stays connected.
    let mut pinger = Raw5::connect_ok(
        &server,
        Via::Tcp,
        v5::Connect {
            keep_alive: 2,
            ..connect5("pinger")
        },
    )
    .0;
    for _ in 0..6 {
        pinger.send(v5::Packet::PingRequest);
        pinger.expect("PINGRESP", |p| matches!(p, v5::Packet::PingResponse));
        std::thread::sleep(Duration::from_secs(1));
    }
    let outcomes: Vec<Outcome> = threads
        .into_iter()
        .map(|t| t.join().expect("watcher thread"))
        .collect();
    eprintln!("silent clients (tag, seconds until closed, DISCONNECT reason): {outcomes:?}");
    for (tag, secs, _) in &outcomes {
        assert!(
            (2.5..=4.5).contains(secs),
            "{tag}: keep alive 2 s, closed after {secs:.2} s (want 3 s, the 1.5 × rule)"
        );
    }
    let mut wills: Vec<String> = take_publishes(&mut w, 6)
        .iter()
        .map(|m| m.topic.clone())
        .collect();
    wills.sort();
    let mut want: Vec<String> = EVERY_VIA
        .iter()
        .flat_map(|v| {
            [
                format!("ka/3/{}", via_tag(*v)),
                format!("ka/5/{}", via_tag(*v)),
            ]
        })
        .collect();
    want.sort();
    assert_eq!(wills, want, "the wills of the timed-out clients");
    pinger.send(v5::Packet::PingRequest);
    pinger.expect("PINGRESP after 6 s of pings", |p| {
        matches!(p, v5::Packet::PingResponse)
    });
    for (tag, _, reason) in outcomes.iter().filter(|(tag, _, _)| tag.starts_with("v5")) {
        assert_eq!(
            *reason,
            Some(v5::DisconnectReasonCode::KeepAliveTimeout),
            "{tag}: DISCONNECT"
        );
    }
}

#[test]
fn keep_alive_zero_means_no_timeout() {
    let server = Server::start();
    let mut clients5 = Vec::new();
    let mut clients3 = Vec::new();
    for via in EVERY_VIA {
        let tag = via_tag(via);
        let c = v5::Connect {
            keep_alive: 0,
            ..connect5(&format!("z5{tag}"))
        };
        let (raw, ack) = Raw5::connect_ok(&server, via, c);
        assert!(
            matches!(ack.server_keepalive_sec, None | Some(0)),
            "{tag}: keep alive 0 overridden by Server Keep Alive {:?}",
            ack.server_keepalive_sec
        );
        clients5.push((tag.clone(), raw));
        let c = v3::Connect {
            keep_alive: 0,
            ..connect3(&format!("z3{tag}"))
        };
        clients3.push((tag, Raw3::connect_ok(&server, via, c).0));
    }
    std::thread::sleep(Duration::from_secs(4));
    for (tag, c) in clients5.iter_mut() {
        let topic = format!("zero/5/{tag}");
        c.subscribe(&topic, 1);
        c.publish(publish_packet(&topic, "still here", 1, false));
        assert_eq!(text(&c.expect_publish()), "still here", "v5 {tag}");
    }
    for (tag, c) in clients3.iter_mut() {
        let topic = format!("zero/3/{tag}");
        c.subscribe(&topic, 1);
        c.publish(publish_packet(&topic, "still here", 1, false));
        assert_eq!(text(&c.expect_publish()), "still here", "v3 {tag}");
    }
}

#[test]
fn server_keep_alive_lowers_a_larger_client_keep_alive() {
    // `--mqtt-max-keepalive` is a setting of the new broker core (mqtt_max_keepalive).
    let server = Server::start_with(&["--mqtt-max-keepalive", "10"]);
    let mut w = watcher(&server, "cap-watch", "cap/#");
    let (small, ack) = Raw5::connect_ok(
        &server,
        Via::Tcp,
        v5::Connect {
            keep_alive: 5,
            ..connect5("cap-small")
        },
    );
    assert!(
        matches!(ack.server_keepalive_sec, None | Some(5)),
        "keep alive 5 under a maximum of 10 came back as {:?}",
        ack.server_keepalive_sec
    );
    small.disconnect(v5::DisconnectReasonCode::NormalDisconnection);

    let within = Duration::from_secs(20);
    let c5 = v5::Connect {
        keep_alive: 60,
        ..will5("cap5", "cap/5", None)
    };
    let (raw5, ack) = Raw5::connect_ok(&server, Via::HttpMqtt, c5);
    assert_eq!(
        ack.server_keepalive_sec,
        Some(10),
        "Server Keep Alive in CONNACK"
    );
    let t0 = Instant::now();
    let t5 = in_thread(move || watch5(raw5, "v5".into(), t0, within));
    let c3 = v3::Connect {
        keep_alive: 60,
        ..will3("cap3", "cap/3")
    };
    let (raw3, _) = Raw3::connect_ok(&server, Via::Tcp, c3);
    let t0 = Instant::now();
    let t3 = in_thread(move || watch3(raw3, "v3".into(), t0, within));
    for t in [t5, t3] {
        let (tag, secs, reason) = t.join().expect("watcher thread");
        assert!(
            (14.0..=18.0).contains(&secs),
            "{tag}: keep alive 60 lowered to 10, silent client closed after {secs:.2} s (want 15 s)"
        );
        if tag == "v5" {
            assert_eq!(reason, Some(v5::DisconnectReasonCode::KeepAliveTimeout));
        }
    }
    let mut wills: Vec<String> = take_publishes(&mut w, 2)
        .iter()
        .map(|m| m.topic.clone())
        .collect();
    wills.sort();
    assert_eq!(wills, ["cap/3", "cap/5"]);
}
