//! Upstreams beyond their record routes (the `upstreams` system table is written through
//! `/svc/upstreams` like any table): the reachability test of an unsaved upstream
//! (`POST /svc/upstreams/test`) or a stored one (`POST /svc/upstreams/{id}/test`): 200 with the
//! latency, or 503 saying why the upstream cannot be reached or refused within 10 s; the
//! connection status of one upstream or all (`GET …/{id}/status`, `GET …/status`); and the
//! connect/disconnect switch (`POST …/{id}/connect|disconnect`, the record's `enabled`); the
//! other svc instances bridged to this one (`GET /svc/upstreams/downstreams`).

use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::services::checked_writes::update_checked;
use crate::server::AppState;
use crate::upstream::config::{self, FEATURE, UPSTREAMS};
use crate::upstream::connect::{Probe, Target};
use crate::upstream::supervisor::Status;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use serde_json::{Map, Value};
use std::time::Duration;
use utoipa_axum::{router::OpenApiRouter, routes};

/// How long a test waits for the upstream's CONNACK.
const TEST_LIMIT: Duration = Duration::from_secs(10);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(test_unsaved))
        .routes(routes!(test_stored))
        .routes(routes!(statuses))
        .routes(routes!(downstreams))
        .routes(routes!(status))
        .routes(routes!(connect))
        .routes(routes!(disconnect))
}

#[utoipa::path(get, path = "/svc/upstreams/status", tag = "upstreams",
    responses((status = 200, description = "The status of each upstream", body = Vec<Object>)))]
async fn statuses(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<Status>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    Ok(Json(state.upstreams.statuses(&caller.domain)))
}

/// One entry of `GET /svc/upstreams/downstreams`: another svc bridged to this one.
#[derive(Debug, Serialize)]
struct Downstream {
    client_id: String,
    /// `<domain>/<upstream name>` on the svc it comes from.
    upstream: String,
    address: String,
    since: String,
}

/// The other svc instances connected to this one as bridges (they announce themselves in
/// their CONNECT): those whose credential belongs to a user of the caller's domain, all of
/// them for administrators.
#[utoipa::path(get, path = "/svc/upstreams/downstreams", tag = "upstreams",
    responses((status = 200, description = "Other servers bridged to this one", body = Vec<Object>)))]
async fn downstreams(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<Downstream>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let mut listed = Vec::new();
    for bridge in state.broker()?.bridges() {
        let visible = caller.user.admin
            || (!bridge.user_key.is_empty()
                && state
                    .identities
                    .grants_of(&bridge.user_key, &caller.domain)
                    .await
                    .is_ok_and(|grants| !grants.0.is_empty()));
        if visible {
            listed.push(Downstream {
                client_id: bridge.client_id,
                upstream: bridge.announced,
                address: bridge.peer.to_string(),
                since: crate::historian::format_ms(bridge.since_ms),
            });
        }
    }
    Ok(Json(listed))
}

#[utoipa::path(get, path = "/svc/upstreams/{id}/status", tag = "upstreams",
    responses((status = 200, description = "The upstream's status", body = Object)))]
async fn status(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Status>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let id = caller.own_record(&id, UPSTREAMS, "upstream")?;
    state
        .upstreams
        .status(&caller.domain, &id.key)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no upstream `{id}`")))
}

#[utoipa::path(post, path = "/svc/upstreams/{id}/connect", tag = "upstreams",
    responses((status = 200, description = "The upstream's status, now enabled", body = Object)))]
async fn connect(
    state: State<AppState>,
    caller: Caller,
    id: Path<String>,
) -> ApiResult<Json<Status>> {
    switch(state, caller, id, true).await
}

#[utoipa::path(post, path = "/svc/upstreams/{id}/disconnect", tag = "upstreams",
    responses((status = 200, description = "The upstream's status, now disabled", body = Object)))]
async fn disconnect(
    state: State<AppState>,
    caller: Caller,
    id: Path<String>,
) -> ApiResult<Json<Status>> {
    switch(state, caller, id, false).await
}

/// Sets the record's `enabled` (so the switch survives a restart) and answers the status.
async fn switch(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    enabled: bool,
) -> ApiResult<Json<Status>> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    let id = caller.own_record(&id, UPSTREAMS, "upstream")?;
    let mut patch = Map::new();
    patch.insert("enabled".into(), Value::Bool(enabled));
    update_checked(&state, &id.table, &id.key, patch)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no upstream `{id}`")))?;
    state
        .upstreams
        .status(&caller.domain, &id.key)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no upstream `{id}`")))
}

/// Tests an upstream described in the body, password included; nothing is stored.
#[utoipa::path(post, path = "/svc/upstreams/test", tag = "upstreams", request_body = Object,
    responses((status = 200, description = "How the probe of the unsaved upstream went", body = Object)))]
async fn test_unsaved(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(mut fields): JsonBody<Map<String, Value>>,
) -> ApiResult<Json<Probe>> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    let password = crate::fields::take_password(&mut fields)
        .map_err(ApiError::bad_request)?
        .flatten();
    fields.remove("password_set");
    config::normalise(&mut fields, &state.settings.device_name, &caller.domain)
        .map_err(ApiError::bad_request)?;
    probe(Target::new(fields, password)).await
}

/// Tests a stored upstream of the caller's domain with its stored password.
#[utoipa::path(post, path = "/svc/upstreams/{id}/test", tag = "upstreams",
    responses((status = 200, description = "How the probe of the stored upstream went", body = Object)))]
async fn test_stored(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Probe>> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    let id = caller.own_record(&id, UPSTREAMS, "upstream")?;
    let (table, key) = (id.table.clone(), id.key.clone());
    let (record, password) = state
        .store
        .run(move |s| {
            let record = s.get_record(&table, &key)?;
            let password = s.upstream_password(&table.domain, &key)?;
            Ok((record, password))
        })
        .await?;
    let Some(Value::Object(mut fields)) = record else {
        return Err(ApiError::not_found(format!("no upstream `{id}`")));
    };
    for system in ["id", "created_dt", "updated_dt"] {
        fields.remove(system);
    }
    probe(Target::new(fields, password)).await
}

async fn probe(target: Target) -> ApiResult<Json<Probe>> {
    match target.probe(TEST_LIMIT).await {
        Ok(probe) => Ok(Json(probe)),
        Err(failure) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            failure.to_string(),
        )),
    }
}
