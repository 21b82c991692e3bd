//! The `upstreams` system table: the brokers a domain's namespaces are bridged to, under the
//! `upstreams` feature. Every binding's local side, and a Sparkplug edge node's branch, lies in
//! the domain's namespaces; the
//! password is write-only (kept apart, the record says only `password_set`); a write
//! reconnects the domain's bridges.

use super::{keep_stored_on_null, require_own_namespaces, take_password_secret, SystemTable};
use crate::ids::TableRef;
use crate::server::error::ApiResult;
use crate::server::AppState;
use crate::upstream::config::{self as upstream, UPSTREAMS};
use async_trait::async_trait;
use serde_json::{json, Map, Value};

pub struct UpstreamsTable;

#[async_trait]
impl SystemTable for UpstreamsTable {
    fn name(&self) -> &'static str {
        UPSTREAMS
    }

    fn feature(&self) -> &'static str {
        upstream::FEATURE
    }

    fn definition(&self) -> Value {
        json!({
            "name": UPSTREAMS,
            "description": "upstream brokers the domain's namespaces are bridged to",
            "fields": [
                {"name": "name", "type": "string", "required": true},
                {"name": "description", "type": "string"},
                {"name": "enabled", "type": "boolean"},
                {"name": "protocol", "type": "string"},
                {"name": "host", "type": "string", "required": true},
                {"name": "port", "type": "number"},
                {"name": "path", "type": "string"},
                {"name": "client_id", "type": "string"},
                {"name": "mqtt_version", "type": "string"},
                {"name": "keep_alive", "type": "number"},
                {"name": "clean_start", "type": "boolean"},
                {"name": "session_expiry", "type": "number"},
                {"name": "username", "type": "string"},
                {"name": "password_set", "type": "boolean"},
                {"name": "tls", "type": "json"},
                {"name": "reconnect", "type": "json"},
                {"name": "buffer", "type": "json"},
                {"name": "bindings", "type": "json"},
                {"name": "sparkplug", "type": "json"}
            ],
            "indexDetails": [{"fields": ["name"], "isUnique": true}]
        })
    }

    /// Bindings are checked against the namespaces, so writes take the declaring lock too.
    fn claims_topics(&self) -> bool {
        true
    }

    /// Every binding's `local`, and `sparkplug.branch`, lies inside one of the domain's
    /// namespaces (400 naming the field).
    fn check_owner(
        &self,
        state: &AppState,
        domain: &str,
        fields: &Map<String, Value>,
    ) -> ApiResult<()> {
        let locals = upstream::binding_locals(fields)
            .into_iter()
            .map(|(i, local)| (format!("bindings[{i}].local"), local))
            .chain(
                upstream::sparkplug_branch(fields)
                    .map(|branch| ("sparkplug.branch".to_string(), branch)),
            );
        require_own_namespaces(state, domain, locals)
    }

    fn prepare_create(
        &self,
        fields: &mut Map<String, Value>,
        device: &str,
        domain: &str,
        _creator: &str,
    ) -> Result<(), String> {
        upstream::normalise(fields, device, domain)
    }

    fn prepare_update(
        &self,
        stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String> {
        keep_stored_on_null(stored, merged);
        upstream::normalise(merged, "", "")
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
            .run(move |s| s.set_upstream_password(&domain, &key, secret.as_deref()))
            .await?;
        Ok(())
    }

    async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()> {
        state.upstreams.reload_domain(domain).await;
        Ok(())
    }
}
