//! Round trips through every transport with real clients: an Accept that plays a tiny broker
//! core (it echoes newline-terminated "packets", each as one write) shows that the Reader yields
//! a byte stream whatever the framing and that each write leaves as one WebSocket frame.

use super::websocket::WS_MAX_MESSAGE_BYTES;
use super::*;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ConnectInfo;
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use std::path::PathBuf;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

const WAIT: Duration = Duration::from_secs(10);

/// What the echoing core saw of one connection.
#[derive(Debug)]
enum Event {
    Connected(Listener, SocketAddr),
    /// How the read loop ended: Ok when the reader said the peer closed.
    Ended(io::Result<()>),
}

/// An Accept that echoes every complete line as one write, and reports what it saw.
fn echo_core() -> (Accept, mpsc::UnboundedReceiver<Event>) {
    let (events, seen) = mpsc::unbounded_channel();
    let accept: Accept = Arc::new(move |connection: Connection| {
        let events = events.clone();
        tokio::spawn(async move {
            let Connection {
                mut reader,
                mut writer,
                peer,
                listener,
            } = connection;
            let _ = events.send(Event::Connected(listener, peer));
            let mut buf = BytesMut::new();
            let end = 'reading: loop {
                match reader.read(&mut buf).await {
                    Ok(0) => break Ok(()),
                    Ok(_) => {
                        while let Some(at) = buf.iter().position(|&b| b == b'\n') {
                            let line = buf.split_to(at + 1).freeze();
                            if let Err(e) = writer.write(line).await {
                                break 'reading Err(e);
                            }
                        }
                    }
                    Err(e) => break Err(e),
                }
            };
            writer.close().await;
            let _ = events.send(Event::Ended(end));
        });
    });
    (accept, seen)
}

async fn next_event(seen: &mut mpsc::UnboundedReceiver<Event>) -> Event {
    match tokio::time::timeout(WAIT, seen.recv()).await {
        Ok(Some(event)) => event,
        other => panic!("no event from the core: {other:?}"),
    }
}

async fn expect_connected(seen: &mut mpsc::UnboundedReceiver<Event>, listener: Listener) {
    match next_event(seen).await {
        Event::Connected(got, peer) => {
            assert_eq!(got, listener);
            assert!(peer.ip().is_loopback(), "peer {peer}");
        }
        other => panic!("expected a connection, got {other:?}"),
    }
}

async fn expect_ended(seen: &mut mpsc::UnboundedReceiver<Event>) -> io::Result<()> {
    match next_event(seen).await {
        Event::Ended(end) => end,
        other => panic!("expected the end of the connection, got {other:?}"),
    }
}

async fn bind() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    (listener, addr)
}

/// A self-signed certificate for `localhost`, its files, and a client config trusting it.
struct Tls {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
    client: TlsConnector,
}

fn self_signed() -> Tls {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("rcgen");
    let dir = tempfile::tempdir().expect("tempdir");
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).expect("write cert");
    std::fs::write(&key, certified.key_pair.serialize_pem()).expect("write key");
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from(certified.cert.der().to_vec()))
        .expect("trust the certificate");
    let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Tls {
        _dir: dir,
        cert,
        key,
        client: TlsConnector::from(Arc::new(config)),
    }
}

async fn tls_connect(
    tls: &Tls,
    addr: SocketAddr,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("server name");
    tls.client.connect(name, tcp).await.expect("TLS handshake")
}

