//! The broker against the real `mosquitto_pub`/`mosquitto_sub` (mosquitto 2.0.11) in MQTT 3.1.1
//! and 5 over TCP: QoS 0/1/2 round trips across versions, retained messages set with `-r` and
//! cleared with `-r -n`, MQTT 5 properties given with `-D` and read back with `-F` (user
//! properties in order, content type, payload format, response topic, correlation data, message
//! expiry counting down, subscription identifiers), overlapping subscriptions delivered once,
//! no local, wills (SIGKILL, clean exit, will retain, will delay), persistent sessions (`-c -i`)
//! queueing while offline in both versions and session expiry (`-x`).
//!
//! Only TCP: the installed clients have no WebSocket transport (`--ws` is unknown and `-L`
//! accepts only `mqtt://`), and no `--nl`, so no local is set by a rumqttc MQTT 5 client while a
//! `mosquitto_sub` shows the message did pass through the broker.

use crate::common::*;
use crate::mosquitto_clients_support::{mosq_pub, words, MosqSub, Ver};
use std::sync::mpsc;
use std::time::Duration;

/// Topic, QoS, retain flag and payload.
const TQRP: &str = "%t|%q|%r|%p";

/// How long "nothing arrives" is watched for.
const QUIET: Duration = Duration::from_millis(1500);

#[test]
fn qos_round_trips_across_versions() {
    let server = Server::start();
    let mut subs = Vec::new();
    for sv in Ver::BOTH {
        for sq in 0..=2u8 {
            let sub = MosqSub::start(&server, sv, TQRP, &["-t", "rt/#", "-q", &sq.to_string()]);
            subs.push((sv, sq, sub));
        }
    }
    for pv in Ver::BOTH {
        for pq in 0..=2u8 {
            let topic = format!("rt/{}/q{pq}", pv.tag());
            let payload = format!("from-{}-q{pq}", pv.tag());
            mosq_pub(
                &server,
                pv,
                &["-t", &topic, "-m", &payload, "-q", &pq.to_string()],
            );
            for (sv, sq, sub) in subs.iter_mut() {
                // The very next line: a duplicate of an earlier message would show up here.
                let line = sub.expect_msg(&topic);
                let want = format!("{topic}|{}|0|{payload}", pq.min(*sq));
                assert_eq!(line, want, "{sv:?} subscriber at QoS {sq}");
            }
        }
    }
    mosq_pub(
        &server,
        Ver::V311,
        &["-t", "rt/end", "-m", "end", "-q", "1"],
    );
    for (sv, sq, sub) in subs.iter_mut() {
        let line = sub.expect_msg("rt/end");
        let want = format!("rt/end|{}|0|end", 1.min(*sq));
        assert_eq!(line, want, "{sv:?} QoS {sq}: extra message");
    }
}

fn retained_set_and_cleared(ver: Ver) {
    let server = Server::start();
    let t = ver.tag();
    let (a, b) = (format!("ret/{t}/a"), format!("ret/{t}/b"));
    mosq_pub(&server, ver, &["-t", &a, "-m", "kept", "-q", "1", "-r"]);
    mosq_pub(
        &server,
        ver,
        &["-t", &b, "-m", "short-lived", "-q", "1", "-r"],
    );
    mosq_pub(&server, ver, &["-t", &b, "-q", "1", "-r", "-n"]);

    let filter = format!("ret/{t}/#");
    let mut sub = MosqSub::start(&server, ver, TQRP, &["-t", &filter, "-q", "1"]);
    assert_eq!(sub.expect_msg("retained"), format!("{a}|1|1|kept"));
    // The live copy of a retained publish reaches existing subscribers with retain=0.
    mosq_pub(&server, ver, &["-t", &a, "-m", "updated", "-q", "1", "-r"]);
    assert_eq!(sub.expect_msg("live"), format!("{a}|1|0|updated"));
    // Clearing is a normal (empty) publish for existing subscribers.
    mosq_pub(&server, ver, &["-t", &a, "-q", "1", "-r", "-n"]);
    assert_eq!(sub.expect_msg("clear"), format!("{a}|1|0|"));

    // Nothing is retained any more: a marker is the first thing a new subscriber sees.
    let mut late = MosqSub::start(&server, ver, TQRP, &["-t", &filter, "-q", "1"]);
    let marker = format!("ret/{t}/marker");
    mosq_pub(&server, ver, &["-t", &marker, "-m", "m", "-q", "1"]);
    assert_eq!(late.expect_msg("marker"), format!("{marker}|1|0|m"));
}

