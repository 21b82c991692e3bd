//! Tags: the per-domain `tags` system table (path, historize, description, unit), its rules,
//! the in-memory registry of which domains declare a topic, and the tag list route.

use super::caller::{Access, Caller};
use super::error::{ApiError, ApiResult};
use super::json::JsonBody;
use super::AppState;
use crate::ids::TableRef;
use crate::ids::ADMIN_DOMAIN;
use crate::model::{Success, TagValue};
use crate::schema::Collection;
use crate::store::{Store, StoreError, StoreResult, TAGS};
use crate::topic::validate_topic_name;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::RwLock;

pub const FEATURE: &str = "tags";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/svc/tag/list", get(list))
        .route("/svc/tag/values", get(values))
        .route("/svc/tag/write", post(write))
}

/// The latest value of each tag of the domain that has had one since the server started.
async fn values(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<TagValue>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let values = state
        .tags
        .paths(&caller.domain, false)
        .into_iter()
        .filter_map(|topic| {
            state
                .last_values
                .get(&topic)
                .map(|(ts_ms, value)| TagValue {
                    timestamp: crate::historian::format_ms(ts_ms),
                    topic,
                    value,
                })
        })
        .collect();
    Ok(Json(values))
}

#[derive(Deserialize)]
struct WriteRequest {
    topic: String,
    value: Value,
    #[serde(default = "default_qos")]
    qos: u8,
    #[serde(default)]
    retain: bool,
}

fn default_qos() -> u8 {
    1
}

/// Publishes a value through the broker, as a device would: subscribers, the last-value store
/// and the historian all see it.
async fn write(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<WriteRequest>,
) -> ApiResult<Json<Success>> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    validate_topic_name(&request.topic).map_err(ApiError::bad_request)?;
    if request.qos > 2 {
        return Err(ApiError::bad_request("`qos` must be 0, 1 or 2"));
    }
    let declared = state
        .tags
        .owners(&request.topic)
        .iter()
        .any(|o| o.domain == caller.domain);
    if !declared && caller.domain != ADMIN_DOMAIN {
        return Err(ApiError::not_found(format!(
            "`{}` is not a tag of domain `{}`",
            request.topic, caller.domain
        )));
    }
    let payload = serde_json::to_vec(&request.value)
        .map_err(|_| ApiError::bad_request("`value` cannot be encoded"))?;
    state
        .broker()?
        .publish(&request.topic, payload.into(), request.qos, request.retain)
        .await
        .map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    Ok(Json(Success::yes()))
}

/// The latest value seen on every topic since the server started.
#[derive(Default)]
pub struct LastValues(RwLock<HashMap<String, (i64, Value)>>);

impl LastValues {
    pub fn set(&self, topic: &str, ts_ms: i64, value: Value) {
        if let Ok(mut values) = self.0.write() {
            match values.get_mut(topic) {
                Some(slot) => *slot = (ts_ms, value),
                None => {
                    values.insert(topic.to_string(), (ts_ms, value));
                }
            }
        }
    }

    pub fn get(&self, topic: &str) -> Option<(i64, Value)> {
        self.0.read().ok().and_then(|v| v.get(topic).cloned())
    }
}

async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<String>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    Ok(Json(state.tags.paths(&caller.domain, false)))
}

/// The schema every domain's `tags` table gets: typed fields and a unique path.
fn tags_collection() -> Collection {
    serde_json::from_value(json!({
        "name": TAGS,
        "description": "tags of the domain: MQTT topics, optionally historized",
        "fields": [
            {"name": "path", "type": "string", "required": true},
            {"name": "historize", "type": "boolean"},
            {"name": "description", "type": "string"},
            {"name": "unit", "type": "string"}
        ],
        "indexDetails": [{"fields": ["path"], "isUnique": true}]
    }))
    .unwrap_or_else(|_| unreachable!("the built-in tags collection is valid"))
}

/// Makes sure the domain's `tags` table has its schema (first tag write of a domain).
pub fn ensure_tags_collection(store: &Store, domain: &str) -> StoreResult<()> {
    let table = TableRef::new(domain, TAGS).map_err(StoreError::Invalid)?;
    if store.collection(&table)?.is_some() {
        return Ok(());
    }
    match store.create_collection(domain, &tags_collection()) {
        Ok(_) | Err(StoreError::Conflict(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Rules of a tag record beyond its schema: the path is a topic name; historize defaults off.
pub fn check_tag(fields: &Map<String, Value>) -> Result<(), String> {
    match fields.get("path") {
        Some(Value::String(path)) => validate_topic_name(path),
        _ => Err("field `path` is required and must be a topic name".into()),
    }
}

pub fn with_tag_defaults(fields: &mut Map<String, Value>) {
    fields.entry("historize").or_insert(Value::Bool(false));
}

/// A domain that declares a topic as a tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagOwner {
    pub domain: String,
    pub historize: bool,
}

/// Which domains declare each topic; reloaded per domain after every tag write.
#[derive(Default)]
pub struct TagRegistry {
    by_domain: RwLock<HashMap<String, Vec<(String, bool)>>>,
    by_topic: RwLock<HashMap<String, Vec<TagOwner>>>,
}

impl TagRegistry {
    /// Loads the tags of every domain.
    pub fn load(store: &Store) -> StoreResult<TagRegistry> {
        let registry = TagRegistry::default();
        for domain in store.list_domains()? {
            registry.replace_domain(&domain.name, store.tag_paths(&domain.name)?);
        }
        Ok(registry)
    }

    /// Re-reads one domain's tags after a write.
    pub async fn reload(&self, store: &Store, domain: &str) -> StoreResult<()> {
        let name = domain.to_string();
        let tags = store.run(move |s| s.tag_paths(&name)).await?;
        self.replace_domain(domain, tags);
        Ok(())
    }

    fn replace_domain(&self, domain: &str, tags: Vec<(String, bool)>) {
        let (Ok(mut by_domain), Ok(mut by_topic)) = (self.by_domain.write(), self.by_topic.write())
        else {
            return;
        };
        if let Some(old) = by_domain.get(domain) {
            for (path, _) in old {
                if let Some(owners) = by_topic.get_mut(path) {
                    owners.retain(|o| o.domain != domain);
                    if owners.is_empty() {
                        by_topic.remove(path);
                    }
                }
            }
        }
        for (path, historize) in &tags {
            by_topic.entry(path.clone()).or_default().push(TagOwner {
                domain: domain.to_string(),
                historize: *historize,
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
                        .filter(|(_, h)| *h || !historized_only)
                        .map(|(p, _)| p.clone())
                        .collect()
                })
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_tracks_domains_per_topic() {
        let registry = TagRegistry::default();
        registry.replace_domain("a", vec![("x/1".into(), true), ("x/2".into(), false)]);
        registry.replace_domain("b", vec![("x/1".into(), false)]);
        assert_eq!(registry.owners("x/1").len(), 2);
        assert_eq!(registry.paths("a", true), ["x/1"]);
        assert_eq!(registry.paths("a", false), ["x/1", "x/2"]);
        registry.replace_domain("a", vec![("x/2".into(), true)]);
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
    fn tag_rules() {
        let ok: Map<String, Value> = serde_json::from_value(json!({"path": "a/b"})).unwrap();
        assert!(check_tag(&ok).is_ok());
        let wild: Map<String, Value> = serde_json::from_value(json!({"path": "a/+"})).unwrap();
        assert!(check_tag(&wild).is_err());
        assert!(check_tag(&Map::new()).is_err());
        assert_eq!(tags_collection().name, TAGS);
    }
}
