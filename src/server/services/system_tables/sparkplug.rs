//! The `sparkplug` system table: a domain's Sparkplug host applications, under the
//! `sparkplug` feature. Each names the namespace its edge nodes' metrics become tags in (which
//! must lie in the domain's namespaces), the groups it takes, and its primary host id; a write
//! reloads the domain's hosts and announces or withdraws their STATE.

use super::{keep_stored_on_null, require_own_namespaces, SystemTable};
use crate::server::error::ApiResult;
use crate::server::services::sparkplug::reload_domain;
use crate::server::AppState;
use crate::sparkplug::config::{normalise, FEATURE, TABLE};
use async_trait::async_trait;
use serde_json::{json, Map, Value};

pub struct SparkplugTable;

#[async_trait]
impl SystemTable for SparkplugTable {
    fn name(&self) -> &'static str {
        TABLE
    }

    fn feature(&self) -> &'static str {
        FEATURE
    }

    fn definition(&self) -> Value {
        json!({
            "name": TABLE,
            "description": "Sparkplug B host applications: edge nodes' metrics as the domain's tags",
            "fields": [
                {"name": "name", "type": "string", "required": true},
                {"name": "description", "type": "string"},
                {"name": "enabled", "type": "boolean"},
                {"name": "namespace", "type": "string", "required": true},
                {"name": "groups", "type": "json"},
                {"name": "tag_template", "type": "string"},
                {"name": "historize", "type": "boolean"},
                {"name": "host_id", "type": "string"},
                {"name": "rebirth_throttle", "type": "string"}
            ],
            "indexDetails": [{"fields": ["name"], "isUnique": true}]
        })
    }

    /// The namespace is checked against the domain's, so writes take the declaring lock.
    fn claims_topics(&self) -> bool {
        true
    }

    /// The metrics' namespace lies inside one of the domain's namespaces (400 naming it); an
    /// update that leaves it alone keeps the stored one, checked when it was written.
    fn check_owner(
        &self,
        state: &AppState,
        domain: &str,
        fields: &Map<String, Value>,
    ) -> ApiResult<()> {
        let namespace = fields.get("namespace").and_then(Value::as_str);
        let checked = namespace.map(|n| ("namespace".to_string(), n.to_string()));
        require_own_namespaces(state, domain, checked)
    }

    fn prepare_create(
        &self,
        fields: &mut Map<String, Value>,
        _device: &str,
        _domain: &str,
        _creator: &str,
    ) -> Result<(), String> {
        normalise(fields)
    }

    fn prepare_update(
        &self,
        stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String> {
        keep_stored_on_null(stored, merged);
        normalise(merged)
    }

    async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()> {
        reload_domain(state, domain).await
    }
}
