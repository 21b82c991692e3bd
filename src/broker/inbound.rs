//! What a connected client's packets do: publishes are checked (topic, alias, authorization,
//! QoS 2 duplicates, Receive Maximum) and collected into a batch that [`Inbound::flush`]
//! dispatches with one policy call and one durable commit before acknowledging them all;
//! acknowledgements of deliveries, subscriptions and pings are handled in order.

use super::connection::End;
use super::hub::Hub;
use super::packet::{Packet, Version};
use super::publication::{forwarded, owned, Publication};
use super::session::{Session, SubOptions};
use super::trie::parse_shared;
use super::writer::{Outbound, Outbox};
use super::Principal;
use crate::store::MqttWrite;
use bytestring::ByteString;
use rmqtt_codec::types::{Publish, QoS};
use rmqtt_codec::v5::{
    self, DisconnectReasonCode, PublishAck, PublishAck2, PublishAckReason, SubscribeAckReason,
    UnsubscribeAckReason,
};
use std::collections::HashMap;
use std::num::NonZeroU16;
use std::sync::Arc;

/// Publish decisions cached per connection before the cache starts over.
const AUTHZ_CACHE: usize = 10_000;

pub struct Inbound {
    hub: Arc<Hub>,
    session: Arc<Session>,
    outbox: Outbox,
    version: Version,
    principal: Arc<Principal>,
    /// Made at the client's first PUBLISH: a client that only subscribes, or is quiet,
    /// keeps a pointer instead of two maps.
    topics: Option<Box<PublishedTopics>>,
    /// Accepted publishes not yet dispatched, with how to acknowledge each; made by a read's
    /// first publish and taken by [`Inbound::flush`], so a quiet client keeps a pointer.
    batch: Option<Box<Batch>>,
}

#[derive(Default)]
struct Batch {
    publications: Vec<Arc<Publication>>,
    acks: Vec<(QoS, Option<NonZeroU16>)>,
}

/// What a publishing client's topics need: the aliases it set (MQTT 5) and the publish
/// decisions of the platform's policy, cached until its grants change.
#[derive(Default)]
struct PublishedTopics {
    aliases: HashMap<u16, ByteString>,
    may_publish: HashMap<ByteString, bool>,
    authz_generation: u64,
}