/// Sends bytes in three writes (two packets in one, one packet across two) and checks the echo,
/// then half-closes and checks that the server closes too.
async fn stream_round_trip<S: AsyncRead + AsyncWrite + Unpin>(client: &mut S) {
    client.write_all(b"one\ntwo\nthr").await.expect("write");
    client.flush().await.expect("flush");
    let mut echoed = vec![0u8; 8];
    client.read_exact(&mut echoed).await.expect("echo");
    assert_eq!(echoed, b"one\ntwo\n");
    client.write_all(b"ee\n").await.expect("write");
    client.flush().await.expect("flush");
    let mut echoed = vec![0u8; 6];
    client.read_exact(&mut echoed).await.expect("echo");
    assert_eq!(echoed, b"three\n");
    client.shutdown().await.expect("shutdown");
    let mut rest = Vec::new();
    tokio::time::timeout(WAIT, client.read_to_end(&mut rest))
        .await
        .expect("server closes")
        .expect("read to end");
    assert!(rest.is_empty(), "unexpected bytes {rest:?}");
}

#[tokio::test]
async fn tcp_round_trip() {
    let (listener, addr) = bind().await;
    let (accept, mut seen) = echo_core();
    tokio::spawn(serve_tcp(listener, None, accept));
    let mut client = tokio::net::TcpStream::connect(addr).await.expect("connect");
    expect_connected(&mut seen, Listener::Tcp).await;
    stream_round_trip(&mut client).await;
    expect_ended(&mut seen).await.expect("clean end");
}

#[tokio::test]
async fn tls_round_trip() {
    let tls = self_signed();
    let acceptor = tls_acceptor(&tls.cert, &tls.key).expect("acceptor");
    let (listener, addr) = bind().await;
    let (accept, mut seen) = echo_core();
    tokio::spawn(serve_tcp(listener, Some(acceptor), accept));
    let mut client = tls_connect(&tls, addr).await;
    expect_connected(&mut seen, Listener::Mqtts).await;
    stream_round_trip(&mut client).await;
    expect_ended(&mut seen).await.expect("clean end");
}

#[tokio::test]
async fn tls_listener_survives_a_failed_handshake() {
    let tls = self_signed();
    let acceptor = tls_acceptor(&tls.cert, &tls.key).expect("acceptor");
    let (listener, addr) = bind().await;
    let (accept, mut seen) = echo_core();
    tokio::spawn(serve_tcp(listener, Some(acceptor), accept));
    // Plain MQTT bytes on the TLS port: the handshake fails and the server hangs up.
    let mut plain = tokio::net::TcpStream::connect(addr).await.expect("connect");
    plain
        .write_all(b"\x10\x0c\x00\x04MQTT")
        .await
        .expect("write");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(WAIT, plain.read_to_end(&mut rest))
        .await
        .expect("server hangs up");
    let mut client = tls_connect(&tls, addr).await;
    expect_connected(&mut seen, Listener::Mqtts).await;
    stream_round_trip(&mut client).await;
}

type Ws<S> = WebSocketStream<S>;

/// Opens a WebSocket at `url` over `stream`, asking for `protocols`; returns the client and the
/// subprotocol the server chose.
async fn ws_connect<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    url: &str,
    protocols: &'static str,
) -> (Ws<S>, Option<String>) {
    let mut request = url.into_client_request().expect("request");
    request.headers_mut().insert(
        "sec-websocket-protocol",
        HeaderValue::from_static(protocols),
    );
    let (ws, response) = tokio_tungstenite::client_async(request, stream)
        .await
        .expect("WebSocket handshake");
    let chosen = response
        .headers()
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (ws, chosen)
}

async fn next_frame<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Ws<S>) -> WsMessage {
    match tokio::time::timeout(WAIT, ws.next()).await {
        Ok(Some(Ok(message))) => message,
        other => panic!("no frame from the server: {other:?}"),
    }
}

