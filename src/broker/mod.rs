//! svc's MQTT broker (MQTT 3.1.1 and 5 over TCP, WebSocket and TLS). This is its boundary:
//! the rest of svc gives it a [`Policy`] that authenticates clients, authorizes every publish
//! and every delivery and sees every accepted message, publishes from inside the process, and
//! disconnects clients on demand. Inside: `transport` (listeners), `connection`/`inbound`/
//! `writer` (one client), `hub` (sessions, subscriptions, retained messages, routing),
//! `session`, `trie` (the subscription index), `persist` (durable state), `packet` (both
//! protocol versions behind one shape), `clients` (the connected clients, listed).

mod clients;
mod connection;
mod handshake;
mod hub;
mod inbound;
mod outbox;
mod packet;
pub mod parking;
mod persist;
mod principals;
mod publication;
mod session;
mod slots;
pub mod stats;
mod transport;
mod trie;
mod writer;

pub use clients::{ConnectedClient, Transport};
pub use persist::Stored;
pub use publication::HOPS_PROPERTY;
pub use session::Limits;

use anyhow::{Context, Result};
use async_trait::async_trait;
use axum::extract::ws::WebSocketUpgrade;
use bytes::Bytes;
use hub::Hub;
use publication::Publication;
use serde::{Deserialize, Serialize};
use session::Kick;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use transport::Accept;

/// Who a connected client is, as decided by the policy at CONNECT.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    /// The user the credential belongs to; empty for anonymous clients.
    pub user_key: String,
    /// Publishes and receives everywhere.
    pub admin: bool,
    /// The API key used to connect, so revoking it can close the connection.
    pub api_key_id: Option<String>,
    /// The domain the credential belongs to, if it has one (an API key made in a domain); the
    /// policy decides what it means for the messages the client publishes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

/// The MQTT 5 CONNECT user property by which another svc's upstream bridge announces itself
/// (its value: `<domain>/<upstream name>` on that svc).
pub const BRIDGE_PROPERTY: &str = "svc-bridge";

/// A connected client that announced itself as another svc's bridge.
#[derive(Debug, Clone, Serialize)]
pub struct Bridge {
    pub client_id: String,
    /// `<domain>/<upstream name>` on the svc it comes from.
    pub announced: String,
    pub peer: SocketAddr,
    /// The user whose credential it connected with.
    #[serde(skip)]
    pub user_key: String,
    pub since_ms: i64,
}

/// An accepted publish, as the platform sees it.
#[derive(Debug, Clone)]
pub struct Message {
    pub topic: String,
    pub payload: Bytes,
    pub received_ms: i64,
    /// The publish's QoS: 1 and 2 are acknowledged only after `on_message` succeeds.
    pub qos: u8,
    pub retain: bool,
    /// Bridges the message crossed to get here (its `svc-hops` user property).
    pub hops: u8,
    /// Who inside svc published it (a function or flow), `None` for MQTT clients; lets
    /// automation skip messages that would re-trigger their own writer.
    pub origin: Option<std::sync::Arc<str>>,
    /// The client that published it (a will: the client that left it); `None` for messages
    /// from inside svc.
    pub publisher: Option<Arc<Principal>>,
    /// Where an MQTT 5 publisher asked for an answer (its Response Topic and Correlation
    /// Data): a write to a device tells its result there.
    pub response: Option<Arc<Response>>,
}

/// An MQTT 5 request's Response Topic and Correlation Data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub topic: String,
    pub correlation: Option<Bytes>,
}

/// Why the policy refused a CONNECT's credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthRefusal {
    /// Wrong, unknown or missing credential ("bad user name or password").
    BadCredentials,
    /// Too many failed attempts for the user name or from the address: refused unchecked,
    /// after a delay (MQTT 5 "quota exceeded", 3.1.1 "not authorized").
    Throttled { retry_after: Duration },
}

