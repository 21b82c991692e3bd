//! MQTT over WebSocket at `/mqtt` on the HTTP port: the upgraded connection is piped to the
//! broker's loopback listener, with a PROXY protocol header so the broker sees the real peer.

use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Accepts the upgrade (subprotocol `mqtt` or `mqttv3.1`) and bridges it to `broker`.
pub fn mqtt_over_websocket(
    upgrade: WebSocketUpgrade,
    peer: SocketAddr,
    broker: SocketAddr,
) -> Response {
    upgrade
        .protocols(["mqtt", "mqttv3.1"])
        .on_upgrade(move |socket| pipe(socket, peer, broker))
}

async fn pipe(socket: WebSocket, peer: SocketAddr, broker: SocketAddr) {
    let tcp = match tokio::net::TcpStream::connect(broker).await {
        Ok(tcp) => tcp,
        Err(e) => {
            tracing::warn!(error = %e, "cannot reach the broker for a /mqtt client");
            return;
        }
    };
    let _ = tcp.set_nodelay(true);
    let (mut from_broker, mut to_broker) = tcp.into_split();
    let Ok(local) = to_broker.local_addr() else {
        return;
    };
    let family = if peer.is_ipv4() { "TCP4" } else { "TCP6" };
    let header = format!(
        "PROXY {family} {} {} {} {}\r\n",
        peer.ip(),
        local.ip(),
        peer.port(),
        local.port()
    );
    if to_broker.write_all(header.as_bytes()).await.is_err() {
        return;
    }
    let (mut ws_out, mut ws_in) = socket.split();
    let upstream = async move {
        while let Some(Ok(message)) = ws_in.next().await {
            match message {
                Message::Binary(bytes) if to_broker.write_all(&bytes).await.is_err() => break,
                Message::Close(_) => break,
                // MQTT travels in binary frames only; pings are answered by axum.
                _ => {}
            }
        }
        let _ = to_broker.shutdown().await;
    };
    let downstream = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match from_broker.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let frame = Message::Binary(Bytes::copy_from_slice(&buf[..n]));
                    if ws_out.send(frame).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = ws_out.send(Message::Close(None)).await;
    };
    tokio::select! {
        _ = upstream => {},
        _ = downstream => {},
    }
}
