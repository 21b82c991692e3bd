//! The broker's shared state and its one routing path: the sessions by client id, the
//! subscription index, the retained messages, and what connecting, disconnecting and
//! publishing do to them. Connections and in-process publishers both come through here.

use super::parking;
use super::persist::{Persister, Stored};
use super::principals::Principals;
use super::publication::{qos_of, Delivery, Publication};
use super::session::{
    from_stored, stored, ByKey, Kick, Limits, Link, Session, SessionKey, SessionState, SubOptions,
};
use super::transport::Listener;
use super::trie::SubscriptionIndex;
use super::{Policy, Principal};
use crate::store::Store;
use crate::store::{MqttWrite, StoredSubscription};
use bytestring::ByteString;
use rmqtt_codec::types::QoS;
use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

/// A will registered at CONNECT.
#[derive(Debug, Clone)]
pub struct Will {
    pub publication: Publication,
    pub delay_secs: u32,
}

pub struct Hub {
    pub policy: Arc<dyn Policy>,
    pub limits: Limits,
    pub persist: Persister,
    sessions: Mutex<HashSet<ByKey>>,
    index: RwLock<SubscriptionIndex<SessionKey, SubOptions>>,
    retained: RwLock<HashMap<ByteString, Arc<Publication>>>,
    principals: Principals,
    next_link: AtomicU64,
}

