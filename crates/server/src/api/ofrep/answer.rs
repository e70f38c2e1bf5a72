//! What both evaluation paths (environments and flag sets) do the same way: the request body
//! read within `ofrep.max_body_bytes`, the success headers (ETag, caching), the
//! `eventStreams` member of a bulk answer, and the refusal of a change stream over the cap.

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::Failure;
use crate::api::request_body::{self, BodyError};
use crate::config::OfrepConfig;

/// An evaluation's request body, refused as OFREP refuses it (413 over the limit, 400
/// `PARSE_ERROR` when unreadable).
pub(super) async fn read_body(body: Incoming, config: &OfrepConfig) -> Result<Bytes, Failure> {
    request_body::read(body, config.max_body_bytes)
        .await
        .map_err(|e| match e {
            BodyError::TooLarge => Failure::general(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is larger than the limit of {} bytes (ofrep.max_body_bytes)",
                    config.max_body_bytes
                ),
            ),
            BodyError::Unreadable(message) => {
                Failure::new(StatusCode::BAD_REQUEST, "PARSE_ERROR", message)
            }
        })
}

/// A change stream refused because `ofrep.sse.max_connections` are open (retry in 30 s).
pub(super) fn too_many_streams() -> Failure {
    Failure {
        retry_after: 30,
        ..Failure::general(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many open change streams",
        )
    }
}

/// `,"eventStreams":[…]` naming `uri` (a path and query on this server).
pub(super) fn write_event_stream_at(out: &mut Vec<u8>, config: &OfrepConfig, uri: &str) {
    let place = match &config.public_base_url {
        Some(base) => json!({"url": format!("{base}{uri}")}),
        None => json!({"endpoint": {"requestUri": uri}}),
    };
    let mut entry = serde_json::Map::new();
    entry.insert("type".into(), "sse".into());
    if let Value::Object(place) = place {
        entry.extend(place);
    }
    entry.insert(
        "inactivityDelaySec".into(),
        config.sse.inactivity_delay_sec.into(),
    );
    out.extend_from_slice(b",\"eventStreams\":[");
    crate::json::write(out, &entry);
    out.push(b']');
}

pub(super) fn success_headers(h: &mut HeaderMap, etag: &str) {
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
}
