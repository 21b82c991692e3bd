//! Latency without a client library's event loop (`--mode latency-raw`): the load of `latency`
//! (one subscriber of `<prefix>/latency`, one publisher paced at `--rate` msgs/s in batches on a
//! 1 ms tokio interval, `--warmup-ms` then `--duration-ms`, MQTT 3.1.1), timed closer to the
//! sockets:
//! - the publisher encodes each batch and writes it with one write, its send time taken just
//!   before the encoding;
//! - the subscriber runs on a thread and a single-threaded runtime of its own, and takes the
//!   arrival time of everything a read brought as soon as the read returns.
//!
//! Why: rumqttc's event loop wrote a batch one message per write (about 5 µs each, so the 20th
//! message of a batch left 100 µs after its send time was taken), and the subscriber waited on
//! the generator's one runtime until the publisher's task had written the batch. Both brokers'
//! publish → deliver figures measured that as much as the broker (issue 40).

use crate::args::Args;
use crate::client::{now_ns, payload, Deliveries};
use crate::latency::{number_after, report};
use crate::raw::{connect, next_packet, send, serve_deliveries, subscribed};
use bytes::BytesMut;
use rumqttc::mqttbytes::v4::{Packet, Publish};
use rumqttc::QoS;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::time::MissedTickBehavior;

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    if args.qos == QoS::ExactlyOnce {
        return Err("--mode latency-raw publishes at QoS 0 or 1".into());
    }
    let topic = format!("{}/latency", args.prefix);
    let (total, warmup) = args.paced_messages();
    let deliveries = Arc::new(Deliveries::default());
    let samples = Arc::new(Mutex::new(Vec::with_capacity((total - warmup) as usize)));
    subscriber_thread(&args, &topic, warmup, deliveries.clone(), samples.clone()).await?;

    let (mut reader, mut writer, mut buf) =
        connect(&args, "bench-latency-publisher", &args.host, args.port).await?;
    let acked = Arc::new(AtomicU64::new(0));
    let counting = (args.qos == QoS::AtLeastOnce).then(|| {
        let acked = acked.clone();
        tokio::spawn(async move {
            while acked.load(Ordering::Relaxed) < total {
                match next_packet(&mut reader, &mut buf).await? {
                    Packet::PubAck(_) => acked.fetch_add(1, Ordering::Relaxed),
                    other => return Err(format!("unexpected {other:?}")),
                };
            }
            Ok::<(), String>(())
        })
    });

    let start = now_ns();
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let (mut sent, mut batch) = (0u64, BytesMut::new());
    while sent < total {
        tick.tick().await;
        let elapsed = now_ns() - start;
        let due = args.due_by(elapsed, total);
        let sent_ns = now_ns();
        batch.clear();
        for n in sent..due {
            let mut packet = Publish::new(
                &topic,
                args.qos,
                payload(n as usize, Some(sent_ns), args.size),
            );
            if args.qos != QoS::AtMostOnce {
                packet.pkid = (n % u64::from(u16::MAX)) as u16 + 1;
            }
            packet.write(&mut batch).map_err(|e| e.to_string())?;
        }
        writer.write_all(&batch).await.map_err(|e| e.to_string())?;
        sent = due;
    }
    let publish_seconds = (now_ns() - start) as f64 / 1e9;
    if let Some(counting) = counting {
        counting
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("waiting for PUBACKs: {e}"))?;
    }
    deliveries.wait_for(total).await;
    send(&mut writer, Packet::Disconnect).await?;
    let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
    Ok(report(total, &deliveries, start, publish_seconds, samples))
}

/// Connects and subscribes the subscriber on a thread of its own; returns once it is
/// subscribed. It then records deliver − send of every message numbered `warmup` or later
/// into `samples` (ns), and acknowledges QoS 1 deliveries with one write per read.
async fn subscriber_thread(
    args: &Arc<Args>,
    topic: &str,
    warmup: u64,
    deliveries: Arc<Deliveries>,
    samples: Arc<Mutex<Vec<u64>>>,
) -> Result<(), String> {
    const NAME: &str = "bench-latency-subscriber";
    let (subscribed_tx, subscribed_rx) = tokio::sync::oneshot::channel();
    let (args, topic) = (args.clone(), topic.to_string());
    std::thread::Builder::new()
        .name("latency-subscriber".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = subscribed_tx.send(Err(format!("{NAME}: runtime: {e}")));
                    return;
                }
            };
            runtime.block_on(async move {
                let (reader, writer, buf) =
                    match subscribed(&args, NAME, &topic, args.sub_qos()).await {
                        Ok(connection) => {
                            let _ = subscribed_tx.send(Ok(()));
                            connection
                        }
                        Err(e) => {
                            let _ = subscribed_tx.send(Err(e));
                            return;
                        }
                    };
                serve_deliveries(reader, writer, buf, NAME, |arrived, publish| {
                    deliveries.record();
                    let (Some(n), Some(sent)) = (
                        number_after(&publish.payload, "value"),
                        number_after(&publish.payload, "sent_ns"),
                    ) else {
                        return;
                    };
                    if n >= warmup {
                        if let Ok(mut samples) = samples.lock() {
                            samples.push(arrived.saturating_sub(sent));
                        }
                    }
                })
                .await;
            });
        })
        .map_err(|e| format!("{NAME}: thread: {e}"))?;
    subscribed_rx
        .await
        .map_err(|_| format!("{NAME}: its thread ended before the SUBACK"))?
}
