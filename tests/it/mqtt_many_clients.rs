//! 2,000 MQTT clients connected at once (rumqttc async, half MQTT 3.1.1 and half MQTT 5, each
//! with its own client id and an API key of the admin), each subscribed to its own topic; one
//! publisher sends one QoS 1 message per topic and every client receives exactly its own. Then
//! all of them DISCONNECT, the server closes their sockets, and it still answers REST and MQTT.
//!
//! The clients authenticate with an admin API key rather than the admin password: each password
//! CONNECT costs an argon2 hash (about 90 ms here), which made connecting 2,000 clients take three
//! minutes of hashing rather than of broker work.
//!
//! The server is a child process and inherits the test's RLIMIT_NOFILE, so the limit is raised
//! (when needed) before it is spawned, and the server's own limit is read back from /proc.

use crate::common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const CLIENTS: usize = 2000;
/// Clients connecting at the same time.
const BATCH: usize = 100;
/// Longest wait for one batch to be connected and subscribed, or for all messages.
const PHASE_WAIT: Duration = Duration::from_secs(120);
/// Descriptors each side needs beyond one per client (listeners, SQLite, runtime, stdio).
const FD_SLACK: u64 = 512;

/// What a client's event-loop task reports to the test thread.
#[derive(Debug)]
enum Ev {
    /// CONNACK and a successful SUBACK arrived.
    Subscribed(usize),
    Msg(usize, String, String),
    /// The DISCONNECT was written; the task ended and closed the socket.
    Gone(usize),
    /// The connection failed (refused, reset, SUBACK failure): the test fails.
    Failed(usize, String),
}

enum Handle {
    V3(rumqttc::AsyncClient),
    V5(rumqttc::v5::AsyncClient),
}

fn topic(i: usize) -> String {
    format!("many/{i}")
}

/// Raises this process's soft RLIMIT_NOFILE to `want` (up to the hard limit); returns it.
fn raise_nofile(want: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read/write the struct passed by pointer.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    assert_eq!(got, 0, "getrlimit: {}", std::io::Error::last_os_error());
    if lim.rlim_cur < want {
        lim.rlim_cur = want.min(lim.rlim_max);
        let set = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
        assert_eq!(set, 0, "setrlimit: {}", std::io::Error::last_os_error());
    }
    lim.rlim_cur
}

/// The soft "Max open files" of a process.
fn nofile_of(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("/proc limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or_else(|| panic!("no open-files line in {limits}"));
    line.split_whitespace()
        .nth(3)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("cannot read `{line}`"))
}

/// How many descriptors a process has open.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc fd")
        .count()
}

/// The body of [`start_client`] for one rumqttc flavour: the two clients' types differ, their
/// methods and packets match. Expands where `AsyncClient`, `Event`, `MqttOptions`, `Outgoing`,
/// `Packet`, `QoS` and `SubscribeReasonCode` name that flavour's types.
macro_rules! subscribe_and_report {
    ($rt:ident, $port:ident, $key:ident, $i:ident, $tx:ident, $id:ident) => {{
        let mut opts = MqttOptions::new($id, "127.0.0.1", $port);
        opts.set_credentials("admin", $key);
        opts.set_keep_alive(Duration::from_secs(120));
        let (client, mut eventloop) = AsyncClient::new(opts, 8);
        client
            .try_subscribe(topic($i), QoS::AtLeastOnce)
            .expect("queue SUBSCRIBE");
        let (i, tx) = ($i, $tx);
        $rt.spawn(async move {
            loop {
                let ev = match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::SubAck(ack))) => match ack.return_codes.as_slice() {
                        [SubscribeReasonCode::Success(QoS::AtLeastOnce)] => Ev::Subscribed(i),
                        codes => Ev::Failed(i, format!("SUBACK {codes:?}")),
                    },
                    Ok(Event::Incoming(Packet::Publish(p))) => Ev::Msg(
                        i,
                        String::from_utf8_lossy(p.topic.as_ref()).into_owned(),
                        String::from_utf8_lossy(&p.payload).into_owned(),
                    ),
                    Ok(Event::Outgoing(Outgoing::Disconnect)) => Ev::Gone(i),
                    Ok(_) => continue,
                    Err(e) => Ev::Failed(i, format!("{e:?}")),
                };
                let last = matches!(ev, Ev::Gone(_) | Ev::Failed(..));
                if tx.send(ev).is_err() || last {
                    return;
                }
            }
        });
        client
    }};
}

/// Starts client `i` on `rt`: CONNECT, SUBSCRIBE to its topic at QoS 1, then report events.
fn start_client(
    rt: &tokio::runtime::Runtime,
    port: u16,
    key: &str,
    i: usize,
    tx: mpsc::Sender<Ev>,
) -> Handle {
    let id = format!("many-{i}");
    if i.is_multiple_of(2) {
        use rumqttc::{
            AsyncClient, Event, MqttOptions, Outgoing, Packet, QoS, SubscribeReasonCode,
        };
        Handle::V3(subscribe_and_report!(rt, port, key, i, tx, id))
    } else {
        use rumqttc::v5::mqttbytes::v5::{Packet, SubscribeReasonCode};
        use rumqttc::v5::mqttbytes::QoS;
        use rumqttc::v5::{AsyncClient, Event, MqttOptions};
        use rumqttc::Outgoing;
        Handle::V5(subscribe_and_report!(rt, port, key, i, tx, id))
    }
}

