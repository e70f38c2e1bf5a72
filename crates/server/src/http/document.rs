//! `GET /api/v1/environment-document/`: the document for local-evaluation SDKs and downstream
//! Flagpoles (tiering). Server keys only: it holds server-only features and identity overrides.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::{authorise, respond, AppState};
use crate::snapshot::KeyKind;

pub async fn environment_document(
    State(state): State<AppState>,
    request: Request,
) -> Result<Response, ApiError> {
    let headers = request.headers();
    let (kind, snapshot) = authorise(&state, headers)?;
    if kind != KeyKind::Server {
        return Err(ApiError::unauthorized(
            "the environment document needs a server-side key",
        ));
    }
    // If-Modified-Since (what Flagsmith SDKs and peers send): 304 when the document is not newer.
    if headers.get(header::IF_NONE_MATCH).is_none() {
        let since = headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok());
        let modified = snapshot
            .last_modified
            .as_deref()
            .and_then(|v| httpdate::parse_http_date(v).ok());
        if let (Some(since), Some(modified)) = (since, modified) {
            if modified <= since {
                let mut response = StatusCode::NOT_MODIFIED.into_response();
                response.headers_mut().insert(
                    header::ETAG,
                    snapshot
                        .document
                        .etag
                        .parse()
                        .expect("etag is a header value"),
                );
                return Ok(response);
            }
        }
    }
    Ok(respond::prepared(
        headers,
        &snapshot.document,
        snapshot
            .last_modified
            .as_deref()
            .and_then(|v| axum::http::HeaderValue::from_str(v).ok())
            .as_ref(),
    ))
}
