//! The Flagsmith SDK API: `/api/v1/flags/`, `/api/v1/identities/` (GET and POST),
//! `/api/v1/environment-document/`, the SDKs' flag analytics and the real-time stream, as the Flagsmith Edge Proxy serves
//! them. Keys arrive in `X-Environment-Key`; errors use the `{"status","message"}` shape.

pub mod analytics;
pub mod document;
pub mod flags;
pub mod identities;
pub mod realtime;

use http::{HeaderMap, StatusCode};

use super::authorise::{self, Authorised, Family, Gate, Refusal};
use super::error::ApiError;
use super::{AppState, Response};
use crate::store::EnvSlot;
use crate::usage::Resource;

/// Authorises `X-Environment-Key` and loads the environment's current snapshot. The handler
/// answers, then [`tally`]s the answer on the environment.
pub(crate) fn authorise(state: &AppState, headers: &HeaderMap) -> Result<Authorised, ApiError> {
    let unrecognised = |message: &str| {
        state.store.unrecognised.count();
        ApiError::unauthorized(message)
    };
    let key = headers
        .get("x-environment-key")
        .ok_or_else(|| unrecognised("missing X-Environment-Key header"))?
        .to_str()
        .map_err(|_| unrecognised("X-Environment-Key is not valid text"))?
        .trim();
    let gate = Gate {
        family: Family::Flagsmith,
        client_keys: true,
        server_keys: true,
        counts_as: None,
    };
    match authorise::authorise(&state.store, key, gate) {
        Ok(authorised) => Ok(authorised),
        Err(Refusal::UnknownKey | Refusal::KindNotAllowed) => {
            let shown: String = key.chars().take(64).collect();
            Err(ApiError::unauthorized(format!("unknown key '{shown}'")))
        }
        Err(Refusal::RateLimited(seconds)) => Err(ApiError::too_many_requests(seconds)),
        Err(Refusal::NotLoaded) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "environment not loaded",
        )),
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
