//! Errors as HTTP responses: an [`ApiError`] (and a throttled login) becomes its status with
//! one plain-text sentence; the framework's own refusals get the same shape.

use crate::server::error::{ApiError, ErrorDetail};
use crate::server::services::login_throttle::Throttled;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

pub const TEXT_PLAIN: &str = "text/plain; charset=utf-8";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = text_response(self.status, self.message);
        if let Some(detail) = self.detail {
            response.extensions_mut().insert(ErrorDetail(detail));
        }
        response
    }
}

/// A plain-text response with the given status.
pub fn text_response(status: StatusCode, message: impl Into<String>) -> Response {
    let mut response = (status, message.into()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(TEXT_PLAIN));
    response
}

/// The sentence used when an error response was produced by the framework rather than a handler.
pub fn default_sentence(status: StatusCode) -> &'static str {
    match status {
        StatusCode::NOT_FOUND => "no such route",
        StatusCode::METHOD_NOT_ALLOWED => "method not allowed on this route",
        StatusCode::PAYLOAD_TOO_LARGE => "request body is larger than the limit",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported content type",
        StatusCode::BAD_REQUEST => "malformed request",
        StatusCode::UNAUTHORIZED => "missing or invalid credential",
        _ if status.is_server_error() => "internal server error",
        _ => "request failed",
    }
}

impl IntoResponse for Throttled {
    fn into_response(self) -> Response {
        let mut response = text_response(StatusCode::TOO_MANY_REQUESTS, self.sentence());
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(self.retry_after_secs()),
        );
        response
    }
}

/// Why a login failed: the usual error, or throttled (429 with `Retry-After`).
pub enum LoginRefusal {
    Error(ApiError),
    Throttled(Throttled),
}

impl From<ApiError> for LoginRefusal {
    fn from(e: ApiError) -> LoginRefusal {
        LoginRefusal::Error(e)
    }
}

impl IntoResponse for LoginRefusal {
    fn into_response(self) -> Response {
        match self {
            LoginRefusal::Error(e) => e.into_response(),
            LoginRefusal::Throttled(t) => t.into_response(),
        }
    }
}
