//! MQTT load generator for `bench/broker.sh`: one subscriber on `<prefix>/#` connects first, then
//! N publishers each send M messages to `<prefix>/p<i>` concurrently. It waits until every message
//! arrived or nothing arrived for 5 s, and prints one JSON line: sent, received, lost, seconds
//! (first publish to last delivery), msgs_per_s (delivered), publish_seconds (first publish until
//! every publisher is done: at QoS 1 a publisher is done when all its PUBACKs are in).
//!
//! Payloads are JSON objects of exactly `--size` bytes (`{"value":N,"pad":"xxx…"}`), so a broker
//! that historizes them stores numbers.
//!
//!   cargo run --release --example mqtt_load -- --port 1883 --publishers 20 --messages 20000 \
//!       --qos 0 [--subscriber-qos 0] [--size 64] [--topic-prefix bench] \
//!       [--host 127.0.0.1] [--username u --password p]

use rumqttc::{AsyncClient, Event, MqttOptions, Outgoing, Packet, QoS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Nothing delivered (or acknowledged) for this long ends the wait.
const STALL: Duration = Duration::from_secs(5);

struct Args {
    host: String,
    port: u16,
    username: String,
    password: String,
    publishers: usize,
    messages: usize,
    qos: QoS,
    subscriber_qos: Option<QoS>,
    size: usize,
    prefix: String,
}

fn qos_of(text: &str) -> QoS {
    match text {
        "0" => QoS::AtMostOnce,
        "1" => QoS::AtLeastOnce,
        "2" => QoS::ExactlyOnce,
        other => usage(&format!("QoS must be 0, 1 or 2, not {other}")),
    }
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "mqtt_load: {problem}\nusage: mqtt_load [--host H] [--port P] [--username U] \
         [--password P] [--publishers N] [--messages M] [--qos 0|1|2] [--subscriber-qos 0|1|2] \
         [--size BYTES] [--topic-prefix PREFIX]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        host: "127.0.0.1".into(),
        port: 1883,
        username: String::new(),
        password: String::new(),
        publishers: 20,
        messages: 20_000,
        qos: QoS::AtMostOnce,
        subscriber_qos: None,
        size: 64,
        prefix: "bench".into(),
    };
    let mut raw = std::env::args().skip(1);
    while let Some(flag) = raw.next() {
        let value = raw
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let number = |v: &str| -> usize {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{flag} wants a number")))
        };
        match flag.as_str() {
            "--host" => args.host = value,
            "--port" => args.port = number(&value) as u16,
            "--username" => args.username = value,
            "--password" => args.password = value,
            "--publishers" => args.publishers = number(&value),
            "--messages" => args.messages = number(&value),
            "--qos" => args.qos = qos_of(&value),
            "--subscriber-qos" => args.subscriber_qos = Some(qos_of(&value)),
            "--size" => args.size = number(&value),
            "--topic-prefix" => args.prefix = value,
            other => usage(&format!("unknown flag {other}")),
        }
    }
    args
}

fn options(args: &Args, id: &str) -> MqttOptions {
    let mut options = MqttOptions::new(id, &args.host, args.port);
    options.set_keep_alive(Duration::from_secs(60));
    options.set_clean_session(true);
    options.set_inflight(1_000);
    options.set_max_packet_size(1 << 20, 1 << 20);
    if !args.username.is_empty() || !args.password.is_empty() {
        options.set_credentials(&args.username, &args.password);
    }
    options
}

/// A JSON object of exactly `size` bytes (when `size` leaves room for the number).
fn payload(n: usize, size: usize) -> Vec<u8> {
    let head = format!("{{\"value\":{n},\"pad\":\"");
    let pad = size.saturating_sub(head.len() + 2);
    format!("{head}{}\"}}", "x".repeat(pad)).into_bytes()
}

