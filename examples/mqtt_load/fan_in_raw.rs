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
use crate::client::{finish_fan_in, now_ns, payload, Deliveries, STALL};
use bytes::BytesMut;
use rumqttc::mqttbytes::v4::{Connect, Packet, PubAck, Publish, Subscribe};
use rumqttc::mqttbytes::Error as CodecError;
use rumqttc::QoS;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{Barrier, Notify};

/// Unacknowledged QoS 1 messages a publisher keeps in flight (rumqttc's `set_inflight` in the
/// `fan-in` mode).
const WINDOW: usize = 1_000;
/// The largest packet read.
const MAX_PACKET: usize = 1 << 20;
/// Bytes a read asks for at once.
pub const READ_SIZE: usize = 64 * 1024;

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    let total = (args.publishers * args.messages) as u64;
    let deliveries = Arc::new(Deliveries::default());
    let filter = format!("{}/#", args.sub_prefix());
    subscribe(&args, &filter, args.sub_qos(), deliveries.clone()).await?;

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

/// Connects `id` (clean session, the run's credentials) and waits for its CONNACK.
pub async fn connect(
    args: &Args,
    id: &str,
    host: &str,
    port: u16,
) -> Result<(OwnedReadHalf, OwnedWriteHalf, BytesMut), String> {
    let stream = TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (mut reader, mut writer) = stream.into_split();
    let mut connect = Connect::new(id);
    connect.keep_alive = 60;
    if !args.username.is_empty() || !args.password.is_empty() {
        connect.set_login(&args.username, &args.password);
    }
    send(&mut writer, Packet::Connect(connect)).await?;
    let mut buf = BytesMut::with_capacity(READ_SIZE);
    match next_packet(&mut reader, &mut buf).await? {
        Packet::ConnAck(ack) if ack.code == rumqttc::ConnectReturnCode::Success => {
            Ok((reader, writer, buf))
        }
        other => Err(format!("{id}: the broker answered CONNECT with {other:?}")),
    }
}

/// The first whole packet of `buf`, taken out of it; `None` while its bytes are not all in.
pub fn decoded(buf: &mut BytesMut) -> Result<Option<Packet>, String> {
    match Packet::read(buf, MAX_PACKET) {
        Ok(packet) => Ok(Some(packet)),
        Err(CodecError::InsufficientBytes(_)) => Ok(None),
        Err(e) => Err(format!("undecodable packet: {e}")),
    }
}

/// Reads until one whole packet is in `buf` and returns it.
pub async fn next_packet(reader: &mut OwnedReadHalf, buf: &mut BytesMut) -> Result<Packet, String> {
    loop {
        if let Some(packet) = decoded(buf)? {
            return Ok(packet);
        }
        buf.reserve(READ_SIZE);
        match tokio::time::timeout(STALL, reader.read_buf(buf)).await {
            Ok(Ok(0)) => return Err("the broker closed the connection".into()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err(format!("nothing from the broker for {STALL:?}")),
        }
    }
}

/// The subscriber: connected and subscribed when this returns; a task then counts every
/// PUBLISH into `deliveries` and acknowledges QoS 1 ones, one write per read.
async fn subscribe(
    args: &Args,
    filter: &str,
    qos: QoS,
    deliveries: Arc<Deliveries>,
) -> Result<(), String> {
    let host = args.sub_host.as_deref().unwrap_or(&args.host);
    let (mut reader, mut writer, mut buf) = connect(
        args,
        "bench-subscriber",
        host,
        args.sub_port.unwrap_or(args.port),
    )
    .await?;
    let mut subscribe = Subscribe::new(filter, qos);
    subscribe.pkid = 1;
    send(&mut writer, Packet::Subscribe(subscribe)).await?;
    match next_packet(&mut reader, &mut buf).await? {
        Packet::SubAck(_) => {}
        other => return Err(format!("the broker answered SUBSCRIBE with {other:?}")),
    }
    tokio::spawn(async move {
        let mut acks = BytesMut::new();
        loop {
            loop {
                match decoded(&mut buf) {
                    Ok(Some(Packet::Publish(publish))) => {
                        deliveries.record();
                        if publish.qos == QoS::AtLeastOnce {
                            let _ = PubAck::new(publish.pkid).write(&mut acks);
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => {
                        eprintln!("bench-subscriber: {e}");
                        return;
                    }
                }
            }
            if !acks.is_empty() {
                if writer.write_all(&acks).await.is_err() {
                    return;
                }
                acks.clear();
            }
            buf.reserve(READ_SIZE);
            match reader.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    });
    Ok(())
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

/// Encodes one control packet and writes it.
pub async fn send(writer: &mut OwnedWriteHalf, packet: Packet) -> Result<(), String> {
    let mut out = BytesMut::new();
    packet
        .write(&mut out, MAX_PACKET)
        .map_err(|e| e.to_string())?;
    writer.write_all(&out).await.map_err(|e| e.to_string())
}
