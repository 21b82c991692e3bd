//! The `flows` system table: a domain's flows (graphs of nodes run by svc), under the `flows`
//! feature. The graph must parse and its function nodes compile; a name never changes; a
//! write redeploys the domain's flows.

use super::SystemTable;
use crate::flows::graph;
use crate::functions::engine;
use crate::server::error::ApiResult;
use crate::server::AppState;
use async_trait::async_trait;
use serde_json::{json, Map, Value};

/// Name of the per-domain system table holding flows, and its permission feature.
pub const FLOWS: &str = "flows";

pub struct FlowsTable;

#[async_trait]
impl SystemTable for FlowsTable {
    fn name(&self) -> &'static str {
        FLOWS
    }

    fn feature(&self) -> &'static str {
        FLOWS
    }

    fn definition(&self) -> Value {
        json!({
            "name": FLOWS,
            "description": "flows of the domain: graphs of nodes run by svc",
            "fields": [
                {"name": "name", "type": "string", "required": true},
                {"name": "description", "type": "string"},
                {"name": "nodes", "type": "json", "required": true},
                {"name": "running", "type": "boolean"}
            ],
            "indexDetails": [{"fields": ["name"], "isUnique": true}]
        })
    }

    fn prepare_create(
        &self,
        fields: &mut Map<String, Value>,
        _device: &str,
        _domain: &str,
        _creator: &str,
    ) -> Result<(), String> {
        check_flow(fields)
    }

    fn prepare_update(
        &self,
        stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String> {
        if stored.get("name") != merged.get("name") {
            return Err("a flow cannot be renamed; create a new one".into());
        }
        check_flow(merged)
    }

    async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()> {
        state.automation.reload(state, domain).await
    }
}

/// A flow record: a valid graph (whose function nodes compile), plus `running`.
fn check_flow(fields: &mut Map<String, Value>) -> Result<(), String> {
    let running = match fields.remove("running") {
        None => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err("field `running` must be a boolean".into()),
    };
    for system in ["id", "created_dt", "updated_dt"] {
        fields.remove(system);
    }
    let flow =
        graph::parse(&Value::Object(fields.clone()), &check_js).map_err(|e| e.to_string())?;
    let Value::Object(mut normalised) = flow.to_json() else {
        return Err("the flow cannot be encoded".into());
    };
    normalised.insert("running".into(), Value::Bool(running));
    *fields = normalised;
    Ok(())
}

/// Syntax check of a flow's function node.
fn check_js(code: &str) -> Result<(), String> {
    engine::check(&engine::Source {
        code,
        modules: &Default::default(),
        module: false,
    })
}