/// The platform's decisions about MQTT clients.
#[async_trait]
pub trait Policy: Send + Sync + 'static {
    async fn authenticate(
        &self,
        peer: SocketAddr,
        username: Option<&str>,
        password: Option<&[u8]>,
    ) -> Result<Principal, AuthRefusal>;
    async fn may_publish(&self, who: &Principal, topic: &str) -> bool;
    async fn may_receive(&self, who: &Principal, topic: &str) -> bool;
    /// Sees every publish that passed authorization, client or internal, before it is
    /// delivered and acknowledged to a QoS 1/2 publisher. An error means the message could not
    /// be stored: it is neither delivered nor acknowledged (the client is disconnected, so it
    /// publishes again when it reconnects).
    async fn on_message(&self, message: Message) -> Result<(), String>;

    /// [`Policy::on_message`] for a batch read from one client at once, so the policy can
    /// store them together; all or nothing.
    async fn on_messages(&self, messages: Vec<Message>) -> Result<(), String> {
        for message in messages {
            self.on_message(message).await?;
        }
        Ok(())
    }

    /// Changes whenever authorization decisions may have changed (grants, keys, users, tag
    /// ownership), so the broker's cached decisions start over.
    fn authz_generation(&self) -> u64 {
        0
    }
}

pub struct BrokerConfig {
    pub bind: IpAddr,
    pub mqtt_port: u16,
    pub ws_port: u16,
    /// Certificate and key (PEM files) enabling the TLS listeners.
    pub tls: Option<TlsListeners>,
    pub limits: Limits,
    /// Where retained messages and persistent sessions are kept.
    pub store: crate::store::Store,
}

pub struct TlsListeners {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub mqtts_port: u16,
    pub wss_port: u16,
}

/// Addresses the broker listens on.
#[derive(Debug, Clone, Copy)]
pub struct BrokerAddrs {
    pub mqtt: SocketAddr,
    pub ws: SocketAddr,
    pub mqtts: Option<SocketAddr>,
    pub wss: Option<SocketAddr>,
}

/// What [`Broker::census`] counts.
#[derive(Debug, Clone, Copy)]
pub struct Census {
    pub sessions: usize,
    pub online: usize,
    pub subscriptions: usize,
}

pub struct Broker {
    hub: Arc<Hub>,
    accept: Accept,
    tasks: Vec<JoinHandle<()>>,
    pub addrs: BrokerAddrs,
}

async fn bind(bind: IpAddr, port: u16, what: &str) -> Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(SocketAddr::new(bind, port))
        .await
        .with_context(|| format!("cannot listen for {what} on {bind}:{port}"))
}

impl Broker {
    pub async fn start(config: BrokerConfig, policy: Arc<dyn Policy>) -> Result<Broker> {
        let hub = Arc::new(Hub::new(policy, config.limits, config.store.clone()));
        hub.restore(&config.store)
            .await
            .context("cannot load the broker's retained messages and sessions")?;
        let accept: Accept = {
            let hub = hub.clone();
            Arc::new(move |connection| {
                tokio::spawn(connection::serve(hub.clone(), connection));
            })
        };
        let tls = match &config.tls {
            Some(tls) => Some(
                transport::tls_acceptor(&tls.cert, &tls.key)
                    .context("cannot start the TLS listeners (check tls_cert and tls_key)")?,
            ),
            None => None,
        };
        let tcp = bind(config.bind, config.mqtt_port, "MQTT").await?;
        let ws = bind(config.bind, config.ws_port, "MQTT over WebSocket").await?;
        let mut addrs = BrokerAddrs {
            mqtt: tcp.local_addr()?,
            ws: ws.local_addr()?,
            mqtts: None,
            wss: None,
        };
        let mut tasks = vec![
            tokio::spawn(transport::serve_tcp(tcp, None, accept.clone())),
            tokio::spawn(transport::serve_websocket(ws, None, accept.clone())),
        ];
        if let (Some(listeners), Some(acceptor)) = (&config.tls, tls) {
            let mqtts = bind(config.bind, listeners.mqtts_port, "mqtts").await?;
            let wss = bind(config.bind, listeners.wss_port, "wss").await?;
            addrs.mqtts = Some(mqtts.local_addr()?);
            addrs.wss = Some(wss.local_addr()?);
            tasks.push(tokio::spawn(transport::serve_tcp(
                mqtts,
                Some(acceptor.clone()),
                accept.clone(),
            )));
            tasks.push(tokio::spawn(transport::serve_websocket(
                wss,
                Some(acceptor),
                accept.clone(),
            )));
        }
        let sweeper = hub.clone();
        tasks.push(tokio::spawn(async move {
            // Silent clients are looked for four times a second (a keep alive of 2 s ends
            // within 3 to 3.25 s); the rest once a second.
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            for quarter in 0u64.. {
                tick.tick().await;
                sweeper.sweep_quiet(crate::time::now_ms());
                if quarter % 4 != 3 {
                    continue;
                }
                sweeper.expire_sessions();
                if quarter % 240 == 239 {
                    let (sessions, online, subscriptions) = sweeper.census();
                    tracing::debug!(sessions, online, subscriptions, "MQTT broker");
                }
            }
        }));
        Ok(Broker {
            hub,
            accept,
            tasks,
            addrs,
        })
    }

