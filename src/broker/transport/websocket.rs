//! MQTT over WebSocket, served by axum: the ws and wss ports (an upgrade on any path, over
//! plain TCP or TLS, through hyper directly since `axum::serve` takes only a plain listener),
//! `/mqtt` on the HTTP port (the server's router calls [`upgrade`]), and reading the byte
//! stream out of binary frames.

use super::{accept_loop, tls, Accept, Connection, Listener, Reader, Writer};
use axum::body::Body;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::response::Response;
use axum::Router;
use bytes::BytesMut;
use futures::stream::SplitStream;
use futures::StreamExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tower::ServiceExt;

/// Largest WebSocket message and frame accepted: the broker's largest packet (1 MiB) plus room
/// for a few small packets a client may send in the same frame.
pub const WS_MAX_MESSAGE_BYTES: usize = 1024 * 1024 + 16 * 1024;
/// The subprotocols MQTT clients ask for; the first one the client offers in this order wins.
const SUBPROTOCOLS: [&str; 2] = ["mqtt", "mqttv3.1"];
/// A client that has not sent its whole upgrade request by then is disconnected.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(15);

/// For `/mqtt` on the HTTP port (the server's router calls this from its handler).
pub fn upgrade(upgrade: WebSocketUpgrade, peer: SocketAddr, accept: Accept) -> Response {
    upgrade_as(upgrade, peer, Listener::HttpMqtt, accept)
}

/// The ws/wss ports: an axum router that upgrades on ANY path (subprotocols `mqtt`,
/// `mqttv3.1`), over plain TCP or TLS (handshake in each client's task, 15 s timeout). Runs
/// until the listener fails; never returns early on a single client's error.
pub async fn serve_websocket(
    listener: TcpListener,
    tls: Option<super::TlsAcceptor>,
    accept: Accept,
) {
    let kind = if tls.is_some() {
        Listener::Wss
    } else {
        Listener::Ws
    };
    let router = Router::new()
        .fallback(upgrade_any_path)
        .with_state(Upgrades {
            accept,
            listener: kind,
        });
    accept_loop(&listener, kind, |tcp, peer| {
        let router = router.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_http(tcp, router, peer).await,
                Some(tls) => {
                    if let Some(stream) = tls::handshake(&tls, tcp, peer, kind).await {
                        serve_http(stream, router, peer).await;
                    }
                }
            }
        });
    })
    .await;
}

/// What the ws/wss router needs to hand an upgraded client over.
#[derive(Clone)]
struct Upgrades {
    accept: Accept,
    listener: Listener,
}

async fn upgrade_any_path(
    State(upgrades): State<Upgrades>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    ws: WebSocketUpgrade,
) -> Response {
    upgrade_as(ws, peer, upgrades.listener, upgrades.accept)
}

fn upgrade_as(
    upgrade: WebSocketUpgrade,
    peer: SocketAddr,
    listener: Listener,
    accept: Accept,
) -> Response {
    upgrade
        .protocols(SUBPROTOCOLS)
        .max_message_size(WS_MAX_MESSAGE_BYTES)
        .max_frame_size(WS_MAX_MESSAGE_BYTES)
        .on_failed_upgrade(move |e| {
            tracing::debug!(%peer, %listener, error = %e, "WebSocket upgrade failed");
        })
        .on_upgrade(move |socket: WebSocket| async move {
            let (writer, reader) = socket.split();
            accept(Connection {
                reader: Reader::Ws(reader),
                writer: Writer::Ws(writer),
                peer,
                listener,
            });
        })
}

/// Serves HTTP/1.1 on one connection, with upgrades, until the client is upgraded or leaves.
async fn serve_http<IO>(io: IO, router: Router, peer: SocketAddr)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service =
        hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request.map(Body::new))
        });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    if let Err(e) = connection.await {
        tracing::debug!(%peer, error = %e, "WebSocket listener: HTTP connection ended with an error");
    }
}

/// [`Reader::read`] for WebSocket: the next non-empty binary frame appended to `buf`.
pub(super) async fn read(ws: &mut SplitStream<WebSocket>, buf: &mut BytesMut) -> io::Result<usize> {
    loop {
        let message = match ws.next().await {
            None => return Ok(0),
            Some(Ok(message)) => message,
            Some(Err(e)) => return Err(io::Error::other(e)),
        };
        match message {
            // An empty frame carries nothing; answering Ok(0) would read as the peer closing.
            Message::Binary(bytes) if bytes.is_empty() => {}
            Message::Binary(bytes) => {
                buf.extend_from_slice(&bytes);
                return Ok(bytes.len());
            }
            Message::Text(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "MQTT over WebSocket travels in binary frames, and a text frame arrived",
                ))
            }
            Message::Close(_) => return Ok(0),
            // The library answers pings itself.
            Message::Ping(_) | Message::Pong(_) => {}
        }
    }
}
