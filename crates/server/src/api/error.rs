//! The one error shape every endpoint uses: `{"status": "<snake_case>", "message": "…"}`.

use http::{header, HeaderValue, StatusCode};

use super::{full, Response};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// `Retry-After` seconds (429s).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }
    /// Over this key's request rate: retry after `seconds`.
    pub fn too_many_requests(seconds: u64) -> ApiError {
        ApiError {
            retry_after: Some(seconds),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too many requests with this key: over flagpole.limits.rate_limit_per_key_rps",
            )
        }
    }
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, message)
    }
    pub fn unprocessable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn into_response(self) -> Response {
        let mut response = full(self.status, error_body(self.status, &self.message));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// `Not Found` → `not_found`.
pub(crate) fn status_slug(status: StatusCode) -> String {
    status
        .canonical_reason()
        .unwrap_or("error")
        .to_ascii_lowercase()
        .replace(['-', ' '], "_")
        .replace('\'', "")
}

/// The JSON error body for a status and message.
pub(crate) fn error_body(status: StatusCode, message: &str) -> Vec<u8> {
    crate::json::to_vec(&serde_json::json!({"status": status_slug(status), "message": message}))
}
