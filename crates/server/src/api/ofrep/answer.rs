//! What both evaluation paths (environments and flag sets) write the same way: the success
//! headers (ETag, caching) and the `eventStreams` member of a bulk answer.

use http::{header, HeaderMap, HeaderValue};
use serde_json::{json, Value};

use crate::config::OfrepConfig;

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
