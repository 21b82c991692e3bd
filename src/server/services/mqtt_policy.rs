//! The platform's MQTT policy: who may connect (API key, username and password, or a JWT as the
//! password), which tags a client may publish and receive, and what happens to every accepted
//! message (last value, auto-registration of undeclared topics, historian).
//!
//! A client connected with an API key made in a domain carries that domain: a topic it
//! publishes that no domain owns and no namespace covers is that domain's to be (it needs
//! `tags` read-write there to publish it) and is registered there.

use crate::broker::{AuthRefusal, Message, Policy, Principal};
use crate::server::services::credentials::API_KEY_PREFIX;
use crate::server::services::device_links;
use crate::server::services::historize;
use crate::server::services::identity::{READ, READ_WRITE};
use crate::server::services::system_tables::TAGS_FEATURE;
use crate::server::services::tag_registration::{expected_owner, Registrar};
use crate::server::AppState;
use crate::store::AuthUser;
use crate::upstream::relay::Outbound;
use async_trait::async_trait;
use std::net::SocketAddr;

pub struct PlatformPolicy {
    state: AppState,
    /// Declares published topics no domain declared, in batches.
    registrar: Registrar,
}

/// The topics alarm changes are published under: `$SYS/svc/alarms/<domain>/<alarm>`.
const ALARM_EVENTS: &str = "$SYS/svc/alarms/";

impl PlatformPolicy {
    pub fn new(state: AppState) -> PlatformPolicy {
        PlatformPolicy {
            registrar: Registrar::start(state.clone()),
            state,
        }
    }

    /// Whether the principal holds `action` on tags in the domain that owns `topic`. A topic
    /// nobody owns is published in the domain of the principal's key, where it will be
    /// registered; it is received by administrators only.
    async fn holds_on_topic(&self, who: &Principal, topic: &str, action: &str) -> bool {
        if who.admin {
            return true;
        }
        // A domain's alarm events are read with the right to read its alarms.
        if let Some(rest) = topic.strip_prefix(ALARM_EVENTS) {
            let Some((domain, _)) = rest.split_once('/') else {
                return false;
            };
            return action == READ
                && self
                    .state
                    .identities
                    .grants_of(&who.user_key, domain)
                    .await
                    .is_ok_and(|grants| {
                        grants
                            .actions(crate::alarms::FEATURE, "*")
                            .iter()
                            .any(|a| a == READ || a == READ_WRITE)
                    });
        }
        // The Sparkplug-aware broker's copy of a BIRTH is the BIRTH's owner's.
        let topic = topic
            .strip_prefix(crate::sparkplug::CERTIFICATES)
            .unwrap_or(topic);
        let owner = self.state.uns.tags.domain_of(topic);
        let domain = match (owner.as_deref(), who.domain.as_deref()) {
            (Some(owner), _) => owner,
            (None, Some(home)) if action == READ_WRITE => home,
            (None, _) => return false,
        };
        self.state
            .identities
            .grants_of(&who.user_key, domain)
            .await
            .is_ok_and(|grants| {
                grants
                    .actions(TAGS_FEATURE, "*")
                    .iter()
                    .any(|a| a == action)
            })
    }
}

impl PlatformPolicy {
    /// A user name and password, counted by the login throttle: a locked name or address is
    /// refused without checking the password.
    async fn password_login(
        &self,
        peer: SocketAddr,
        username: Option<&str>,
        password: &str,
    ) -> Result<AuthUser, AuthRefusal> {
        let username = username.ok_or(AuthRefusal::BadCredentials)?;
        let throttle = &self.state.identities.login_throttle;
        if let Err(throttled) = throttle.check(username, peer.ip()) {
            crate::telemetry::get().login_refused("mqtt", "throttled");
            return Err(AuthRefusal::Throttled {
                retry_after: throttled.retry_after,
            });
        }
        match self
            .state
            .identities
            .user_of_password(username, password)
            .await
        {
            Ok(Some(user)) => {
                throttle.succeeded(username);
                Ok(user)
            }
            Ok(None) => {
                throttle.failed(username, peer.ip());
                crate::telemetry::get().login_refused("mqtt", "failure");
                Err(AuthRefusal::BadCredentials)
            }
            // The store failed: not the client's guess, so not counted.
            Err(_) => Err(AuthRefusal::BadCredentials),
        }
    }
}

fn looks_like_jwt(text: &str) -> bool {
    text.split('.').count() == 3 && !text.contains(char::is_whitespace)
}

