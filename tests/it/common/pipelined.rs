//! A pipelined QoS 1 publisher for the kill -9 tests: it keeps up to 100 publishes in flight
//! and reports exactly which values the server acknowledged before the connection broke.

use rumqttc::{Client, Event, MqttOptions, Outgoing, Packet, QoS};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Who publishes where: client id, credentials and topic.
pub struct Publisher<'a> {
    pub client_id: String,
    pub username: &'a str,
    pub password: &'a str,
    pub topic: &'a str,
}

/// Publishes `values` (as text) at QoS 1 on the broker at `port` until they run out and are
/// all answered, the connection breaks (the server was killed), or `go_on` — asked after
/// every event with the values PUBACKed so far — says stop; returns the PUBACKed values.
pub fn publish_acknowledged(
    port: u16,
    publisher: Publisher<'_>,
    values: impl Iterator<Item = u64> + Send + 'static,
    mut go_on: impl FnMut(&BTreeSet<u64>) -> bool,
) -> BTreeSet<u64> {
    let mut options = MqttOptions::new(publisher.client_id, "127.0.0.1", port);
    options.set_credentials(publisher.username, publisher.password);
    options.set_keep_alive(Duration::from_secs(30));
    options.set_inflight(100);
    let (client, mut connection) = Client::new(options, 200);
    let sent: Arc<Mutex<VecDeque<u64>>> = Arc::default();
    let feeder = {
        let (sent, topic, client) = (sent.clone(), publisher.topic.to_string(), client.clone());
        thread::spawn(move || {
            for value in values {
                // Queued before it is handed over: the event loop numbers publishes in order.
                sent.lock().unwrap().push_back(value);
                if client
                    .publish(&topic, QoS::AtLeastOnce, false, value.to_string())
                    .is_err()
                {
                    return;
                }
            }
        })
    };
    let mut by_packet_id: HashMap<u16, u64> = HashMap::new();
    let mut acked = BTreeSet::new();
    for event in connection.iter() {
        match event {
            Ok(Event::Outgoing(Outgoing::Publish(pkid))) => {
                let value = sent.lock().unwrap().pop_front().expect("a queued value");
                by_packet_id.insert(pkid, value);
            }
            Ok(Event::Incoming(Packet::PubAck(ack))) => {
                if let Some(value) = by_packet_id.remove(&ack.pkid) {
                    acked.insert(value);
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
        if !go_on(&acked) {
            break;
        }
    }
    drop(connection);
    drop(client);
    let _ = feeder.join();
    acked
}
