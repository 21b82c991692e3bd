//! Broker state survives `kill -9`: what the broker acknowledged is stored before the ack.
//! (a) QoS 1 messages queued for an offline persistent MQTT 5 session while a publisher
//! pipelines 2,000 of them and the server is killed mid-load: after the restart the session
//! resumes and delivers every PUBACKed message (duplicates allowed); (b) 200 retained messages
//! PUBACKed just before the kill are all retained after it; (c) persistent subscriptions of
//! both protocol versions survive a kill and a restart and receive what is published after it.

use crate::common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Messages the publisher sends in (a).
const N: usize = 2000;
/// The kill comes once this many of them were PUBACKed.
const KILL_AFTER: usize = N / 4;
const RETAINED: usize = 200;
/// Longest wait for a phase of the load.
const LOAD_WAIT: Duration = Duration::from_secs(60);

/// Publishes `0..N` as QoS 1 on `topic` until all are PUBACKed or the connection breaks;
/// returns the PUBACKed values and counts them in `acked_count`.
fn publish_until_killed(port: u16, topic: &str, acked_count: &AtomicUsize) -> BTreeSet<u64> {
    let publisher = Publisher {
        client_id: "dur-publisher".into(),
        username: "admin",
        password: ADMIN_PASSWORD,
        topic,
    };
    publish_acknowledged(port, publisher, 0..N as u64, |acked| {
        acked_count.store(acked.len(), Ordering::Relaxed);
        acked.len() < N
    })
}

/// Receives publishes until every value of `want` arrived on `topic` or nothing comes for
/// [`MQTT_WAIT`]; returns the distinct values received.
fn receive_values(sub: &mut Mqtt, topic: &str, want: &BTreeSet<u64>) -> BTreeSet<u64> {
    let mut got = BTreeSet::new();
    while !want.is_subset(&got) {
        let Some(m) = sub.next_publish(MQTT_WAIT) else {
            break;
        };
        assert_eq!(m.topic, topic, "unexpected topic");
        let value: u64 = m
            .text()
            .parse()
            .unwrap_or_else(|_| panic!("payload `{}` is not a value", m.text()));
        assert!(value < N as u64, "value {value} was never published");
        assert_eq!(m.qos, 1, "delivered QoS");
        got.insert(value);
    }
    got
}

#[test]
fn queued_messages_of_a_persistent_session_survive_kill_9_mid_load() {
    let mut server = Server::start();
    let topic = "dur/load";
    let opts = MqttOpts::new(Proto::V5, Via::Tcp, "dur-subscriber")
        .creds("admin", ADMIN_PASSWORD)
        .persistent();
    let mut sub = server.mqtt(opts.clone());
    assert_eq!(sub.subscribe(topic, 1), Some(1));
    sub.disconnect();

    let port = server.listener_port("mqtt");
    let acked_count = Arc::new(AtomicUsize::new(0));
    let publisher = {
        let acked_count = acked_count.clone();
        thread::spawn(move || publish_until_killed(port, topic, &acked_count))
    };
    let deadline = Instant::now() + LOAD_WAIT;
    while acked_count.load(Ordering::Relaxed) < KILL_AFTER {
        assert!(
            Instant::now() < deadline && !publisher.is_finished(),
            "only {} PUBACKs within {LOAD_WAIT:?}",
            acked_count.load(Ordering::Relaxed)
        );
        thread::sleep(Duration::from_millis(1));
    }
    server.kill9();
    let acked = publisher.join().expect("publisher thread");
    eprintln!("{} of {N} messages PUBACKed before the kill", acked.len());
    assert!(
        acked.len() >= KILL_AFTER,
        "PUBACKs lost by the publisher thread"
    );

    server.restart();
    let mut sub = server.mqtt(opts);
    let got = receive_values(&mut sub, topic, &acked);
    let lost: Vec<_> = acked.difference(&got).collect();
    assert!(
        lost.is_empty(),
        "{} of {} PUBACKed messages lost by kill -9 (session present: {}), e.g. {:?}",
        lost.len(),
        acked.len(),
        sub.session_present,
        &lost[..lost.len().min(10)]
    );
    assert!(
        sub.session_present,
        "the resumed session was not reported present"
    );
    sub.disconnect();
}

#[test]
fn retained_messages_survive_kill_9_right_after_the_last_puback() {
    let mut server = Server::start();
    let mut publ = server.mqtt_admin(Proto::V5, Via::Tcp, "dur-retainer");
    let topic = |i: usize| format!("dur/ret/{i}");
    for i in 0..RETAINED {
        let reason = publ.publish(&topic(i), format!("kept-{i}"), 1, true);
        assert_eq!(reason, "Success", "PUBACK of retained message {i}");
    }
    server.kill9();
    drop(publ);

    server.restart();
    let mut sub = server.mqtt_admin(Proto::V5, Via::Tcp, "dur-ret-reader");
    assert_eq!(sub.subscribe("#", 1), Some(1));
    let mut got: BTreeMap<String, (String, bool)> = BTreeMap::new();
    while got.len() < RETAINED {
        let Some(m) = sub.next_publish(MQTT_WAIT) else {
            break;
        };
        if m.topic.starts_with("dur/ret/") {
            got.insert(m.topic.clone(), (m.text(), m.retain));
        }
    }
    let want: BTreeMap<String, (String, bool)> = (0..RETAINED)
        .map(|i| (topic(i), (format!("kept-{i}"), true)))
        .collect();
    let missing: Vec<_> = want
        .keys()
        .filter(|t| !got.contains_key(*t))
        .take(10)
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {RETAINED} retained messages lost by kill -9, e.g. {missing:?}",
        RETAINED - got.len()
    );
    assert_eq!(
        got, want,
        "topic -> (payload, retain flag) after the restart"
    );
    sub.disconnect();
}

fn subscriptions_survive_kill_9(proto: Proto) {
    let mut server = Server::start();
    let id = format!("dur-subs-{proto:?}");
    let filter = format!("dur/subs/{proto:?}/#");
    let opts = MqttOpts::new(proto, Via::Tcp, &id)
        .creds("admin", ADMIN_PASSWORD)
        .persistent();
    let mut sub = server.mqtt(opts.clone());
    assert_eq!(sub.subscribe(&filter, 1), Some(1));
    sub.disconnect();
    server.kill9();

    server.restart();
    let mut publ = server.mqtt_admin(Proto::V3, Via::Tcp, "dur-subs-publisher");
    let topic = format!("dur/subs/{proto:?}/after");
    publ.publish(&topic, "after the restart", 2, false);
    let mut sub = server.mqtt(opts);
    assert!(
        sub.session_present,
        "{proto:?}: the persistent session is gone after kill -9"
    );
    let m = sub.expect_publish(&topic);
    assert_eq!(m.text(), "after the restart");
    assert_eq!(m.qos, 1, "delivered at the stored subscription's QoS");
    // Still subscribed while connected, without subscribing again.
    publ.publish(&topic, "live", 1, false);
    assert_eq!(sub.expect_publish(&topic).text(), "live");
    sub.disconnect();
    publ.disconnect();
}

#[test]
fn persistent_subscriptions_survive_kill_9_v311() {
    subscriptions_survive_kill_9(Proto::V3);
}

#[test]
fn persistent_subscriptions_survive_kill_9_v5() {
    subscriptions_survive_kill_9(Proto::V5);
}
