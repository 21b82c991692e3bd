//! One OPC UA session to a server: resolves and reaches the endpoint first (so DNS and TCP
//! failures read as such), picks the server's endpoint of the configured security policy and
//! mode, refuses an untrusted server certificate, then creates and activates the session with
//! the crate's reconnects disabled: when the connection fails the [`Connection`] reports it
//! once and the supervisor reconnects. Dropping a [`Connection`] closes the session (bounded)
//! and ends the crate's event loop task.

use crate::connectors::kind::{Failure, FailureKind, Target};
use crate::connectors::opcua::failure::from_status;
use crate::connectors::opcua::security::{application_uri, check_trusted, Pki};
use crate::connectors::opcua::settings::{Settings, UserIdentity};
use futures::StreamExt;
use opcua::client::{
    ClientBuilder, IdentityToken, Session, SessionActivity, SessionPollResult, SubscriptionActivity,
};
use opcua::crypto::{PrivateKey, SecurityPolicy, X509};
use opcua::types::{EndpointDescription, MessageSecurityMode};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// A live session and the task that drives it.
pub struct Connection {
    pub session: Arc<Session>,
    /// The endpoint as the server described it (its application, policy, mode).
    pub endpoint: EndpointDescription,
    /// Set once, when the connection fails.
    pub failed: watch::Receiver<Option<Failure>>,
    /// When the last publish response (data or keep-alive) arrived.
    pub last_publish: Arc<Mutex<Instant>>,
    task: Option<JoinHandle<()>>,
}

impl Connection {
    /// The failure, once there is one.
    pub async fn wait_failed(&mut self) -> Failure {
        loop {
            if let Some(failure) = self.failed.borrow_and_update().clone() {
                return failure;
            }
            if self.failed.changed().await.is_err() {
                return Failure::new(FailureKind::Tcp, "the connection to the server closed");
            }
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let Some(task) = self.task.take() else { return };
        let session = self.session.clone();
        match tokio::runtime::Handle::try_current() {
            // Close the session politely, but never wait long for a server that stopped answering.
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(2), session.disconnect()).await;
                    task.abort();
                });
            }
            Err(_) => task.abort(),
        }
    }
}

/// Connects to `target` as its settings say, within the settings' timeout per step.
pub async fn connect(target: &Target, settings: &Settings) -> Result<Connection, Failure> {
    reach(&settings.endpoint, settings.timeout).await?;

    let identity = target.identity.as_ref();
    if identity.is_none() && (settings.secure() || settings.identity == UserIdentity::Certificate) {
        return Err(Failure::new(
            FailureKind::Security,
            "svc has no application instance certificate yet",
        ));
    }
    let pki = Pki::create(&target.scratch, identity, &target.trusted)
        .map_err(|e| Failure::new(FailureKind::Protocol, e))?;
    let uri = identity
        .and_then(|i| application_uri(&i.certificate))
        .unwrap_or_else(|| "urn:svc".to_string());
    let builder = ClientBuilder::new()
        .application_name("svc")
        .application_uri(uri)
        .product_uri("urn:svc")
        .pki_dir(pki.path())
        .create_sample_keypair(false)
        .trust_server_certs(false)
        .verify_server_certs(true)
        .session_retry_limit(0)
        .recreate_subscriptions(false)
        .session_name(format!("svc {}/{}", target.domain, target.name))
        .session_timeout(settings.session_timeout.as_millis().min(u32::MAX as u128) as u32)
        .request_timeout(settings.timeout)
        .keep_alive_interval(keep_alive_interval(settings))
        .max_failed_keep_alive_count(1);
    let mut client = builder.client().map_err(|e| {
        Failure::new(
            FailureKind::Protocol,
            format!("the OPC UA client could not be set up: {}", e.join("; ")),
        )
    })?;

    let endpoints = tokio::time::timeout(
        settings.timeout,
        client.get_server_endpoints_from_url(settings.endpoint.as_str()),
    )
    .await
    .map_err(|_| timeout("asking the server for its endpoints", settings.timeout))?
    .map_err(|e| from_status(e.status(), "asking the server for its endpoints"))?;
    let mut endpoint = pick_endpoint(&endpoints, settings)?;
    if settings.secure() {
        check_trusted(endpoint.server_certificate.as_ref(), &target.trusted)?;
    }
    // Servers often advertise a host name the client cannot resolve: keep the configured one.
    endpoint.endpoint_url = settings.endpoint.as_str().into();

    let token = match &settings.identity {
        UserIdentity::Anonymous => IdentityToken::Anonymous,
        UserIdentity::Username(name) => {
            IdentityToken::new_user_name(name.clone(), target.password.clone().unwrap_or_default())
        }
        UserIdentity::Certificate => {
            let identity = identity
                .ok_or_else(|| Failure::new(FailureKind::Security, "svc has no certificate"))?;
            let cert = X509::from_der(&identity.certificate).map_err(|_| {
                Failure::new(FailureKind::Security, "svc's certificate cannot be read")
            })?;
            let key = PrivateKey::from_pem(
                std::fs::read(pki.path().join("private/private.pem"))
                    .unwrap_or_default()
                    .as_slice(),
            )
            .map_err(|_| Failure::new(FailureKind::Security, "svc's private key cannot be read"))?;
            IdentityToken::new_x509(cert, key)
        }
    };
    let (session, event_loop) = client
        .connect_to_endpoint_directly(endpoint.clone(), token)
        .map_err(|e| from_status(e.status(), "preparing the session"))?;
    session.disable_reconnects();

    let (failed_tx, failed) = watch::channel(None);
    let last_publish = Arc::new(Mutex::new(Instant::now()));
    let (connected_tx, connected_rx) = oneshot::channel();
    let task = tokio::spawn(drive(
        event_loop,
        failed_tx,
        last_publish.clone(),
        connected_tx,
    ));
    let mut connection = Connection {
        session,
        endpoint,
        failed,
        last_publish,
        task: Some(task),
    };
    let opened = tokio::select! {
        r = connected_rx => r.is_ok(),
        _ = tokio::time::sleep(settings.timeout * 2) => {
            return Err(timeout("opening the session", settings.timeout * 2));
        }
    };
    if !opened {
        return Err(connection.wait_failed().await);
    }
    drop(pki);
    Ok(connection)
}

