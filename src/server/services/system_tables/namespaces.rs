//! The `namespaces` system table: a domain's branches of the Unified Namespace (a name and a
//! topic prefix), under the `namespace` feature. A path may not overlap another domain's
//! namespaces or tags; a write reloads the namespace index.

use super::SystemTable;
use crate::server::error::{ApiError, ApiResult};
use crate::server::services::namespace_index::check_path;
use crate::server::AppState;
use crate::store::NAMESPACES;
use async_trait::async_trait;
use serde_json::{json, Map, Value};

/// The permission feature of namespaces (domain scope `*`).
pub const NAMESPACE_FEATURE: &str = "namespace";

pub struct NamespacesTable;

#[async_trait]
impl SystemTable for NamespacesTable {
    fn name(&self) -> &'static str {
        NAMESPACES
    }

    fn feature(&self) -> &'static str {
        NAMESPACE_FEATURE
    }

    fn definition(&self) -> Value {
        json!({
            "name": NAMESPACES,
            "description": "namespaces of the domain: its branches of the Unified Namespace",
            "fields": [
                {"name": "name", "type": "string", "required": true},
                {"name": "path", "type": "string", "required": true},
                {"name": "description", "type": "string"}
            ],
            "indexDetails": [
                {"fields": ["name"], "isUnique": true},
                {"fields": ["path"], "isUnique": true}
            ]
        })
    }

    fn claims_topics(&self) -> bool {
        true
    }

    /// A namespace may not overlap another domain's namespace or tags (409 naming the owner).
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
                .may_claim_namespace(domain, path)
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
        check_namespace(fields)
    }

    fn prepare_update(
        &self,
        _stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String> {
        check_namespace(merged)
    }

    async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()> {
        Ok(state
            .uns
            .tags
            .reload_namespaces(&state.store, domain)
            .await?)
    }
}

/// A namespace record: a name and a path that is a topic prefix (no wildcards).
fn check_namespace(fields: &Map<String, Value>) -> Result<(), String> {
    match fields.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => {}
        _ => return Err("field `name` is required and must be a non-empty string".into()),
    }
    match fields.get("path") {
        Some(Value::String(path)) => check_path(path),
        _ => {
            Err("field `path` is required and must be a topic prefix such as `acme/plant1`".into())
        }
    }
}
