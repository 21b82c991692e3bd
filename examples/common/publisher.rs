//! One MQTT publisher of the historian benchmarks (rumqttc): publishes a stream of messages from
//! one connection and counts the broker's acknowledgements, so a bench knows every value it
//! sent was accepted before it looks for them in the store.

#![allow(dead_code)] // each example uses what it needs

use rumqttc::{AsyncClient, Event, MqttOptions, Outgoing, Packet, QoS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a publisher connects.
#[derive(Clone)]
pub struct Connect {
    pub host: String,
    pub port: u16,
    pub username: String,
    pub password: String,
}

impl Connect {
    /// The options of connection `name` (unique per process): a long keep-alive and 1,000
    /// messages in flight, as a gateway publishing a plant's tags would run.
    pub fn options(&self, name: &str) -> MqttOptions {
        let mut options = MqttOptions::new(
            format!("{name}-{}", std::process::id()),
            &self.host,
            self.port,
        );
        options.set_keep_alive(Duration::from_secs(60));
        options.set_inflight(1_000);
        options.set_credentials(&self.username, &self.password);
        options
    }
}

/// QoS from its number (2 and above: exactly once).
pub fn qos(level: u8) -> QoS {
    match level {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

/// Publishes every `(topic, payload)` of `messages` in order and returns how many the broker
/// acknowledged (PUBACK or PUBCOMP; at QoS 0, how many were sent). Gives up, with a line on
/// stderr, when no acknowledgement comes for 10 s or the connection fails; then disconnects.
/// The event loop runs in its own task and is never cancelled mid-poll, so nothing queued is
/// dropped.
pub async fn publish_all<I>(name: String, options: MqttOptions, qos: QoS, messages: I) -> u64
where
    I: Iterator<Item = (String, String)> + Send + 'static,
{
    let (client, mut event_loop) = AsyncClient::new(options, 10_000);
    let acked = Arc::new(AtomicU64::new(0));
    let poller = {
        let (acked, name) = (acked.clone(), name.clone());
        tokio::spawn(async move {
            loop {
                match event_loop.poll().await {
                    Ok(Event::Incoming(Packet::PubAck(_) | Packet::PubComp(_))) => {
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    // Done once the DISCONNECT is written; the broker may take its time to close.
                    Ok(Event::Outgoing(Outgoing::Disconnect)) => break,
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("{name}: {e}");
                        break;
                    }
                }
            }
        })
    };
    let mut sent = 0u64;
    for (topic, payload) in messages {
        if client.publish(topic, qos, false, payload).await.is_err() {
            break;
        }
        sent += 1;
    }
    if qos == QoS::AtMostOnce {
        acked.store(sent, Ordering::Relaxed);
    }
    let mut seen = (acked.load(Ordering::Relaxed), Instant::now());
    while seen.0 < sent && !poller.is_finished() {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let now = acked.load(Ordering::Relaxed);
        if now != seen.0 {
            seen = (now, Instant::now());
        } else if seen.1.elapsed() > Duration::from_secs(10) {
            eprintln!("{name}: stalled at {now} of {sent} acknowledgements");
            break;
        }
    }
    let _ = client.disconnect().await;
    if tokio::time::timeout(Duration::from_secs(10), poller)
        .await
        .is_err()
    {
        eprintln!("{name}: the DISCONNECT was not written within 10 s");
    }
    acked.load(Ordering::Relaxed)
}
