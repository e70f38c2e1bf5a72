//! `GET /sse/environments/{client key}/stream`: the Flagsmith real-time stream, so that the
//! Flagsmith SDKs' real-time mode (`enable_realtime_updates` with `realtime_api_url` pointing
//! here) learns of a change at once instead of polling. Each change is one
//! `environment_updated` event whose `updated_at` (seconds) the SDK compares with its own
//! document's, refetching `/environment-document/` when it is newer. Same shared per-environment
//! cell and connection cap as the OFREP stream.

use std::time::Duration;

use super::error::ApiError;
use super::{AppState, Response};
use crate::ofrep::sse::{self, Format};
use crate::snapshot::KeyKind;

/// The client key in a real-time stream path, if the path is one.
pub fn stream_key(path: &str) -> Option<&str> {
    path.strip_prefix("/sse/environments/")?
        .strip_suffix("/stream")
        .filter(|key| !key.is_empty() && !key.contains('/'))
}

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
    Ok(sse::response(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(stream_key("/sse/environments/abc/stream"), Some("abc"));
        assert_eq!(stream_key("/sse/environments//stream"), None);
        assert_eq!(stream_key("/sse/environments/a/b/stream"), None);
        assert_eq!(stream_key("/api/v1/flags/"), None);
    }
}
