//! An MQTT 3.1.1 client without a client library's event loop, for the raw loads
//! (`fan-in-raw`, `latency-raw`): packets are encoded and decoded by rumqttc's codec
//! (`mqttbytes::v4`) and written and read in bulk by the load itself.

use crate::args::Args;
use crate::client::{now_ns, STALL};
use bytes::BytesMut;
use rumqttc::mqttbytes::v4::{Connect, Packet, PubAck, Publish, Subscribe};
use rumqttc::mqttbytes::Error as CodecError;
use rumqttc::QoS;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// The largest packet read.
const MAX_PACKET: usize = 1 << 20;
/// Bytes a read asks for at once.
const READ_SIZE: usize = 64 * 1024;

/// A connection's halves and what was read past the last packet taken.
pub type Connection = (OwnedReadHalf, OwnedWriteHalf, BytesMut);

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

/// Connects `id` where the subscribers connect (`--sub-host`, `--sub-port`) and subscribes it to
/// `filter`; returns once the SUBACK is in.
pub async fn subscribed(
    args: &Args,
    id: &str,
    filter: &str,
    qos: QoS,
) -> Result<Connection, String> {
    let host = args.sub_host.as_deref().unwrap_or(&args.host);
    let (mut reader, mut writer, mut buf) =
        connect(args, id, host, args.sub_port.unwrap_or(args.port)).await?;
    let mut subscribe = Subscribe::new(filter, qos);
    subscribe.pkid = 1;
    send(&mut writer, Packet::Subscribe(subscribe)).await?;
    match next_packet(&mut reader, &mut buf).await? {
        Packet::SubAck(_) => Ok((reader, writer, buf)),
        other => Err(format!(
            "{id}: the broker answered SUBSCRIBE with {other:?}"
        )),
    }
}

/// Takes a subscriber's deliveries until the connection ends: `on_publish(arrived_ns, publish)`
/// for each, `arrived_ns` being when the read that brought it returned; QoS 1 ones are
/// acknowledged with one write per read.
pub async fn serve_deliveries(
    mut reader: OwnedReadHalf,
    mut writer: OwnedWriteHalf,
    mut buf: BytesMut,
    name: &'static str,
    mut on_publish: impl FnMut(u64, &Publish),
) {
    let mut acks = BytesMut::new();
    let mut arrived = now_ns();
    loop {
        loop {
            match decoded(&mut buf) {
                Ok(Some(Packet::Publish(publish))) => {
                    on_publish(arrived, &publish);
                    if publish.qos == QoS::AtLeastOnce {
                        let _ = PubAck::new(publish.pkid).write(&mut acks);
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    eprintln!("{name}: {e}");
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
            Ok(_) => arrived = now_ns(),
        }
    }
}

/// Encodes one control packet and writes it.
pub async fn send(writer: &mut OwnedWriteHalf, packet: Packet) -> Result<(), String> {
    let mut out = BytesMut::new();
    packet
        .write(&mut out, MAX_PACKET)
        .map_err(|e| e.to_string())?;
    writer.write_all(&out).await.map_err(|e| e.to_string())
}