/// How often the session reads the server's state to know it is alive.
fn keep_alive_interval(settings: &Settings) -> Duration {
    (settings.publishing_interval * settings.keep_alive_count)
        .clamp(Duration::from_secs(1), settings.timeout)
}

fn timeout(what: &str, after: Duration) -> Failure {
    Failure::new(
        FailureKind::Timeout,
        format!(
            "the server did not answer within {} ms while {what}",
            after.as_millis()
        ),
    )
}

/// The endpoint of the configured policy and mode, among those the server offers.
fn pick_endpoint(
    endpoints: &[EndpointDescription],
    settings: &Settings,
) -> Result<EndpointDescription, Failure> {
    let policy =
        SecurityPolicy::from_str(&settings.security_policy).unwrap_or(SecurityPolicy::Unknown);
    let mode = match settings.security_mode.as_str() {
        "Sign" => MessageSecurityMode::Sign,
        "SignAndEncrypt" => MessageSecurityMode::SignAndEncrypt,
        _ => MessageSecurityMode::None,
    };
    let found = endpoints
        .iter()
        .find(|e| e.security_policy_uri.as_ref() == policy.to_uri() && e.security_mode == mode);
    match found {
        Some(endpoint) => Ok(endpoint.clone()),
        None => {
            let offered: Vec<String> = endpoints
                .iter()
                .map(|e| {
                    let uri = e.security_policy_uri.as_ref();
                    let name = uri.rsplit('#').next().unwrap_or(uri);
                    format!("{name}/{:?}", e.security_mode)
                })
                .collect();
            Err(Failure::new(
                FailureKind::Security,
                format!(
                    "the server offers no endpoint with security policy {} and mode {} (it offers {})",
                    settings.security_policy,
                    settings.security_mode,
                    if offered.is_empty() { "none".to_string() } else { offered.join(", ") }
                ),
            )
            .with_status("BadSecurityPolicyRejected"))
        }
    }
}

/// Resolves the endpoint's host and opens (then closes) a TCP connection to it.
async fn reach(endpoint: &str, within: Duration) -> Result<(), Failure> {
    let rest = endpoint.strip_prefix("opc.tcp://").unwrap_or(endpoint);
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse::<u16>().unwrap_or(4840)),
        _ => (authority, 4840),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<_> =
        match tokio::time::timeout(within, tokio::net::lookup_host((host, port))).await {
            Err(_) => return Err(timeout(&format!("resolving {host}"), within)),
            Ok(Err(e)) => {
                return Err(Failure::new(
                    FailureKind::Dns,
                    format!("{host} could not be resolved: {e}"),
                ))
            }
            Ok(Ok(addrs)) => addrs.collect(),
        };
    if addrs.is_empty() {
        return Err(Failure::new(
            FailureKind::Dns,
            format!("{host} resolves to no address"),
        ));
    }
    let mut last = None;
    for addr in addrs {
        match tokio::time::timeout(within, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => {
                last = Some(Failure::new(
                    FailureKind::Tcp,
                    format!("{addr} refused the connection: {e}"),
                ))
            }
            Err(_) => last = Some(timeout(&format!("connecting to {addr}"), within)),
        }
    }
    Err(last.unwrap_or_else(|| Failure::new(FailureKind::Tcp, "no address to connect to")))
}

/// Drives the crate's event loop: reports when the session is open, records publish
/// responses, and reports the first failure (the loop never reconnects).
async fn drive<T>(
    event_loop: opcua::client::SessionEventLoop<T>,
    failed: watch::Sender<Option<Failure>>,
    last_publish: Arc<Mutex<Instant>>,
    connected: oneshot::Sender<()>,
) where
    T: opcua::client::transport::Connector + Send + Sync + 'static,
{
    let mut connected = Some(connected);
    let stream = event_loop.enter();
    futures::pin_mut!(stream);
    let failure = loop {
        match stream.next().await {
            None => break Failure::new(FailureKind::Tcp, "the connection to the server closed"),
            Some(Err(code)) => {
                break from_status(
                    code,
                    if connected.is_some() {
                        "opening the session"
                    } else {
                        "in session"
                    },
                )
            }
            Some(Ok(event)) => match event {
                SessionPollResult::Reconnected(_) => {
                    if let Some(tx) = connected.take() {
                        let _ = tx.send(());
                    }
                }
                SessionPollResult::ConnectionLost(code)
                | SessionPollResult::ReconnectFailed(code) => {
                    break from_status(code, "in session")
                }
                SessionPollResult::SessionActivity(SessionActivity::KeepAliveFailed(code)) => {
                    let mut failure =
                        from_status(code, "reading the server state (the session's keep-alive)");
                    failure.kind = FailureKind::Timeout;
                    break failure;
                }
                SessionPollResult::Subscription(SubscriptionActivity::Publish) => {
                    if let Ok(mut last) = last_publish.lock() {
                        *last = Instant::now();
                    }
                }
                SessionPollResult::Subscription(SubscriptionActivity::FatalFailure(code)) => {
                    break from_status(code, "waiting for publish responses")
                }
                _ => {}
            },
        }
    };
    let _ = failed.send(Some(failure));
}
