//! rmqtt hook handlers: they translate broker events into [`Policy`] calls. The principal decided
//! at CONNECT travels with the session, so every later check knows who the client is.

use super::{Message, Policy, Principal};
use async_trait::async_trait;
use rmqtt::codec::v5::SubscribeAckReason;
use rmqtt::context::ServerContext;
use rmqtt::hook::{Handler, HookResult, Parameter, ReturnType};
use rmqtt::session::Session;
use rmqtt::types::{AuthResult, Id, PublishAclResult, SubscribeAclResult};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PRINCIPAL_ATTR: &str = "svc.principal";
/// How long an authenticated connection may take to become a session.
const PENDING_TTL: Duration = Duration::from_secs(60);

/// Principals authenticated at CONNECT, waiting for their session to exist. Keyed by the
/// connection's id, which includes the remote address and the connect time.
type Pending = Arc<Mutex<HashMap<String, (Principal, Instant)>>>;

pub struct Hooks {
    scx: ServerContext,
    policy: Arc<dyn Policy>,
    pending: Pending,
}

impl Hooks {
    pub fn new(scx: ServerContext, policy: Arc<dyn Policy>) -> Hooks {
        Hooks {
            scx,
            policy,
            pending: shared_pending(),
        }
    }
}

/// One pending map for all hook handlers of the process.
fn shared_pending() -> Pending {
    static PENDING: std::sync::OnceLock<Pending> = std::sync::OnceLock::new();
    PENDING.get_or_init(Pending::default).clone()
}

fn connection_key(id: &Id) -> String {
    format!("{}|{:?}|{}", id.client_id, id.remote_addr, id.create_time)
}

/// The principal a session connected as.
pub async fn principal_of(session: &Session) -> Option<Principal> {
    session
        .extra_attrs
        .read()
        .await
        .get::<Principal>(PRINCIPAL_ATTR)
        .cloned()
}

/// The user holding the session (online or persisted) of a client id, if another user than
/// `who` holds it. Sessions belong to the user who created them: another user's CONNECT with the
/// same client id must neither disconnect that client nor inherit its session and queue.
async fn held_by_another_user(scx: &ServerContext, id: &Id, who: &Principal) -> bool {
    let Some(session) = scx.extends.shared().await.entry(id.clone()).session() else {
        return false;
    };
    principal_of(&session)
        .await
        .is_some_and(|holder| holder.user_key != who.user_key)
}

/// Longest wait for the previous connection of a client id to finish leaving.
const DEPARTURE_WAIT: Duration = Duration::from_secs(2);

/// A client that reconnects right after DISCONNECT races the teardown of its previous
/// connection: rmqtt's takeover asks the dying connection to step down, gets no answer and
/// refuses the new CONNECT ("server unavailable"). Industrial clients reconnect like this all
/// the time, so a clean-start CONNECT takes the old session over here first (its state is
/// discarded anyway) and, when the old connection was already leaving, waits until it is gone.
async fn take_over(scx: &ServerContext, id: &Id) {
    let entry = scx.extends.shared().await.entry(id.clone());
    if entry.session().is_none() {
        return;
    }
    let kicked = match entry.try_lock().await {
        Ok(mut locked) => locked.kick(true, true, false).await.is_ok(),
        Err(_) => false,
    };
    if kicked {
        return;
    }
    let deadline = Instant::now() + DEPARTURE_WAIT;
    while Instant::now() < deadline
        && scx
            .extends
            .shared()
            .await
            .entry(id.clone())
            .session()
            .is_some()
    {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[async_trait]
impl Handler for Hooks {
    async fn hook(&self, param: &Parameter, acc: Option<HookResult>) -> ReturnType {
        match param {
            Parameter::ClientAuthenticate(info) => {
                let username = info.username().map(|u| u.as_ref());
                let password = info.password().map(|p| p.as_ref());
                let result = match self.policy.authenticate(username, password).await {
                    Some(principal)
                        if held_by_another_user(&self.scx, info.id(), &principal).await =>
                    {
                        tracing::info!(
                            client_id = %info.id().client_id,
                            "CONNECT refused: the client id belongs to another user's session"
                        );
                        AuthResult::NotAuthorized
                    }
                    Some(principal) => {
                        if info.clean_start() {
                            take_over(&self.scx, info.id()).await;
                        }
                        if let Ok(mut pending) = self.pending.lock() {
                            let now = Instant::now();
                            pending.retain(|_, (_, at)| now.duration_since(*at) < PENDING_TTL);
                            pending.insert(connection_key(info.id()), (principal, now));
                        }
                        AuthResult::Allow(false, None)
                    }
                    None => AuthResult::BadUsernameOrPassword,
                };
                (false, Some(HookResult::AuthResult(result)))
            }
            Parameter::ClientConnected(session) => {
                let principal = self
                    .pending
                    .lock()
                    .ok()
                    .and_then(|mut p| p.remove(&connection_key(&session.id)));
                if let Some((principal, _)) = principal {
                    session
                        .extra_attrs
                        .write()
                        .await
                        .insert(PRINCIPAL_ATTR.into(), principal);
                }
                (true, acc)
            }
            // Subscriptions are accepted for any valid filter; what a client may receive is
            // decided per message below, so wildcards cannot reach another domain's tags.
            Parameter::ClientSubscribeCheckAcl(session, _) => {
                if principal_of(session).await.is_some() {
                    (true, acc)
                } else {
                    let denied = SubscribeAclResult::new_failure(SubscribeAckReason::NotAuthorized);
                    (false, Some(HookResult::SubscribeAclResult(denied)))
                }
            }
            Parameter::MessagePublishCheckAcl(session, publish) => {
                let allowed = match principal_of(session).await {
                    Some(who) => self.policy.may_publish(&who, &publish.topic).await,
                    None => false,
                };
                if !allowed {
                    let rejected = PublishAclResult::rejected(false, None);
                    return (false, Some(HookResult::PublishAclResult(rejected)));
                }
                let stored = self
                    .policy
                    .on_message(Message {
                        topic: publish.topic.to_string(),
                        payload: publish.payload.clone(),
                        received_ms: publish
                            .create_time
                            .unwrap_or_else(rmqtt::utils::timestamp_millis),
                        qos: publish.qos.value(),
                        origin: None,
                    })
                    .await;
                match stored {
                    Ok(()) => (true, acc),
                    Err(reason) => {
                        tracing::warn!(topic = %publish.topic, reason, "a publish was not stored");
                        let refused = PublishAclResult::rejected(true, Some(reason.into()));
                        (false, Some(HookResult::PublishAclResult(refused)))
                    }
                }
            }
            // Runs before every delivery: a message the session may not receive is dropped as if
            // it had expired.
            Parameter::MessageExpiryCheck(session, _, publish) => {
                let allowed = match principal_of(session).await {
                    Some(who) => self.policy.may_receive(&who, &publish.topic).await,
                    None => false,
                };
                if allowed {
                    (true, acc)
                } else {
                    (false, Some(HookResult::MessageExpiry))
                }
            }
            _ => (true, acc),
        }
    }
}
