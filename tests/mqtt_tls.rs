//! TLS listeners: with `--tls-cert`/`--tls-key` the broker also serves MQTT over TLS and
//! WebSocket over TLS, announces both on the `ready` line and reports them enabled in
//! `GET /svc/`; a client that trusts the certificate publishes and receives on each.

mod common;

use common::{Server, ADMIN_PASSWORD};
use reqwest::Method;
use rumqttc::{Client, Event, MqttOptions, Packet, QoS, TlsConfiguration, Transport};
use std::sync::mpsc;
use std::time::Duration;

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
