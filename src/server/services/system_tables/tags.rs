//! The `tags` system table: a domain's tags (path, historize, description, unit, retention,
//! compression), under the `tags` feature. A path may not be one another domain owns; a write
//! reloads the tag registry and drops the compression state of tags no longer compressed.

use super::SystemTable;
use crate::duration::parse_duration;
use crate::historian::compression::Compression;
use crate::ids::TableRef;
use crate::server::error::{ApiError, ApiResult};
use crate::server::services::historize;
use crate::server::AppState;
use crate::store::{RecordWrite, StoreError, TAGS};
use crate::topic::validate_topic_name;
use async_trait::async_trait;
use serde_json::{json, Map, Value};

/// The permission feature of tags (domain scope `*`): reading and writing them, over REST and
/// MQTT alike.
pub const TAGS_FEATURE: &str = "tags";

pub struct TagsTable;

#[async_trait]
impl SystemTable for TagsTable {
    fn name(&self) -> &'static str {
        TAGS
    }

    fn feature(&self) -> &'static str {
        TAGS_FEATURE
    }

    fn definition(&self) -> Value {
        json!({
            "name": TAGS,
            "description": "tags of the domain: MQTT topics, optionally historized",
            "fields": [
                {"name": "path", "type": "string", "required": true},
                {"name": "historize", "type": "boolean"},
                {"name": "description", "type": "string"},
                {"name": "unit", "type": "string"},
                {"name": "retention", "type": "string"},
                {"name": "compression", "type": "json"}
            ],
            "indexDetails": [{"fields": ["path"], "isUnique": true}]
        })
    }

    fn claims_topics(&self) -> bool {
        true
    }

    /// A tag may not take a path another domain owns (409, without naming it).
    fn check_owner(
        &self,
        state: &AppState,
        domain: &str,
        fields: &Map<String, Value>,
    ) -> ApiResult<()> {
        match fields.get("path").and_then(Value::as_str) {
            Some(path) => state
                .uns
                .tags
                .may_declare(domain, path)
                .map_err(ApiError::conflict),
            None => Ok(()),
        }
    }

    fn prepare_create(
        &self,
        fields: &mut Map<String, Value>,
        _device: &str,
        _domain: &str,
        _creator: &str,
    ) -> Result<(), String> {
        fields.entry("historize").or_insert(Value::Bool(false));
        check_tag(fields)
    }

    fn prepare_update(
        &self,
        _stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String> {
        check_tag(merged)
    }

    async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()> {
        state.uns.tags.reload(&state.store, domain).await?;
        historize::prune(state).await;
        Ok(())
    }
}

/// Creates, in one transaction, the tags of `domain` among `tags` (each a tag record's fields:
/// `path` and what else it sets) that the domain does not own yet, then reloads the registry
/// here and on the other instances. What brings tags of its own (a connector's points, a
/// Sparkplug BIRTH's metrics) declares them this way; thousands at once are one write.
/// A path another domain owns is skipped, as is one declared meanwhile by another write.
pub async fn declare_missing(
    state: &AppState,
    domain: &str,
    tags: Vec<Map<String, Value>>,
) -> ApiResult<()> {
    let table = TableRef::new(domain, TAGS).map_err(ApiError::internal)?;
    let mut writes = Vec::new();
    for mut fields in tags {
        let Some(path) = fields.get("path").and_then(Value::as_str) else {
            continue;
        };
        if state.uns.tags.is_owner(path, domain)
            || state.uns.tags.may_declare(domain, path).is_err()
        {
            continue;
        }
        TagsTable
            .prepare_create(&mut fields, "", domain, "")
            .map_err(ApiError::bad_request)?;
        writes.push(RecordWrite::Insert {
            table: table.clone(),
            key: crate::ids::new_key(),
            fields,
        });
    }
    if writes.is_empty() {
        return Ok(());
    }
    let owner = domain.to_string();
    let results = state
        .store
        .run(move |s| {
            let tags: &dyn SystemTable = &TagsTable;
            tags.ensure_collection(s, &owner)?;
            Ok(s.write_records(writes))
        })
        .await?;
    for result in results {
        match result {
            // Another write declared it meanwhile: the tag is there.
            Ok(_) | Err(StoreError::Conflict(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    TagsTable.reload(state, domain).await?;
    state.peers.changed(domain, &TagsTable).await;
    Ok(())
}

/// Rules of a tag record beyond its schema: the path is a topic name; historize defaults off;
/// `compression` is off, or settings the historian can apply.
fn check_tag(fields: &Map<String, Value>) -> Result<(), String> {
    match fields.get("path") {
        Some(Value::String(path)) => validate_topic_name(path)?,
        _ => return Err("field `path` is required and must be a topic name".into()),
    }
    if let Some(Value::String(text)) = fields.get("retention") {
        parse_duration(text).map_err(|e| format!("field `retention`: {e}"))?;
    }
    Compression::from_member(fields.get("compression")).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_rules() {
        let ok: Map<String, Value> = serde_json::from_value(json!({"path": "a/b"})).unwrap();
        assert!(check_tag(&ok).is_ok());
        let wild: Map<String, Value> = serde_json::from_value(json!({"path": "a/+"})).unwrap();
        assert!(check_tag(&wild).is_err());
        assert!(check_tag(&Map::new()).is_err());
        let compressed: Map<String, Value> =
            serde_json::from_value(json!({"path": "a/b", "compression": {"deviation": 0.1}}))
                .unwrap();
        assert!(check_tag(&compressed).is_ok());
        let bad: Map<String, Value> =
            serde_json::from_value(json!({"path": "a/b", "compression": {"deviation": -1}}))
                .unwrap();
        let err = check_tag(&bad).unwrap_err();
        assert!(err.contains("`compression.deviation`"), "{err}");
        assert_eq!(TagsTable.definition()["name"], TAGS);
    }
}
