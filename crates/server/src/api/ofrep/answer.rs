//! How OFREP writes what it answers: the request body read within `ofrep.max_body_bytes` and
//! parsed, one resolution as an OFREP evaluation object (members in the order `key, value,
//! reason, variant, metadata`; a failure: `key, errorCode, errorDetails, metadata`), the
//! success headers (ETag, caching), the `eventStreams` member of a bulk answer, and the refusal
//! of a change stream over the cap.

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::Failure;
use crate::api::request_body::{self, BodyError};
use crate::canonical;
use crate::openfeature::{Meta, Metadata, Refusal, Resolution};
use flagpole_config::OfrepConfig;

/// Parses the request body (`{"context": {...}}`; empty means an empty context).
pub(super) fn parse_body(body: &[u8]) -> Result<Value, Refusal> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| ("PARSE_ERROR", "the request body is not UTF-8".to_owned()))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ("PARSE_ERROR", format!("the request body is not JSON: {e}")))?;
    if !value.is_object() {
        return Err((
            "PARSE_ERROR",
            "the request body must be a JSON object".to_owned(),
        ));
    }
    Ok(value)
}

/// Writes one OFREP evaluation object.
pub(super) fn write_flag(out: &mut Vec<u8>, flag: &Resolution<'_>) {
    out.extend_from_slice(b"{\"key\":");
    crate::json::write(out, flag.key);
    if let Some((code, details)) = &flag.error {
        out.extend_from_slice(b",\"errorCode\":");
        crate::json::write(out, *code);
        out.extend_from_slice(b",\"errorDetails\":");
        crate::json::write(out, details.as_ref());
        write_metadata(out, &flag.metadata);
        out.push(b'}');
        return;
    }
    if let Some(value) = &flag.value {
        out.extend_from_slice(b",\"value\":");
        // Canonical member order and number spelling: the body must depend only on what the
        // tag hashes, not on how the document happened to be written.
        canonical::write_with(out, value.as_ref(), canonical::Numbers::Typed);
    }
    out.extend_from_slice(b",\"reason\":\"");
    out.extend_from_slice(flag.reason.as_bytes());
    out.push(b'"');
    if let Some(variant) = &flag.variant {
        out.extend_from_slice(b",\"variant\":");
        crate::json::write(out, variant.as_ref());
    }
    write_metadata(out, &flag.metadata);
    out.push(b'}');
}

fn write_metadata(out: &mut Vec<u8>, metadata: &Metadata<'_>) {
    if metadata.is_absent() {
        return;
    }
    out.extend_from_slice(b",\"metadata\":{");
    let mut first = true;
    let mut comma = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    if let Some(map) = metadata.as_map() {
        for (name, value) in map {
            comma(out);
            crate::json::write(out, name.as_str());
            out.push(b':');
            canonical::write_with(out, value, canonical::Numbers::Typed);
        }
    }
    for (name, value) in metadata.fields() {
        comma(out);
        crate::json::write(out, name);
        out.push(b':');
        match value {
            Meta::Bool(b) => crate::json::write(out, &b),
            Meta::Text(text) => crate::json::write(out, text),
            Meta::Number(n) => crate::json::write(out, n),
        }
    }
    out.push(b'}');
}

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

/// Where a change stream resumes: its `Last-Event-ID` header (a reconnect), else the `since`
/// the stream URI an evaluation hands out carries (the event id it was answered from).
pub(super) fn last_event_id(
    headers: &HeaderMap,
    query: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query("since"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openfeature::{Declared, Fractions};
    use std::borrow::Cow;

    #[test]
    fn failures_are_ofrep_failure_objects() {
        let metadata = serde_json::Map::new();
        let r = Resolution {
            key: "k",
            value: None,
            reason: "ERROR",
            variant: None,
            error: Some(("FLAG_NOT_FOUND", Cow::Borrowed("flag: k not found"))),
            metadata: Metadata::map(&metadata),
            typing: crate::openfeature::Typing {
                lenient: false,
                fractions: Fractions::Truncated,
                declared: Declared::Unlisted,
                enabled_as_bool: false,
            },
            enabled: false,
        };
        let mut out = Vec::new();
        write_flag(&mut out, &r);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"key":"k","errorCode":"FLAG_NOT_FOUND","errorDetails":"flag: k not found","metadata":{}}"#
        );
    }

    #[test]
    fn bodies_must_be_json_objects() {
        assert_eq!(parse_body(b"  ").unwrap(), Value::Null);
        assert_eq!(parse_body(b"[1]").unwrap_err().0, "PARSE_ERROR");
        assert_eq!(parse_body(b"{").unwrap_err().0, "PARSE_ERROR");
    }
}