#[test]
fn retained_set_with_r_and_cleared_with_r_n_v311() {
    retained_set_and_cleared(Ver::V311);
}

#[test]
fn retained_set_with_r_and_cleared_with_r_n_v5() {
    retained_set_and_cleared(Ver::V5);
}

/// Topic, retain, user properties, content type, expiry, response topic, correlation data,
/// payload format indicator and payload.
const PROPS: &str = "%t|%r|%P|%C|%E|%R|%D|%F|%p";

/// Every forwarded PUBLISH property, as `-D publish <name> <value...>` arguments.
const PUBLISH_PROPS: &[&[&str]] = &[
    &["user-property", "k1", "v1"],
    &["user-property", "k2", "v 2"],
    &["user-property", "k1", "v3"],
    &["content-type", "text/plain"],
    &["message-expiry-interval", "300"],
    &["response-topic", "reply/to"],
    &["correlation-data", "corr-123"],
    &["payload-format-indicator", "1"],
];

/// `mosquitto_pub -V 5 -q 1` with every property of [`PUBLISH_PROPS`].
fn publish_with_properties(server: &Server, topic: &str, payload: &str, extra: &[&str]) {
    let mut args = vec!["-t", topic, "-m", payload, "-q", "1"];
    for prop in PUBLISH_PROPS {
        args.extend(["-D", "publish"]);
        args.extend_from_slice(prop);
    }
    args.extend_from_slice(extra);
    mosq_pub(server, Ver::V5, &args);
}

/// Checks a `PROPS` line: every property as published, the expiry at most 300 s.
fn assert_props(line: &str, topic: &str, retain: u8, payload: &str) {
    let f: Vec<&str> = line.splitn(9, '|').collect();
    assert_eq!(f.len(), 9, "line `{line}`");
    assert_eq!(f[0], topic, "topic in `{line}`");
    assert_eq!(f[1], retain.to_string(), "retain flag in `{line}`");
    assert_eq!(
        f[2], "k1:v1 k2:v 2 k1:v3",
        "user properties, order kept: `{line}`"
    );
    assert_eq!(f[3], "text/plain", "content type in `{line}`");
    let expiry: u32 = f[4]
        .parse()
        .unwrap_or_else(|_| panic!("no message expiry in `{line}`"));
    assert!((280..=300).contains(&expiry), "expiry in `{line}`");
    assert_eq!(f[5], "reply/to", "response topic in `{line}`");
    assert_eq!(f[6], "corr-123", "correlation data in `{line}`");
    assert_eq!(f[7], "1", "payload format indicator in `{line}`");
    assert_eq!(f[8], payload, "payload in `{line}`");
}

