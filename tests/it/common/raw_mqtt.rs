//! A raw MQTT test client: packets of the `rmqtt-codec` crate (v3.1.1 and 5) encoded and decoded
//! synchronously over a blocking socket, on TCP or on either WebSocket endpoint (binary frames,
//! subprotocol `mqtt`). It lets the conformance tests do what rumqttc hides or refuses: read
//! CONNACK properties, send aliases, oversized or duplicate packets, hold acknowledgements back,
//! and see the server's DISCONNECT reason codes. This file holds the transport and the
//! version-independent packet loop; `raw_clients.rs` the MQTT 5 and 3.1.1 exchanges.

use super::*;
use bytes::{Bytes, BytesMut};
use rmqtt_codec::error::{DecodeError, EncodeError};
use rmqtt_codec::{v3, v5};
use std::collections::VecDeque;
use std::fmt::Debug;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::num::NonZeroU16;
use tokio_util::codec::{Decoder, Encoder};
use tungstenite::client::IntoClientRequest;

/// The byte stream under the packets.
enum Link {
    Tcp(TcpStream),
    Ws(Box<tungstenite::WebSocket<TcpStream>>),
}

/// Why no packet came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Nothing within the time given; the connection is still open.
    Timeout,
    /// The server closed the connection (the text says how it looked).
    Closed(String),
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

