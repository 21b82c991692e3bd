//! `$share/<group>/<filter>` subscriptions: rmqtt ships no working strategy, so messages go
//! round-robin to the group's online members (or to one offline member's queue when none is
//! online).

use async_trait::async_trait;
use rmqtt::context::ServerContext;
use rmqtt::subscribe::SharedSubscription;
use rmqtt::types::{
    ClientId, Id, IsOnline, NodeId, SharedGroup, SubscriptionIdentifier, SubscriptionOptions,
    TopicName,
};
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Default)]
pub struct RoundRobin(AtomicUsize);

type Member = (
    NodeId,
    ClientId,
    SubscriptionOptions,
    Option<Vec<SubscriptionIdentifier>>,
    Option<IsOnline>,
);

#[async_trait]
impl SharedSubscription for RoundRobin {
    fn is_supported(&self) -> bool {
        true
    }

    async fn choice(
        &self,
        _scx: &ServerContext,
        _group: &SharedGroup,
        _publisher: &Id,
        _topic: &TopicName,
        members: &[Member],
    ) -> Option<(usize, IsOnline)> {
        if members.is_empty() {
            return None;
        }
        let start = self.0.fetch_add(1, Ordering::Relaxed);
        (0..members.len())
            .map(|k| (start + k) % members.len())
            .find(|&i| members[i].4.unwrap_or(true))
            .map(|i| (i, true))
            .or(Some((start % members.len(), false)))
    }
}
