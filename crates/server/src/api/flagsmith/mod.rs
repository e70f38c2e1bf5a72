//! The Flagsmith SDK API: `/api/v1/flags/`, `/api/v1/identities/` (GET and POST),
//! `/api/v1/environment-document/` and the real-time stream, as the Flagsmith Edge Proxy serves
//! them. Keys arrive in `X-Environment-Key`; errors use the `{"status","message"}` shape.

pub mod document;
pub mod flags;
pub mod identities;
pub mod realtime;

use std::sync::Arc;

use http::{HeaderMap, StatusCode};

use super::authorise::{self, Family, Gate, Refusal};
use super::AppState;
use crate::api::error::ApiError;
use crate::keys::KeyKind;
use crate::snapshot::Snapshot;
use crate::usage::Resource;

/// Authorises `X-Environment-Key` and loads the environment's current snapshot; the request is
/// counted as a use of `resource`.
pub(crate) fn authorise(
    state: &AppState,
    headers: &HeaderMap,
    resource: Resource,
) -> Result<(KeyKind, Arc<Snapshot>), ApiError> {
    let key = headers
        .get("x-environment-key")
        .ok_or_else(|| ApiError::unauthorized("missing X-Environment-Key header"))?
        .to_str()
        .map_err(|_| ApiError::unauthorized("X-Environment-Key is not valid text"))?
        .trim();
    let gate = Gate {
        family: Family::Flagsmith,
        client_keys: true,
        server_keys: true,
        counts_as: Some(resource),
    };
    match authorise::authorise(&state.store, key, gate) {
        Ok(authorised) => Ok((authorised.kind, authorised.snapshot)),
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
