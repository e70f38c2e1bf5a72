//! Writing responses: prepared (per-revision) bodies with ETag, conditional requests and
//! pre-compressed variants; dynamic bodies compressed on the fly when large.

use http::{header, HeaderMap, HeaderValue, StatusCode};

use super::{empty, full, Response};
use crate::body::{accepted_encodings, Encoding, PreparedBody, COMPRESS_MIN_BYTES};
use crate::snapshot::identity_cache::Answer;

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const ACCEPT_ENCODING: HeaderValue = HeaderValue::from_static("Accept-Encoding");

/// Whether `If-None-Match` matches `etag` (a list, weak forms, or `*`).
pub(super) fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',')
                .map(str::trim)
                .any(|t| t == "*" || t.trim_start_matches("W/") == etag)
        })
}

/// A prepared body: 304 when the client has it, else the best encoding it accepts. Headers are
/// prepared values: nothing is parsed or formatted per request.
pub(super) fn prepared(
    headers: &HeaderMap,
    body: &PreparedBody,
    last_modified: Option<&HeaderValue>,
) -> Response {
    let not_modified = not_modified(headers, body.etag());
    let mut response = if not_modified {
        empty(StatusCode::NOT_MODIFIED)
    } else {
        let accept = headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok());
        let (bytes, encoding) = body.negotiate(accept);
        let mut r = full(StatusCode::OK, bytes);
        r.headers_mut().insert(header::CONTENT_TYPE, JSON);
        if let Some(e) = encoding.header_value() {
            r.headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static(e));
        }
        r
    };
    let h = response.headers_mut();
    h.insert(header::ETAG, body.etag_header.clone());
    h.insert(header::VARY, ACCEPT_ENCODING);
    if let Some(lm) = last_modified {
        h.insert(header::LAST_MODIFIED, lm.clone());
    }
    response
}

/// An identity's answer: gzipped (once per answer, see [`Answer`]) when large and accepted.
pub(super) fn answer(headers: &HeaderMap, answer: &Answer) -> Response {
    let bytes = &answer.plain;
    let mut response = if bytes.len() >= COMPRESS_MIN_BYTES {
        let accept = headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok());
        let mut response = if accepted_encodings(accept).contains(Encoding::Gzip) {
            let mut r = full(StatusCode::OK, answer.gzipped());
            r.headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            r
        } else {
            full(StatusCode::OK, bytes.clone())
        };
        response.headers_mut().insert(header::VARY, ACCEPT_ENCODING);
        response
    } else {
        full(StatusCode::OK, bytes.clone())
    };
    response.headers_mut().insert(header::CONTENT_TYPE, JSON);
    response
}
