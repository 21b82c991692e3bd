//! Flow routes beyond the generic record routes of the `flows` table: start and stop a flow,
//! inject a message by hand, and read its run log.

use crate::flows::FlowExecution;
use crate::functions::RunRecord;
use crate::ids::TableRef;
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::routes::processes::{run_log, RunsQuery};
use crate::server::services::checked_writes::update_checked;
use crate::server::services::system_tables::{record_by_name, record_key, FLOWS, FLOWS_TABLE};
use crate::server::AppState;
use crate::store::RunOwner;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(execute))
        .routes(routes!(start))
        .routes(routes!(stop))
        .routes(routes!(runs))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ExecuteRequest {
    name: String,
    #[serde(default)]
    input: Value,
    /// The node to inject at; default: the flow's inject nodes, else its tag-in nodes.
    node: Option<String>,
}

/// Injects `input` as a message's payload and waits for everything it causes (delays
/// included) to finish; answers with the debug output, or 422 naming the node that failed.
#[utoipa::path(post, path = "/svc/flows/execute", tag = "flows", request_body = ExecuteRequest,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "What the injected message caused", body = Object)))]
async fn execute(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<ExecuteRequest>,
) -> ApiResult<Json<FlowExecution>> {
    caller.require(&state, FLOWS, "*", Access::Write).await?;
    let record = flow_record(&state, &caller, &request.name).await?;
    let running = match state.automation.flow(&caller.domain, &request.name) {
        Some(running) => running,
        None => state
            .automation
            .standalone_flow(&state, &caller.domain, &record)
            .ok_or_else(|| ApiError::internal("the stored flow is not valid any more"))?,
    };
    let execution = running
        .execute(request.input, request.node.as_deref())
        .await
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e))?;
    Ok(Json(execution))
}

async fn flow_record(state: &AppState, caller: &Caller, name: &str) -> ApiResult<Value> {
    record_by_name(state, FLOWS_TABLE, &caller.domain, name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no flow `{name}`")))
}

async fn set_running(
    state: &AppState,
    caller: &Caller,
    name: &str,
    running: bool,
) -> ApiResult<Json<Value>> {
    caller.require(state, FLOWS, "*", Access::Write).await?;
    let record = flow_record(state, caller, name).await?;
    let key = record_key(&record)?;
    let table = TableRef::new(&caller.domain, FLOWS).map_err(ApiError::bad_request)?;
    let mut patch = Map::new();
    patch.insert("running".into(), Value::Bool(running));
    let updated = update_checked(state, &table, &key, patch)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no flow `{name}`")))?;
    Ok(Json(updated))
}

#[utoipa::path(post, path = "/svc/flows/{name}/start", tag = "flows",
    responses((status = 200, description = "The flow's record, now running", body = crate::server::routes::openapi::Record)))]
async fn start(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    set_running(&state, &caller, &name, true).await
}

#[utoipa::path(post, path = "/svc/flows/{name}/stop", tag = "flows",
    responses((status = 200, description = "The flow's record, now stopped", body = crate::server::routes::openapi::Record)))]
async fn stop(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    set_running(&state, &caller, &name, false).await
}

/// A flow's newest runs (manual executions and messages that reached a debug node or failed).
#[utoipa::path(get, path = "/svc/flows/{name}/runs", tag = "flows",
    params(("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "At most this many runs")),
    responses((status = 200, description = "The flow's recent runs, newest first", body = Vec<Object>)))]
async fn runs(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(query): Query<RunsQuery>,
) -> ApiResult<Json<Vec<RunRecord>>> {
    run_log(&state, &caller, RunOwner::Flow, name, query).await
}
