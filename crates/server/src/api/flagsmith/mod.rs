//! The Flagsmith SDK API: `/api/v1/flags/`, `/api/v1/identities/` (GET and POST),
//! `/api/v1/environment-document/`, the SDKs' flag analytics and the real-time stream, as the Flagsmith Edge Proxy serves
//! them. Keys arrive in `X-Environment-Key`; errors use the `{"status","message"}` shape.

pub(crate) mod analytics;
pub(crate) mod document;
pub(crate) mod flags;
pub(crate) mod identities;
pub(crate) mod realtime;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use hyper::body::Incoming;

use super::authorise::{self, Admitted, Authorised, Family, Gate, Refusal};
use super::error::ApiError;
use super::request_body::{self, BodyError};
use super::{AppState, Response};
use crate::store::EnvSlot;
use crate::usage::Resource;

/// Authorises `X-Environment-Key` and loads the environment's current snapshot. The handler
/// answers, then [`tally`]s the answer on the environment.
pub(crate) fn authorise(state: &AppState, headers: &HeaderMap) -> Result<Authorised, ApiError> {
    let key = environment_key(state, headers)?;
    authorise::authorise(&state.store, key, GATE).map_err(|refusal| refused(key, refusal))
}

/// Admits `X-Environment-Key` without loading a snapshot: for flag analytics, which count
/// before the environment's document arrives. The same rate limit and counts as [`authorise`].
pub(crate) fn admit(state: &AppState, headers: &HeaderMap) -> Result<Admitted, ApiError> {
    let key = environment_key(state, headers)?;
    authorise::admit(&state.store, key, GATE).map_err(|refusal| refused(key, refusal))
}

/// The Flagsmith API takes either kind of key, in its own rate-limit bucket.
const GATE: Gate = Gate {
    family: Family::Flagsmith,
    client_keys: true,
    server_keys: true,
};

/// The key presented in `X-Environment-Key`; a request without a readable one is counted as an
/// unrecognised key.
fn environment_key<'h>(state: &AppState, headers: &'h HeaderMap) -> Result<&'h str, ApiError> {
    let unrecognised = |message: &str| {
        state.store.unrecognised.count();
        ApiError::unauthorized(message)
    };
    Ok(headers
        .get("x-environment-key")
        .ok_or_else(|| unrecognised("missing X-Environment-Key header"))?
        .to_str()
        .map_err(|_| unrecognised("X-Environment-Key is not valid text"))?
        .trim())
}

/// A refusal in the Flagsmith API's error shape.
fn refused(key: &str, refusal: Refusal) -> ApiError {
    match refusal {
        Refusal::UnknownKey | Refusal::KindNotAllowed => {
            let shown: String = key.chars().take(64).collect();
            ApiError::unauthorized(format!("unknown key '{shown}'"))
        }
        Refusal::RateLimited(seconds) => ApiError::too_many_requests(seconds),
        Refusal::NotLoaded => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "environment not loaded")
        }
    }
}

/// Counts an answer on the environment whose key it carried: a use of `resource` when served,
/// a rejection when refused with a 4xx (a 5xx is neither).
pub(crate) fn tally(
    env: &EnvSlot,
    resource: Resource,
    answer: Result<Response, ApiError>,
) -> Result<Response, ApiError> {
    match &answer {
        Ok(response) if response.status().is_client_error() => env.usage.reject(),
        Ok(_) => env.usage.count(resource),
        Err(e) if e.status.is_client_error() => env.usage.reject(),
        Err(_) => {}
    }
    answer
}

/// Reads a request body of at most `limit` bytes: a longer one is a 413 naming `setting`, the
/// configuration key that sets the limit; a broken one a 400.
pub(crate) async fn read_body(
    body: Incoming,
    limit: usize,
    setting: &str,
) -> Result<Bytes, ApiError> {
    request_body::read(body, limit).await.map_err(|e| match e {
        BodyError::TooLarge => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than the limit of {limit} bytes ({setting})"),
        ),
        BodyError::Unreadable(message) => ApiError::bad_request(message),
    })
}
