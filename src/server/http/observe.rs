//! What watches every routed request (run by `middleware::correlate`, inside its timing): it
//! adds the request to the request log (`GET /svc/logs`) and, when the request is a successful
//! administrative change, writes the audit entry (`GET /svc/audit`) before the answer goes out.

use crate::ids::ADMIN_DOMAIN;
use crate::server::error::ApiError;
use crate::server::http::audit_trail::{self as audit, Change};
use crate::server::http::caller::{authenticate, domain_of, Authenticated, API_KEY_HEADER};
use crate::server::http::middleware::CorrelationId;
use crate::server::http::request_log::LogEntry;
use crate::server::AppState;
use crate::store::{AuditEntry, AuthUser};
use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Instant;

pub async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let time = crate::time::now_rfc3339();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    let correlation_id = request
        .extensions()
        .get::<CorrelationId>()
        .map(|c| c.0.clone())
        .unwrap_or_default();
    let (request, change) = match &route {
        Some(route) => classify(request, &state, route).await,
        None => (request, None),
    };
    let (mut request, body) = match change {
        Some(_) => match buffer_request(request, state.settings.max_body).await {
            Ok(pair) => pair,
            Err(refused) => return refused.into_response(),
        },
        None => (request, Bytes::new()),
    };
    // Who calls is settled before the request runs: revoking the very key a request carries
    // must still be put down to that key's owner.
    let headers = request.headers();
    let user = match has_credential(headers) {
        true => authenticate(&state, headers).await.ok(),
        false => None,
    };
    let domain = domain_of(headers).unwrap_or_else(|_| ADMIN_DOMAIN.to_string());
    let via = if headers.contains_key(header::AUTHORIZATION) {
        "token"
    } else {
        "api_key"
    };
    if let Some(user) = &user {
        request.extensions_mut().insert(Authenticated(user.clone()));
    }
    let mut response = next.run(request).await;
    if let (Some(change), true) = (change, response.status().is_success()) {
        if let Some(user) = &user {
            let who = Who {
                user: user.clone(),
                via,
            };
            let (answer, id) = created_resource(response, &change, &body).await;
            response = answer;
            let entry = AuditEntry {
                id: 0,
                time: time.clone(),
                domain: domain.clone(),
                user_id: who.user.id(),
                username: who.user.username.clone(),
                via: who.via.to_string(),
                action: change.action,
                resource_type: change.resource_type,
                resource_id: id,
                summary: audit::summary(&body),
                correlation_id: correlation_id.clone(),
            };
            // The change is made; a failed audit write is logged, not turned into an error.
            if let Err(e) = state.store.run(move |s| s.record_audit(&entry)).await {
                tracing::error!(error = %e, correlation_id, "cannot write the audit entry");
            }
        }
    }
    state.request_log.push(LogEntry {
        time,
        correlation_id: correlation_id.clone(),
        method: method.to_string(),
        route,
        status: response.status().as_u16(),
        user_id: user.as_ref().map(|u| u.id()),
        username: user.as_ref().map(|u| u.username.clone()),
        domain,
        duration_ms: (started.elapsed().as_secs_f64() * 1e5).round() / 100.0,
    });
    response
}

struct Who {
    user: Arc<AuthUser>,
    via: &'static str,
}

fn has_credential(headers: &HeaderMap) -> bool {
    headers.contains_key(header::AUTHORIZATION) || headers.contains_key(API_KEY_HEADER)
}

/// The administrative change the request makes, if any (its path parameters decide).
async fn classify(request: Request, state: &AppState, route: &str) -> (Request, Option<Change>) {
    if request.method() == axum::http::Method::GET {
        return (request, None);
    }
    let (mut parts, body) = request.into_parts();
    let params: Vec<(String, String)> = RawPathParams::from_request_parts(&mut parts, state)
        .await
        .map(|p| {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default();
    let change = audit::classify(&parts.method, route, &params);
    (Request::from_parts(parts, body), change)
}

/// Reads the body of an audited request (to summarize it) and hands the handler a copy.
async fn buffer_request(request: Request, limit: usize) -> Result<(Request, Bytes), ApiError> {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than the {limit} bytes svc accepts"),
        )
    })?;
    Ok((Request::from_parts(parts, Body::from(bytes.clone())), bytes))
}

/// The id of what changed: from the path, or for a create from the answer's `id`.
async fn created_resource(
    response: Response,
    change: &Change,
    request: &[u8],
) -> (Response, String) {
    if let Some(id) = &change.resource_id {
        return (response, id.clone());
    }
    let (parts, body) = response.into_parts();
    // The answer is the record the handler just made from a request of at most `max_body`
    // bytes, so it is read whole: a limit here would send a large record's 201 without a body.
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let asked: serde_json::Value = serde_json::from_slice(request).unwrap_or_default();
    let id = audit::created_id(&asked, &answer);
    (Response::from_parts(parts, Body::from(bytes)), id)
}
