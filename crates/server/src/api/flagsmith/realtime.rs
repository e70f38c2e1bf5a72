//! `GET /sse/environments/{client key}/stream`: the Flagsmith real-time stream, so that the
//! Flagsmith SDKs' real-time mode (`enable_realtime_updates` with `realtime_api_url` pointing
//! here) learns of a change at once instead of polling. Each change is one
//! `environment_updated` event whose `updated_at` (seconds) the SDK compares with its own
//! document's, refetching `/environment-document/` when it is newer. Same shared per-environment
//! cell and connection cap as the OFREP stream.

use std::time::Duration;

use crate::api::error::ApiError;
use crate::api::stream_response;
use crate::api::{AppState, Response};
use crate::snapshot::KeyKind;
use crate::streams::Format;

pub fn stream(state: &AppState, client_key: &str) -> Result<Response, ApiError> {
    let entry = state
        .store
        .lookup(client_key)
        .filter(|e| e.kind == KeyKind::Client)
        .ok_or_else(|| ApiError::not_found("no environment with this key"))?;
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