/// Two packets in one frame come back as two frames; one packet across two frames comes back as
/// one; a ping is answered; a Close ends the connection cleanly.
async fn ws_round_trip<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut Ws<S>,
    seen: &mut mpsc::UnboundedReceiver<Event>,
) {
    ws.send(WsMessage::binary(b"one\ntwo\n".to_vec()))
        .await
        .expect("send");
    assert_eq!(next_frame(ws).await, WsMessage::binary(b"one\n".to_vec()));
    assert_eq!(next_frame(ws).await, WsMessage::binary(b"two\n".to_vec()));
    ws.send(WsMessage::binary(b"thr".to_vec()))
        .await
        .expect("send");
    ws.send(WsMessage::binary(Vec::new())).await.expect("send");
    ws.send(WsMessage::binary(b"ee\n".to_vec()))
        .await
        .expect("send");
    assert_eq!(next_frame(ws).await, WsMessage::binary(b"three\n".to_vec()));
    ws.send(WsMessage::Ping(Bytes::from_static(b"are you there")))
        .await
        .expect("ping");
    assert_eq!(
        next_frame(ws).await,
        WsMessage::Pong(Bytes::from_static(b"are you there"))
    );
    ws.close(None).await.expect("close");
    assert!(matches!(next_frame(ws).await, WsMessage::Close(_)));
    expect_ended(seen).await.expect("clean end");
}

#[tokio::test]
async fn ws_round_trip_on_any_path() {
    let (listener, addr) = bind().await;
    let (accept, mut seen) = echo_core();
    tokio::spawn(serve_websocket(listener, None, accept));
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let url = format!("ws://{addr}/some/random/path?x=1");
    let (mut ws, chosen) = ws_connect(tcp, &url, "mqtt").await;
    assert_eq!(chosen.as_deref(), Some("mqtt"));
    expect_connected(&mut seen, Listener::Ws).await;
    ws_round_trip(&mut ws, &mut seen).await;
}

#[tokio::test]
async fn wss_round_trip() {
    let tls = self_signed();
    let acceptor = tls_acceptor(&tls.cert, &tls.key).expect("acceptor");
    let (listener, addr) = bind().await;
    let (accept, mut seen) = echo_core();
    tokio::spawn(serve_websocket(listener, Some(acceptor), accept));
    let stream = tls_connect(&tls, addr).await;
    let url = format!("wss://localhost:{}/", addr.port());
    let (mut ws, chosen) = ws_connect(stream, &url, "mqtt").await;
    assert_eq!(chosen.as_deref(), Some("mqtt"));
    expect_connected(&mut seen, Listener::Wss).await;
    ws_round_trip(&mut ws, &mut seen).await;
}

#[tokio::test]
async fn http_mqtt_upgrade_round_trip() {
    let (listener, addr) = bind().await;
    let (accept, mut seen) = echo_core();
    let router = axum::Router::new().route(
        "/mqtt",
        get(
            move |ws: WebSocketUpgrade, ConnectInfo(peer): ConnectInfo<SocketAddr>| async move {
                upgrade(ws, peer, accept)
            },
        ),
    );
    tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut ws, chosen) = ws_connect(tcp, &format!("ws://{addr}/mqtt"), "mqtt").await;
    assert_eq!(chosen.as_deref(), Some("mqtt"));
    expect_connected(&mut seen, Listener::HttpMqtt).await;
    ws_round_trip(&mut ws, &mut seen).await;
}

#[tokio::test]
async fn ws_negotiates_the_protocol_the_client_asks_for() {
    let (listener, addr) = bind().await;
    let (accept, _seen) = echo_core();
    tokio::spawn(serve_websocket(listener, None, accept));
    for (asked, expected) in [
        ("mqttv3.1", "mqttv3.1"),
        ("mqtt", "mqtt"),
        ("wamp, mqttv3.1", "mqttv3.1"),
    ] {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (_ws, chosen) = ws_connect(tcp, &format!("ws://{addr}/mqtt"), asked).await;
        assert_eq!(chosen.as_deref(), Some(expected), "asked for {asked}");
    }
}

