//! CORS, as the Flagsmith Edge Proxy answers it: an allowed `Origin` is echoed with credentials allowed; a preflight is
//! answered before routing with the requested method and headers and a 10-minute max age.
//! Requests without an `Origin` header (SDKs on servers) pay one header lookup.

use http::{header, HeaderMap, HeaderValue, Method};

use super::{empty, Response};
use flagpole_config::Config;

/// How a preflight is answered: the Flagsmith API echoes the requested method with a 200;
/// OFREP lists its methods with a 204.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Preflight {
    Flagsmith,
    Ofrep,
}

/// The answer to a preflight request, if this is one.
pub(super) fn preflight(
    config: &Config,
    method: &Method,
    headers: &HeaderMap,
    style: Preflight,
) -> Option<Response> {
    let origin = headers.get(header::ORIGIN)?;
    let requested_method = headers.get(header::ACCESS_CONTROL_REQUEST_METHOD)?;
    if method != Method::OPTIONS {
        return None;
    }
    let (status, methods) = match style {
        Preflight::Flagsmith => (http::StatusCode::OK, requested_method.clone()),
        Preflight::Ofrep => (
            http::StatusCode::NO_CONTENT,
            HeaderValue::from_static("GET, POST, OPTIONS"),
        ),
    };
    let mut response = empty(status);
    let h = response.headers_mut();
    if origin_allowed(config, origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        h.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, methods);
        if let Some(requested) = headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
            h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, requested.clone());
        }
        h.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
    }
    h.insert(
        header::VARY,
        HeaderValue::from_static(
            "origin, access-control-request-method, access-control-request-headers",
        ),
    );
    Some(response)
}

fn origin_allowed(config: &Config, origin: &HeaderValue) -> bool {
    match &config.server.allow_origins {
        None => true,
        Some(list) => list.iter().any(|o| o.as_bytes() == origin.as_bytes()),
    }
}

/// OFREP responses expose their `ETag` and `Retry-After` to scripts (a cross-origin web
/// provider could not revalidate otherwise).
pub(super) fn expose_ofrep_headers(response: &mut Response) {
    response.headers_mut().insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("ETag, Retry-After"),
    );
}

/// Adds the CORS headers of a simple request and `origin` to `Vary` (one merged header).
pub(super) fn finish(config: &Config, origin: Option<HeaderValue>, response: &mut Response) {
    let h = response.headers_mut();
    if let Some(origin) = origin.filter(|o| origin_allowed(config, o)) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
    }
    let vary = match h.get(header::VARY) {
        None => HeaderValue::from_static("origin"),
        Some(v) if v.as_bytes().eq_ignore_ascii_case(b"accept-encoding") => {
            HeaderValue::from_static("accept-encoding, origin")
        }
        Some(v) => match HeaderValue::from_str(&format!("{}, origin", v.to_str().unwrap_or(""))) {
            Ok(merged) => merged,
            Err(_) => return,
        },
    };
    h.insert(header::VARY, vary);
}
