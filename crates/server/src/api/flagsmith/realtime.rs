//! `GET /sse/environments/{client key}/stream`: the Flagsmith real-time stream, so that the
//! Flagsmith SDKs' real-time mode (`enable_realtime_updates` with `realtime_api_url` pointing
//! here) learns of a change at once instead of polling. Each change is one
//! `environment_updated` event whose `updated_at` (seconds) the SDK compares with its own
//! document's, refetching `/environment-document/` when it is newer. Same shared per-environment
//! cell and connection cap as the OFREP stream; the key is admitted by the shared authorisation
//! step (rate limit and counts as for `/flags`), and a stream may open before the environment's
//! first document arrives.

use std::time::Duration;

use crate::api::authorise::{self, Family, Gate, Refusal};
use crate::api::error::ApiError;
use crate::api::stream_response;
use crate::api::{AppState, Response};
use crate::streams::Format;

/// Only an environment's client key names its stream (as in Flagsmith's real-time URLs); the
/// Flagsmith API's rate-limit bucket.
const GATE: Gate = Gate {
    family: Family::Flagsmith,
    client_keys: true,
    server_keys: false,
};

pub(crate) fn stream(state: &AppState, client_key: &str) -> Result<Response, ApiError> {
    // The key is in the path, so a refused one reads as a path that names nothing; the refusal
    // is counted by the shared step like any other.
    let entry =
        authorise::admit(&state.store, client_key, GATE).map_err(|refusal| match refusal {
            Refusal::RateLimited(seconds) => ApiError::too_many_requests(seconds),
            Refusal::UnknownKey | Refusal::KindNotAllowed | Refusal::NotLoaded => {
                ApiError::not_found("no environment with this key")
            }
        })?;
    let sse = &state.config.ofrep.sse;
    let body = state
        .streams
        .open(
            &entry.env,
            Format::Flagsmith,
            None,
            Duration::from_secs(sse.heartbeat_sec),
            sse.max_connections,
        )
        .ok_or_else(|| {
            ApiError::new(
                http::StatusCode::SERVICE_UNAVAILABLE,
                "too many open change streams",
            )
        })?;
    Ok(stream_response(body))
}
