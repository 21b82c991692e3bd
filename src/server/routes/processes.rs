//! Function routes beyond the generic record routes of the `processes` table: execute a
//! function by name, list the domain's functions and replace a function's triggers (both
//! answered in the SDK's process shape, whose ids are RecordID objects `{Table, ID}`), and
//! read its run log.

use crate::functions::engine::Outcome;
use crate::functions::sdk::{sdk_references, sdk_view};
use crate::functions::{parse_triggers, ExecuteResponse, FunctionDef, RunRecord, PROCESSES};
use crate::ids::{is_record_key, RecordId, TableRef};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::services::automation::functions::Deployed;
use crate::server::services::checked_writes::update_checked;
use crate::server::services::system_tables::{record_by_name, FLOWS_TABLE, PROCESSES_TABLE};
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
        .routes(routes!(list))
        .routes(routes!(set_triggers))
        .routes(routes!(runs))
        .routes(routes!(call_endpoint, call_endpoint_get))
}

/// `POST /svc/processes/http/<endpoint>`: the function serving the endpoint in the caller's
/// domain runs with the request body (JSON, or null when empty) as its input and answers its
/// output; 422 with the reason when the code fails.
#[utoipa::path(post, path = "/svc/processes/http/{endpoint}", tag = "processes",
    request_body(content = Object, description = "The input given to the process (JSON)"),
    responses((status = 200, description = "What the process returned", body = Object)))]
async fn call_endpoint(
    state: State<AppState>,
    caller: Caller,
    Path(endpoint): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let input = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("the body is not JSON: {e}")))?
    };
    serve_endpoint(state, caller, endpoint, input).await
}

/// `GET /svc/processes/http/<endpoint>?a=1`: as POST, with the query as the input object.
#[utoipa::path(get, path = "/svc/processes/http/{endpoint}", tag = "processes",
    responses((status = 200, description = "What the process returned (the query is its input)", body = Object)))]
async fn call_endpoint_get(
    state: State<AppState>,
    caller: Caller,
    Path(endpoint): Path<String>,
    Query(query): Query<std::collections::BTreeMap<String, String>>,
) -> ApiResult<Json<Value>> {
    let input = Value::Object(
        query
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect(),
    );
    serve_endpoint(state, caller, endpoint, input).await
}

async fn serve_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    endpoint: String,
    input: Value,
) -> ApiResult<Json<Value>> {
    caller
        .require(&state, PROCESSES, "*", Access::Write)
        .await?;
    let deployed = state
        .automation
        .function_at_endpoint(&caller.domain, &endpoint)
        .ok_or_else(|| ApiError::not_found(format!("no process serves `{endpoint}`")))?;
    let (outcome, _) = call_http(&deployed, input).await?;
    Ok(Json(outcome.output))
}

/// Runs an enabled function for an HTTP caller: its outcome and duration, 409 when it is
/// disabled, 422 saying why the run failed.
async fn call_http(deployed: &Deployed, input: Value) -> ApiResult<(Outcome, u64)> {
    if !deployed.def.enabled {
        return Err(ApiError::conflict(format!(
            "function `{}` is disabled",
            deployed.def.name
        )));
    }
    let (result, duration_ms) = deployed
        .call(input, "http")
        .await
        .ok_or_else(|| ApiError::internal("the function's worker stopped"))?;
    let outcome = result.map_err(|failure| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            failure.explain(&deployed.def.limits()),
        )
    })?;
    Ok((outcome, duration_ms))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ExecuteRequest {
    name: String,
    #[serde(default)]
    input: Value,
}

/// Runs a function now and answers with its output, or 422 saying why it failed.
#[utoipa::path(post, path = "/svc/processes/execute", tag = "processes", request_body = ExecuteRequest,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "The run's result", body = Object)))]
async fn execute(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<ExecuteRequest>,
) -> ApiResult<Json<ExecuteResponse>> {
    caller
        .require(&state, PROCESSES, "*", Access::Write)
        .await?;
    let deployed = state
        .automation
        .function(&caller.domain, &request.name)
        .ok_or_else(|| ApiError::not_found(format!("no function `{}`", request.name)))?;
    let (outcome, duration_ms) = call_http(&deployed, request.input).await?;
    Ok(Json(ExecuteResponse {
        success: true,
        output: outcome.output,
        logs: outcome.logs,
        duration_ms,
    }))
}

/// The domain's functions, by name, in the SDK's process shape.
#[utoipa::path(get, path = "/svc/processes/domain", tag = "processes",
    responses((status = 200, description = "The domain's processes in the SDK's shape", body = Vec<crate::server::routes::openapi::Process>)))]
async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<Value>>> {
    caller.require(&state, PROCESSES, "*", Access::Read).await?;
    let table = TableRef::new(&caller.domain, PROCESSES).map_err(ApiError::bad_request)?;
    let query = crate::query::parse(&[("sort".into(), "name".into())])
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let records = state
        .store
        .run(move |s| s.list_records(&table, &query))
        .await?;
    Ok(Json(records.iter().map(sdk_shape).collect()))
}

