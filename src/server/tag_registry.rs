//! In-memory views of the tags that the broker consults on every message: which domains declare
//! each topic (and whether they historize it), the latest value of every topic, and the
//! historian retention sweep.

use crate::duration::parse_duration;
use crate::historian::point_from_payload;
use crate::store::{Store, StoreResult, TagRow};
use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Duration;

/// A domain that declares a topic as a tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagOwner {
    pub domain: String,
    pub historize: bool,
}

/// Which domains declare each topic; reloaded per domain after every tag write.
#[derive(Default)]
pub struct TagRegistry {
    by_domain: RwLock<HashMap<String, Vec<TagRow>>>,
    by_topic: RwLock<HashMap<String, Vec<TagOwner>>>,
}

impl TagRegistry {
    /// Loads the tags of every domain.
    pub fn load(store: &Store) -> StoreResult<TagRegistry> {
        let registry = TagRegistry::default();
        for domain in store.list_domains()? {
            registry.replace_domain(&domain.name, store.tags_of(&domain.name)?);
        }
        Ok(registry)
    }

    /// Re-reads one domain's tags after a write.
    pub async fn reload(&self, store: &Store, domain: &str) -> StoreResult<()> {
        let name = domain.to_string();
        let tags = store.run(move |s| s.tags_of(&name)).await?;
        self.replace_domain(domain, tags);
        Ok(())
    }

    fn replace_domain(&self, domain: &str, tags: Vec<TagRow>) {
        let (Ok(mut by_domain), Ok(mut by_topic)) = (self.by_domain.write(), self.by_topic.write())
        else {
            return;
        };
        if let Some(old) = by_domain.get(domain) {
            for tag in old {
                if let Some(owners) = by_topic.get_mut(&tag.path) {
                    owners.retain(|o| o.domain != domain);
                    if owners.is_empty() {
                        by_topic.remove(&tag.path);
                    }
                }
            }
        }
        for tag in &tags {
            by_topic
                .entry(tag.path.clone())
                .or_default()
                .push(TagOwner {
                    domain: domain.to_string(),
                    historize: tag.historize,
                });
        }
        by_domain.insert(domain.to_string(), tags);
    }

    /// The domains declaring a topic (empty when none does).
    pub fn owners(&self, topic: &str) -> Vec<TagOwner> {
        self.by_topic
            .read()
            .ok()
            .and_then(|m| m.get(topic).cloned())
            .unwrap_or_default()
    }

    /// A domain's tag paths, sorted; only the historized ones when asked.
    pub fn paths(&self, domain: &str, historized_only: bool) -> Vec<String> {
        self.by_domain
            .read()
            .ok()
            .and_then(|m| {
                m.get(domain).map(|tags| {
                    tags.iter()
                        .filter(|t| t.historize || !historized_only)
                        .map(|t| t.path.clone())
                        .collect()
                })
            })
            .unwrap_or_default()
    }

    /// (domain, topic, retention) of every historized tag that has a retention, its own or the
    /// global one.
    pub fn retentions(&self, global: Option<Duration>) -> Vec<(String, String, Duration)> {
        let Ok(by_domain) = self.by_domain.read() else {
            return Vec::new();
        };
        by_domain
            .iter()
            .flat_map(|(domain, tags)| {
                tags.iter().filter(|t| t.historize).filter_map(move |t| {
                    let own = t.retention.as_deref().and_then(|r| parse_duration(r).ok());
                    own.or(global)
                        .map(|keep| (domain.clone(), t.path.clone(), keep))
                })
            })
            .collect()
    }
}

/// Deletes historian values older than each tag's retention; run periodically.
pub async fn sweep_retention(store: &Store, registry: &TagRegistry, global: Option<Duration>) {
    let now = chrono::Utc::now().timestamp_millis();
    for (domain, topic, keep) in registry.retentions(global) {
        let before = now.saturating_sub(i64::try_from(keep.as_millis()).unwrap_or(i64::MAX));
        let (d, t) = (domain.clone(), topic.clone());
        match store
            .run(move |s| s.history_delete_before(Some(&d), Some(&t), before))
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(domain, topic, deleted = n, "historian retention"),
            Err(e) => tracing::warn!(error = %e, domain, topic, "historian retention failed"),
        }
    }
}

/// The latest payload seen on every topic since the server started, kept raw: it is decoded
/// only when someone reads it, not on every message.
#[derive(Default)]
pub struct LastValues(RwLock<HashMap<String, (i64, Bytes)>>);

impl LastValues {
    pub fn set(&self, topic: &str, received_ms: i64, payload: Bytes) {
        if let Ok(mut values) = self.0.write() {
            match values.get_mut(topic) {
                Some(slot) => *slot = (received_ms, payload),
                None => {
                    values.insert(topic.to_string(), (received_ms, payload));
                }
            }
        }
    }

    /// The latest (timestamp, value) of a topic, by the historian's payload rules.
    pub fn get(&self, topic: &str) -> Option<(i64, Value)> {
        let (received_ms, payload) = self.0.read().ok()?.get(topic).cloned()?;
        Some(point_from_payload(&payload, received_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(path: &str, historize: bool, retention: Option<&str>) -> TagRow {
        TagRow {
            path: path.into(),
            historize,
            retention: retention.map(str::to_string),
        }
    }

    #[test]
    fn registry_tracks_domains_per_topic() {
        let registry = TagRegistry::default();
        registry.replace_domain("a", vec![tag("x/1", true, None), tag("x/2", false, None)]);
        registry.replace_domain("b", vec![tag("x/1", false, None)]);
        assert_eq!(registry.owners("x/1").len(), 2);
        assert_eq!(registry.paths("a", true), ["x/1"]);
        assert_eq!(registry.paths("a", false), ["x/1", "x/2"]);
        registry.replace_domain("a", vec![tag("x/2", true, None)]);
        assert_eq!(
            registry.owners("x/1"),
            [TagOwner {
                domain: "b".into(),
                historize: false
            }]
        );
        assert!(registry.owners("nope").is_empty());
    }

    #[test]
    fn retention_is_the_tags_own_or_the_global_one() {
        let registry = TagRegistry::default();
        registry.replace_domain(
            "a",
            vec![
                tag("own", true, Some("1h")),
                tag("global", true, None),
                tag("not_historized", false, Some("1h")),
            ],
        );
        let mut none = registry.retentions(None);
        none.sort();
        assert_eq!(
            none,
            [("a".into(), "own".into(), Duration::from_secs(3600))]
        );
        let mut all = registry.retentions(Some(Duration::from_secs(60)));
        all.sort();
        assert_eq!(
            all,
            [
                ("a".into(), "global".into(), Duration::from_secs(60)),
                ("a".into(), "own".into(), Duration::from_secs(3600)),
            ]
        );
    }

    #[tokio::test]
    async fn sweep_deletes_only_expired_values() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let now = chrono::Utc::now().timestamp_millis();
        let write = |ts_ms| crate::store::HistoryWrite {
            domain: "a".into(),
            topic: "own".into(),
            ts_ms,
            value: serde_json::json!(1),
        };
        store
            .append_history(&[write(now - 7_200_000), write(now - 60_000)])
            .unwrap();
        let registry = TagRegistry::default();
        registry.replace_domain("a", vec![tag("own", true, Some("1h"))]);
        sweep_retention(&store, &registry, None).await;
        let left = store.history_range("a", "own", 0, now + 1, None).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].ts_ms, now - 60_000);
    }
}