    /// Sessions, connected clients and subscriptions, counted now.
    pub fn census(&self) -> Census {
        let (sessions, online, subscriptions) = self.hub.census();
        Census {
            sessions,
            online,
            subscriptions,
        }
    }

    /// Every listener is still accepting (false once shut down or if one failed).
    pub fn is_listening(&self) -> bool {
        self.tasks.iter().all(|task| !task.is_finished())
    }

    /// MQTT over WebSocket at `/mqtt` on the HTTP port: the upgraded connection is served
    /// like any other client.
    pub fn websocket(
        &self,
        upgrade: WebSocketUpgrade,
        peer: SocketAddr,
    ) -> axum::response::Response {
        transport::upgrade(upgrade, peer, self.accept.clone())
    }

    /// Publishes from inside the process: every subscriber and the policy's `on_message` see it.
    pub async fn publish(&self, topic: &str, payload: Bytes, qos: u8, retain: bool) -> Result<()> {
        self.publish_from(None, topic, payload, qos, retain).await
    }

    /// [`Broker::publish`] on behalf of an in-process writer named by `origin`.
    pub async fn publish_from(
        &self,
        origin: Option<Arc<str>>,
        topic: &str,
        payload: Bytes,
        qos: u8,
        retain: bool,
    ) -> Result<()> {
        self.publish_relayed(origin, topic, payload, qos, retain, 0)
            .await
    }

    /// [`Broker::publish_from`] for a message that crossed `hops` bridges (kept in its
    /// `svc-hops` user property when not 0).
    pub async fn publish_relayed(
        &self,
        origin: Option<Arc<str>>,
        topic: &str,
        payload: Bytes,
        qos: u8,
        retain: bool,
        hops: u8,
    ) -> Result<()> {
        let properties = (hops > 0).then(|| {
            Box::new(rmqtt_codec::v5::PublishProperties {
                user_properties: vec![(HOPS_PROPERTY.into(), hops.to_string().into())],
                ..Default::default()
            })
        });
        let message = Inside {
            topic,
            payload,
            qos,
            retain,
        };
        self.publish_with(origin, None, message, properties).await
    }

    /// Publishes the answer to an MQTT 5 request on its response topic, with the request's
    /// correlation data.
    pub async fn publish_response(&self, response: &Response, payload: Bytes) -> Result<()> {
        let properties = Box::new(rmqtt_codec::v5::PublishProperties {
            correlation_data: response.correlation.clone(),
            ..Default::default()
        });
        let message = Inside {
            topic: &response.topic,
            payload,
            qos: 1,
            retain: false,
        };
        self.publish_with(None, None, message, Some(properties))
            .await
    }

    async fn publish_with(
        &self,
        origin: Option<Arc<str>>,
        publisher: Option<Arc<Principal>>,
        message: Inside<'_>,
        properties: Option<Box<rmqtt_codec::v5::PublishProperties>>,
    ) -> Result<()> {
        let publication = inside(
            message.topic,
            message.payload,
            message.qos,
            message.retain,
            properties,
            crate::time::now_ms(),
        );
        self.hub
            .policy
            .on_message(publication.message(origin, publisher))
            .await
            .map_err(|e| anyhow::anyhow!("the message was not stored: {e}"))?;
        self.hub
            .deliver_all(&[publication], Vec::new())
            .await
            .map_err(|e| anyhow::anyhow!("cannot deliver the message: {e}"))
    }

    /// [`Broker::publish_from`] on behalf of `publisher`: the policy sees the message as that
    /// principal's (a topic nobody owns registers in its domain), though no client sent it.
    pub async fn publish_as(
        &self,
        origin: Arc<str>,
        publisher: Arc<Principal>,
        topic: &str,
        payload: Bytes,
        qos: u8,
        retain: bool,
    ) -> Result<()> {
        let message = Inside {
            topic,
            payload,
            qos,
            retain,
        };
        self.publish_with(Some(origin), Some(publisher), message, None)
            .await
    }

