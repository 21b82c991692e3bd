//! MQTT 3.1.1 (protocol level 4) on an upstream connection: the bridge works in MQTT 5 packets, and a 3.1.1
//! connection converts what it reads into their MQTT 5 form and what it writes into the 3.1.1
//! form (properties dropped, reason codes reduced to what 3.1.1 can say).

use rmqtt_codec::types::QoS;
use rmqtt_codec::{v3, v5};

/// An MQTT 3.1.1 packet from the upstream in its MQTT 5 form.
pub(super) fn from_v3(packet: v3::Packet) -> v5::Packet {
    use v3::Packet as P;
    let ack = |packet_id| v5::PublishAck {
        packet_id,
        reason_code: v5::PublishAckReason::Success,
        properties: Vec::new(),
        reason_string: None,
    };
    let ack2 = |packet_id| v5::PublishAck2 {
        packet_id,
        reason_code: v5::PublishAck2Reason::Success,
        properties: Vec::new(),
        reason_string: None,
    };
    match packet {
        P::Publish(publish) => v5::Packet::Publish(publish),
        P::PublishAck { packet_id } => v5::Packet::PublishAck(ack(packet_id)),
        P::PublishReceived { packet_id } => v5::Packet::PublishReceived(ack(packet_id)),
        P::PublishRelease { packet_id } => v5::Packet::PublishRelease(ack2(packet_id)),
        P::PublishComplete { packet_id } => v5::Packet::PublishComplete(ack2(packet_id)),
        P::SubscribeAck { packet_id, status } => v5::Packet::SubscribeAck(v5::SubscribeAck {
            packet_id,
            properties: Vec::new(),
            reason_string: None,
            status: status
                .into_iter()
                .map(|code| match code {
                    v3::SubscribeReturnCode::Success(QoS::AtMostOnce) => {
                        v5::SubscribeAckReason::GrantedQos0
                    }
                    v3::SubscribeReturnCode::Success(QoS::AtLeastOnce) => {
                        v5::SubscribeAckReason::GrantedQos1
                    }
                    v3::SubscribeReturnCode::Success(QoS::ExactlyOnce) => {
                        v5::SubscribeAckReason::GrantedQos2
                    }
                    v3::SubscribeReturnCode::Failure => v5::SubscribeAckReason::UnspecifiedError,
                })
                .collect(),
        }),
        P::PingResponse => v5::Packet::PingResponse,
        _ => v5::Packet::PingRequest,
    }
}

/// A packet the bridge sends, in its MQTT 3.1.1 form.
pub(super) fn to_v3(packet: v5::Packet) -> Option<v3::Packet> {
    use v5::Packet as P;
    Some(match packet {
        P::Publish(mut publish) => {
            publish.properties = None;
            v3::Packet::Publish(publish)
        }
        P::PublishAck(ack) => v3::Packet::PublishAck {
            packet_id: ack.packet_id,
        },
        P::PublishReceived(ack) => v3::Packet::PublishReceived {
            packet_id: ack.packet_id,
        },
        P::PublishRelease(ack) => v3::Packet::PublishRelease {
            packet_id: ack.packet_id,
        },
        P::PublishComplete(ack) => v3::Packet::PublishComplete {
            packet_id: ack.packet_id,
        },
        P::Subscribe(subscribe) => v3::Packet::Subscribe {
            packet_id: subscribe.packet_id,
            topic_filters: subscribe
                .topic_filters
                .into_iter()
                .map(|(filter, options)| (filter, options.qos))
                .collect(),
        },
        P::PingRequest => v3::Packet::PingRequest,
        P::Disconnect(_) => v3::Packet::Disconnect,
        _ => return None,
    })
}