impl Inbound {
    pub fn new(
        hub: Arc<Hub>,
        session: Arc<Session>,
        outbox: Outbox,
        version: Version,
        principal: Arc<Principal>,
    ) -> Inbound {
        Inbound {
            hub,
            session,
            outbox,
            version,
            principal,
            topics: None,
            batch: None,
        }
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    fn send(&self, packet: Packet) {
        self.outbox.send(Outbound::packet(packet));
    }

    /// Handles one packet; `Some` ends the connection.
    pub async fn handle(&mut self, packet: Packet) -> Option<End> {
        match packet {
            Packet::Publish(publish) => return self.publish(*publish).await,
            Packet::PublishAck(ack) => self.completed(ack.packet_id),
            Packet::PublishReceived(ack) => {
                if ack.reason_code as u8 >= 0x80 {
                    // The client refused the message: it is done.
                    self.completed(ack.packet_id);
                } else {
                    let mut writes = Vec::new();
                    if !self.session.received(ack.packet_id, &mut writes) {
                        self.send(Packet::PublishRelease(PublishAck2 {
                            packet_id: ack.packet_id,
                            reason_code: v5::PublishAck2Reason::PacketIdNotFound,
                            ..PublishAck2::default()
                        }));
                    }
                    self.hub.persist.send(writes);
                }
            }
            Packet::PublishRelease(release) => {
                // The message was routed when it arrived; releasing only frees its id.
                self.flush().await;
                let persistent = {
                    let mut state = self.session.lock();
                    state.note_qos2_released(release.packet_id.get());
                    Session::persistent(&state)
                };
                // Stored before PUBCOMP: a release lost in a crash would make the restarted
                // broker drop the client's next QoS 2 publish under that id as a resend.
                let released = match persistent {
                    true => {
                        let write = MqttWrite::DeleteInboundQos2 {
                            client_id: self.session.key.to_string(),
                            packet_id: release.packet_id.get(),
                        };
                        self.hub.persist.commit(vec![write]).await
                    }
                    false => Ok(()),
                };
                if let Err(e) = released {
                    tracing::warn!(error = %e, "a QoS 2 release was not stored");
                    return Some(End::Server(
                        DisconnectReasonCode::ImplementationSpecificError,
                    ));
                }
                self.send(Packet::PublishComplete(PublishAck2 {
                    packet_id: release.packet_id,
                    ..PublishAck2::default()
                }));
            }
            Packet::PublishComplete(complete) => self.completed(complete.packet_id),
            Packet::Subscribe(subscribe) => {
                self.flush().await;
                return self.subscribe(subscribe).await;
            }
            Packet::Unsubscribe(unsubscribe) => {
                self.flush().await;
                return self.unsubscribe(unsubscribe).await;
            }
            Packet::PingRequest => self.send(Packet::PingResponse),
            Packet::Disconnect(disconnect) => {
                return Some(self.disconnect(disconnect));
            }
            Packet::Connect(_)
            | Packet::ConnectAck(_)
            | Packet::SubscribeAck(_)
            | Packet::UnsubscribeAck(_)
            | Packet::PingResponse
            | Packet::Auth(_) => {
                return Some(End::Server(DisconnectReasonCode::ProtocolError));
            }
        }
        None
    }

    fn completed(&self, packet_id: NonZeroU16) {
        let mut writes = Vec::new();
        self.session
            .completed(packet_id.get(), &self.hub.limits, &mut writes);
        self.hub.persist.send(writes);
    }

    async fn publish(&mut self, mut publish: Publish) -> Option<End> {
        if let Err(reason) = self.resolve_alias(&mut publish) {
            return Some(End::Server(reason));
        }
        if publish.topic.is_empty() || publish.topic.contains(['+', '#', '\0']) {
            return Some(End::Server(DisconnectReasonCode::TopicNameInvalid));
        }
        let packet_id = publish.packet_id;
        if publish.qos != QoS::AtMostOnce {
            let Some(id) = packet_id else {
                return Some(End::Server(DisconnectReasonCode::ProtocolError));
            };
            let unacknowledged = {
                let state = self.session.lock();
                if publish.qos == QoS::ExactlyOnce && state.qos2_received(id.get()) {
                    // A resend of a QoS 2 publish not yet released: acknowledge, do not route.
                    drop(state);
                    self.send(Packet::PublishReceived(PublishAck {
                        packet_id: id,
                        ..PublishAck::default()
                    }));
                    return None;
                }
                state.qos2_unreleased() + self.batch.as_ref().map_or(0, |b| b.acks.len())
            };
            if unacknowledged >= usize::from(self.hub.limits.max_inflight) {
                // MQTT 5 clients were told the Receive Maximum; MQTT 3.1.1 clients were not,
                // so their batch is dispatched and acknowledged to make room.
                if self.version == Version::V5 {
                    return Some(End::Server(DisconnectReasonCode::ReceiveMaximumExceeded));
                }
                if let Some(end) = self.flush().await {
                    return Some(end);
                }
            }
        }
        if !self.may_publish(&publish.topic).await {
            self.refuse_publish(&publish);
            return None;
        }
        let mut properties = publish.properties.take();
        if let Some(props) = properties.as_mut() {
            props.topic_alias = None;
            props.subscription_ids.clear();
        }
        let (topic, payload) = owned(&publish.topic, &publish.payload);
        let batch = self.batch.get_or_insert_default();
        batch.publications.push(Arc::new(Publication {
            topic,
            payload,
            qos: publish.qos,
            retain: publish.retain,
            properties: forwarded(properties),
            received_ms: crate::time::now_ms(),
            sender: Some(self.session.key.clone()),
        }));
        batch.acks.push((publish.qos, packet_id));
        None
    }

    /// MQTT 5 topic aliases: a PUBLISH may set one and later ones may carry only the alias.
    fn resolve_alias(&mut self, publish: &mut Publish) -> Result<(), DisconnectReasonCode> {
        let alias = publish.properties.as_ref().and_then(|p| p.topic_alias);
        let Some(alias) = alias else {
            return Ok(());
        };
        if alias.get() > self.hub.limits.topic_alias_max {
            return Err(DisconnectReasonCode::TopicAliasInvalid);
        }
        let aliases = &mut self.topics.get_or_insert_default().aliases;
        if publish.topic.is_empty() {
            match aliases.get(&alias.get()) {
                Some(topic) => publish.topic = topic.clone(),
                None => return Err(DisconnectReasonCode::ProtocolError),
            }
        } else {
            // Copied: the alias outlives the read buffer the topic is a slice of.
            aliases.insert(alias.get(), ByteString::from(&*publish.topic));
        }
        Ok(())
    }

    async fn may_publish(&mut self, topic: &ByteString) -> bool {
        let generation = self.hub.policy.authz_generation();
        let topics = self.topics.get_or_insert_default();
        if generation != topics.authz_generation || topics.may_publish.len() >= AUTHZ_CACHE {
            topics.may_publish.clear();
            topics.authz_generation = generation;
        }
        if let Some(allowed) = topics.may_publish.get(topic) {
            return *allowed;
        }
        let allowed = self.hub.policy.may_publish(&self.principal, topic).await;
        topics.may_publish.insert(topic.clone(), allowed);
        allowed
    }

    /// A publish outside the client's grants: MQTT 5 says so in the acknowledgement; MQTT
    /// 3.1.1 has no negative acknowledgement, so the message is acknowledged and dropped.
    fn refuse_publish(&self, publish: &Publish) {
        super::stats::dropped(super::stats::DropCause::NotAuthorized);
        let Some(packet_id) = publish.packet_id else {
            return;
        };
        let (reason_code, reason_string) = match self.version {
            Version::V5 => (
                PublishAckReason::NotAuthorized,
                Some(format!("not authorized to publish to {}", publish.topic).into()),
            ),
            Version::V3 => (PublishAckReason::Success, None),
        };
        let ack = PublishAck {
            packet_id,
            reason_code,
            reason_string,
            ..PublishAck::default()
        };
        if publish.qos == QoS::ExactlyOnce {
            self.send(Packet::PublishReceived(ack));
        } else {
            self.send(Packet::PublishAck(ack));
        }
    }

    /// Dispatches the batch, then acknowledges it. A batch that could not be stored is
    /// neither delivered nor acknowledged: the client is disconnected and publishes again.
    pub async fn flush(&mut self) -> Option<End> {
        let Batch {
            publications: batch,
            acks,
        } = *self.batch.take()?;
        self.outbox.count_received(batch.len());
        let mut by_qos = [0u64; 3];
        for publication in &batch {
            by_qos[super::stats::qos_index(publication.qos)] += 1;
        }
        super::stats::received(by_qos);
        // QoS 2 ids a persistent session received must survive a restart, so a resend after
        // it is still recognised as a duplicate.
        let qos2_ids: Vec<MqttWrite> = if acks.iter().any(|(q, _)| *q == QoS::ExactlyOnce)
            && Session::persistent(&self.session.lock())
        {
            acks.iter()
                .filter(|(q, _)| *q == QoS::ExactlyOnce)
                .filter_map(|(_, id)| *id)
                .map(|id| MqttWrite::PutInboundQos2 {
                    client_id: self.session.key.to_string(),
                    packet_id: id.get(),
                })
                .collect()
        } else {
            Vec::new()
        };
        if let Err(e) = self.hub.dispatch(&batch, &self.principal, qos2_ids).await {
            tracing::warn!(error = %e, client_id = %self.session.key, "publishes were not stored");
            return Some(End::Server(
                DisconnectReasonCode::ImplementationSpecificError,
            ));
        }
        let mut state = None;
        for (qos, packet_id) in acks {
            let Some(packet_id) = packet_id else {
                continue;
            };
            let ack = PublishAck {
                packet_id,
                ..PublishAck::default()
            };
            if qos == QoS::ExactlyOnce {
                state
                    .get_or_insert_with(|| self.session.lock())
                    .note_qos2_received(packet_id.get());
                self.outbox
                    .send(Outbound::packet(Packet::PublishReceived(ack)));
            } else {
                self.outbox.send(Outbound::packet(Packet::PublishAck(ack)));
            }
        }
        None
    }

    async fn subscribe(&mut self, subscribe: v5::Subscribe) -> Option<End> {
        let mut status = Vec::with_capacity(subscribe.topic_filters.len());
        let mut retained = Vec::new();
        let mut writes = Vec::new();
        for (filter, options) in &subscribe.topic_filters {
            let shared = match parse_shared(filter) {
                Ok(shared) => shared,
                Err(_) => {
                    status.push(SubscribeAckReason::TopicFilterInvalid);
                    continue;
                }
            };
            let real = shared.map_or(&**filter, |(_, real)| real);
            if crate::topic::validate_topic_filter(real).is_err() {
                status.push(SubscribeAckReason::TopicFilterInvalid);
                continue;
            }
            if shared.is_some() && options.no_local {
                return Some(End::Server(DisconnectReasonCode::ProtocolError));
            }
            let options = SubOptions {
                qos: options.qos.value(),
                no_local: options.no_local && self.version == Version::V5,
                retain_as_published: options.retain_as_published,
                retain_handling: u8::from(options.retain_handling),
                id: subscribe.id.map(|id| id.get()),
            };
            let found = self
                .hub
                .subscribe(&self.session, filter, options, &mut writes);
            retained.push((options, found));
            status.push(match options.qos {
                0 => SubscribeAckReason::GrantedQos0,
                1 => SubscribeAckReason::GrantedQos1,
                _ => SubscribeAckReason::GrantedQos2,
            });
        }
        // A persistent session's subscriptions are stored before they are acknowledged, so a
        // SUBACK survives kill -9.
        if let Err(e) = self.hub.persist.commit(writes).await {
            tracing::warn!(error = %e, "a subscription was not stored");
            return Some(End::Server(
                DisconnectReasonCode::ImplementationSpecificError,
            ));
        }
        let failed = status.iter().any(|s| u8::from(*s) >= 0x80);
        self.send(Packet::SubscribeAck(v5::SubscribeAck {
            packet_id: subscribe.packet_id,
            properties: Vec::new(),
            reason_string: failed.then(|| "a topic filter is not valid".into()),
            status,
        }));
        for (options, found) in retained {
            if !found.is_empty() {
                self.hub
                    .deliver_retained(&self.session, options, found)
                    .await;
            }
        }
        None
    }

    async fn unsubscribe(&mut self, unsubscribe: v5::Unsubscribe) -> Option<End> {
        let mut writes = Vec::new();
        let status = unsubscribe
            .topic_filters
            .iter()
            .map(|filter| {
                if self.hub.unsubscribe(&self.session, filter, &mut writes) {
                    UnsubscribeAckReason::Success
                } else {
                    UnsubscribeAckReason::NoSubscriptionExisted
                }
            })
            .collect();
        if let Err(e) = self.hub.persist.commit(writes).await {
            tracing::warn!(error = %e, "an unsubscription was not stored");
            return Some(End::Server(
                DisconnectReasonCode::ImplementationSpecificError,
            ));
        }
        self.send(Packet::UnsubscribeAck(v5::UnsubscribeAck {
            packet_id: unsubscribe.packet_id,
            properties: Vec::new(),
            reason_string: None,
            status,
        }));
        None
    }

    fn disconnect(&self, disconnect: v5::Disconnect) -> End {
        if let Some(expiry) = disconnect.session_expiry_interval_secs {
            let mut state = self.session.lock();
            // A session that was to end with its connection may not be extended here.
            if state.expiry_secs == 0 && expiry > 0 {
                return End::Server(DisconnectReasonCode::ProtocolError);
            }
            let ends_now = expiry == 0 && Session::persistent(&state);
            state.expiry_secs = expiry.min(self.hub.limits.session_expiry_secs);
            drop(state);
            if ends_now {
                // It ends with this connection: nothing of it stays in the store (see
                // `Hub::attach`).
                self.hub.persist.send(vec![MqttWrite::DeleteSession {
                    client_id: self.session.key.to_string(),
                }]);
            }
        }
        match disconnect.reason_code {
            DisconnectReasonCode::NormalDisconnection => End::Normal,
            _ => End::Abrupt,
        }
    }
}