/// Runs one publisher: connects, sends its messages and, at QoS 1/2, waits for every ack.
async fn publish(args: Arc<Args>, p: usize, first_publish: Arc<OnceLock<Instant>>) -> u64 {
    let (client, mut event_loop) =
        AsyncClient::new(options(&args, &format!("bench-publisher-{p}")), 10_000);
    let topic = format!("{}/p{p}", args.prefix);
    let (qos, messages, size) = (args.qos, args.messages, args.size);
    // Connect before sending, so the first publish is not timed against the handshake.
    loop {
        match event_loop.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("publisher {p}: cannot connect: {e}");
                return 0;
            }
        }
    }
    let sender = tokio::spawn(async move {
        first_publish.get_or_init(Instant::now);
        for n in 0..messages {
            if client
                .publish(&topic, qos, false, payload(n, size))
                .await
                .is_err()
            {
                break;
            }
        }
        client
    });
    let wanted = if qos == QoS::AtMostOnce { 0 } else { messages };
    let mut acked = 0;
    let mut sender = Some(sender);
    loop {
        match tokio::time::timeout(STALL, event_loop.poll()).await {
            Ok(Ok(Event::Incoming(Packet::PubAck(_) | Packet::PubComp(_)))) => acked += 1,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                eprintln!("publisher {p}: {e}");
                break;
            }
            Err(_) => {
                eprintln!("publisher {p}: stalled with {acked} of {wanted} acks");
                break;
            }
        }
        if acked >= wanted && sender.as_ref().is_some_and(|s| s.is_finished()) {
            let Some(client) = sender.take() else { break };
            let Ok(client) = client.await else { break };
            // Let the queued QoS 0 packets leave, then disconnect cleanly.
            let _ = client.disconnect().await;
            let _ = tokio::time::timeout(Duration::from_secs(10), async {
                // Done once the DISCONNECT is written; the broker may take its time to close.
                while let Ok(event) = event_loop.poll().await {
                    if matches!(event, Event::Outgoing(Outgoing::Disconnect)) {
                        break;
                    }
                }
            })
            .await;
            break;
        }
    }
    acked as u64
}

#[tokio::main]
async fn main() {
    let args = Arc::new(parse_args());
    let total = (args.publishers * args.messages) as u64;
    let received = Arc::new(AtomicU64::new(0));
    let last_delivery = Arc::new(Mutex::new(None::<Instant>));

    let (subscriber, mut sub_loop) = AsyncClient::new(options(&args, "bench-subscriber"), 1_000);
    subscriber
        .subscribe(
            format!("{}/#", args.prefix),
            args.subscriber_qos.unwrap_or(args.qos),
        )
        .await
        .expect("subscribe request");
    let (subscribed_tx, subscribed_rx) = tokio::sync::oneshot::channel();
    {
        let received = received.clone();
        let last_delivery = last_delivery.clone();
        tokio::spawn(async move {
            let mut subscribed = Some(subscribed_tx);
            loop {
                match sub_loop.poll().await {
                    Ok(Event::Incoming(Packet::Publish(_))) => {
                        received.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut at) = last_delivery.lock() {
                            *at = Some(Instant::now());
                        }
                    }
                    Ok(Event::Incoming(Packet::SubAck(_))) => {
                        if let Some(tx) = subscribed.take() {
                            let _ = tx.send(());
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("subscriber: {e}");
                        if subscribed.is_some() {
                            std::process::exit(1);
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        });
    }
    subscribed_rx.await.expect("no SUBACK");

    let first_publish = Arc::new(OnceLock::new());
    let publishers: Vec<_> = (0..args.publishers)
        .map(|p| tokio::spawn(publish(args.clone(), p, first_publish.clone())))
        .collect();
    for p in publishers {
        let _ = p.await;
    }
    let published = Instant::now();

    // Wait for deliveries until everything arrived or nothing moved for STALL.
    let mut seen = received.load(Ordering::Relaxed);
    let mut still_since = Instant::now();
    while seen < total && still_since.elapsed() < STALL {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = received.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            still_since = Instant::now();
        }
    }
    let got = received.load(Ordering::Relaxed);
    let start = *first_publish.get().unwrap_or(&published);
    let end = last_delivery
        .lock()
        .ok()
        .and_then(|at| *at)
        .unwrap_or(start);
    let seconds = end.saturating_duration_since(start).as_secs_f64().max(1e-9);
    let publish_seconds = published.saturating_duration_since(start).as_secs_f64();
    println!(
        "{{\"sent\":{total},\"received\":{got},\"lost\":{},\"seconds\":{seconds:.3},\
         \"msgs_per_s\":{:.0},\"publish_seconds\":{publish_seconds:.3}}}",
        total.saturating_sub(got),
        got as f64 / seconds
    );
}
