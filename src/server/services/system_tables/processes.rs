//! The `processes` system table: a domain's functions (sandboxed code and its triggers), under
//! the `processes` feature. The code must compile; a changed code bumps the version (whose
//! code is kept for the run log); a name never changes; HTTP endpoints are unique in the
//! domain; a write redeploys the domain's functions.

use super::SystemTable;
use crate::functions::{FunctionDef, Trigger, CREATED_BY, PROCESSES};
use crate::server::error::{ApiError, ApiResult};
use crate::server::AppState;
use async_trait::async_trait;
use serde_json::{json, Map, Value};

pub struct ProcessesTable;

#[async_trait]
impl SystemTable for ProcessesTable {
    fn name(&self) -> &'static str {
        PROCESSES
    }

    fn feature(&self) -> &'static str {
        PROCESSES
    }

    fn definition(&self) -> Value {
        json!({
            "name": PROCESSES,
            "description": "functions of the domain: sandboxed code and its triggers",
            "fields": [
                {"name": "name", "type": "string", "required": true},
                {"name": "language", "type": "string"},
                {"name": "code", "type": "string", "required": true},
                {"name": "enabled", "type": "boolean"},
                {"name": "version", "type": "number"},
                {"name": "triggers", "type": "json"},
                {"name": "timeout_ms", "type": "number"},
                {"name": "memory_mb", "type": "number"}
            ],
            "indexDetails": [{"fields": ["name"], "isUnique": true}]
        })
    }

    /// The HTTP endpoints of a function's triggers are its own in the domain (409 naming the
    /// function that serves one already).
    fn check_owner(
        &self,
        state: &AppState,
        domain: &str,
        fields: &Map<String, Value>,
    ) -> ApiResult<()> {
        let Some(triggers) = fields.get("triggers") else {
            return Ok(());
        };
        let name = fields
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let triggers =
            crate::functions::parse_triggers(triggers.clone()).map_err(ApiError::bad_request)?;
        for trigger in triggers {
            let Trigger::Http {
                endpoint: Some(endpoint),
            } = trigger
            else {
                continue;
            };
            if let Some(other) = state.automation.function_at_endpoint(domain, &endpoint) {
                if other.def.name != name {
                    return Err(ApiError::conflict(format!(
                        "the endpoint `{endpoint}` is served by function `{}` already",
                        other.def.name
                    )));
                }
            }
        }
        Ok(())
    }

    fn prepare_create(
        &self,
        fields: &mut Map<String, Value>,
        _device: &str,
        _domain: &str,
        creator: &str,
    ) -> Result<(), String> {
        let mut def = checked_function(fields)?;
        def.version = 1;
        *fields = def.to_fields();
        fields.insert(CREATED_BY.into(), Value::String(creator.to_string()));
        Ok(())
    }

    fn prepare_update(
        &self,
        stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String> {
        let mut def = checked_function(merged)?;
        if let Ok(before) = FunctionDef::from_fields(stored) {
            if before.name != def.name {
                return Err("a function cannot be renamed; create a new one".into());
            }
            def.version = if before.code_differs(&def) {
                before.version + 1
            } else {
                before.version
            };
        }
        *merged = def.to_fields();
        // Who created it stays what svc recorded, whatever the update says.
        if let Some(creator) = stored.get(CREATED_BY) {
            merged.insert(CREATED_BY.into(), creator.clone());
        }
        Ok(())
    }

    /// Keeps the code of the version just written, for the run log's versions.
    async fn written(&self, state: &AppState, domain: &str, record: &Value) -> ApiResult<()> {
        let Some(def) = record
            .as_object()
            .and_then(|fields| FunctionDef::from_fields(fields).ok())
        else {
            return Ok(());
        };
        let version = def.version_now();
        let domain = domain.to_string();
        state
            .store
            .run(move |s| s.keep_code_version(&domain, &def.name, &version))
            .await?;
        Ok(())
    }

    /// Forgets the function's kept versions and runs.
    async fn deleted(&self, state: &AppState, domain: &str, record: &Value) -> ApiResult<()> {
        if let Some(name) = record.get("name").and_then(Value::as_str) {
            let (domain, name) = (domain.to_string(), name.to_string());
            state
                .store
                .run(move |s| s.forget_function(&domain, &name))
                .await?;
        }
        Ok(())
    }

    async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()> {
        state.automation.reload(state, domain).await
    }
}

/// A function record's definition, checked, code included.
fn checked_function(fields: &Map<String, Value>) -> Result<FunctionDef, String> {
    let def = FunctionDef::from_fields(fields)?;
    def.check_code()?;
    Ok(def)
}