#[test]
fn v5_publish_properties_are_forwarded_live_and_retained() {
    let server = Server::start();
    let mut v5 = MosqSub::start(&server, Ver::V5, PROPS, &["-t", "props/#", "-q", "1"]);
    let mut v3 = MosqSub::start(&server, Ver::V311, TQRP, &["-t", "props/#", "-q", "1"]);
    publish_with_properties(&server, "props/live", "hello", &[]);
    assert_props(&v5.expect_msg("live"), "props/live", 0, "hello");
    // A 3.1.1 subscriber gets the same message without properties.
    assert_eq!(v3.expect_msg("live"), "props/live|1|0|hello");

    publish_with_properties(&server, "props/kept", "retained", &["-r"]);
    assert_props(&v5.expect_msg("live retained"), "props/kept", 0, "retained");
    let mut late = MosqSub::start(&server, Ver::V5, PROPS, &["-t", "props/kept", "-q", "1"]);
    assert_props(
        &late.expect_msg("retained copy"),
        "props/kept",
        1,
        "retained",
    );

    // A message without properties shows none (nothing is left over from the previous one).
    mosq_pub(
        &server,
        Ver::V5,
        &["-t", "props/bare", "-m", "bare", "-q", "1"],
    );
    assert_eq!(v5.expect_msg("bare"), "props/bare|0|||||||bare");
}

#[test]
fn v5_message_expiry_counts_down_and_expires() {
    let server = Server::start();
    let expiry = |secs: &'static str| ["-D", "publish", "message-expiry-interval", secs];
    let mut args = vec!["-t", "exp/slow", "-m", "slow", "-q", "1", "-r"];
    args.extend(expiry("60"));
    mosq_pub(&server, Ver::V5, &args);
    let mut args = vec!["-t", "exp/fast", "-m", "fast", "-q", "1", "-r"];
    args.extend(expiry("1"));
    mosq_pub(&server, Ver::V5, &args);
    std::thread::sleep(Duration::from_millis(2300));

    // The retained copy carries the time left, rounded down; the 1 s one is gone.
    let mut sub = MosqSub::start(&server, Ver::V5, "%t|%E|%p", &["-t", "exp/#", "-q", "1"]);
    mosq_pub(
        &server,
        Ver::V5,
        &["-t", "exp/marker", "-m", "m", "-q", "1"],
    );
    let mut lines = Vec::new();
    while lines.last().map(String::as_str) != Some("exp/marker||m") {
        lines.push(sub.expect_msg("exp/marker"));
    }
    assert_eq!(
        lines.len(),
        2,
        "only the unexpired retained message, then the marker: {lines:?}"
    );
    let f: Vec<&str> = lines[0].split('|').collect();
    assert_eq!(
        (f[0], f[2]),
        ("exp/slow", "slow"),
        "retained copy: {lines:?}"
    );
    let left: u32 = f[1]
        .parse()
        .unwrap_or_else(|_| panic!("no expiry in {lines:?}"));
    assert!(
        (45..=57).contains(&left),
        "remaining expiry after 2.3 s: {lines:?}"
    );

    // Queued for an offline persistent session: the expired message is dropped.
    let session = [
        "-c",
        "-x",
        "600",
        "-i",
        "exp-session",
        "-t",
        "expq/#",
        "-q",
        "1",
    ];
    let mut first = MosqSub::spawn(&server, Ver::V5, "%t|%p", &[&session[..], &["-E"]].concat());
    first.wait_success();
    let mut args = vec!["-t", "expq/short", "-m", "short", "-q", "1"];
    args.extend(expiry("1"));
    mosq_pub(&server, Ver::V5, &args);
    mosq_pub(
        &server,
        Ver::V5,
        &["-t", "expq/long", "-m", "long", "-q", "1"],
    );
    std::thread::sleep(Duration::from_millis(2300));
    let mut back = MosqSub::start(&server, Ver::V5, "%t|%p", &session);
    assert_eq!(
        back.expect_msg("queued"),
        "expq/long|long",
        "expired queued message delivered"
    );
    back.expect_silence(QUIET, "only one message was queued and alive");
}

