//! API errors: an HTTP status and one plain-text sentence, never JSON or a debug dump.

use crate::store::StoreError;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

pub const TEXT_PLAIN: &str = "text/plain; charset=utf-8";

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// What went wrong inside, for the log only (never sent to the client).
    pub detail: Option<String>,
}

/// The inside story of a failed request, carried on the response to the request's log line
/// (which has the correlation id).
#[derive(Debug, Clone)]
pub struct ErrorDetail(pub String);

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            detail: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> ApiError {
        match err {
            StoreError::Conflict(m) => ApiError::conflict(m),
            StoreError::Invalid(m) => ApiError::bad_request(m),
            StoreError::Unprocessable(m) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, m),
            StoreError::Unavailable(m) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, m),
            StoreError::Internal(m) => ApiError {
                detail: Some(format!("store failure: {m}")),
                ..ApiError::internal("the server failed to access its storage")
            },
        }
    }
}

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
