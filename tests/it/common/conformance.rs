//! Small helpers shared by the MQTT conformance tests (`tests/mqtt_*.rs`, `tests/mqtt5_*.rs`):
//! the listeners every feature group is checked on, labels for client ids and topics, and
//! publish collectors for both kinds of test client.

use super::*;
use rmqtt_codec::types::Publish;

/// Every listener a client can use: TCP, the WebSocket port, `/mqtt` on the HTTP port.
pub const EVERY_VIA: [Via; 3] = [Via::Tcp, Via::Ws("/mqtt"), Via::HttpMqtt];

/// A short alphanumeric label of a listener, for client ids and topics.
pub fn via_tag(via: Via) -> String {
    format!("{via:?}")
        .to_lowercase()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "")
}

/// The payload of a raw PUBLISH as text.
pub fn text(p: &Publish) -> String {
    String::from_utf8_lossy(&p.payload).into_owned()
}

/// Exactly `n` publishes of a rumqttc client (panics on timeout, listing what arrived).
pub fn take_publishes(client: &mut Mqtt, n: usize) -> Vec<Msg> {
    let deadline = Instant::now() + MQTT_WAIT;
    let mut got = Vec::new();
    while got.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        match client.next_publish(left) {
            Some(m) => got.push(m),
            None => panic!(
                "client `{}` received {} of {n} publishes: {:?} (closed: {:?})",
                client.client_id,
                got.len(),
                got.iter()
                    .map(|m| format!("{} {}", m.topic, m.text()))
                    .collect::<Vec<_>>(),
                client.closed
            ),
        }
    }
    got
}

/// Every publish a rumqttc client receives until it has been quiet for `quiet`.
pub fn publishes_until_quiet(client: &mut Mqtt, quiet: Duration) -> Vec<Msg> {
    let mut got = Vec::new();
    while let Some(m) = client.next_publish(quiet) {
        got.push(m);
    }
    got
}

/// `topic payload` of each message, for assertions that read well when they fail.
pub fn summary(msgs: &[Msg]) -> Vec<String> {
    msgs.iter()
        .map(|m| format!("{} {}", m.topic, m.text()))
        .collect()
}

/// Runs `f` on its own thread and returns its handle; for clients that must be watched at
/// the same time (keep-alive deadlines, concurrent sessions).
pub fn in_thread<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(f)
}
