//! Connectors beyond their record routes (the `connectors` system table is written through
//! `/svc/connectors` like any table): the status of one connector or all
//! (`GET …/{id}/status`, `GET …/status`); the test of an unsaved connector
//! (`POST /svc/connectors/test`) or a stored one with its stored password
//! (`POST /svc/connectors/{id}/test`): 200 with what the device says of itself, 503 naming
//! the cause within 10 s; one level of a connector's address space (`GET …/{id}/browse?node=`);
//! and the domain's list of OPC UA server certificates, trusted, rejected or waiting for an
//! administrator (`GET …/certificates`, `POST …/certificates/{thumbprint}/trust|reject`,
//! `DELETE …/certificates/{thumbprint}`).

use crate::connectors::kind::{BrowseEntry, Failure};
use crate::connectors::status::Status;
use crate::connectors::{config, FEATURE};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::AppState;
use crate::store::ServerCertificate;
use crate::store::CONNECTORS;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(statuses))
        .routes(routes!(status))
        .routes(routes!(test_unsaved))
        .routes(routes!(test_stored))
        .routes(routes!(browse))
        .routes(routes!(certificates))
        .routes(routes!(trust))
        .routes(routes!(reject))
        .routes(routes!(forget))
}

/// A connection failure as an answer: 503 naming the cause.
fn unavailable(failure: Failure) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("{}: {failure}", failure.kind.as_str()),
    )
}

#[utoipa::path(get, path = "/svc/connectors/status", tag = "connectors",
    responses((status = 200, description = "The status of each connector", body = Vec<Object>)))]
async fn statuses(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<Status>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    Ok(Json(state.connectors.statuses(&caller.domain)))
}

#[utoipa::path(get, path = "/svc/connectors/{id}/status", tag = "connectors",
    responses((status = 200, description = "The connector's status", body = Object)))]
async fn status(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Status>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let id = caller.own_record(&id, CONNECTORS, "connector")?;
    state
        .connectors
        .status(&caller.domain, &id.key)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no connector `{id}`")))
}

/// Connects a connector described in the body (password included) once; nothing is stored.
#[utoipa::path(post, path = "/svc/connectors/test", tag = "connectors", request_body = Object,
    responses((status = 200, description = "What the device says of itself", body = Object),
        (status = 503, description = "The device cannot be reached or refused, and why")))]
async fn test_unsaved(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(mut fields): JsonBody<Map<String, Value>>,
) -> ApiResult<Json<Value>> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    let password = crate::fields::take_password(&mut fields)
        .map_err(ApiError::bad_request)?
        .flatten();
    fields.remove("password_set");
    config::normalise(&mut fields).map_err(ApiError::bad_request)?;
    let started = std::time::Instant::now();
    let device = state
        .connectors
        .test(&caller.domain, &fields, password)
        .await
        .map_err(unavailable)?;
    Ok(Json(tested(device, started)))
}

/// Connects a stored connector of the caller's domain once, with its stored password.
#[utoipa::path(post, path = "/svc/connectors/{id}/test", tag = "connectors",
    responses((status = 200, description = "What the device says of itself", body = Object),
        (status = 503, description = "The device cannot be reached or refused, and why")))]
async fn test_stored(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    let id = caller.own_record(&id, CONNECTORS, "connector")?;
    let started = std::time::Instant::now();
    let device = state
        .connectors
        .test_stored(&caller.domain, &id.key)
        .await
        .ok_or_else(|| ApiError::not_found(format!("no connector `{id}`")))?
        .map_err(unavailable)?;
    Ok(Json(tested(device, started)))
}

/// The answer of a test that reached the device.
fn tested(device: Value, started: std::time::Instant) -> Value {
    json!({
        "ok": true,
        "latency_ms": started.elapsed().as_millis() as u64,
        "device": device,
    })
}

#[derive(Deserialize, utoipa::IntoParams)]
struct BrowseQuery {
    /// The node whose children to list (the Objects folder when absent).
    node: Option<String>,
}

/// One level of a stored connector's address space (OPC UA).
#[utoipa::path(get, path = "/svc/connectors/{id}/browse", tag = "connectors", params(BrowseQuery),
    responses((status = 200, description = "The children of the node", body = Vec<Object>),
        (status = 503, description = "The device cannot be reached or refused, and why")))]
