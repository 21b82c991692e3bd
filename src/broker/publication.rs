//! A message inside the broker: what was published, once, shared by every subscriber it goes
//! to, and the PUBLISH packet each delivery of it becomes.

use super::{Message, Principal, Response};
use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use rmqtt_codec::types::{Publish, QoS};
use rmqtt_codec::v5::PublishProperties;
use std::num::{NonZeroU16, NonZeroU32};
use std::sync::Arc;

/// A published message. Cheap to share: subscribers hold an `Arc` of it.
#[derive(Debug, Clone)]
pub struct Publication {
    pub topic: ByteString,
    pub payload: Bytes,
    pub qos: QoS,
    pub retain: bool,
    /// MQTT 5 properties to forward (no topic alias or subscription ids: those are per hop);
    /// `None` when there are none. Boxed: most messages have none, and a backlog of them
    /// should not carry the properties' size each.
    pub properties: Option<Box<PublishProperties>>,
    pub received_ms: i64,
    /// The publishing client, for No Local; `None` for messages from inside svc.
    pub sender: Option<Arc<str>>,
}

/// The MQTT 5 user property by which bridges count the bridges a message crossed.
pub const HOPS_PROPERTY: &str = "svc-hops";

/// One delivery of a publication to one subscriber.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub publication: Arc<Publication>,
    pub qos: QoS,
    pub retain: bool,
    pub subscription_ids: Vec<NonZeroU32>,
}

/// The properties worth keeping, in allocations of their own (see [`owned`]): `None` when the
/// publish carried none.
pub fn forwarded(properties: Option<PublishProperties>) -> Option<Box<PublishProperties>> {
    properties
        .filter(|p| *p != PublishProperties::default())
        .map(|p| {
            Box::new(PublishProperties {
                correlation_data: p.correlation_data.as_deref().map(Bytes::copy_from_slice),
                content_type: p.content_type.as_deref().map(ByteString::from),
                user_properties: p
                    .user_properties
                    .iter()
                    .map(|(k, v)| (ByteString::from(&**k), ByteString::from(&**v)))
                    .collect(),
                response_topic: p.response_topic.as_deref().map(ByteString::from),
                ..p
            })
        })
}

/// A received message's topic and payload, copied out of the connection's read buffer into
/// one allocation of their own.
///
/// A decoded PUBLISH's topic and payload are slices of the read buffer, and the buffer (8 KiB
/// or more) stays allocated while any slice of it lives: a message queued for a slow
/// subscriber kept its whole read's buffer, and the connection's next read took a new one.
/// With its own copy the message holds only its bytes, and the read buffer, free again once the
/// read's packets are handled, is reused by the next read instead of allocated afresh.
pub fn owned(topic: &str, payload: &[u8]) -> (ByteString, Bytes) {
    let mut joined = BytesMut::with_capacity(topic.len() + payload.len());
    joined.extend_from_slice(topic.as_bytes());
    joined.extend_from_slice(payload);
    let mut payload = joined.freeze();
    let topic = payload.split_to(topic.len());
    // SAFETY: the bytes were copied from a `str`, so they are UTF-8.
    let topic = unsafe { ByteString::from_bytes_unchecked(topic) };
    (topic, payload)
}

