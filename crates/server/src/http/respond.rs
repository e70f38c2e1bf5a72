//! Writing responses: prepared (per-revision) bodies with ETag, conditional requests and
//! pre-compressed variants; dynamic bodies compressed on the fly when large.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;

use crate::body::{accepted_encodings, gzip, Encoding, PreparedBody, COMPRESS_MIN_BYTES};

const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Whether `If-None-Match` matches `etag` (a list, weak forms, or `*`).
pub fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
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

/// A prepared body: 304 when the client has it, else the best encoding it accepts.
pub fn prepared(headers: &HeaderMap, body: &PreparedBody, last_modified: Option<&str>) -> Response {
    let mut builder = Response::builder()
        .header(header::ETAG, body.etag.as_str())
        .header(header::VARY, "Accept-Encoding");
    if let Some(lm) = last_modified {
        builder = builder.header(header::LAST_MODIFIED, lm);
    }
    if not_modified(headers, &body.etag) {
        return builder
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .expect("valid response");
    }
    let accept = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok());
    let (bytes, encoding) = body.negotiate(accept);
    if let Some(e) = encoding.header_value() {
        builder = builder.header(header::CONTENT_ENCODING, e);
    }
    builder
        .header(header::CONTENT_TYPE, JSON)
        .body(Body::from(bytes))
        .expect("valid response")
}

/// A body computed for this request, gzip-compressed when large and accepted.
pub fn dynamic(headers: &HeaderMap, bytes: Vec<u8>) -> Response {
    let builder = Response::builder().header(header::CONTENT_TYPE, JSON);
    if bytes.len() >= COMPRESS_MIN_BYTES {
        let accept = headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok());
        if accepted_encodings(accept).contains(&Encoding::Gzip) {
            return builder
                .header(header::CONTENT_ENCODING, "gzip")
                .header(header::VARY, "Accept-Encoding")
                .body(Body::from(gzip(&bytes, 1)))
                .expect("valid response");
        }
        return builder
            .header(header::VARY, "Accept-Encoding")
            .body(Body::from(Bytes::from(bytes)))
            .expect("valid response");
    }
    builder
        .body(Body::from(Bytes::from(bytes)))
        .expect("valid response")
}
