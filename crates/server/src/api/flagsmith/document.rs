//! `GET /api/v1/environment-document/`: the document for local-evaluation SDKs and downstream
//! Flagpoles (tiering). Server keys only: it holds server-only features and identity overrides.

use http::request::Parts;
use http::{header, StatusCode};

use super::{authorise, tally};
use crate::api::error::ApiError;
use crate::api::{empty, respond, AppState, Response};
use crate::snapshot::KeyKind;
use crate::snapshot::Snapshot;
use crate::usage::Resource;

pub(crate) fn environment_document(
    state: &AppState,
    request: &Parts,
) -> Result<Response, ApiError> {
    let authorised = authorise(state, &request.headers)?;
    let answer = answer(request, authorised.kind, &authorised.snapshot);
    tally(&authorised.env, Resource::EnvironmentDocument, answer)
}

fn answer(request: &Parts, kind: KeyKind, snapshot: &Snapshot) -> Result<Response, ApiError> {
    let headers = &request.headers;
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
                let mut response = empty(StatusCode::NOT_MODIFIED);
                response
                    .headers_mut()
                    .insert(header::ETAG, snapshot.document.etag_header.clone());
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
            .and_then(|v| http::HeaderValue::from_str(v).ok())
            .as_ref(),
    ))
}