    /// Publishes several messages from the in-process writer `origin` at once (a connector's
    /// values): the policy stores them as one batch, then they are delivered in order.
    pub async fn publish_batch(
        &self,
        origin: Option<Arc<str>>,
        messages: Vec<(String, Bytes)>,
        qos: u8,
        retain: bool,
    ) -> Result<()> {
        let now = crate::time::now_ms();
        let publications: Vec<Arc<Publication>> = messages
            .into_iter()
            .map(|(topic, payload)| inside(&topic, payload, qos, retain, None, now))
            .collect();
        let accepted = publications
            .iter()
            .map(|p| p.message(origin.clone(), None))
            .collect();
        self.hub
            .policy
            .on_messages(accepted)
            .await
            .map_err(|e| anyhow::anyhow!("the messages were not stored: {e}"))?;
        self.hub
            .deliver_all(&publications, Vec::new())
            .await
            .map_err(|e| anyhow::anyhow!("cannot deliver the messages: {e}"))
    }

    /// Delivers a message another instance on the same store accepted (and stored, and acted
    /// on): to this broker's subscribers and retained messages only, not to the policy.
    pub async fn deliver_from_peer(
        &self,
        topic: &str,
        payload: Bytes,
        qos: u8,
        retain: bool,
        received_ms: i64,
    ) -> Result<()> {
        let publication = inside(topic, payload, qos, retain, None, received_ms);
        self.hub
            .deliver_all(&[publication], Vec::new())
            .await
            .map_err(|e| anyhow::anyhow!("cannot deliver the message: {e}"))
    }

    /// Delivers messages svc makes about itself (an alarm's changes: topic, payload, retain)
    /// at QoS 1 to this broker's retained messages and subscribers at once, without the
    /// policy (they are no tag's values and go to no other instance or upstream). The answer
    /// resolves once what they changed (a retained copy, a persistent session's queue) is
    /// stored, so the caller need not wait for the disk before its next message, yet can
    /// order a later write after these.
    pub async fn announce(&self, messages: Vec<(String, Bytes, bool)>, received_ms: i64) -> Stored {
        let publications: Vec<Arc<Publication>> = messages
            .into_iter()
            .map(|(topic, payload, retain)| inside(&topic, payload, 1, retain, None, received_ms))
            .collect();
        self.hub.deliver_then_store(&publications, Vec::new()).await
    }

    /// The connected clients that announced themselves as bridges of another svc.
    pub fn bridges(&self) -> Vec<Bridge> {
        let mut bridges: Vec<Bridge> = self
            .hub
            .online()
            .iter()
            .filter_map(|session| {
                let state = session.lock();
                Some((**state.link.as_ref()?.bridge.as_ref()?).clone())
            })
            .collect();
        bridges.sort_by(|a, b| a.client_id.cmp(&b.client_id));
        bridges
    }

    /// Every connected client (id, principal, transport, peer, counters…), by client id.
    pub fn clients(&self) -> Vec<ConnectedClient> {
        self.hub.clients()
    }

    /// Closes the connections of every client the predicate selects (MQTT 5 clients are told
    /// "not authorized").
    pub async fn disconnect_where(&self, select: impl Fn(&Principal) -> bool) {
        self.hub.kick_where(select, Kick::NotAuthorized);
    }

    /// Stops accepting and disconnects every client ("server shutting down").
    pub async fn shutdown(&self) {
        for task in &self.tasks {
            task.abort();
        }
        self.hub.kick_where(|_| true, Kick::ShuttingDown);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !self.hub.online().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A publication from inside the process (no client sent it).
/// A message published from inside the process.
struct Inside<'a> {
    topic: &'a str,
    payload: Bytes,
    qos: u8,
    retain: bool,
}

fn inside(
    topic: &str,
    payload: Bytes,
    qos: u8,
    retain: bool,
    properties: Option<Box<rmqtt_codec::v5::PublishProperties>>,
    received_ms: i64,
) -> Arc<Publication> {
    Arc::new(Publication {
        topic: topic.into(),
        payload,
        qos: publication::qos_of(qos),
        retain,
        properties,
        received_ms,
        sender: None,
    })
}