/// Receives events until `done(counts)` holds; messages go to `inbox`; any failure panics.
fn pump(
    rx: &mpsc::Receiver<Ev>,
    inbox: &mut BTreeMap<usize, Vec<(String, String)>>,
    what: &str,
    within: Duration,
    mut done: impl FnMut(&Ev) -> bool,
) {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("{what}: no progress within {within:?} ({e:?})"));
        if let Ev::Failed(i, e) = &ev {
            panic!("{what}: client many-{i} failed: {e}");
        }
        if let Ev::Msg(i, t, p) = &ev {
            inbox.entry(*i).or_default().push((t.clone(), p.clone()));
        }
        if done(&ev) {
            return;
        }
    }
}

#[test]
fn two_thousand_clients_each_receive_exactly_their_own_message() {
    let want_fds = CLIENTS as u64 + FD_SLACK;
    let have = raise_nofile(want_fds);
    assert!(
        have >= want_fds,
        "RLIMIT_NOFILE hard limit {have} < {want_fds}"
    );
    let server = Server::start();
    let pid = server.pid();
    let server_limit = nofile_of(pid);
    assert!(
        server_limit >= want_fds,
        "server's open-files limit {server_limit} < {want_fds}"
    );
    let fds_before = open_fds(pid);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let port = server.listener_port("mqtt");
    let (_, key) = server.create_api_key(&server.admin_token(), "many-clients");
    let (tx, rx) = mpsc::channel();
    let mut inbox: BTreeMap<usize, Vec<(String, String)>> = BTreeMap::new();
    let mut clients = Vec::with_capacity(CLIENTS);
    let started = Instant::now();
    for first in (0..CLIENTS).step_by(BATCH) {
        let batch = first..(first + BATCH).min(CLIENTS);
        let mut pending: BTreeSet<usize> = batch.clone().collect();
        for i in batch {
            clients.push(start_client(&rt, port, &key, i, tx.clone()));
        }
        pump(
            &rx,
            &mut inbox,
            &format!("batch from {first}"),
            PHASE_WAIT,
            |ev| {
                if let Ev::Subscribed(i) = ev {
                    assert!(pending.remove(i), "many-{i}: a second SUBACK");
                }
                pending.is_empty()
            },
        );
    }
    eprintln!(
        "{CLIENTS} clients connected and subscribed in {:?}",
        started.elapsed()
    );
    let fds_connected = open_fds(pid);
    assert!(
        fds_connected >= fds_before + CLIENTS,
        "the server holds {fds_connected} descriptors ({fds_before} before): not every client is connected"
    );

    let mut publisher = server.mqtt_admin(Proto::V5, Via::Tcp, "many-publisher");
    for i in 0..CLIENTS {
        let reason = publisher.publish(&topic(i), format!("for-{i}"), 1, false);
        assert_eq!(reason, "Success", "PUBACK of message {i}");
    }
    let mut reached = 0;
    pump(&rx, &mut inbox, "delivery", PHASE_WAIT, |ev| {
        if let Ev::Msg(..) = ev {
            reached += 1;
        }
        reached >= CLIENTS
    });
    // Late duplicates or strays would arrive now.
    while let Ok(ev) = rx.recv_timeout(Duration::from_secs(2)) {
        match ev {
            Ev::Msg(i, t, p) => inbox.entry(i).or_default().push((t, p)),
            other => panic!("unexpected event after delivery: {other:?}"),
        }
    }
    for i in 0..CLIENTS {
        let got = inbox.get(&i).cloned().unwrap_or_default();
        assert_eq!(
            got,
            vec![(topic(i), format!("for-{i}"))],
            "messages of many-{i}"
        );
    }

    for client in &clients {
        let sent = match client {
            Handle::V3(c) => c.try_disconnect().map_err(|e| e.to_string()),
            Handle::V5(c) => c.try_disconnect().map_err(|e| e.to_string()),
        };
        sent.unwrap_or_else(|e| panic!("queue DISCONNECT: {e}"));
    }
    let mut gone = BTreeSet::new();
    pump(&rx, &mut inbox, "disconnect", PHASE_WAIT, |ev| {
        if let Ev::Gone(i) = ev {
            assert!(gone.insert(*i), "many-{i}: DISCONNECT written twice");
        }
        gone.len() == CLIENTS
    });
    drop(clients);
    // The server closes every connection (its descriptors fall back near where they were).
    server.poll(
        Duration::from_secs(30),
        "the server to close the connections",
        || (open_fds(pid) < fds_before + 50).then_some(()),
    );

    // Still responsive: REST and a fresh MQTT round trip.
    let info = server.get_json("domains:svc_admin", "/svc/info");
    assert!(info.is_object(), "/svc/info: {info}");
    let mut fresh = server.mqtt_admin(Proto::V3, Via::Tcp, "many-after");
    assert_eq!(fresh.subscribe("many/after", 1), Some(1));
    publisher.publish("many/after", "still here", 1, false);
    assert_eq!(fresh.expect_publish("many/after").text(), "still here");
    fresh.disconnect();
    publisher.disconnect();
}