/// The sessions of `sessions` attached to a connection now.
// A `ByKey` hashes only its session's key, which never changes.
#[allow(clippy::mutable_key_type)]
fn attached(sessions: &HashSet<ByKey>) -> impl Iterator<Item = &Arc<Session>> {
    sessions.iter().map(|s| &s.0).filter(|s| s.is_online())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Hub {
    pub fn new(policy: Arc<dyn Policy>, limits: Limits, store: Store) -> Hub {
        Hub {
            policy,
            limits,
            persist: Persister::start(store),
            sessions: Mutex::default(),
            index: RwLock::default(),
            retained: RwLock::default(),
            principals: Principals::default(),
            next_link: AtomicU64::new(1),
        }
    }

    /// The copy of `principal` shared by every client with the same one.
    pub fn share_principal(&self, principal: Principal) -> Arc<Principal> {
        self.principals.share(principal)
    }

    pub fn next_link_id(&self) -> u64 {
        self.next_link.fetch_add(1, Ordering::Relaxed)
    }

    /// Brings back what the store kept: retained messages and persistent sessions (offline).
    pub async fn restore(&self, store: &Store) -> anyhow::Result<()> {
        let now = crate::time::now_ms();
        let (retained, sessions) = store.run(move |s| s.mqtt_load(now)).await?;
        {
            let mut map = self.retained.write().unwrap_or_else(|p| p.into_inner());
            for message in retained {
                let delivery = from_stored(message);
                map.insert(delivery.publication.topic.clone(), delivery.publication);
            }
        }
        let restored = sessions.len();
        for stored_session in sessions {
            let Ok(principal) = serde_json::from_str::<Principal>(&stored_session.owner) else {
                continue;
            };
            // The store's `client_id` column holds the session key (user and client id).
            let key: Arc<str> = stored_session.client_id.as_str().into();
            let session = Arc::new(Session::new(key.clone(), self.share_principal(principal)));
            {
                let mut state = session.lock();
                state.expiry_secs = stored_session.expiry_secs;
                state.disconnected_at_ms = Some(stored_session.disconnected_at_ms.unwrap_or(now));
                let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
                for sub in stored_session.subscriptions {
                    let Ok(options) = serde_json::from_slice::<SubOptions>(&sub.options) else {
                        continue;
                    };
                    index.subscribe(&sub.filter, SessionKey(session.clone()), options);
                    state.subscriptions.insert(sub.filter, options);
                }
                state.restore_qos2(stored_session.inbound_qos2);
            }
            session.restore(
                stored_session
                    .queue
                    .into_iter()
                    .map(|q| {
                        let released = q.packet_id.filter(|_| q.state == 2);
                        (q.seq, from_stored(q.message), released)
                    })
                    .collect(),
            );
            lock(&self.sessions).replace(ByKey(session));
        }
        if restored > 0 {
            tracing::info!(sessions = restored, "restored persistent MQTT sessions");
        }
        Ok(())
    }

    /// Attaches a connection to the session `key` names, creating it or taking it over;
    /// true when an earlier session continues.
    pub fn attach(
        &self,
        key: &Arc<str>,
        principal: Arc<Principal>,
        clean_start: bool,
        expiry_secs: u32,
        link: Link,
    ) -> (Arc<Session>, bool) {
        let mut writes = Vec::new();
        let mut sessions = lock(&self.sessions);
        let (session, present) = match sessions.get(&**key) {
            Some(ByKey(existing)) => {
                let existing = existing.clone();
                let mut state = existing.lock();
                if let Some(old) = state.link.take() {
                    old.outbox.kick(Kick::TakenOver);
                }
                let present = !clean_start && Session::persistent(&state);
                if !present {
                    self.clear(&existing, &mut state);
                }
                // What the store keeps of a session goes when it stops being persistent: on a
                // clean start, and when it is taken up without an expiry (it then ends with
                // this connection, and its deliveries are no longer written). Rows left behind
                // would come back after a restart, and a session made anew under the key
                // numbers its queue from 1 again: its first stored delivery would collide.
                if Session::persistent(&state) && (!present || expiry_secs == 0) {
                    writes.push(MqttWrite::DeleteSession {
                        client_id: key.to_string(),
                    });
                }
                drop(state);
                (existing, present)
            }
            None => {
                let session = Arc::new(Session::new(key.clone(), principal.clone()));
                sessions.insert(ByKey(session.clone()));
                (session, false)
            }
        };
        {
            let mut state = session.lock();
            state.principal = principal;
            state.expiry_secs = expiry_secs;
            state.disconnected_at_ms = None;
            state.epoch = state.epoch.wrapping_add(1);
            state.link = Some(link);
            if expiry_secs > 0 {
                writes.push(put_session(
                    &session.key,
                    &state.principal,
                    expiry_secs,
                    None,
                ));
            }
        }
        session.set_online(true);
        drop(sessions);
        self.persist.send(writes);
        (session, present)
    }

    /// The connection `link_id` ended. A session without expiry ends with it; a persistent one
    /// stays, offline. The will (if any) goes out now or after its delay.
    pub fn detach(self: &Arc<Self>, session: &Arc<Session>, link_id: u64, will: Option<Will>) {
        let mut sessions = lock(&self.sessions);
        let mut state = session.lock();
        let attached = state.link.as_ref().is_some_and(|l| l.id == link_id);
        let expiry = state.expiry_secs;
        let epoch = state.epoch;
        if attached {
            state.link = None;
            session.set_online(false);
            if expiry == 0 {
                self.clear(session, &mut state);
                drop(state);
                if sessions
                    .get(&*session.key)
                    .is_some_and(|s| Arc::ptr_eq(&s.0, session))
                {
                    sessions.remove(&*session.key);
                }
            } else {
                let now = crate::time::now_ms();
                state.disconnected_at_ms = Some(now);
                state.compact();
                let write = put_session(&session.key, &state.principal, expiry, Some(now));
                drop(state);
                self.persist.send(vec![write]);
            }
        } else {
            drop(state);
        }
        drop(sessions);
        if let Some(will) = will {
            let delay = will.delay_secs.min(expiry);
            let hub = self.clone();
            let session = session.clone();
            tokio::spawn(async move {
                if delay > 0 {
                    tokio::time::sleep(Duration::from_secs(u64::from(delay))).await;
                    // A client that came back in time cancels its delayed will.
                    let state = session.lock();
                    if state.epoch != epoch || state.link.is_some() {
                        return;
                    }
                }
                hub.publish_will(&session, will.publication).await;
            });
        }
    }

    async fn publish_will(&self, session: &Session, will: Publication) {
        let principal = session.lock().principal.clone();
        if !self.policy.may_publish(&principal, &will.topic).await {
            tracing::info!(topic = %will.topic, "a will was not published: not authorized");
            return;
        }
        let publication = Arc::new(Publication {
            received_ms: crate::time::now_ms(),
            ..will
        });
        if let Err(e) = self
            .dispatch(std::slice::from_ref(&publication), &principal, Vec::new())
            .await
        {
            tracing::warn!(error = %e, "a will was not published");
        }
    }

    /// The one path of accepted publishes: the policy sees them (history, last values), then
    /// retained messages and subscribers get them, and what must be durable is committed.
    /// `publisher` is the client that sent them; `also` are writes committed with the batch
    /// (the publisher's own bookkeeping).
    pub async fn dispatch(
        &self,
        batch: &[Arc<Publication>],
        publisher: &Arc<Principal>,
        also: Vec<MqttWrite>,
    ) -> Result<(), String> {
        let messages = batch
            .iter()
            .map(|p| p.message(None, Some(publisher.clone())))
            .collect();
        self.policy.on_messages(messages).await?;
        self.deliver_all(batch, also).await
    }

    /// [`Hub::dispatch`] after the policy has seen the messages.
    pub async fn deliver_all(
        &self,
        batch: &[Arc<Publication>],
        writes: Vec<MqttWrite>,
    ) -> Result<(), String> {
        self.deliver_then_store(batch, writes).await.await
    }

    /// Hands `batch` to the retained messages and the subscribers now, and queues what must
    /// be stored; the answer resolves once that is durable (at once for QoS 0, whose writes
    /// nobody waits for).
    pub async fn deliver_then_store(
        &self,
        batch: &[Arc<Publication>],
        mut writes: Vec<MqttWrite>,
    ) -> Stored {
        for publication in batch {
            if publication.retain {
                self.retain(publication, &mut writes);
            }
            self.route(publication, &mut writes).await;
        }
        if batch.iter().any(|p| p.qos != QoS::AtMostOnce) {
            self.persist.queue(writes)
        } else {
            self.persist.send(writes);
            Stored::nothing()
        }
    }

    fn retain(&self, publication: &Arc<Publication>, writes: &mut Vec<MqttWrite>) {
        let mut retained = self.retained.write().unwrap_or_else(|p| p.into_inner());
        if publication.payload.is_empty() {
            retained.remove(&publication.topic);
            writes.push(MqttWrite::DeleteRetained {
                topic: publication.topic.to_string(),
            });
        } else {
            // A copy in allocations of its own: the decoded one shares its read buffer's.
            let kept = Arc::new(Publication {
                topic: ByteString::from(&*publication.topic),
                payload: bytes::Bytes::copy_from_slice(&publication.payload),
                ..(**publication).clone()
            });
            retained.insert(kept.topic.clone(), kept.clone());
            let delivery = Delivery {
                publication: kept,
                qos: publication.qos,
                retain: true,
                subscription_ids: Vec::new(),
            };
            writes.push(MqttWrite::PutRetained(stored(&delivery)));
        }
    }

    /// Hands a publication to every session subscribed to its topic and allowed to receive it.
    async fn route(&self, publication: &Arc<Publication>, writes: &mut Vec<MqttWrite>) {
        let mut targets: Vec<(Arc<Session>, SubOptions)> = Vec::new();
        {
            let index = self.index.read().unwrap_or_else(|p| p.into_inner());
            index.matches(
                &publication.topic,
                |key| key.0.is_online(),
                |key, options| {
                    let own =
                        options.no_local && publication.sender.as_deref() == Some(&*key.0.key);
                    if !own {
                        targets.push((key.0.clone(), *options));
                    }
                },
            );
        }
        if targets.len() > 1 {
            targets.sort_by_key(|(s, _)| Arc::as_ptr(s) as usize);
        }
        let generation = self.policy.authz_generation();
        let mut i = 0;
        while i < targets.len() {
            // Overlapping subscriptions of one session: one delivery, highest QoS, every id.
            let session = targets[i].0.clone();
            let mut qos = 0;
            let mut retain_as_published = false;
            let mut ids = Vec::new();
            while i < targets.len() && Arc::ptr_eq(&targets[i].0, &session) {
                let options = targets[i].1;
                qos = qos.max(options.qos);
                retain_as_published |= options.retain_as_published;
                ids.extend(options.id.and_then(NonZeroU32::new));
                i += 1;
            }
            if !self
                .may_receive(&session, &publication.topic, generation)
                .await
            {
                continue;
            }
            ids.sort_unstable();
            ids.dedup();
            let delivery = Delivery {
                publication: publication.clone(),
                qos: publication.qos.less_value(qos_of(qos)),
                retain: retain_as_published && publication.retain,
                subscription_ids: ids,
            };
            session.deliver(delivery, &self.limits, writes);
        }
    }

    async fn may_receive(&self, session: &Session, topic: &ByteString, generation: u64) -> bool {
        if let Some(allowed) = session.cached_receive(topic, generation) {
            return allowed;
        }
        let principal = session.lock().principal.clone();
        let allowed = self.policy.may_receive(&principal, topic).await;
        session.remember_receive(topic, generation, allowed);
        allowed
    }

    /// Adds or replaces a subscription; true when it is new. Returns the retained messages
    /// it should receive under its retain handling.
    pub fn subscribe(
        &self,
        session: &Arc<Session>,
        filter: &str,
        options: SubOptions,
        writes: &mut Vec<MqttWrite>,
    ) -> Vec<Arc<Publication>> {
        let new = {
            let mut state = session.lock();
            let new = state
                .subscriptions
                .insert(filter.to_string(), options)
                .is_none();
            if Session::persistent(&state) {
                writes.push(MqttWrite::PutSubscription {
                    client_id: session.key.to_string(),
                    subscription: StoredSubscription {
                        filter: filter.to_string(),
                        options: serde_json::to_vec(&options).unwrap_or_default(),
                    },
                });
            }
            new
        };
        self.index
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .subscribe(filter, SessionKey(session.clone()), options);
        let shared = filter.starts_with("$share/");
        let wanted = match options.retain_handling {
            0 => true,
            1 => new,
            _ => false,
        };
        if shared || !wanted {
            return Vec::new();
        }
        let now = crate::time::now_ms();
        self.retained
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|p| crate::topic::filter_matches(filter, &p.topic) && !p.expired(now))
            .cloned()
            .collect()
    }

    /// Removes a subscription; false when there was none.
    pub fn unsubscribe(
        &self,
        session: &Arc<Session>,
        filter: &str,
        writes: &mut Vec<MqttWrite>,
    ) -> bool {
        let existed = {
            let mut state = session.lock();
            let existed = state.subscriptions.remove(filter).is_some();
            if existed && Session::persistent(&state) {
                writes.push(MqttWrite::DeleteSubscription {
                    client_id: session.key.to_string(),
                    filter: filter.to_string(),
                });
            }
            existed
        };
        self.unindex(session, &[filter.to_string()]);
        existed
    }

    /// Delivers retained messages to one new subscription (retain flag set).
    pub async fn deliver_retained(
        &self,
        session: &Arc<Session>,
        options: SubOptions,
        retained: Vec<Arc<Publication>>,
    ) {
        let generation = self.policy.authz_generation();
        let mut writes = Vec::new();
        for publication in retained {
            if !self
                .may_receive(session, &publication.topic, generation)
                .await
            {
                continue;
            }
            let delivery = Delivery {
                qos: publication.qos.less_value(qos_of(options.qos)),
                publication,
                retain: true,
                subscription_ids: options.id.and_then(NonZeroU32::new).into_iter().collect(),
            };
            session.deliver(delivery, &self.limits, &mut writes);
        }
        self.persist.send(writes);
    }

    /// Empties a session (subscriptions, deliveries) and takes it out of the index.
    fn clear(&self, session: &Arc<Session>, state: &mut SessionState) {
        let filters: Vec<String> = state.subscriptions.keys().cloned().collect();
        Session::reset(state);
        self.unindex(session, &filters);
    }

    fn unindex(&self, session: &Arc<Session>, filters: &[String]) {
        let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
        let key = SessionKey(session.clone());
        for filter in filters {
            index.unsubscribe(filter, &key);
        }
    }

    /// Sessions attached to a connection right now.
    pub fn online(&self) -> Vec<Arc<Session>> {
        attached(&lock(&self.sessions)).cloned().collect()
    }

    /// Ends the connection of every session whose principal `select` picks.
    pub fn kick_where(&self, select: impl Fn(&Principal) -> bool, why: Kick) -> usize {
        let mut kicked = 0;
        for session in self.online() {
            let state = session.lock();
            if !select(&state.principal) {
                continue;
            }
            if state
                .link
                .as_ref()
                .is_some_and(|link| link.outbox.kick(why))
            {
                kicked += 1;
            }
        }
        kicked
    }

    /// Ends the connections whose clients have been silent for one and a half keep-alive
    /// periods (MQTT §3.1.2.10), and asks plain-TCP connections quiet both ways for
    /// [`parking::QUIET_MS`] to park. One sweep for every client, so that a quiet connection
    /// keeps no timer of its own and a busy one does not re-arm one per read.
    pub fn sweep_quiet(&self, now_ms: i64) {
        let sessions = lock(&self.sessions);
        for session in attached(&sessions) {
            let state = session.lock();
            let Some(link) = state.link.as_ref() else {
                continue;
            };
            let keep_alive = i64::from(link.info.keep_alive);
            if keep_alive > 0 && now_ms - link.outbox.heard_ms() > keep_alive * 1500 {
                link.outbox.kick(Kick::KeepAliveTimeout);
            } else if link.info.listener == Listener::Tcp
                && now_ms - link.outbox.active_ms() >= parking::QUIET_MS
            {
                link.outbox.ask_park();
            }
        }
    }

    /// Sessions (all, connected) and subscriptions, for the periodic log line.
    pub fn census(&self) -> (usize, usize, usize) {
        let sessions = lock(&self.sessions);
        let online = attached(&sessions).count();
        let index = self.index.read().unwrap_or_else(|p| p.into_inner());
        let subscriptions = if index.is_empty() { 0 } else { index.len() };
        (sessions.len(), online, subscriptions)
    }

    /// Removes persistent sessions whose expiry has passed while offline.
    pub fn expire_sessions(&self) {
        let now = crate::time::now_ms();
        let mut expired = Vec::new();
        {
            let sessions = lock(&self.sessions);
            for ByKey(session) in sessions.iter() {
                let state = session.lock();
                let due = state.link.is_none()
                    && state.disconnected_at_ms.is_some_and(|at| {
                        at + i64::from(state.expiry_secs) * 1000 <= now
                            && state.expiry_secs != u32::MAX
                    });
                if due {
                    expired.push(session.clone());
                }
            }
        }
        if expired.is_empty() {
            return;
        }
        let mut writes = Vec::new();
        let mut sessions = lock(&self.sessions);
        for session in expired {
            let mut state = session.lock();
            if state.link.is_some() {
                continue;
            }
            self.clear(&session, &mut state);
            drop(state);
            sessions.remove(&*session.key);
            writes.push(MqttWrite::DeleteSession {
                client_id: session.key.to_string(),
            });
        }
        drop(sessions);
        self.persist.send(writes);
    }
}

fn put_session(
    client_id: &str,
    principal: &Principal,
    expiry_secs: u32,
    disconnected_at_ms: Option<i64>,
) -> MqttWrite {
    MqttWrite::PutSession {
        client_id: client_id.to_string(),
        owner: serde_json::to_string(principal).unwrap_or_default(),
        expiry_secs,
        disconnected_at_ms,
    }
}
