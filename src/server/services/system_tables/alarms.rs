//! The `alarms` system table: a domain's alarm definitions, under the `alarms` feature. Each
//! watches one tag, which (like its enable tag) must lie in the domain's namespaces, so an
//! alarm can never read another domain's values; each record written or deleted is applied to
//! the domain's alarms on its own.

use super::{keep_stored_on_null, require_own_namespaces, SystemTable};
use crate::alarms::definition::normalise;
use crate::alarms::{FEATURE, TABLE};
use crate::server::error::ApiResult;
use crate::server::services::alarms::{refresh_record, reload_domain};
use crate::server::AppState;
use async_trait::async_trait;
use serde_json::{json, Map, Value};

pub struct AlarmsTable;

#[async_trait]
impl SystemTable for AlarmsTable {
    fn name(&self) -> &'static str {
        TABLE
    }

    fn feature(&self) -> &'static str {
        FEATURE
    }

    fn definition(&self) -> Value {
        json!({
            "name": TABLE,
            "description": "Alarms (ISA-18.2): one tag watched for a condition, with priority, delays and latching",
            "fields": [
                {"name": "name", "type": "string", "required": true},
                {"name": "description", "type": "string"},
                {"name": "notes", "type": "string"},
                {"name": "enabled", "type": "boolean"},
                {"name": "tag", "type": "string", "required": true},
                {"name": "kind", "type": "string", "required": true},
                {"name": "setpoint", "type": "json"},
                {"name": "deadband", "type": "number"},
                {"name": "on_delay", "type": "string"},
                {"name": "off_delay", "type": "string"},
                {"name": "priority", "type": "string"},
                {"name": "message", "type": "string"},
                {"name": "latching", "type": "boolean"},
                {"name": "enable_tag", "type": "string"},
                {"name": "enable_value", "type": "json"}
            ],
            "indexDetails": [{"fields": ["name"], "isUnique": true}]
        })
    }

    /// The tags are checked against the domain's namespaces, so writes take the declaring
    /// lock.
    fn claims_topics(&self) -> bool {
        true
    }

    /// The watched tag and the enable tag lie inside the domain's namespaces (400 naming the
    /// field); an update that leaves them alone keeps the stored ones, checked when written.
    fn check_owner(
        &self,
        state: &AppState,
        domain: &str,
        fields: &Map<String, Value>,
    ) -> ApiResult<()> {
        let topics = ["tag", "enable_tag"].into_iter().filter_map(|field| {
            let topic = fields.get(field)?.as_str()?;
            Some((field.to_string(), topic.to_string()))
        });
        require_own_namespaces(state, domain, topics)
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

    async fn refresh(&self, state: &AppState, domain: &str, record: &Value) -> ApiResult<()> {
        let id = record.get("id").and_then(Value::as_str).unwrap_or_default();
        refresh_record(state, domain, id).await
    }
}