/// A function record in the SDK's process shape (as stored, but for its references, when it
/// cannot be read as a function).
fn sdk_shape(record: &Value) -> Value {
    let Value::Object(fields) = record else {
        return record.clone();
    };
    match FunctionDef::from_fields(fields) {
        Ok(def) => sdk_view(fields, &def),
        Err(_) => {
            let mut view = fields.clone();
            sdk_references(&mut view);
            Value::Object(view)
        }
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct TriggersRequest {
    triggers: Value,
}

/// Replaces a function's triggers; `:id` is its RecordID (`<domain>.processes:<key>`, what the
/// SDK's `RecordIDToString` makes of the process's `id`), `processes:<key>` or its key.
#[utoipa::path(put, path = "/svc/processes/triggers/{id}", tag = "processes", request_body = TriggersRequest,
    params(("id" = String, Path, description = "The process's RecordID (`<domain>.processes:<key>`), `processes:<key>` or its key")),
    responses((status = 200, description = "The process with its new triggers, in the SDK's shape", body = crate::server::routes::openapi::Process),
        (status = 404, description = "No process of the domain has this id")))]
async fn set_triggers(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<TriggersRequest>,
) -> ApiResult<Json<Value>> {
    caller
        .require(&state, PROCESSES, "*", Access::Write)
        .await?;
    let table = TableRef::new(&caller.domain, PROCESSES).map_err(ApiError::bad_request)?;
    let key = function_key(&table, &id)?;
    let triggers = parse_triggers(request.triggers).map_err(ApiError::bad_request)?;
    let mut patch = Map::new();
    // The name (unchanged) tells the endpoint check which function asks.
    let (stored_table, stored_key) = (table.clone(), key.clone());
    let stored = state
        .store
        .run(move |s| s.get_record(&stored_table, &stored_key))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no function `{id}`")))?;
    if let Some(name) = stored.get("name") {
        patch.insert("name".into(), name.clone());
    }
    patch.insert(
        "triggers".into(),
        serde_json::to_value(triggers).map_err(|e| ApiError::internal(e.to_string()))?,
    );
    let updated = update_checked(&state, &table, &key, patch)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no function `{id}`")))?;
    Ok(Json(sdk_shape(&updated)))
}

/// A function's key from a RecordID of this domain's `processes` table, the table's name
/// without its domain (`processes:<key>`) or a bare key; another domain's id reads as absent.
fn function_key(table: &TableRef, id: &str) -> ApiResult<String> {
    let short = id
        .strip_prefix(PROCESSES)
        .and_then(|rest| rest.strip_prefix(':'));
    match short {
        Some(key) if is_record_key(key) => return Ok(key.to_string()),
        _ if is_record_key(id) => return Ok(id.to_string()),
        _ => {}
    }
    match RecordId::parse(id) {
        Ok(parsed) if parsed.table == *table => Ok(parsed.key),
        Ok(_) => Err(ApiError::not_found(format!("no function `{id}`"))),
        Err(_) => Err(ApiError::bad_request(format!(
            "invalid process id `{id}`: expected <domain>.{PROCESSES}:<key>, {PROCESSES}:<key> or the key"
        ))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    limit: Option<usize>,
}

impl RunsQuery {
    pub fn limit(&self) -> ApiResult<usize> {
        match self.limit {
            None => Ok(100),
            Some(n @ 1..=1000) => Ok(n),
            Some(_) => Err(ApiError::bad_request("`limit` must be 1 to 1000")),
        }
    }
}

/// A function's newest runs, newest first.
#[utoipa::path(get, path = "/svc/processes/runs/{name}", tag = "processes",
    params(("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "At most this many runs")),
    responses((status = 200, description = "The process's recent runs, newest first", body = Vec<Object>)))]
async fn runs(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(query): Query<RunsQuery>,
) -> ApiResult<Json<Vec<RunRecord>>> {
    run_log(&state, &caller, RunOwner::Function, name, query).await
}

/// The newest runs of a function or flow of the caller's domain, newest first.
pub(in crate::server) async fn run_log(
    state: &AppState,
    caller: &Caller,
    owner: RunOwner,
    name: String,
    query: RunsQuery,
) -> ApiResult<Json<Vec<RunRecord>>> {
    let table = match owner {
        RunOwner::Function => PROCESSES_TABLE,
        RunOwner::Flow => FLOWS_TABLE,
    };
    caller
        .require(state, table.feature(), "*", Access::Read)
        .await?;
    let limit = query.limit()?;
    if record_by_name(state, table, &caller.domain, &name)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found(format!(
            "no {} `{name}`",
            owner.as_str()
        )));
    }
    // Runs are logged without their callers waiting: every run whose call has returned is
    // written before the log is read.
    state.automation.run_log.settled().await;
    let domain = caller.domain.clone();
    let runs = state
        .store
        .run(move |s| s.runs(&domain, owner, &name, limit))
        .await?;
    Ok(Json(runs))
}