#[test]
fn v5_subscription_identifiers() {
    let server = Server::start();
    let fmt = "%t|%S|%p";
    let id42 = ["-D", "subscribe", "subscription-identifier", "42"];
    let mut with_id = MosqSub::start(
        &server,
        Ver::V5,
        fmt,
        &[&["-t", "sid/#"][..], &id42].concat(),
    );
    let mut without = MosqSub::start(&server, Ver::V5, fmt, &["-t", "sid/#"]);
    mosq_pub(&server, Ver::V311, &["-t", "sid/x", "-m", "one"]);
    assert_eq!(with_id.expect_msg("sid/x"), "sid/x|42|one");
    assert_eq!(without.expect_msg("sid/x"), "sid/x||one");
}

#[test]
fn overlapping_subscriptions_deliver_once() {
    let server = Server::start();
    let mut subs = Vec::new();
    for ver in Ver::BOTH {
        let mut args = vec!["-t", "ov/#", "-t", "ov/+", "-q", "1"];
        if ver == Ver::V5 {
            args.extend(["-D", "subscribe", "subscription-identifier", "9"]);
        }
        subs.push((ver, MosqSub::start(&server, ver, "%t|%S|%p", &args)));
    }
    mosq_pub(
        &server,
        Ver::V5,
        &["-t", "ov/x", "-m", "both-match", "-q", "1"],
    );
    // Only `ov/#` matches the marker, so it comes right after the single copy.
    mosq_pub(
        &server,
        Ver::V5,
        &["-t", "ov/y/z", "-m", "marker", "-q", "1"],
    );
    for (ver, sub) in subs.iter_mut() {
        let id = if *ver == Ver::V5 { "9" } else { "" };
        assert_eq!(
            sub.expect_msg("ov/x"),
            format!("ov/x|{id}|both-match"),
            "{ver:?}"
        );
        assert_eq!(
            sub.expect_msg("marker"),
            format!("ov/y/z|{id}|marker"),
            "{ver:?}: a second copy"
        );
    }
}

