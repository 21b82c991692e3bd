//! API errors: an HTTP status and one plain-text sentence, never JSON or a debug dump. Routes,
//! services and the broker's policy return them; `http::errors` turns them into responses.

use crate::store::StoreError;
use ::http::StatusCode;

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

    /// 503: what the request needs (a device, an edge node, the broker) cannot be reached.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    /// The status `code` (a device write's 400, 422 or 503), 503 when it is no status.
    pub fn with_code(code: u16, message: impl Into<String>) -> ApiError {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        ApiError::new(status, message)
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
