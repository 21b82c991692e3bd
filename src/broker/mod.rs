//! The embedded MQTT broker (rmqtt): the only code that touches the broker crate. It binds the
//! TCP, WebSocket and loopback bridge listeners, asks a [`Policy`] to authenticate clients and to
//! authorize every publish and every delivery, hands accepted publishes to the policy, publishes
//! from inside the process, and disconnects clients on demand.

mod bridge;
mod hooks;
mod shared;

pub use bridge::mqtt_over_websocket;

use anyhow::{Context, Result};
use async_trait::async_trait;
use bytes::Bytes;
use rmqtt::codec::types::{Publish as CodecPublish, QoS};
use rmqtt::codec::v5::PublishProperties;
use rmqtt::context::ServerContext;
use rmqtt::hook::{Register, Type};
use rmqtt::net::Builder;
use rmqtt::server::MqttServer;
use rmqtt::session::SessionState;
use rmqtt::types::{ClientId, From, Id, Publish, UserName};
use std::net::{IpAddr, SocketAddr};
use std::num::{NonZeroU16, NonZeroU32};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Who a connected client is, as decided by the policy at CONNECT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The user the credential belongs to; empty for anonymous clients.
    pub user_key: String,
    /// Publishes and receives everywhere.
    pub admin: bool,
    /// The API key used to connect, so revoking it can close the connection.
    pub api_key_id: Option<String>,
}

/// An accepted publish, as the platform sees it.
#[derive(Debug, Clone)]
pub struct Message {
    pub topic: String,
    pub payload: Bytes,
    pub received_ms: i64,
    /// The publish's QoS: 1 and 2 are acknowledged only after `on_message` succeeds.
    pub qos: u8,
    /// Who inside svc published it (a function or flow), `None` for MQTT clients; lets
    /// automation skip messages that would re-trigger their own writer.
    pub origin: Option<std::sync::Arc<str>>,
}

/// The platform's decisions about MQTT clients.
#[async_trait]
pub trait Policy: Send + Sync + 'static {
    async fn authenticate(
        &self,
        username: Option<&str>,
        password: Option<&[u8]>,
    ) -> Option<Principal>;
    async fn may_publish(&self, who: &Principal, topic: &str) -> bool;
    async fn may_receive(&self, who: &Principal, topic: &str) -> bool;
    /// Sees every publish that passed authorization, client or internal, before it is
    /// delivered and acknowledged to a QoS 1/2 publisher. An error means the message could not
    /// be stored: it is neither delivered nor acknowledged (the client is disconnected, so it
    /// publishes again when it reconnects).
    async fn on_message(&self, message: Message) -> Result<(), String>;
}

pub struct BrokerConfig {
    pub bind: IpAddr,
    pub mqtt_port: u16,
    pub ws_port: u16,
    /// Certificate and key (PEM files) enabling the TLS listeners.
    pub tls: Option<TlsListeners>,
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
    /// Loopback listener speaking the PROXY protocol, fed by the HTTP port's `/mqtt` bridge.
    pub bridge: SocketAddr,
    pub mqtts: Option<SocketAddr>,
    pub wss: Option<SocketAddr>,
}

pub struct Broker {
    scx: ServerContext,
    policy: Arc<dyn Policy>,
    server: JoinHandle<()>,
    register: Box<dyn Register>,
    pub addrs: BrokerAddrs,
}

/// Per-session outbound window: enough to keep a subscriber's pipe full without unbounded memory.
const MAX_INFLIGHT: u16 = 128;
/// Per-session queue (offline messages and in-flight overflow). A subscriber that falls this far
/// behind loses the oldest messages, which is reported in the log.
const MAX_QUEUE: usize = 100_000;
const MAX_PACKET: u32 = 1024 * 1024;

