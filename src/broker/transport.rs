//! The byte transports of svc's MQTT broker: plain TCP, TLS (mqtts), WebSocket on its own port
//! (ws, wss) and WebSocket at `/mqtt` on the HTTP port. Each accepted client is handed to the
//! broker core as one [`Connection`] (a [`Reader`] and a [`Writer`] over a plain byte stream),
//! so the core sees every client the same way whatever carried it.

mod linger;
mod tls;
mod websocket;

#[cfg(test)]
mod tests;

pub use linger::linger;
pub use tls::tls_acceptor;
pub use tokio_rustls::TlsAcceptor;
pub use websocket::{serve_websocket, upgrade};

use axum::extract::ws::{Message, WebSocket};
use bytes::{Bytes, BytesMut};
use futures::stream::{SplitSink, SplitStream};
use futures::SinkExt;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

/// Which listener a client came in through (for logs and limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Listener {
    Tcp,
    Ws,
    HttpMqtt,
    Mqtts,
    Wss,
}

impl fmt::Display for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Listener::Tcp => "mqtt",
            Listener::Ws => "ws",
            Listener::HttpMqtt => "http /mqtt",
            Listener::Mqtts => "mqtts",
            Listener::Wss => "wss",
        })
    }
}

/// One accepted client, its handshakes (TLS, WebSocket upgrade) done.
pub struct Connection {
    pub reader: Reader,
    pub writer: Writer,
    pub peer: SocketAddr,
    pub listener: Listener,
}

/// Receives every accepted client; the core spawns its own tasks inside.
pub type Accept = Arc<dyn Fn(Connection) + Send + Sync>;

/// A server-side TLS stream over TCP.
type TlsStream = tokio_rustls::server::TlsStream<TcpStream>;

/// The receiving half of a client's transport.
pub enum Reader {
    Tcp(OwnedReadHalf),
    Tls(ReadHalf<TlsStream>),
    Ws(SplitStream<WebSocket>),
}

/// The sending half of a client's transport.
pub enum Writer {
    Tcp(OwnedWriteHalf),
    Tls(WriteHalf<TlsStream>),
    Ws(SplitSink<WebSocket, Message>),
}

/// Spare room made in the caller's buffer before a stream read, so that a read is never cut to
/// the few bytes `BytesMut` grows by on its own.
const READ_RESERVE: usize = 8 * 1024;
/// A TLS client that has not finished its handshake by then is disconnected.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long [`Writer::close`] waits for the peer to take the last bytes.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause after an accept error that is not about one client (out of file descriptors and the
/// like), so the loop waits for resources instead of spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

impl Reader {
    /// Plain TCP (the only transport a quiet connection parks with).
    pub fn is_tcp(&self) -> bool {
        matches!(self, Reader::Tcp(_))
    }

    /// Appends what arrived to `buf`; Ok(0) when the peer closed. For WebSocket: binary frames
    /// only (their bytes are a plain byte stream: one MQTT packet may span frames, one frame may
    /// hold several packets); a text frame is an error; Close → Ok(0); ping/pong are handled by
    /// the WebSocket library.
    pub async fn read(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Reader::Tcp(tcp) => loop {
                // Reserve only once bytes are there: an idle connection holds no read buffer.
                // Polled, not `readable()`: that future carries a waiter node, and every quiet
                // client's future would keep it; one reading task needs only the socket's slot.
                std::future::poll_fn(|cx| tcp.as_ref().poll_read_ready(cx)).await?;
                buf.reserve(READ_RESERVE);
                match tcp.try_read_buf(buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        // Readiness is only cleared by a read that finds nothing, so the
                        // first wait after a burst wakes at once and ends here: give the
                        // buffer back before waiting for real (10,000 quiet clients would
                        // otherwise hold 80 MB of empty buffers).
                        if buf.is_empty() {
                            *buf = BytesMut::new();
                        }
                    }
                    result => return result,
                }
            },
            Reader::Tls(tls) => {
                buf.reserve(READ_RESERVE);
                tls.read_buf(buf).await
            }
            // Boxed: its state (a frame being taken apart) is larger than a TCP read's, and
            // every quiet client's future would be sized for it.
            Reader::Ws(ws) => Box::pin(websocket::read(ws, buf)).await,
        }
    }
}

