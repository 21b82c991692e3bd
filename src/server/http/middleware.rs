//! Request-wide behaviour: the `App-CorrelationID` header on every response, one structured log
//! line per request carrying it (and the request's count and duration for `GET /metrics`),
//! plain-text bodies for errors the framework produces itself (unknown routes, wrong methods,
//! oversize bodies, panics), and svc's limits on the request head (URI length, header count and
//! size, one `Domain` header).

use crate::server::error::{ApiError, ErrorDetail};
use crate::server::http::errors::{default_sentence, text_response, TEXT_PLAIN};
use crate::server::http::listener::{MAX_HEADERS, MAX_HEADER_BYTES, MAX_URI_BYTES};
use crate::server::AppState;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::{header, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::response::Response;
use std::time::Instant;

pub const CORRELATION_HEADER: HeaderName = HeaderName::from_static("app-correlationid");

/// The request's correlation id, in its extensions for the layers and handlers inside.
#[derive(Debug, Clone)]
pub struct CorrelationId(pub String);

/// Reuses a sane incoming id (printable ASCII, at most 128 bytes) or makes a new UUID.
fn correlation_id(request: &Request) -> String {
    request
        .headers()
        .get(&CORRELATION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

/// One log line per request, carrying its correlation id; what went wrong inside a failed
/// request (an [`ErrorDetail`] on the response) goes on that same line. The same timing is
/// counted for `GET /metrics`.
pub async fn correlate(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let id = correlation_id(&request);
    request.extensions_mut().insert(CorrelationId(id.clone()));
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let route = crate::server::http::metrics::route_of(&request);
    let response = match check_head(&request) {
        // The request log and audit layer runs as part of this one: one layer less to box and
        // clone for every request.
        Ok(()) => crate::server::http::observe::observe(State(state), request, next).await,
        Err(refused) => refused.into_response(),
    };
    let mut response = ensure_text_error(response);
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(CORRELATION_HEADER, value);
    }
    let status = response.status().as_u16();
    let took = started.elapsed();
    crate::server::http::metrics::count(route, &method, status, took);
    let ms = format_args!("{:.2}", took.as_secs_f64() * 1000.0);
    match response.extensions().get::<ErrorDetail>() {
        Some(ErrorDetail(detail)) => tracing::error!(
            correlation_id = %id, method = %method, path = %path, status, ms, error = %detail,
            "request"
        ),
        None => tracing::info!(
            correlation_id = %id, method = %method, path = %path, status, ms,
            "request"
        ),
    }
    response
}

/// svc's limits on a request head, checked before any route sees it.
fn check_head(request: &Request) -> Result<(), ApiError> {
    let uri = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if uri > MAX_URI_BYTES {
        return Err(ApiError::new(
            StatusCode::URI_TOO_LONG,
            format!("the request URI is {uri} bytes; svc accepts at most {MAX_URI_BYTES}"),
        ));
    }
    let headers = request.headers();
    if headers.len() > MAX_HEADERS {
        return Err(ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!(
                "the request has {} headers; svc accepts at most {MAX_HEADERS}",
                headers.len()
            ),
        ));
    }
    let bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if bytes > MAX_HEADER_BYTES {
        return Err(ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!(
                "the request headers take {bytes} bytes; svc accepts at most {MAX_HEADER_BYTES}"
            ),
        ));
    }
    if headers.get_all("domain").iter().nth(1).is_some() {
        return Err(ApiError::bad_request(
            "the `Domain` header is sent more than once; send it once",
        ));
    }
    Ok(())
}

/// Replaces a framework-made error body (empty, JSON, or other types) with a plain sentence.
fn ensure_text_error(response: Response) -> Response {
    let status = response.status();
    if status.is_success() || status.is_redirection() || status.is_informational() {
        return response;
    }
    let is_text = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == TEXT_PLAIN.as_bytes());
    if is_text {
        return response;
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    let mut replaced = text_response(status, default_sentence(status));
    if let Some(allow) = allow {
        replaced.headers_mut().insert(header::ALLOW, allow);
    }
    replaced
}
