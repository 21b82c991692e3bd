//! TLS listeners: with `--tls-cert`/`--tls-key` the broker also serves MQTT over TLS and
//! WebSocket over TLS, announces both on the `ready` line and reports them enabled in
//! `GET /svc/`; a client that trusts the certificate publishes and receives on each. A DISCONNECT
//! the server sends over TLS reaches a client that is still writing (the careful close).

use crate::common::{Server, ADMIN_PASSWORD};
use bytes::BytesMut;
use reqwest::Method;
use rmqtt_codec::v5;
use rumqttc::{Client, Event, MqttOptions, Packet, QoS, TlsConfiguration, Transport};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use tokio_util::codec::{Decoder, Encoder};

/// A self-signed certificate for localhost, written as PEM files into `dir`.
fn certificate(dir: &std::path::Path) -> (String, String, Vec<u8>) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("generate certificate");
    let cert_pem = cert.cert.pem();
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    std::fs::write(&cert_path, &cert_pem).unwrap();
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).unwrap();
    (
        cert_path.display().to_string(),
        key_path.display().to_string(),
        cert_pem.into_bytes(),
    )
}

fn port_of(server: &Server, listener: &str) -> u16 {
    let addr = server.ready[listener]
        .as_str()
        .unwrap_or_else(|| panic!("ready line lacks `{listener}`: {}", server.ready));
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

/// Subscribes and publishes on one connection over the given transport; returns the payload
/// received back.
fn round_trip(host: &str, port: u16, transport: Transport, client_id: &str) -> Vec<u8> {
    let mut options = MqttOptions::new(client_id, host, port);
    options.set_credentials("admin", ADMIN_PASSWORD);
    options.set_keep_alive(Duration::from_secs(30));
    options.set_transport(transport);
    let (client, mut connection) = Client::new(options, 16);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for event in connection.iter() {
            match event {
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let _ = tx.send(Ok(p.payload.to_vec()));
                }
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    let _ = tx.send(Err("suback".to_string()));
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = tx.send(Err(format!("connection error: {e}")));
                    return;
                }
            }
        }
    });
    client.subscribe("secure/#", QoS::AtLeastOnce).unwrap();
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(Err(s)) if s == "suback" => {}
        other => panic!("no SUBACK over TLS: {other:?}"),
    }
    client
        .publish("secure/value", QoS::AtLeastOnce, false, b"42".to_vec())
        .unwrap();
    let payload = match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(Ok(payload)) => payload,
        other => panic!("no message back over TLS: {other:?}"),
    };
    let _ = client.disconnect();
    payload
}

#[test]
fn mqtts_and_wss_work_when_a_certificate_is_configured() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, ca) = certificate(dir.path());
    let server = Server::start_with(&[
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--mqtts-port",
        "0",
        "--wss-port",
        "0",
    ]);
    let mqtts = port_of(&server, "mqtts");
    let wss = port_of(&server, "wss");

    let info: serde_json::Value = server
        .admin(Method::GET, "/svc/")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(info["uns"]["bind"]["mqtts"]["enabled"], true);
    assert_eq!(info["uns"]["bind"]["mqtts"]["port"], mqtts);
    assert_eq!(info["uns"]["bind"]["wss"]["enabled"], true);
    assert_eq!(info["uns"]["bind"]["wss"]["port"], wss);

    let tls = || TlsConfiguration::Simple {
        ca: ca.clone(),
        alpn: None,
        client_auth: None,
    };
    let over_tls = round_trip(
        "localhost",
        mqtts,
        Transport::tls_with_config(tls()),
        "tls-client",
    );
    assert_eq!(over_tls, b"42");
    let url = format!("wss://localhost:{wss}/mqtt");
    let over_wss = round_trip(&url, wss, Transport::wss_with_config(tls()), "wss-client");
    assert_eq!(over_wss, b"42");
}

#[test]
fn without_a_certificate_the_tls_listeners_are_off() {
    let server = Server::start();
    assert!(server.ready.get("mqtts").is_none());
    assert!(server.ready.get("wss").is_none());
    let info: serde_json::Value = server
        .admin(Method::GET, "/svc/")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(info["uns"]["bind"]["mqtts"]["enabled"], false);
    assert_eq!(info["uns"]["bind"]["wss"]["enabled"], false);
}

#[test]
fn an_unreadable_certificate_stops_the_server_with_a_clear_error() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .args([
            "serve",
            "--http-port",
            "0",
            "--mqtt-port",
            "0",
            "--ws-port",
            "0",
            "--mqtts-port",
            "0",
            "--wss-port",
            "0",
            "--tls-cert",
            "/nonexistent/cert.pem",
            "--tls-key",
            "/nonexistent/key.pem",
            "--data-dir",
        ])
        .arg(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("mqtts") || stderr.contains("tls"),
        "{stderr}"
    );
}

