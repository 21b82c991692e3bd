//! Fan-in without a client library's event loop (`--mode fan-in-raw`): the same load as
//! `fan-in` (one `<prefix>/#` subscriber, N publishers of M messages to `<prefix>/p<i>`, MQTT
//! 3.1.1, a window of 1,000 unacknowledged QoS 1 messages per publisher as rumqttc keeps), but
//! each publisher writes its messages already encoded, as many at once as its window allows,
//! and reads its PUBACKs in bulk; the subscriber decodes what each read brought and answers its
//! QoS 1 deliveries with one write. Packets are encoded and decoded by rumqttc's codec
//! (`mqttbytes::v4`); only the event loop, its channels and its per-message wake-ups are gone.
//!
//! Why: on a machine with two CPUs the bench gives the generator one, and rumqttc's event loops
//! took about as much CPU per message as the broker did, so a fan-in figure measured the
//! generator as much as the broker (issue 40).

use crate::args::Args;
use crate::client::{finish_fan_in, now_ns, payload, Deliveries};
use crate::raw::{connect, next_packet, send, serve_deliveries, subscribed};
use bytes::BytesMut;
use rumqttc::mqttbytes::v4::{Packet, Publish};
use rumqttc::QoS;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::io::AsyncWriteExt;
use tokio::sync::{Barrier, Notify};

/// Unacknowledged QoS 1 messages a publisher keeps in flight (rumqttc's `set_inflight` in the
/// `fan-in` mode).
const WINDOW: usize = 1_000;

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    let total = (args.publishers * args.messages) as u64;
    let deliveries = Arc::new(Deliveries::default());
    let filter = format!("{}/#", args.sub_prefix());
    let (reader, writer, buf) =
        subscribed(&args, "bench-subscriber", &filter, args.sub_qos()).await?;
    let counted = deliveries.clone();
    tokio::spawn(serve_deliveries(
        reader,
        writer,
        buf,
        "bench-subscriber",
        move |_, _| counted.record(),
    ));

    let first_publish = Arc::new(OnceLock::new());
    // Every publisher connects and encodes its messages before any sends.
    let ready = Arc::new(Barrier::new(args.publishers));
    let publishers: Vec<_> = (0..args.publishers)
        .map(|p| {
            let (args, ready, first) = (args.clone(), ready.clone(), first_publish.clone());
            tokio::spawn(async move {
                let id = format!("bench-publisher-{p}");
                let topic = format!("{}/p{p}", args.prefix);
                if let Err(e) = publish(&args, &id, &topic, &ready, &first).await {
                    eprintln!("{id}: {e}");
                }
            })
        })
        .collect();
    Ok(finish_fan_in(publishers, total, &deliveries, &first_publish).await)
}

/// One publisher: connects, encodes its messages, waits for the others at `ready`, then sends
/// them (QoS 1: within [`WINDOW`]) and, at QoS 1, waits for every PUBACK.
async fn publish(
    args: &Args,
    id: &str,
    topic: &str,
    ready: &Barrier,
    first_publish: &OnceLock<u64>,
) -> Result<(), String> {
    let (mut reader, mut writer, mut buf) = connect(args, id, &args.host, args.port).await?;
    let (qos, messages) = (args.qos, args.messages);
    let mut encoded = BytesMut::new();
    // Where each message's packet ends in `encoded`.
    let mut ends = Vec::with_capacity(messages);
    for n in 0..messages {
        let mut packet = Publish::new(topic, qos, payload(n, None, args.size));
        if qos != QoS::AtMostOnce {
            packet.pkid = (n % usize::from(u16::MAX)) as u16 + 1;
        }
        packet.write(&mut encoded).map_err(|e| e.to_string())?;
        ends.push(encoded.len());
    }
    ready.wait().await;
    first_publish.get_or_init(now_ns);
    if qos == QoS::AtMostOnce {
        writer
            .write_all(&encoded)
            .await
            .map_err(|e| e.to_string())?;
        return send(&mut writer, Packet::Disconnect).await;
    }
    let acked = Arc::new(AtomicUsize::new(0));
    let acks_in = Arc::new(Notify::new());
    let counting = {
        let (acked, acks_in) = (acked.clone(), acks_in.clone());
        tokio::spawn(async move {
            let counted = async {
                while acked.load(Ordering::Relaxed) < messages {
                    match next_packet(&mut reader, &mut buf).await? {
                        Packet::PubAck(_) => {
                            acked.fetch_add(1, Ordering::Relaxed);
                            // Without a waiting sender this only leaves a permit.
                            acks_in.notify_one();
                        }
                        other => return Err(format!("unexpected {other:?}")),
                    }
                }
                Ok::<(), String>(())
            }
            .await;
            // A sender waiting for a window that no PUBACK will open learns the count ended.
            acks_in.notify_one();
            counted
        })
    };
    let mut sent = 0;
    while sent < messages {
        let in_flight = sent - acked.load(Ordering::Relaxed);
        if in_flight >= WINDOW {
            if counting.is_finished() {
                break; // the broker stalled or closed: its error is the count's
            }
            acks_in.notified().await;
            continue;
        }
        let upto = (sent + WINDOW - in_flight).min(messages);
        let from = if sent == 0 { 0 } else { ends[sent - 1] };
        writer
            .write_all(&encoded[from..ends[upto - 1]])
            .await
            .map_err(|e| e.to_string())?;
        sent = upto;
    }
    counting
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("waiting for PUBACKs: {e}"))?;
    send(&mut writer, Packet::Disconnect).await
}