#[async_trait]
impl Policy for PlatformPolicy {
    async fn authenticate(
        &self,
        peer: SocketAddr,
        username: Option<&str>,
        password: Option<&[u8]>,
    ) -> Result<Principal, AuthRefusal> {
        let state = &self.state;
        let password = password.and_then(|p| std::str::from_utf8(p).ok());
        let (user, key) = match password {
            Some(key) if key.starts_with(API_KEY_PREFIX) => {
                let (user, key) = state
                    .identities
                    .user_of_api_key(key)
                    .await
                    .map_err(|_| AuthRefusal::BadCredentials)?;
                ((*user).clone(), Some(key))
            }
            Some(token) if looks_like_jwt(token) => {
                match state.identities.user_of_token(token).await {
                    Ok(user) => ((*user).clone(), None),
                    Err(_) => (self.password_login(peer, username, token).await?, None),
                }
            }
            Some(password) => (self.password_login(peer, username, password).await?, None),
            None if username.is_none() && state.settings.mqtt_allow_anonymous => {
                return Ok(Principal {
                    user_key: String::new(),
                    admin: true,
                    api_key_id: None,
                    domain: None,
                });
            }
            None => return Err(AuthRefusal::BadCredentials),
        };
        let (api_key_id, domain) = key.map_or((None, None), |k| (Some(k.key), k.domain));
        Ok(Principal {
            user_key: user.key,
            admin: user.admin,
            api_key_id,
            domain,
        })
    }

    async fn may_publish(&self, who: &Principal, topic: &str) -> bool {
        self.holds_on_topic(who, topic, READ_WRITE).await
    }

    async fn may_receive(&self, who: &Principal, topic: &str) -> bool {
        self.holds_on_topic(who, topic, READ).await
    }

    /// Records a historized value (through its tag's compression; what is kept is committed
    /// before a QoS 1/2 publish is acknowledged), then updates the last value and hands the
    /// message to automation.
    async fn on_message(&self, message: Message) -> Result<(), String> {
        self.on_messages(vec![message]).await
    }

    /// [`Policy::on_message`] for a batch: the historized QoS 1/2 values of the batch are
    /// journaled with one write.
    async fn on_messages(&self, messages: Vec<Message>) -> Result<(), String> {
        let mut owners = Vec::with_capacity(messages.len());
        // Of topics queued for registration: the tag they are about to be (automation only).
        let mut registering = Vec::with_capacity(messages.len());
        let mut historized = historize::Batch::default();
        for message in &messages {
            let owner = self.state.uns.tags.owner(&message.topic);
            // `$` topics are the broker's own (status, statistics), never tags.
            // A write topic carries a write to a device, not a tag's value.
            let write = device_links::write_from_mqtt(&self.state, message);
            if owner.is_none()
                && !write
                && !message.topic.starts_with('$')
                && crate::topic::validate_topic_name(&message.topic).is_ok()
            {
                let home = message.publisher.as_ref().and_then(|p| p.domain.as_deref());
                self.registrar.register(&message.topic, home);
                registering.push(Some(expected_owner(
                    &self.state.uns.tags,
                    &message.topic,
                    home,
                )));
            } else {
                registering.push(None);
            }
            if let Some(owner) = &owner {
                historized.add(&self.state.uns.compressed, owner, message);
            }
            owners.push(owner);
        }
        historized
            .store(&self.state.uns.historian)
            .await
            .map_err(|e| e.to_string())?;
        self.state.peers.relay(&messages);
        let outbound: Vec<Outbound<'_>> = messages
            .iter()
            .map(|m| Outbound {
                topic: &m.topic,
                payload: &m.payload,
                retain: m.retain,
                hops: m.hops,
                origin: m.origin.as_deref(),
            })
            .collect();
        self.state.upstreams.carry_out(&outbound).await?;
        drop(outbound);
        self.state.alarms.offer(&self.state, &messages, &owners);
        for (message, owner) in messages.iter().zip(&owners) {
            if message.topic.starts_with(crate::sparkplug::NAMESPACE) {
                let tags = &self.state.uns.tags;
                let domain = tags.domain_given(&message.topic, owner.as_ref());
                self.state.sparkplug.offer(domain.as_deref(), message).await;
            }
        }
        for ((message, owner), registering) in messages.into_iter().zip(owners).zip(registering) {
            self.state.uns.last_values.set(
                &message.topic,
                message.received_ms,
                message.payload.clone(),
            );
            self.state.automation.on_message(
                &message.topic,
                &message.payload,
                owner.as_ref().or(registering.as_ref()),
                message.origin.as_deref(),
            );
        }
        Ok(())
    }

    fn authz_generation(&self) -> u64 {
        self.state.authz_generation()
    }
}