/// A QoS from its number (above 2 counts as 2).
pub fn qos_of(value: u8) -> QoS {
    match value {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

impl Publication {
    /// The message as the policy sees it; `origin` names an in-process writer, `publisher`
    /// the client that published it.
    pub fn message(&self, origin: Option<Arc<str>>, publisher: Option<Arc<Principal>>) -> Message {
        Message {
            topic: self.topic.to_string(),
            payload: self.payload.clone(),
            received_ms: self.received_ms,
            qos: self.qos.value(),
            retain: self.retain,
            hops: self.hops(),
            origin,
            publisher,
            response: self.properties.as_ref().and_then(|p| {
                Some(Arc::new(Response {
                    topic: p.response_topic.as_ref()?.to_string(),
                    correlation: p.correlation_data.clone(),
                }))
            }),
        }
    }

    /// The `svc-hops` user property: how many bridges the message crossed (0 without it).
    pub fn hops(&self) -> u8 {
        self.properties
            .as_ref()
            .and_then(|p| p.user_properties.iter().find(|(k, _)| k == HOPS_PROPERTY))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    }

    /// Whole seconds of Message Expiry Interval left at `now_ms` (rounded down); `None` when
    /// the message never expires.
    pub fn remaining_secs(&self, now_ms: i64) -> Option<u32> {
        let expires = self.expires_at_ms()?;
        Some(((expires - now_ms).max(0) / 1000) as u32)
    }

    pub fn expired(&self, now_ms: i64) -> bool {
        self.expires_at_ms().is_some_and(|at| at <= now_ms)
    }

    /// When the message expires, in epoch milliseconds.
    pub fn expires_at_ms(&self) -> Option<i64> {
        let interval = self.properties.as_ref()?.message_expiry_interval?;
        Some(self.received_ms + i64::from(interval.get()) * 1000)
    }

    /// Rough encoded size of a delivery, to skip one above a client's Maximum Packet Size
    /// before it takes a packet id.
    pub fn encoded_size_estimate(&self) -> usize {
        let props = self.properties.as_ref().map_or(0, |p| {
            p.user_properties
                .iter()
                .map(|(k, v)| k.len() + v.len() + 5)
                .sum::<usize>()
                + p.content_type.as_ref().map_or(0, |c| c.len() + 3)
                + p.response_topic.as_ref().map_or(0, |r| r.len() + 3)
                + p.correlation_data.as_ref().map_or(0, |c| c.len() + 3)
                + 16
        });
        5 + 2 + self.topic.len() + 2 + props + self.payload.len()
    }
}

impl Delivery {
    /// The PUBLISH packet of this delivery at `now_ms` (remaining expiry, subscription ids).
    pub fn packet(&self, packet_id: Option<NonZeroU16>, dup: bool, now_ms: i64) -> Publish {
        let p = &self.publication;
        let mut properties = p.properties.as_deref().cloned().unwrap_or_default();
        if let Some(left) = p.remaining_secs(now_ms) {
            properties.message_expiry_interval = NonZeroU32::new(left.max(1));
        }
        properties.subscription_ids = self.subscription_ids.clone();
        Publish {
            dup,
            retain: self.retain,
            qos: self.qos,
            topic: p.topic.clone(),
            packet_id,
            payload: p.payload.clone(),
            properties: Some(properties),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publication(expiry: Option<u32>) -> Publication {
        Publication {
            topic: "a/b".into(),
            payload: Bytes::from_static(b"1"),
            qos: QoS::AtLeastOnce,
            retain: false,
            properties: Some(Box::new(PublishProperties {
                message_expiry_interval: expiry.and_then(NonZeroU32::new),
                ..PublishProperties::default()
            })),
            received_ms: 10_000,
            sender: None,
        }
    }

    #[test]
    fn a_received_message_keeps_none_of_its_read_buffer() {
        let read = Bytes::from_static(b"....plant/line1/temp21.5....");
        let (topic, payload) = owned(
            std::str::from_utf8(&read[4..20]).expect("utf-8"),
            &read[20..24],
        );
        assert_eq!((&*topic, &*payload), ("plant/line1/temp", &b"21.5"[..]));
        let buffer = read.as_ptr_range();
        assert!(!buffer.contains(&topic.as_bytes().as_ptr()));
        assert!(!buffer.contains(&payload.as_ptr()));
    }

    #[test]
    fn forwarded_properties_are_copies() {
        let read = Bytes::from_static(b"text/plainkeyvalue");
        let decoded = PublishProperties {
            content_type: Some(ByteString::try_from(read.slice(0..10)).expect("utf-8")),
            user_properties: vec![(
                ByteString::try_from(read.slice(10..13)).expect("utf-8"),
                ByteString::try_from(read.slice(13..18)).expect("utf-8"),
            )],
            ..PublishProperties::default()
        };
        let kept = forwarded(Some(decoded.clone())).expect("properties");
        assert_eq!(*kept, decoded);
        let buffer = read.as_ptr_range();
        let content_type = kept.content_type.as_ref().expect("content type");
        assert!(!buffer.contains(&content_type.as_bytes().as_ptr()));
        let (key, value) = &kept.user_properties[0];
        assert!(!buffer.contains(&key.as_bytes().as_ptr()));
        assert!(!buffer.contains(&value.as_bytes().as_ptr()));
    }

    #[test]
    fn expiry_counts_down_in_whole_seconds() {
        let p = publication(Some(5));
        assert_eq!(p.remaining_secs(10_000), Some(5));
        assert_eq!(p.remaining_secs(12_500), Some(2));
        assert!(!p.expired(14_999));
        assert!(p.expired(15_000));
        assert_eq!(publication(None).remaining_secs(99_999), None);
    }

    #[test]
    fn a_delivery_forwards_the_remaining_time_never_zero() {
        let delivery = Delivery {
            publication: Arc::new(publication(Some(5))),
            qos: QoS::AtMostOnce,
            retain: false,
            subscription_ids: vec![NonZeroU32::new(7).expect("non-zero")],
        };
        let packet = delivery.packet(None, false, 14_900);
        let props = packet.properties.expect("properties");
        assert_eq!(props.message_expiry_interval.map(|v| v.get()), Some(1));
        assert_eq!(props.subscription_ids.len(), 1);
    }
}
