//! The connected clients as a read-only list (who, from where, since when, in which version
//! and over which transport, and how busy), for the REST API and the console's System page.
//! Nothing here is on a packet's path: what a connection keeps for it is [`LinkInfo`], written
//! once at CONNECT, and two counters its reader and writer bump once per batch.

use super::hub::Hub;
use super::packet::Version;
use super::transport::Listener;
use super::Principal;
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};

/// What the broker knows of a connection from its handshake, kept in its link. Inline and
/// `Copy` (32 bytes): no allocation per connection. The peer is its address and port (a
/// `SocketAddr` is 32 bytes by itself, for IPv6 flow and scope ids nobody lists).
#[derive(Debug, Clone, Copy)]
pub struct LinkInfo {
    pub peer_ip: IpAddr,
    pub peer_port: u16,
    pub since_ms: i64,
    /// As granted (after `mqtt_max_keepalive`); 0: none.
    pub keep_alive: u16,
    pub version: Version,
    pub listener: Listener,
    /// MQTT 5 Clean Start, or MQTT 3.1.1 Clean Session.
    pub clean_start: bool,
}

impl LinkInfo {
    pub fn peer(&self) -> SocketAddr {
        SocketAddr::new(self.peer_ip, self.peer_port)
    }
}

/// How a client's bytes reach the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Tcp,
    Tls,
    Ws,
    Wss,
}

impl From<Listener> for Transport {
    fn from(listener: Listener) -> Transport {
        match listener {
            Listener::Tcp => Transport::Tcp,
            Listener::Mqtts => Transport::Tls,
            Listener::Ws | Listener::HttpMqtt => Transport::Ws,
            Listener::Wss => Transport::Wss,
        }
    }
}

/// One connected client, as listed.
#[derive(Debug, Clone)]
pub struct ConnectedClient {
    pub client_id: String,
    pub principal: Principal,
    /// `3.1.1` or `5`.
    pub protocol: &'static str,
    pub transport: Transport,
    /// The listener it came in through (`mqtt`, `mqtts`, `ws`, `wss`, `http /mqtt`).
    pub listener: String,
    pub peer: SocketAddr,
    pub since_ms: i64,
    pub keep_alive_secs: u16,
    pub clean_start: bool,
    /// 0: the session ends with the connection.
    pub session_expiry_secs: u32,
    pub subscriptions: usize,
    /// Publishes accepted from the client since it connected.
    pub messages_in: u64,
    /// Publishes written to the client since it connected.
    pub messages_out: u64,
}

impl Hub {
    /// Every client attached to a session right now, ordered by client id (then peer). Locks
    /// one session at a time, briefly.
    pub fn clients(&self) -> Vec<ConnectedClient> {
        let mut clients: Vec<ConnectedClient> = self
            .online()
            .iter()
            .filter_map(|session| {
                let state = session.lock();
                let link = state.link.as_ref()?;
                let info = link.info;
                let (messages_in, messages_out) = link.outbox.counts();
                // The session key is `<user key>|<client id>`, and user keys never hold `|`.
                let client_id = session
                    .key
                    .split_once('|')
                    .map_or(&*session.key, |(_, id)| id);
                Some(ConnectedClient {
                    client_id: client_id.to_string(),
                    principal: (*state.principal).clone(),
                    protocol: match info.version {
                        Version::V3 => "3.1.1",
                        Version::V5 => "5",
                    },
                    transport: info.listener.into(),
                    listener: info.listener.to_string(),
                    peer: info.peer(),
                    since_ms: info.since_ms,
                    keep_alive_secs: info.keep_alive,
                    clean_start: info.clean_start,
                    session_expiry_secs: state.expiry_secs,
                    subscriptions: state.subscriptions.len(),
                    messages_in,
                    messages_out,
                })
            })
            .collect();
        clients.sort_by(|a, b| a.client_id.cmp(&b.client_id).then(a.peer.cmp(&b.peer)));
        clients
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listener_names_its_transport() {
        assert_eq!(Transport::from(Listener::Tcp), Transport::Tcp);
        assert_eq!(Transport::from(Listener::Mqtts), Transport::Tls);
        assert_eq!(Transport::from(Listener::Ws), Transport::Ws);
        assert_eq!(Transport::from(Listener::HttpMqtt), Transport::Ws);
        assert_eq!(Transport::from(Listener::Wss), Transport::Wss);
        assert_eq!(
            serde_json::to_value(Transport::Tls).ok(),
            Some(serde_json::json!("tls"))
        );
    }

    #[test]
    fn link_info_stays_small() {
        // Every connection keeps one inline in its session: growing it grows idle memory.
        assert!(std::mem::size_of::<LinkInfo>() <= 48);
    }
}