#[tokio::test]
async fn ws_text_frame_ends_the_connection() {
    let (listener, addr) = bind().await;
    let (accept, mut seen) = echo_core();
    tokio::spawn(serve_websocket(listener, None, accept));
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut ws, _) = ws_connect(tcp, &format!("ws://{addr}/"), "mqtt").await;
    expect_connected(&mut seen, Listener::Ws).await;
    ws.send(WsMessage::text("hello\n")).await.expect("send");
    let end = expect_ended(&mut seen).await;
    assert_eq!(
        end.expect_err("a text frame is an error").kind(),
        io::ErrorKind::InvalidData
    );
    // Nothing was echoed: the connection closes.
    assert!(matches!(next_frame(&mut ws).await, WsMessage::Close(_)));
}

#[tokio::test]
async fn ws_accepts_a_full_size_packet_and_refuses_a_larger_frame() {
    let (listener, addr) = bind().await;
    let (accept, mut seen) = echo_core();
    tokio::spawn(serve_websocket(listener, None, accept));
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut ws, _) = ws_connect(tcp, &format!("ws://{addr}/"), "mqtt").await;
    expect_connected(&mut seen, Listener::Ws).await;
    let mut packet = vec![b'a'; 1024 * 1024 - 1];
    packet.push(b'\n');
    ws.send(WsMessage::binary(packet.clone()))
        .await
        .expect("send");
    assert_eq!(next_frame(&mut ws).await, WsMessage::binary(packet));
    // The server may hang up before the whole frame is written.
    let _ = ws
        .send(WsMessage::binary(vec![b'a'; WS_MAX_MESSAGE_BYTES + 1]))
        .await;
    assert!(expect_ended(&mut seen).await.is_err());
}

/// The error `tls_acceptor` gives (`TlsAcceptor` is not `Debug`, so no `expect_err`).
fn acceptor_error(cert: &std::path::Path, key: &std::path::Path) -> String {
    match tls_acceptor(cert, key) {
        Ok(_) => panic!(
            "tls_acceptor accepted {} and {}",
            cert.display(),
            key.display()
        ),
        Err(e) => e.to_string(),
    }
}

#[test]
fn tls_acceptor_errors_say_what_is_wrong() {
    let tls = self_signed();
    let missing = tls._dir.path().join("missing.pem");
    let error = acceptor_error(&missing, &tls.key);
    assert!(
        error.starts_with(&format!(
            "cannot read the TLS certificate {}:",
            missing.display()
        )),
        "{error}"
    );
    let error = acceptor_error(&tls.cert, &missing);
    assert!(
        error.starts_with(&format!(
            "cannot read the TLS private key {}:",
            missing.display()
        )),
        "{error}"
    );
    // The certificate file given as the key: it holds no key.
    let error = acceptor_error(&tls.cert, &tls.cert);
    assert_eq!(error, format!("no private key in {}", tls.cert.display()));
    let error = acceptor_error(&tls.key, &tls.key);
    assert_eq!(error, format!("no certificate in {}", tls.key.display()));
    // A key that belongs to another certificate.
    let other = self_signed();
    let error = acceptor_error(&tls.cert, &other.key);
    assert!(
        error.starts_with("cannot use the TLS certificate"),
        "{error}"
    );
}

#[test]
fn listeners_display_as_configured() {
    let names: Vec<String> = [
        Listener::Tcp,
        Listener::Ws,
        Listener::HttpMqtt,
        Listener::Mqtts,
        Listener::Wss,
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(names, ["mqtt", "ws", "http /mqtt", "mqtts", "wss"]);
}

#[test]
fn accept_errors_about_one_client_do_not_stop_the_listener() {
    let of = |kind| AcceptError::of(&io::Error::from(kind));
    assert_eq!(of(io::ErrorKind::ConnectionAborted), AcceptError::OneClient);
    assert_eq!(of(io::ErrorKind::ConnectionReset), AcceptError::OneClient);
    // EMFILE: out of file descriptors.
    assert_eq!(
        AcceptError::of(&io::Error::from_raw_os_error(24)),
        AcceptError::Resources
    );
    assert_eq!(of(io::ErrorKind::InvalidInput), AcceptError::Listener);
}