/// A rumqttc MQTT 5 client subscribed to `filter` with No Local; returns it and its publishes.
fn no_local_client(
    server: &Server,
    id: &str,
    filter: &str,
) -> (rumqttc::v5::Client, mpsc::Receiver<(String, String)>) {
    use rumqttc::v5::mqttbytes::v5::{Filter, Packet};
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::{Client, Event, MqttOptions};
    let mut opts = MqttOptions::new(id, "127.0.0.1", server.listener_port("mqtt"));
    opts.set_credentials("admin", ADMIN_PASSWORD);
    let (client, mut conn) = Client::new(opts, 16);
    let mut filter = Filter::new(filter, QoS::AtLeastOnce);
    filter.nolocal = true;
    client.subscribe_many([filter]).expect("queue SUBSCRIBE");
    let (tx, rx) = mpsc::channel();
    let (subacked_tx, subacked) = mpsc::channel();
    std::thread::spawn(move || {
        for event in conn.iter() {
            match event {
                Ok(Event::Incoming(Packet::SubAck(ack))) => {
                    let _ = subacked_tx.send(format!("{:?}", ack.return_codes));
                }
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let topic = String::from_utf8_lossy(&p.topic).into_owned();
                    let payload = String::from_utf8_lossy(&p.payload).into_owned();
                    if tx.send((topic, payload)).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    let codes = subacked
        .recv_timeout(MQTT_WAIT)
        .expect("SUBACK of the no-local client");
    assert_eq!(codes, "[Success(AtLeastOnce)]", "SUBACK");
    (client, rx)
}

#[test]
fn v5_no_local_skips_own_messages() {
    use rumqttc::v5::mqttbytes::v5::PublishProperties;
    use rumqttc::v5::mqttbytes::QoS;
    let server = Server::start();
    let mut observer = MosqSub::start(&server, Ver::V5, "%t|%P|%p", &["-t", "nl/#", "-q", "1"]);
    let (client, received) = no_local_client(&server, "no-local", "nl/#");
    let props = PublishProperties {
        user_properties: vec![("from".into(), "no-local".into())],
        ..Default::default()
    };
    client
        .publish_with_properties("nl/own", QoS::AtLeastOnce, false, "mine", props)
        .expect("queue PUBLISH");
    // The broker routed it (the observer sees it, with its user property)...
    assert_eq!(observer.expect_msg("nl/own"), "nl/own|from:no-local|mine");
    mosq_pub(
        &server,
        Ver::V5,
        &["-t", "nl/other", "-m", "theirs", "-q", "1"],
    );
    assert_eq!(observer.expect_msg("nl/other"), "nl/other||theirs");
    // ...but not back to its publisher, who gets only the other client's message.
    let first = received
        .recv_timeout(MQTT_WAIT)
        .expect("a message for the no-local client");
    assert_eq!(first, ("nl/other".to_string(), "theirs".to_string()));
    assert!(
        received.recv_timeout(QUIET).is_err(),
        "no-local client got an extra message"
    );
}

fn will_on_sigkill(ver: Ver) {
    let server = Server::start();
    let t = ver.tag();
    let mut watcher = MosqSub::start(&server, Ver::V311, TQRP, &["-t", "will/#", "-q", "1"]);
    let will_topic = format!("will/{t}/died");
    let will_payload = format!("gone-{t}");
    let args = format!(
        "-i willer-{t} -t idle/{t} --will-topic {will_topic} --will-payload {will_payload} \
         --will-qos 1 --will-retain"
    );
    let mut victim = MosqSub::start(&server, ver, TQRP, &words(&args));
    victim.kill9();
    assert_eq!(
        watcher.expect_msg("will"),
        format!("{will_topic}|1|0|{will_payload}")
    );
    let mut late = MosqSub::start(&server, ver, TQRP, &["-t", &will_topic, "-q", "1"]);
    assert_eq!(
        late.expect_msg("retained will"),
        format!("{will_topic}|1|1|{will_payload}")
    );

    // A normal exit (`-C 1` sends DISCONNECT after one message) publishes no will.
    let trigger = format!("trigger/{t}");
    let args = format!(
        "-i polite-{t} -t {trigger} -q 1 -C 1 --will-topic will/{t}/polite \
         --will-payload must-not-appear"
    );
    let mut polite = MosqSub::start(&server, ver, TQRP, &words(&args));
    mosq_pub(
        &server,
        Ver::V311,
        &["-t", &trigger, "-m", "bye", "-q", "1"],
    );
    assert_eq!(polite.expect_msg("trigger"), format!("{trigger}|1|0|bye"));
    polite.wait_success();
    let marker = format!("will/{t}/marker");
    mosq_pub(&server, Ver::V311, &["-t", &marker, "-m", "m", "-q", "1"]);
    assert_eq!(
        watcher.expect_msg("marker"),
        format!("{marker}|1|0|m"),
        "will after DISCONNECT"
    );
}

#[test]
fn will_published_when_the_client_is_killed_v311() {
    will_on_sigkill(Ver::V311);
}

#[test]
fn will_published_when_the_client_is_killed_v5() {
    will_on_sigkill(Ver::V5);
}

/// A v5 subscriber with a will on `will/<name>` delayed by `delay` seconds.
fn delayed_willer(server: &Server, name: &str, delay: &str, session: &str) -> MosqSub {
    let args = format!(
        "-i {name} -t idle/delay --will-topic will/{name} --will-payload {name} --will-qos 1 \
         -D will will-delay-interval {delay} {session}"
    );
    MosqSub::start(server, Ver::V5, TQRP, &words(&args))
}

#[test]
fn v5_will_delay_interval() {
    let server = Server::start();
    let mut watcher = MosqSub::start(&server, Ver::V311, TQRP, &["-t", "will/#", "-q", "1"]);

    // Delayed 3 s: nothing at first, then the will.
    let mut late = delayed_willer(&server, "delayed", "3", "-x 600");
    late.kill9();
    watcher.expect_silence(Duration::from_millis(1500), "the will delay has not passed");
    assert_eq!(
        watcher.expect_msg("delayed will"),
        "will/delayed|1|0|delayed"
    );

    // The session ends at disconnect (expiry 0), so the will goes at once despite its delay.
    let mut at_once = delayed_willer(&server, "expiring", "30", "-x 0");
    at_once.kill9();
    let line = watcher
        .next_msg(Duration::from_secs(2))
        .expect("will of a session that ended at disconnect within 2 s");
    assert_eq!(line, "will/expiring|1|0|expiring");

    // Reconnecting with the same client id within the delay cancels the will.
    let mut first = delayed_willer(&server, "returning", "3", "-c -x 600");
    first.kill9();
    let _back = delayed_willer(&server, "returning", "3", "-c -x 600");
    watcher.expect_silence(
        Duration::from_secs(5),
        "the client came back within the delay",
    );
}

fn persistent_session_queues(ver: Ver) {
    let server = Server::start();
    let t = ver.tag();
    let id = format!("persist-{t}");
    let filter = format!("ps/{t}/#");
    let session = ["-c", "-i", &id, "-t", &filter, "-q", "1"];
    // `-E`: subscribe, then DISCONNECT and exit.
    let mut first = MosqSub::spawn(&server, ver, TQRP, &[&session[..], &["-E"]].concat());
    first.wait_success();
    for (i, q) in [(1, "1"), (2, "2"), (3, "1")] {
        let topic = format!("ps/{t}/{i}");
        mosq_pub(
            &server,
            Ver::V5,
            &["-t", &topic, "-m", &format!("queued-{i}"), "-q", q],
        );
    }
    let mut back = MosqSub::start(&server, ver, TQRP, &session);
    for i in 1..=3 {
        assert_eq!(
            back.expect_msg("queued message"),
            format!("ps/{t}/{i}|1|0|queued-{i}"),
            "{ver:?}: queued messages in order at the subscription's QoS"
        );
    }
    let live = format!("ps/{t}/live");
    mosq_pub(&server, ver, &["-t", &live, "-m", "live", "-q", "1"]);
    assert_eq!(
        back.expect_msg("live"),
        format!("{live}|1|0|live"),
        "{ver:?}: a duplicate"
    );
}

#[test]
fn persistent_session_queues_while_offline_v311() {
    persistent_session_queues(Ver::V311);
}

#[test]
fn persistent_session_queues_while_offline_v5() {
    persistent_session_queues(Ver::V5);
}

#[test]
fn v5_session_expiry_x() {
    let server = Server::start();
    let session = |id: &'static str, expiry: &'static str| {
        ["-c", "-x", expiry, "-i", id, "-t", "sx/#", "-q", "1"]
    };
    for (id, expiry) in [("sx-short", "2"), ("sx-long", "600")] {
        let args = [&session(id, expiry)[..], &["-E"]].concat();
        MosqSub::spawn(&server, Ver::V5, TQRP, &args).wait_success();
    }
    mosq_pub(
        &server,
        Ver::V311,
        &["-t", "sx/offline", "-m", "queued", "-q", "1"],
    );
    std::thread::sleep(Duration::from_millis(3500));

    let mut long = MosqSub::start(&server, Ver::V5, TQRP, &session("sx-long", "600"));
    assert_eq!(
        long.expect_msg("queued"),
        "sx/offline|1|0|queued",
        "unexpired session"
    );
    // The expired session is gone: its reconnect starts empty.
    let mut short = MosqSub::start(&server, Ver::V5, TQRP, &session("sx-short", "600"));
    mosq_pub(
        &server,
        Ver::V311,
        &["-t", "sx/marker", "-m", "m", "-q", "1"],
    );
    assert_eq!(
        short.expect_msg("marker"),
        "sx/marker|1|0|m",
        "expired session kept its queue"
    );
    assert_eq!(long.expect_msg("marker"), "sx/marker|1|0|m");
}