fn listener(name: &str, addr: SocketAddr) -> Builder {
    Builder::new()
        .name(name)
        .laddr(addr)
        .reuseaddr(Some(true))
        .nodelay(true)
        // Anonymous CONNECTs skip the authentication hook when allowed here; the policy decides.
        .allow_anonymous(false)
        .max_connections(100_000)
        .max_handshaking_limit(1_000)
        .max_packet_size(MAX_PACKET)
        .max_inflight(NonZeroU16::new(MAX_INFLIGHT).unwrap_or(NonZeroU16::MIN))
        .max_mqueue_len(MAX_QUEUE)
        .mqueue_rate_limit(NonZeroU32::MAX, Duration::from_secs(1))
        .session_expiry_interval(Duration::from_secs(2 * 60 * 60))
        // Messages without an expiry property never expire (MQTT 5 semantics).
        .message_expiry_interval(Duration::ZERO)
        .max_keepalive(65_535)
        .handshake_timeout(Duration::from_secs(15))
}

impl Broker {
    pub async fn start(config: BrokerConfig, policy: Arc<dyn Policy>) -> Result<Broker> {
        let scx = ServerContext::new()
            .node_id(1)
            // Load-based CONNECT refusal ("Server unavailable") is wrong for an edge box.
            .busy_check_enable(false)
            .plugins_config_map_add(
                "rmqtt-retainer",
                r#"
                    storage.type = "ram"
                    max_retained_messages = 0
                    max_payload_size = "1MB"
                    retained_message_ttl = "0s"
                "#,
            )
            .build()
            .await;
        rmqtt_retainer::register(&scx, true, false)
            .await
            .map_err(|e| anyhow::anyhow!("cannot start the retained-message store: {e}"))?;
        *scx.extends.shared_subscription_mut().await = Box::new(shared::RoundRobin::default());

        let register = scx.extends.hook_mgr().register();
        for hook in [
            Type::ClientAuthenticate,
            Type::ClientConnected,
            Type::ClientSubscribeCheckAcl,
            Type::MessagePublishCheckAcl,
            Type::MessageExpiryCheck,
        ] {
            register
                .add(
                    hook,
                    Box::new(hooks::Hooks::new(scx.clone(), policy.clone())),
                )
                .await;
        }
        register.start().await;

        let tcp = listener("mqtt", SocketAddr::new(config.bind, config.mqtt_port))
            .bind()
            .with_context(|| {
                format!(
                    "cannot listen for MQTT on {}:{}",
                    config.bind, config.mqtt_port
                )
            })?
            .tcp()
            .context("cannot start the MQTT listener")?;
        let ws = listener("ws", SocketAddr::new(config.bind, config.ws_port))
            .bind()
            .with_context(|| {
                format!(
                    "cannot listen for MQTT over WebSocket on {}:{}",
                    config.bind, config.ws_port
                )
            })?
            .ws()
            .context("cannot start the WebSocket listener")?;
        let bridge = listener("bridge", SocketAddr::from(([127, 0, 0, 1], 0)))
            .proxy_protocol(true)
            .bind()
            .context("cannot listen for the /mqtt bridge")?
            .tcp()
            .context("cannot start the /mqtt bridge listener")?;
        let mut addrs = BrokerAddrs {
            mqtt: tcp.local_addr()?,
            ws: ws.local_addr()?,
            bridge: bridge.local_addr()?,
            mqtts: None,
            wss: None,
        };
        // Listener ids, not ports, key the listeners: several may bind port 0.
        let mut server = MqttServer::new(scx.clone())
            .listener_by_id(tcp, 1)
            .listener_by_id(ws, 2)
            .listener_by_id(bridge, 3);
        if let Some(tls) = &config.tls {
            let secured = |name: &str, port: u16| {
                let cert = tls.cert.to_string_lossy().into_owned();
                let key = tls.key.to_string_lossy().into_owned();
                listener(name, SocketAddr::new(config.bind, port))
                    .tls_cert(Some(cert))
                    .tls_key(Some(key))
                    .bind()
                    .with_context(|| format!("cannot listen for {name} on {}:{port}", config.bind))
            };
            let mqtts = secured("mqtts", tls.mqtts_port)?
                .tls()
                .context("cannot start the mqtts listener (check tls_cert and tls_key)")?;
            let wss = secured("wss", tls.wss_port)?
                .wss()
                .context("cannot start the wss listener (check tls_cert and tls_key)")?;
            addrs.mqtts = Some(mqtts.local_addr()?);
            addrs.wss = Some(wss.local_addr()?);
            server = server.listener_by_id(mqtts, 4).listener_by_id(wss, 5);
        }
        let server = server.build();
        // run(), not start(): start() exits the process on a listener error.
        let server = tokio::spawn(async move {
            if let Err(e) = server.run().await {
                tracing::error!(error = %e, "MQTT broker stopped");
            }
        });
        Ok(Broker {
            scx,
            policy,
            server,
            register,
            addrs,
        })
    }