/// A raw MQTT 5 client over TLS (blocking rustls), for what rumqttc hides: writing a burst
/// without waiting and seeing how the server's side of the connection ends.
struct TlsRaw {
    stream: StreamOwned<ClientConnection, TcpStream>,
    codec: v5::Codec,
    buf: BytesMut,
}

impl TlsRaw {
    fn connect(port: u16, ca: &[u8]) -> TlsRaw {
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca).expect("the test certificate"))
            .expect("a trusted root");
        let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("localhost").unwrap();
        let connection = ClientConnection::new(Arc::new(config), name).unwrap();
        let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect to mqtts");
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp.set_write_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        TlsRaw {
            stream: StreamOwned::new(connection, tcp),
            codec: v5::Codec::new(0, 0),
            buf: BytesMut::new(),
        }
    }

    /// Encodes `packets` and writes them as one burst.
    fn send(&mut self, packets: Vec<v5::Packet>) -> std::io::Result<()> {
        let mut out = BytesMut::new();
        for packet in packets {
            self.codec.encode(packet, &mut out).expect("encodable");
        }
        self.stream.write_all(&out)?;
        self.stream.flush()
    }

    /// The next packet; `Ok(None)` when the server closed its side cleanly (close_notify).
    fn next(&mut self) -> Result<Option<v5::Packet>, String> {
        loop {
            if let Some((packet, _)) = self.codec.decode(&mut self.buf).expect("decodable") {
                return Ok(Some(packet));
            }
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(None),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// The careful close over TLS (tests/mqtt5_limits.rs has it over TCP and WebSocket): a client
/// writes one QoS 2 publish more than the Receive Maximum and 256 KiB behind it without
/// waiting, answers PUBRECs with PUBREL as it reads them, and writes on after the DISCONNECT
/// 0x93; none of its writes fails, and the server's side ends with close_notify, not a reset.
#[test]
fn a_disconnect_over_tls_reaches_a_client_still_writing() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, ca) = certificate(dir.path());
    let server = Server::start_with(&["--tls-cert", &cert, "--tls-key", &key, "--mqtts-port", "0"]);
    let mqtts = port_of(&server, "mqtts");
    for round in 0..3 {
        let mut c = TlsRaw::connect(mqtts, &ca);
        let connect = v5::Connect {
            clean_start: true,
            keep_alive: 30,
            client_id: format!("tls-still-writing-{round}").into(),
            username: Some("admin".to_string().into()),
            password: Some(bytes::Bytes::from(ADMIN_PASSWORD)),
            ..Default::default()
        };
        c.send(vec![v5::Packet::Connect(Box::new(connect))])
            .expect("CONNECT");
        let max = match c.next() {
            Ok(Some(v5::Packet::ConnectAck(ack))) => ack.receive_max.get(),
            other => panic!("round {round}: no CONNACK: {other:?}"),
        };
        let mut burst = Vec::new();
        for i in 1..=max + 1 {
            burst.push(publish(i, rmqtt_codec::types::QoS::ExactlyOnce, 8));
        }
        for _ in 0..256 {
            burst.push(publish(0, rmqtt_codec::types::QoS::AtMostOnce, 1024));
        }
        c.send(burst).expect("writing the burst");
        loop {
            match c.next() {
                Ok(Some(v5::Packet::PublishReceived(rec))) => {
                    let rel = v5::Packet::PublishRelease(v5::PublishAck2 {
                        packet_id: rec.packet_id,
                        ..Default::default()
                    });
                    if let Err(e) = c.send(vec![rel]) {
                        panic!("round {round}: a PUBREL before the DISCONNECT was read: {e}");
                    }
                }
                Ok(Some(v5::Packet::Disconnect(d))) => {
                    assert_eq!(
                        d.reason_code,
                        v5::DisconnectReasonCode::ReceiveMaximumExceeded,
                        "round {round}"
                    );
                    break;
                }
                other => panic!("round {round}: no DISCONNECT: {other:?}"),
            }
        }
        for _ in 0..10 {
            if let Err(e) = c.send(vec![v5::Packet::PingRequest]) {
                panic!("round {round}: a write crossing the DISCONNECT: {e}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            c.next(),
            Ok(None),
            "round {round}: how the server's side ended"
        );
    }
}

/// A PUBLISH on `flood/tls` with packet id `id` (none for QoS 0) and `size` bytes of payload.
fn publish(id: u16, qos: rmqtt_codec::types::QoS, size: usize) -> v5::Packet {
    v5::Packet::Publish(Box::new(rmqtt_codec::types::Publish {
        dup: false,
        retain: false,
        qos,
        topic: "flood/tls".into(),
        packet_id: std::num::NonZeroU16::new(id),
        payload: bytes::Bytes::from(vec![b'x'; size]),
        properties: None,
    }))
}
