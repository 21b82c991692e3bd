//! The MQTT pieces every mode is built from: client options, sized JSON payloads, a subscriber
//! that counts what it receives, a publisher that sends as fast as the broker takes it, and the
//! wait for the last deliveries.

use crate::args::Args;
use rumqttc::{AsyncClient, Event, EventLoop, MqttOptions, Outgoing, Packet, QoS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Nothing delivered (or acknowledged) for this long ends a wait.
pub const STALL: Duration = Duration::from_secs(5);

/// One time base for the whole process, so a timestamp taken by a publisher can be compared
/// with one taken by a subscriber.
pub fn now_ns() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

pub fn options(args: &Args, id: &str) -> MqttOptions {
    options_at(args, id, &args.host, args.port)
}

/// [`options`] for the broker at `host`:`port`.
fn options_at(args: &Args, id: &str, host: &str, port: u16) -> MqttOptions {
    let mut options = MqttOptions::new(id, host, port);
    options.set_keep_alive(Duration::from_secs(60));
    options.set_clean_session(true);
    options.set_inflight(1_000);
    options.set_max_packet_size(1 << 20, 1 << 20);
    if !args.username.is_empty() || !args.password.is_empty() {
        options.set_credentials(&args.username, &args.password);
    }
    options
}

/// A JSON object of exactly `size` bytes (when `size` leaves room for the members):
/// `{"value":N,"pad":"xxx…"}`, or with `"sent_ns":T` before the padding when `sent_ns` is given.
/// The historian stores `value`; `sent_ns` is not a member it reads (`timestamp` would be).
pub fn payload(n: usize, sent_ns: Option<u64>, size: usize) -> Vec<u8> {
    let head = match sent_ns {
        Some(t) => format!("{{\"value\":{n},\"sent_ns\":{t},\"pad\":\""),
        None => format!("{{\"value\":{n},\"pad\":\""),
    };
    let pad = size.saturating_sub(head.len() + 2);
    format!("{head}{}\"}}", "x".repeat(pad)).into_bytes()
}

/// Polls until the CONNACK (or the first error), so later timings exclude the handshake.
pub async fn connected(event_loop: &mut EventLoop) -> Result<(), String> {
    loop {
        match event_loop.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => return Ok(()),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// What the subscribers of one run received: a count and the time of the last delivery.
#[derive(Default)]
pub struct Deliveries {
    pub received: AtomicU64,
    /// [`now_ns`] of the last delivery; 0 before the first.
    pub last_ns: AtomicU64,
    /// [`now_ns`] of the first delivery; 0 before it.
    pub first_ns: AtomicU64,
}

impl Deliveries {
    /// Counts one delivery, now.
    pub fn record(&self) {
        if self.received.fetch_add(1, Ordering::Relaxed) == 0 {
            self.first_ns.store(now_ns(), Ordering::Relaxed);
        }
        self.last_ns.fetch_max(now_ns(), Ordering::Relaxed);
    }

    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Waits until `expected` messages arrived or nothing arrived for [`STALL`].
    pub async fn wait_for(&self, expected: u64) {
        let mut seen = self.received();
        let mut still_since = Instant::now();
        while seen < expected && still_since.elapsed() < STALL {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now = self.received();
            if now != seen {
                seen = now;
                still_since = Instant::now();
            }
        }
    }
}

/// Connects a subscriber `id` to `filter` and returns once its SUBACK is in; it then counts
/// every PUBLISH into `deliveries` and hands the payload to `on_publish`, until the process ends.
pub async fn subscribe(
    args: &Args,
    id: &str,
    filter: &str,
    qos: QoS,
    deliveries: Arc<Deliveries>,
    mut on_publish: impl FnMut(&[u8]) + Send + 'static,
) -> Result<(), String> {
    let host = args.sub_host.as_deref().unwrap_or(&args.host);
    let mut options = options_at(args, id, host, args.sub_port.unwrap_or(args.port));
    if let Some(user) = &args.sub_username {
        options.set_credentials(user, args.sub_password.clone().unwrap_or_default());
    }
    let (client, mut event_loop) = AsyncClient::new(options, 1_000);
    client
        .subscribe(filter, qos)
        .await
        .map_err(|e| format!("{id}: subscribe request: {e}"))?;
    let (subscribed_tx, subscribed_rx) = tokio::sync::oneshot::channel();
    let name = id.to_string();
    tokio::spawn(async move {
        // Owning the client keeps the event loop's request channel open.
        let _client = client;
        let mut subscribed = Some(subscribed_tx);
        loop {
            match event_loop.poll().await {
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    deliveries.record();
                    on_publish(&p.payload);
                }
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    if let Some(tx) = subscribed.take() {
                        let _ = tx.send(Ok(()));
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    if let Some(tx) = subscribed.take() {
                        let _ = tx.send(Err(format!("{name}: {e}")));
                        return;
                    }
                    eprintln!("{name}: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    match tokio::time::timeout(Duration::from_secs(30), subscribed_rx).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(format!("{id}: subscriber task ended before its SUBACK")),
        Err(_) => Err(format!("{id}: no SUBACK within 30 s")),
    }
}

/// Drives a publisher's event loop until all `messages` left it (QoS 0) or were acknowledged
/// (QoS 1/2), then takes the client back from `sender` (the task publishing through it) and
/// disconnects cleanly. Returns the acks counted.
pub async fn drive_publisher(
    name: &str,
    event_loop: &mut EventLoop,
    qos: QoS,
    messages: usize,
    sender: tokio::task::JoinHandle<AsyncClient>,
) -> u64 {
    let (mut acked, mut written) = (0, 0);
    // Only poll() moves requests from the client to the socket, so the sender is awaited once
    // every request left the channel: it cannot be waiting on a full one then.
    let complete = loop {
        let done = if qos == QoS::AtMostOnce {
            written
        } else {
            acked
        };
        if done >= messages {
            break true;
        }
        match tokio::time::timeout(STALL, event_loop.poll()).await {
            Ok(Ok(Event::Incoming(Packet::PubAck(_) | Packet::PubComp(_)))) => acked += 1,
            Ok(Ok(Event::Outgoing(Outgoing::Publish(_)))) => written += 1,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                eprintln!("{name}: {e}");
                break false;
            }
            // A paced sender may be idle between batches, but never for STALL.
            Err(_) => {
                eprintln!("{name}: stalled with {written} of {messages} sent, {acked} acked");
                break false;
            }
        }
    };
    if !complete {
        sender.abort();
        return acked as u64;
    }
    let Ok(client) = sender.await else {
        return acked as u64;
    };
    disconnect(&client, event_loop).await;
    acked as u64
}

/// Disconnects cleanly: done once the DISCONNECT is written (at most 10 s); the broker may take
/// its time to close.
pub async fn disconnect(client: &AsyncClient, event_loop: &mut EventLoop) {
    let _ = client.disconnect().await;
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(event) = event_loop.poll().await {
            if matches!(event, Event::Outgoing(Outgoing::Disconnect)) {
                break;
            }
        }
    })
    .await;
}

/// Runs one publisher `id`: connects, sends `messages` to `topics` (in turn) as fast as the
/// broker takes them and, at QoS 1/2, waits for every ack. `first_publish` gets the [`now_ns`] of the first
/// publish of any publisher sharing it.
pub async fn publish_burst(
    args: Arc<Args>,
    id: String,
    topics: Vec<String>,
    messages: usize,
    first_publish: Arc<OnceLock<u64>>,
) -> u64 {
    let (client, mut event_loop) = AsyncClient::new(options(&args, &id), 10_000);
    if let Err(e) = connected(&mut event_loop).await {
        eprintln!("{id}: cannot connect: {e}");
        return 0;
    }
    let (qos, size) = (args.qos, args.size);
    let sender = tokio::spawn(async move {
        first_publish.get_or_init(now_ns);
        for n in 0..messages {
            let topic = &topics[n % topics.len()];
            if client
                .publish(topic, qos, false, payload(n, None, size))
                .await
                .is_err()
            {
                break;
            }
        }
        client
    });
    drive_publisher(&id, &mut event_loop, qos, messages, sender).await
}

/// Waits for every publisher, then for the deliveries (or [`STALL`]), and returns a fan-in
/// run's JSON line: `total` sent and published, then [`burst_outcome`].
pub async fn finish_fan_in<T>(
    publishers: Vec<tokio::task::JoinHandle<T>>,
    total: u64,
    deliveries: &Deliveries,
    first_publish: &OnceLock<u64>,
) -> String {
    for p in publishers {
        let _ = p.await;
    }
    let published = now_ns();
    deliveries.wait_for(total).await;
    let outcome = burst_outcome(total, deliveries, first_publish, published);
    format!("{{\"sent\":{total},\"published\":{total},{outcome}}}")
}

/// The end of a burst's JSON line: `"received","lost","seconds","msgs_per_s","publish_seconds"`
/// of `total` expected deliveries, timed from the first publish (`first_publish`, or
/// `published` if none went out) to the last delivery, and to `published` (every publisher
/// done).
pub fn burst_outcome(
    total: u64,
    deliveries: &Deliveries,
    first_publish: &OnceLock<u64>,
    published: u64,
) -> String {
    let got = deliveries.received();
    let start = *first_publish.get().unwrap_or(&published);
    let seconds = delivery_seconds(start, deliveries);
    let publish_seconds = (published.saturating_sub(start)) as f64 / 1e9;
    format!(
        "\"received\":{got},\"lost\":{},\"seconds\":{seconds:.3},\"msgs_per_s\":{:.0},\
         \"publish_seconds\":{publish_seconds:.3}",
        total.saturating_sub(got),
        got as f64 / seconds
    )
}

/// Seconds from `first_ns` to the last delivery (at least 1 ns, so rates stay finite).
pub fn delivery_seconds(first_ns: u64, deliveries: &Deliveries) -> f64 {
    let last = deliveries.last_ns.load(Ordering::Relaxed).max(first_ns);
    ((last - first_ns) as f64 / 1e9).max(1e-9)
}
