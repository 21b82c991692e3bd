//! The byte stream to an upstream broker: TCP, TLS over TCP (mqtts), WebSocket (ws) or
//! WebSocket over TLS (wss, subprotocol `mqtt`, MQTT in binary frames), opened and split into
//! a reading and a writing half so the bridge can read while it writes. Each failure to open it
//! says where it failed (DNS, TCP, TLS, WebSocket handshake).

use super::connect::Failure;
use bytes::BytesMut;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ClientConfig;
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Where to connect and how.
pub struct Address<'a> {
    pub host: &'a str,
    pub port: u16,
    /// TLS with this configuration (mqtts, wss).
    pub tls: Option<ClientConfig>,
    /// WebSocket at this path (ws, wss).
    pub websocket_path: Option<&'a str>,
}

/// TCP, or TLS over TCP.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

pub enum Reader {
    Bytes(ReadHalf<Stream>),
    WebSocket(SplitStream<WebSocketStream<Stream>>),
}

pub enum Writer {
    Bytes(WriteHalf<Stream>),
    WebSocket(SplitSink<WebSocketStream<Stream>, Message>),
}

/// Opens the stream: resolves the host, connects (TCP_NODELAY: the bridge batches its
/// writes itself), then the TLS and WebSocket handshakes as asked.
pub async fn open(address: &Address<'_>) -> Result<(Reader, Writer), Failure> {
    let mut resolved = tokio::net::lookup_host((address.host, address.port))
        .await
        .map_err(|e| Failure::Dns(format!("{}: {e}", address.host)))?
        .peekable();
    if resolved.peek().is_none() {
        return Err(Failure::Dns(format!("{}: no address", address.host)));
    }
    let mut last_error = None;
    let mut tcp = None;
    for addr in resolved {
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                tcp = Some(stream);
                break;
            }
            Err(e) => last_error = Some(format!("{addr}: {e}")),
        }
    }
    let tcp = tcp.ok_or_else(|| Failure::Tcp(last_error.unwrap_or_default()))?;
    let _ = tcp.set_nodelay(true);
    let stream = match &address.tls {
        None => Stream::Plain(tcp),
        Some(config) => {
            let name = ServerName::try_from(address.host.to_string())
                .map_err(|_| Failure::Tls(format!("`{}` is not a host name", address.host)))?;
            let tls = TlsConnector::from(Arc::new(config.clone()))
                .connect(name, tcp)
                .await
                .map_err(|e| Failure::Tls(e.to_string()))?;
            Stream::Tls(Box::new(tls))
        }
    };
    let Some(path) = address.websocket_path else {
        let (reader, writer) = tokio::io::split(stream);
        return Ok((Reader::Bytes(reader), Writer::Bytes(writer)));
    };
    let scheme = if address.tls.is_some() { "wss" } else { "ws" };
    let url = format!("{scheme}://{}:{}{path}", address.host, address.port);
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| Failure::Protocol(format!("bad WebSocket address {url}: {e}")))?;
    request
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", HeaderValue::from_static("mqtt"));
    let (websocket, _) = tokio_tungstenite::client_async(request, stream)
        .await
        .map_err(|e| Failure::Protocol(format!("WebSocket handshake: {e}")))?;
    let (writer, reader) = websocket.split();
    Ok((Reader::WebSocket(reader), Writer::WebSocket(writer)))
}

impl Reader {
    /// Reads what arrived into `buf`; `Ok(0)` when the upstream closed the connection.
    pub async fn read(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Reader::Bytes(reader) => reader.read_buf(buf).await,
            Reader::WebSocket(frames) => loop {
                match frames.next().await {
                    None | Some(Ok(Message::Close(_))) => return Ok(0),
                    Some(Ok(Message::Binary(data))) if !data.is_empty() => {
                        buf.extend_from_slice(&data);
                        return Ok(data.len());
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(io::Error::other(e)),
                }
            },
        }
    }
}

impl Writer {
    /// Writes all of `bytes` (one WebSocket frame over WebSocket).
    pub async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Writer::Bytes(writer) => writer.write_all(bytes).await,
            Writer::WebSocket(frames) => frames
                .send(Message::binary(bytes.to_vec()))
                .await
                .map_err(io::Error::other),
        }
    }

    /// Flushes and closes the connection (after a DISCONNECT).
    pub async fn close(&mut self) {
        let _ = match self {
            Writer::Bytes(writer) => writer.shutdown().await,
            Writer::WebSocket(frames) => frames.close().await.map_err(io::Error::other),
        };
    }
}