impl Link {
    fn open(server: &Server, via: Via) -> Result<Link, String> {
        let (addr, path) = match via {
            Via::Tcp => (server.listener("mqtt"), ""),
            Via::Ws(path) => (server.listener("ws"), path),
            Via::HttpMqtt => (server.listener("http"), "/mqtt"),
        };
        let tcp = TcpStream::connect(&addr).map_err(|e| format!("connect to {addr}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        // A server that stops reading must not hang a test writing a large packet.
        tcp.set_write_timeout(Some(MQTT_WAIT))
            .map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(MQTT_WAIT))
            .map_err(|e| e.to_string())?;
        if via == Via::Tcp {
            return Ok(Link::Tcp(tcp));
        }
        let mut req = format!("ws://{addr}{path}")
            .into_client_request()
            .map_err(|e| format!("WebSocket request: {e}"))?;
        req.headers_mut().insert(
            "Sec-WebSocket-Protocol",
            tungstenite::http::HeaderValue::from_static("mqtt"),
        );
        let (ws, _) = tungstenite::client(req, tcp)
            .map_err(|e| format!("WebSocket handshake with {addr}{path}: {e}"))?;
        Ok(Link::Ws(Box::new(ws)))
    }

    fn tcp(&self) -> &TcpStream {
        match self {
            Link::Tcp(s) => s,
            Link::Ws(ws) => ws.get_ref(),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        match self {
            Link::Tcp(s) => s.write_all(bytes).and_then(|_| s.flush()),
            Link::Ws(ws) => {
                let frame = tungstenite::Message::Binary(Bytes::copy_from_slice(bytes));
                return ws.send(frame).map_err(|e| format!("WebSocket send: {e}"));
            }
        }
        .map_err(|e| format!("write: {e}"))
    }

    /// Appends what arrives before `deadline` to `buf`; `Ok(false)` when nothing came.
    fn read_into(&mut self, buf: &mut BytesMut, deadline: Instant) -> Result<bool, String> {
        // At or past the deadline, still take what has already arrived.
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        self.tcp()
            .set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        match self {
            Link::Tcp(s) => {
                let mut chunk = [0u8; 64 * 1024];
                match s.read(&mut chunk) {
                    Ok(0) => Err("connection closed (EOF)".into()),
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        Ok(true)
                    }
                    Err(e) if is_timeout(&e) => Ok(false),
                    Err(e) => Err(format!("read: {e}")),
                }
            }
            Link::Ws(ws) => match ws.read() {
                Ok(tungstenite::Message::Binary(data)) => {
                    buf.extend_from_slice(&data);
                    Ok(true)
                }
                Ok(tungstenite::Message::Close(frame)) => {
                    Err(format!("WebSocket closed by the server ({frame:?})"))
                }
                Ok(tungstenite::Message::Text(t)) => Err(format!("unexpected text frame `{t}`")),
                // Pings are answered by tungstenite itself.
                Ok(_) => Ok(true),
                Err(tungstenite::Error::Io(e)) if is_timeout(&e) => Ok(false),
                Err(e) => Err(format!("WebSocket: {e}")),
            },
        }
    }
}

/// A raw MQTT connection speaking packets `P` through codec `C`.
pub struct Raw<C, P> {
    link: Link,
    codec: C,
    buf: BytesMut,
    /// Packets received while waiting for something else, oldest first.
    pending: VecDeque<P>,
    next_pid: u16,
    /// Why the connection ended, once it has.
    pub closed: Option<String>,
    /// Names the client in panics.
    pub name: String,
}

pub type Raw5 = Raw<v5::Codec, v5::Packet>;
pub type Raw3 = Raw<v3::Codec, v3::Packet>;

impl<C, P> Raw<C, P>
where
    C: Encoder<P, Error = EncodeError> + Decoder<Item = (P, u32), Error = DecodeError>,
    P: Debug,
{
    /// A connection with nothing sent yet (to pipeline packets behind a CONNECT).
    pub fn open(server: &Server, via: Via, codec: C, name: &str) -> Result<Self, String> {
        Ok(Raw {
            link: Link::open(server, via)?,
            codec,
            buf: BytesMut::new(),
            pending: VecDeque::new(),
            next_pid: 0,
            closed: None,
            name: name.to_string(),
        })
    }

    /// Encodes and writes a packet; `Err` when the connection is gone.
    pub fn try_send(&mut self, packet: P) -> Result<(), String> {
        let mut out = BytesMut::new();
        self.encode(packet, &mut out);
        self.link.write(&out)
    }

    /// Appends `packet`, encoded, to `out` (to write many packets in one burst).
    pub fn encode(&mut self, packet: P, out: &mut BytesMut) {
        let what = format!("{packet:?}");
        self.codec
            .encode(packet, out)
            .unwrap_or_else(|e| panic!("`{}`: cannot encode {what}: {e:?}", self.name));
    }

    /// Encodes and writes a packet; panics when the connection is gone.
    pub fn send(&mut self, packet: P) {
        let what = format!("{packet:?}");
        if let Err(e) = self.try_send(packet) {
            panic!("`{}`: sending {what} failed: {e}", self.name);
        }
    }

    /// Writes bytes as they are (hand-made or deliberately broken packets).
    pub fn send_bytes(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.link.write(bytes)
    }

    /// A fresh packet identifier.
    pub fn pid(&mut self) -> NonZeroU16 {
        self.next_pid = self.next_pid.wrapping_add(1).max(1);
        NonZeroU16::new(self.next_pid).unwrap_or(NonZeroU16::MIN)
    }

    /// The next packet from the wire (not from `pending`).
    pub(super) fn read_packet(&mut self, within: Duration) -> Result<P, End> {
        if let Some(reason) = &self.closed {
            return Err(End::Closed(reason.clone()));
        }
        let deadline = Instant::now() + within;
        loop {
            match self.codec.decode(&mut self.buf) {
                Ok(Some((packet, _))) => return Ok(packet),
                Ok(None) => {}
                Err(e) => panic!(
                    "`{}`: the server sent an undecodable packet: {e:?}",
                    self.name
                ),
            }
            match self.link.read_into(&mut self.buf, deadline) {
                Ok(true) => {}
                Ok(false) => return Err(End::Timeout),
                Err(reason) => {
                    self.closed = Some(reason.clone());
                    return Err(End::Closed(reason));
                }
            }
        }
    }

    /// The next packet, kept ones first.
    pub fn next(&mut self, within: Duration) -> Result<P, End> {
        match self.pending.pop_front() {
            Some(p) => Ok(p),
            None => self.read_packet(within),
        }
    }

    /// The first packet matching `pred` (kept ones first; others are kept for later), or why
    /// none came within `within`.
    pub fn wait_for(&mut self, within: Duration, pred: impl Fn(&P) -> bool) -> Result<P, End> {
        if let Some(i) = self.pending.iter().position(&pred) {
            return Ok(self.pending.remove(i).expect("index from position"));
        }
        let deadline = Instant::now() + within;
        loop {
            let p = self.read_packet(deadline.saturating_duration_since(Instant::now()))?;
            if pred(&p) {
                return Ok(p);
            }
            self.pending.push_back(p);
        }
    }

    /// Like [`Raw::wait_for`] within [`MQTT_WAIT`]; panics naming `what` and what did arrive.
    pub fn expect(&mut self, what: &str, pred: impl Fn(&P) -> bool) -> P {
        match self.wait_for(MQTT_WAIT, pred) {
            Ok(p) => p,
            Err(end) => panic!(
                "`{}`: no {what} within {MQTT_WAIT:?} ({end:?}); other packets: {:?}",
                self.name, self.pending
            ),
        }
    }

    /// Every packet that arrives within `within` (kept ones first), and whether and why the
    /// connection ended meanwhile.
    pub fn drain(&mut self, within: Duration) -> (Vec<P>, Option<String>) {
        let mut got: Vec<P> = self.pending.drain(..).collect();
        let deadline = Instant::now() + within;
        loop {
            match self.read_packet(deadline.saturating_duration_since(Instant::now())) {
                Ok(p) => got.push(p),
                Err(End::Timeout) => return (got, None),
                Err(End::Closed(reason)) => return (got, Some(reason)),
            }
        }
    }

    /// Waits until the server closes the connection; returns the packets that came first.
    pub fn expect_closed(&mut self, within: Duration) -> Vec<P> {
        let (got, closed) = self.drain(within);
        assert!(
            closed.is_some(),
            "`{}`: the connection is still open after {within:?}; received {got:?}",
            self.name
        );
        got
    }

    /// Closes the socket without DISCONNECT (an unclean close, as a network failure).
    pub fn drop_connection(self) {
        let _ = self.link.tcp().shutdown(std::net::Shutdown::Both);
    }
}

impl Raw5 {
    /// Goes on writing after the server said why it ends the connection, as a client that has
    /// not read that yet does (ten PINGREQs, 20 ms apart): every write must go through, since
    /// the server closes carefully (no reset while the client writes). `after` names what the
    /// server sent.
    pub fn keep_writing(&mut self, after: &str) {
        for _ in 0..10 {
            if let Err(e) = self.try_send(v5::Packet::PingRequest) {
                panic!("{}: a write crossing the {after}: {e}", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Expects nothing more from the server after its `after`, and its side closed within
    /// `within` by an end of stream (or a WebSocket close), not a reset.
    pub fn expect_clean_close(&mut self, within: Duration, after: &str) {
        let (rest, closed) = self.drain(within);
        let name = &self.name;
        assert!(rest.is_empty(), "{name}: after the {after}: {rest:?}");
        let closed = closed.unwrap_or_else(|| panic!("{name}: the server's side is still open"));
        assert!(
            closed.contains("EOF") || closed.contains("closed by the server"),
            "{name}: the server's side ended with `{closed}`, not a close"
        );
    }
}

/// How a connection ended, as [`Raw5::ending`] saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// DISCONNECT with this reason code, then the connection closed.
    Disconnect(v5::DisconnectReasonCode),
    ClosedWithoutDisconnect,
    /// Still open when the wait ended.
    Open,
}