impl Writer {
    /// Writes all of `data` (WebSocket: as ONE binary frame). No per-packet flush: the core
    /// hands whole batches, and each call is pushed out to the socket before it returns.
    pub async fn write(&mut self, data: Bytes) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        match self {
            Writer::Tcp(tcp) => tcp.write_all(&data).await,
            Writer::Tls(tls) => {
                tls.write_all(&data).await?;
                // rustls may keep the last records buffered when the socket was busy.
                tls.flush().await
            }
            Writer::Ws(ws) => ws
                .send(Message::Binary(data))
                .await
                .map_err(io::Error::other),
        }
    }

    /// Flushes and closes (WebSocket: Close frame; TCP/TLS: shutdown). Errors are not reported:
    /// the peer may be gone already, and there is nothing left to do with the connection.
    pub async fn close(&mut self) {
        let closing = async {
            match self {
                Writer::Tcp(tcp) => {
                    let _ = tcp.shutdown().await;
                }
                Writer::Tls(tls) => {
                    // Sends close_notify, then shuts the TCP write side.
                    let _ = tls.shutdown().await;
                }
                Writer::Ws(ws) => {
                    // The WebSocket library sends the Close frame and flushes it.
                    let _ = ws.close().await;
                }
            }
        };
        if tokio::time::timeout(CLOSE_TIMEOUT, closing).await.is_err() {
            tracing::debug!("a client did not take its last bytes before the connection closed");
        }
    }
}

/// A plain TCP connection's two halves as the socket they came from, out of tokio's reactor
/// (to be parked); the halves back when they are not plain TCP.
pub fn into_std(
    reader: Reader,
    writer: Writer,
) -> Result<io::Result<std::net::TcpStream>, (Reader, Writer)> {
    match (reader, writer) {
        (Reader::Tcp(reader), Writer::Tcp(writer)) => Ok(reader
            .reunite(writer)
            .map_err(|_| io::Error::other("the halves of two different connections"))
            .and_then(TcpStream::into_std)),
        other => Err(other),
    }
}

/// A parked plain TCP connection's socket as a reader and writer again (in tokio's reactor).
pub fn from_std(stream: std::net::TcpStream) -> io::Result<(Reader, Writer)> {
    let (reader, writer) = TcpStream::from_std(stream)?.into_split();
    Ok((Reader::Tcp(reader), Writer::Tcp(writer)))
}

/// Accepts TCP clients (TCP_NODELAY on; TLS handshake in its own task with a 15 s timeout when
/// `tls` is Some) until the listener fails; never returns early on a single client's error.
pub async fn serve_tcp(listener: TcpListener, tls: Option<TlsAcceptor>, accept: Accept) {
    let kind = if tls.is_some() {
        Listener::Mqtts
    } else {
        Listener::Tcp
    };
    accept_loop(&listener, kind, |tcp, peer| match &tls {
        None => {
            let (reader, writer) = tcp.into_split();
            accept(Connection {
                reader: Reader::Tcp(reader),
                writer: Writer::Tcp(writer),
                peer,
                listener: kind,
            });
        }
        Some(tls) => {
            let tls = tls.clone();
            let accept = accept.clone();
            tokio::spawn(async move {
                if let Some(stream) = tls::handshake(&tls, tcp, peer, kind).await {
                    let (reader, writer) = tokio::io::split(stream);
                    accept(Connection {
                        reader: Reader::Tls(reader),
                        writer: Writer::Tls(writer),
                        peer,
                        listener: kind,
                    });
                }
            });
        }
    })
    .await;
}

/// Hands every accepted TCP connection (TCP_NODELAY on) to `on_client` until the listener
/// fails for good.
async fn accept_loop(
    listener: &TcpListener,
    kind: Listener,
    mut on_client: impl FnMut(TcpStream, SocketAddr),
) {
    loop {
        match listener.accept().await {
            Ok((tcp, peer)) => {
                // MQTT packets are small and latency matters more than packing them.
                let _ = tcp.set_nodelay(true);
                on_client(tcp, peer);
            }
            Err(e) => match AcceptError::of(&e) {
                AcceptError::OneClient => {
                    tracing::debug!(listener = %kind, error = %e, "a client left while being accepted");
                }
                AcceptError::Resources => {
                    tracing::warn!(listener = %kind, error = %e, "cannot accept an MQTT connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
                AcceptError::Listener => {
                    tracing::error!(listener = %kind, error = %e, "the MQTT listener failed; it accepts no more clients");
                    return;
                }
            },
        }
    }
}

/// What an accept error is about, which decides whether the loop goes on.
#[derive(Debug, PartialEq, Eq)]
enum AcceptError {
    /// The client went away during the accept: take the next one at once.
    OneClient,
    /// Out of file descriptors, memory or buffers: wait a little and try again.
    Resources,
    /// The socket is not a listening socket any more (EINVAL): retrying cannot help.
    Listener,
}

impl AcceptError {
    fn of(e: &io::Error) -> AcceptError {
        match e.kind() {
            io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
            | io::ErrorKind::TimedOut => AcceptError::OneClient,
            io::ErrorKind::InvalidInput => AcceptError::Listener,
            _ => AcceptError::Resources,
        }
    }
}
