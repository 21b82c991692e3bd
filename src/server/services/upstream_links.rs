//! The server's side of the upstreams: the local broker as they see it. Messages from an
//! upstream are published like a client's, marked with the upstream they came from; a
//! Sparkplug edge node reads the tags of its branch (registry, units, last values), watches
//! their new values, and writes the tags its NCMDs name: to the device when a connector reads
//! the tag (as `POST /svc/tag/write` does), else published on the tag's topic.

use crate::broker::Broker;
use crate::server::services::last_values::LastValues;
use crate::server::services::namespace_index::covers;
use crate::server::services::tag_registry::TagRegistry;
use crate::upstream::relay::{Inbound, Local, LocalTag, TagChange};
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use tokio::sync::broadcast::error::RecvError;

pub struct LocalBroker {
    pub broker: Arc<OnceLock<Broker>>,
    pub tags: Arc<TagRegistry>,
    pub last_values: Arc<LastValues>,
    pub connectors: Arc<crate::connectors::supervisor::Supervisor>,
}

impl LocalBroker {
    fn broker(&self) -> Result<&Broker, String> {
        self.broker
            .get()
            .ok_or_else(|| "the MQTT broker is not running".to_string())
    }
}

#[async_trait::async_trait]
impl Local for LocalBroker {
    async fn publish(&self, origin: Arc<str>, message: Inbound) -> Result<(), String> {
        self.broker()?
            .publish_relayed(
                Some(origin),
                &message.topic,
                message.payload,
                message.qos,
                message.retain,
                message.hops,
            )
            .await
            .map_err(|e| e.to_string())
    }

    fn tags(&self, domain: &str, branch: &str) -> Vec<LocalTag> {
        self.tags
            .tags(domain)
            .into_iter()
            .filter(|tag| covers(branch, &tag.path))
            .map(|tag| LocalTag {
                last: self
                    .last_values
                    .latest(&tag.path)
                    .map(|v| (v.received_ms, v.payload)),
                unit: tag.unit,
                path: tag.path,
            })
            .collect()
    }

    fn changes(&self, domain: &str, branch: &str) -> BoxStream<'static, TagChange> {
        let watch = self.last_values.watch();
        let (tags, domain, branch) = (self.tags.clone(), Arc::<str>::from(domain), branch);
        let branch = Arc::<str>::from(branch);
        futures::stream::unfold(watch, move |mut watch| {
            let (tags, domain, branch) = (tags.clone(), domain.clone(), branch.clone());
            async move {
                loop {
                    match watch.recv().await {
                        Ok(value) => {
                            if covers(&branch, &value.topic) && tags.is_owner(&value.topic, &domain)
                            {
                                let change = TagChange::Value {
                                    topic: value.topic.clone(),
                                    received_ms: value.received_ms,
                                    payload: value.payload.clone(),
                                };
                                return Some((change, watch));
                            }
                        }
                        Err(RecvError::Lagged(_)) => return Some((TagChange::Lagged, watch)),
                        Err(RecvError::Closed) => return None,
                    }
                }
            }
        })
        .boxed()
    }

    fn tags_generation(&self) -> u64 {
        self.tags.generation()
    }

    async fn write_tag(
        &self,
        origin: Arc<str>,
        domain: &str,
        tag: &str,
        value: Value,
    ) -> Result<(), String> {
        if !self.tags.is_owner(tag, domain) {
            return Err(format!("`{tag}` is not a tag of domain `{domain}`"));
        }
        if let Some(result) = self.connectors.write(domain, tag, value.clone()).await {
            return result.map_err(|e| e.to_string());
        }
        let payload = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
        self.broker()?
            .publish_relayed(Some(origin), tag, Bytes::from(payload), 1, false, 0)
            .await
            .map_err(|e| e.to_string())
    }
}
