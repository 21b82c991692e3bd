//! MQTT load generator for `bench/broker.sh`: N publishers each send M messages to
//! `<prefix>/p<i>` while one subscriber on `<prefix>/#` counts what arrives. Prints one JSON
//! line: sent, received, lost, seconds (first publish to last delivery) and delivered msgs/s.
//!
//!   cargo run --release --example mqtt_load -- --port 1883 --publishers 20 --messages 20000 --qos 0

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    host: String,
    port: u16,
    username: String,
    password: String,
    publishers: usize,
    messages: usize,
    qos: QoS,
    size: usize,
    prefix: String,
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
        size: 64,
        prefix: "bench".into(),
    };
    let raw: Vec<String> = std::env::args().skip(1).collect();
    for pair in raw.chunks(2) {
        let (flag, value) = (pair[0].as_str(), pair.get(1).cloned().unwrap_or_default());
        match flag {
            "--host" => args.host = value,
            "--port" => args.port = value.parse().expect("--port"),
            "--username" => args.username = value,
            "--password" => args.password = value,
            "--publishers" => args.publishers = value.parse().expect("--publishers"),
            "--messages" => args.messages = value.parse().expect("--messages"),
            "--qos" => {
                args.qos = match value.as_str() {
                    "0" => QoS::AtMostOnce,
                    "1" => QoS::AtLeastOnce,
                    _ => QoS::ExactlyOnce,
                }
            }
            "--size" => args.size = value.parse().expect("--size"),
            "--topic-prefix" => args.prefix = value,
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

fn options(args: &Args, id: &str) -> MqttOptions {
    let mut options = MqttOptions::new(id, &args.host, args.port);
    options.set_keep_alive(Duration::from_secs(60));
    options.set_inflight(1000);
    options.set_max_packet_size(1 << 20, 1 << 20);
    if !args.username.is_empty() || !args.password.is_empty() {
        options.set_credentials(&args.username, &args.password);
    }
    options
}

/// A JSON payload of exactly `size` bytes, so a historian stores it as a value.
fn payload(n: usize, size: usize) -> Vec<u8> {
    let head = format!("{{\"value\":{n},\"pad\":\"");
    let pad = size.saturating_sub(head.len() + 2);
    format!("{head}{}\"}}", "x".repeat(pad)).into_bytes()
}

#[tokio::main]
async fn main() {
    let args = Arc::new(parse_args());
    let total = (args.publishers * args.messages) as u64;
    let received = Arc::new(AtomicU64::new(0));
    let last_delivery = Arc::new(std::sync::Mutex::new(Instant::now()));

    let (subscriber, mut sub_loop) = AsyncClient::new(options(&args, "bench-subscriber"), 100_000);
    subscriber
        .subscribe(format!("{}/#", args.prefix), args.qos)
        .await
        .expect("subscribe");
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
                            *at = Instant::now();
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
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        });
    }
    subscribed_rx.await.expect("no SUBACK");

    let started = Instant::now();
    let mut publishers = Vec::new();
    for p in 0..args.publishers {
        let args = args.clone();
        publishers.push(tokio::spawn(async move {
            let (client, mut event_loop) =
                AsyncClient::new(options(&args, &format!("bench-publisher-{p}")), 10_000);
            let topic = format!("{}/p{p}", args.prefix);
            let (qos, messages, size) = (args.qos, args.messages, args.size);
            let sender = tokio::spawn(async move {
                for n in 0..messages {
                    client
                        .publish(&topic, qos, false, payload(n, size))
                        .await
                        .expect("publish");
                }
                client
            });
            let mut acked = 0;
            let wanted = if qos == QoS::AtMostOnce { 0 } else { messages };
            let mut sender = Some(sender);
            loop {
                match tokio::time::timeout(Duration::from_secs(10), event_loop.poll()).await {
                    Ok(Ok(Event::Incoming(Packet::PubAck(_))))
                    | Ok(Ok(Event::Incoming(Packet::PubComp(_)))) => acked += 1,
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        eprintln!("publisher {p}: {e}");
                        break;
                    }
                    Err(_) => break,
                }
                let sent = sender.as_ref().is_some_and(|s| s.is_finished());
                if sent && acked >= wanted {
                    if let Some(s) = sender.take() {
                        let client = s.await.expect("sender");
                        // Let the last QoS 0 packets leave before disconnecting.
                        let _ = client.disconnect().await;
                        let _ = tokio::time::timeout(Duration::from_secs(2), async {
                            while event_loop.poll().await.is_ok() {}
                        })
                        .await;
                    }
                    break;
                }
            }
        }));
    }
    for p in publishers {
        let _ = p.await;
    }
    // Wait for deliveries until everything arrived or nothing moved for 5 s.
    let mut seen = received.load(Ordering::Relaxed);
    let mut still_since = Instant::now();
    while seen < total && still_since.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = received.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            still_since = Instant::now();
        }
    }
    let got = received.load(Ordering::Relaxed);
    let end = *last_delivery.lock().expect("last delivery");
    let seconds = end
        .saturating_duration_since(started)
        .as_secs_f64()
        .max(1e-9);
    println!(
        "{{\"sent\":{total},\"received\":{got},\"lost\":{},\"seconds\":{seconds:.3},\"msgs_per_s\":{:.0}}}",
        total.saturating_sub(got),
        got as f64 / seconds
    );
}
