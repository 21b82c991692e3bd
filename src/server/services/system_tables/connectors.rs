//! The `connectors` system table: the devices (OPC UA servers, Modbus TCP devices) a domain
//! reads into its tags, under the `connectors` feature. Every point's tag and write topic lie
//! in the domain's namespaces; the password is write-only (kept apart, the record says only
//! `password_set`); a write creates the points' missing tags with their `historize`, `unit`
//! and compression, then restarts the domain's changed connectors.

use super::tags::declare_missing;
use super::{keep_stored_on_null, require_own_namespaces, take_password_secret, SystemTable};
use crate::connectors::{config, FEATURE};
use crate::ids::TableRef;
use crate::server::error::ApiResult;
use crate::server::AppState;
use crate::store::CONNECTORS;
use async_trait::async_trait;
use serde_json::{json, Map, Value};

pub struct ConnectorsTable;

#[async_trait]
impl SystemTable for ConnectorsTable {
    fn name(&self) -> &'static str {
        CONNECTORS
    }

    fn feature(&self) -> &'static str {
        FEATURE
    }

    fn definition(&self) -> Value {
        json!({
            "name": CONNECTORS,
            "description": "devices (OPC UA, Modbus TCP) read into the domain's tags and written back",
            "fields": [
                {"name": "name", "type": "string", "required": true},
                {"name": "description", "type": "string"},
                {"name": "kind", "type": "string", "required": true},
                {"name": "enabled", "type": "boolean"},
                {"name": "settings", "type": "json"},
                {"name": "password_set", "type": "boolean"},
                {"name": "reconnect", "type": "json"},
                {"name": "points", "type": "json"}
            ],
            "indexDetails": [{"fields": ["name"], "isUnique": true}]
        })
    }

    /// Points are checked against the namespaces, so writes take the declaring lock too.
    fn claims_topics(&self) -> bool {
        true
    }

    /// Every point's tag and write topic lie inside one of the domain's namespaces (400
    /// naming the field).
    fn check_owner(
        &self,
        state: &AppState,
        domain: &str,
        fields: &Map<String, Value>,
    ) -> ApiResult<()> {
        require_own_namespaces(state, domain, config::point_topics(fields))
    }

    fn prepare_create(
        &self,
        fields: &mut Map<String, Value>,
        _device: &str,
        _domain: &str,
        _creator: &str,
    ) -> Result<(), String> {
        config::normalise(fields)
    }

    fn prepare_update(
        &self,
        stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String> {
        keep_stored_on_null(stored, merged);
        config::normalise(merged)
    }

    /// The `password`; a `password_set` in the body is never taken as it is.
    fn take_secret(&self, fields: &mut Map<String, Value>) -> ApiResult<Option<Option<String>>> {
        take_password_secret(fields)
    }

    async fn keep_secret(
        &self,
        state: &AppState,
        table: &TableRef,
        key: &str,
        secret: Option<String>,
    ) -> ApiResult<()> {
        let (domain, key) = (table.domain.clone(), key.to_string());
        state
            .store
            .run(move |s| s.set_connector_password(&domain, &key, secret.as_deref()))
            .await?;
        Ok(())
    }

    /// Creates the tags the points name that the domain does not have yet, in one
    /// transaction (a connector may bring thousands).
    async fn written(&self, state: &AppState, domain: &str, record: &Value) -> ApiResult<()> {
        let Some(points) = record.get("points").and_then(Value::as_array) else {
            return Ok(());
        };
        let tags = points
            .iter()
            .filter_map(|point| {
                let tag = point.get("tag").and_then(Value::as_str)?;
                let mut fields = Map::new();
                fields.insert("path".into(), json!(tag));
                for member in ["historize", "unit", "compression", "description"] {
                    if let Some(value) = point.get(member).filter(|v| !v.is_null()) {
                        fields.insert(member.into(), value.clone());
                    }
                }
                Some(fields)
            })
            .collect();
        declare_missing(state, domain, tags).await
    }

    async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()> {
        state.connectors.reload_domain(domain).await;
        Ok(())
    }
}