    /// Publishes from inside the process: every subscriber and the policy's `on_message` see it.
    pub async fn publish(&self, topic: &str, payload: Bytes, qos: u8, retain: bool) -> Result<()> {
        self.publish_from(None, topic, payload, qos, retain).await
    }

    /// [`Broker::publish`] on behalf of an in-process writer named by `origin`.
    pub async fn publish_from(
        &self,
        origin: Option<std::sync::Arc<str>>,
        topic: &str,
        payload: Bytes,
        qos: u8,
        retain: bool,
    ) -> Result<()> {
        let qos = match qos {
            0 => QoS::AtMostOnce,
            1 => QoS::AtLeastOnce,
            _ => QoS::ExactlyOnce,
        };
        let from = From::from_system(Id::new(
            self.scx.node.id(),
            0,
            None,
            None,
            ClientId::from("$svc"),
            Some(UserName::from("svc")),
        ));
        let publish = CodecPublish {
            dup: false,
            retain,
            qos,
            topic: topic.into(),
            packet_id: None,
            payload: payload.clone(),
            properties: Some(PublishProperties::default()),
        };
        let received_ms = rmqtt::utils::timestamp_millis();
        let publish = Publish::from(Box::new(publish)).create_time(received_ms);
        self.policy
            .on_message(Message {
                topic: topic.to_string(),
                payload,
                received_ms,
                qos: qos.value(),
                origin,
            })
            .await
            .map_err(|e| anyhow::anyhow!("the message was not stored: {e}"))?;
        SessionState::forwards(&self.scx, from, publish, false, None)
            .await
            .map_err(|e| anyhow::anyhow!("cannot deliver the message: {e}"))
    }

    /// Closes the connections of every client the predicate selects.
    pub async fn disconnect_where(&self, select: impl Fn(&Principal) -> bool) {
        let mut targets = Vec::new();
        for entry in self.scx.extends.shared().await.iter() {
            if let Some(session) = entry.session() {
                if hooks::principal_of(&session)
                    .await
                    .is_some_and(|p| select(&p))
                {
                    targets.push(session.id.clone());
                }
            }
        }
        for id in targets {
            let mut entry = self.scx.extends.shared().await.entry(id);
            if let Err(e) = entry.kick(true, true, true).await {
                tracing::warn!(error = %e, "could not disconnect an MQTT client");
            }
        }
    }

    /// Stops accepting and disconnects every client.
    pub async fn shutdown(&self) {
        self.server.abort();
        let ids: Vec<Id> = self
            .scx
            .extends
            .shared()
            .await
            .iter()
            .filter_map(|e| e.session().map(|s| s.id.clone()))
            .collect();
        let kicks = ids.into_iter().map(|id| {
            let scx = self.scx.clone();
            async move {
                let mut entry = scx.extends.shared().await.entry(id);
                let _ = tokio::time::timeout(Duration::from_secs(5), entry.kick(true, true, true))
                    .await;
            }
        });
        futures::future::join_all(kicks).await;
        self.register.stop().await;
    }
}