async fn browse(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(query): Query<BrowseQuery>,
) -> ApiResult<Json<Vec<BrowseEntry>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let id = caller.own_record(&id, CONNECTORS, "connector")?;
    state
        .connectors
        .browse(&caller.domain, &id.key, query.node.as_deref())
        .await
        .ok_or_else(|| ApiError::not_found(format!("no connector `{id}`")))?
        .map(Json)
        .map_err(unavailable)
}

/// A server certificate as the list shows it.
#[derive(Serialize)]
struct Listed {
    #[serde(flatten)]
    certificate: ServerCertificate,
    first_seen: String,
    /// Subject, application URI, validity, when the certificate can be read.
    #[serde(flatten)]
    summary: Option<Value>,
    /// The DER, base64.
    der: String,
}

#[utoipa::path(get, path = "/svc/connectors/certificates", tag = "connectors",
    responses((status = 200, description = "Server certificates met: pending, trusted, rejected", body = Vec<Object>)))]
async fn certificates(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<Value>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let domain = caller.domain.to_string();
    let listed = state
        .store
        .run(move |s| s.server_certificates(&domain))
        .await?;
    use base64::Engine;
    Ok(Json(
        listed
            .into_iter()
            .map(|certificate| {
                let listed = Listed {
                    first_seen: crate::historian::format_ms(certificate.first_seen_ms),
                    summary: crate::connectors::describe_certificate(&certificate.der),
                    der: base64::engine::general_purpose::STANDARD.encode(&certificate.der),
                    certificate,
                };
                serde_json::to_value(listed).unwrap_or_default()
            })
            .collect(),
    ))
}

#[utoipa::path(post, path = "/svc/connectors/certificates/{thumbprint}/trust", tag = "connectors",
    responses((status = 200, description = "The certificate is trusted from now on", body = Object)))]
async fn trust(
    state: State<AppState>,
    caller: Caller,
    thumbprint: Path<String>,
) -> ApiResult<Json<Value>> {
    judge(state, caller, thumbprint, Some(true)).await
}

#[utoipa::path(post, path = "/svc/connectors/certificates/{thumbprint}/reject", tag = "connectors",
    responses((status = 200, description = "The certificate is rejected from now on", body = Object)))]
async fn reject(
    state: State<AppState>,
    caller: Caller,
    thumbprint: Path<String>,
) -> ApiResult<Json<Value>> {
    judge(state, caller, thumbprint, Some(false)).await
}

#[utoipa::path(delete, path = "/svc/connectors/certificates/{thumbprint}", tag = "connectors",
    responses((status = 200, description = "The certificate is no longer listed", body = Object)))]
async fn forget(
    state: State<AppState>,
    caller: Caller,
    thumbprint: Path<String>,
) -> ApiResult<Json<Value>> {
    judge(state, caller, thumbprint, None).await
}

/// Trusts, rejects or (with `None`) forgets a listed certificate, then restarts the domain's
/// connectors whose trust changed.
async fn judge(
    State(state): State<AppState>,
    caller: Caller,
    Path(thumbprint): Path<String>,
    trusted: Option<bool>,
) -> ApiResult<Json<Value>> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    let thumbprint = thumbprint.to_ascii_lowercase();
    if thumbprint.len() != 40 || !thumbprint.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::bad_request(
            "a certificate thumbprint is 40 hexadecimal digits (SHA-1)",
        ));
    }
    let (domain, print) = (caller.domain.to_string(), thumbprint.clone());
    let found = state
        .store
        .run(move |s| match trusted {
            Some(trusted) => s.judge_server_certificate(&domain, &print, trusted),
            None => s.forget_server_certificate(&domain, &print),
        })
        .await?;
    if !found {
        return Err(ApiError::not_found(format!(
            "no listed certificate `{thumbprint}`"
        )));
    }
    state.connectors.reload_domain(&caller.domain).await;
    let state_name = match trusted {
        Some(true) => "trusted",
        Some(false) => "rejected",
        None => "forgotten",
    };
    Ok(Json(json!({"thumbprint": thumbprint, "state": state_name})))
}
