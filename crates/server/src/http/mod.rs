//! The HTTP API: the Flagsmith SDK endpoints, health, CORS and the error shape. Handlers only
//! look up a snapshot, evaluate what depends on the caller and write bytes.

mod document;
pub mod error;
mod flags;
mod health;
pub mod identities;
mod respond;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::config::Config;
use crate::snapshot::{KeyKind, Snapshot};
use crate::store::Store;
use error::{error_body, ApiError};

/// Shared, read-only state of the HTTP layer.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    pub config: Arc<Config>,
}

/// Builds the router: every SDK path with and without its trailing slash (no redirects).
pub fn router(state: AppState) -> Router {
    let body_limit = axum::extract::DefaultBodyLimit::max(state.config.max_body_bytes);
    let mut router = Router::new();
    for path in ["/api/v1/flags", "/api/v1/flags/"] {
        router = router.route(path, get(flags::flags));
    }
    for path in ["/api/v1/identities", "/api/v1/identities/"] {
        router = router.route(
            path,
            get(identities::get_identity).post(identities::post_identity),
        );
    }
    for path in [
        "/api/v1/environment-document",
        "/api/v1/environment-document/",
    ] {
        router = router.route(path, get(document::environment_document));
    }
    for path in ["/proxy/health/liveness", "/proxy/health/liveness/"] {
        router = router.route(path, get(health::liveness));
    }
    for path in [
        "/proxy/health/readiness",
        "/proxy/health/readiness/",
        "/proxy/health",
        "/proxy/health/",
        "/health",
        "/health/",
    ] {
        router = router.route(path, get(health::readiness));
    }
    router
        .fallback(not_found)
        .layer(body_limit)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            guard_and_finish,
        ))
        .with_state(state)
}

async fn not_found(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no such endpoint: {method} {}", uri.path()))
}

/// The one middleware around every request (kept to one because it runs per request):
/// headers larger than `flagpole.limits.max_header_bytes` in all get a 431 with the JSON error
/// body (the connection layer only stops headers far beyond the limit, and without a body);
/// the HTTP library's plain or empty error bodies (405, 413, …) become the JSON shape; CORS is
/// answered or added (one merged `Vary` header).
async fn guard_and_finish(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let uri = request.uri();
    let size = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum::<usize>()
        + uri.path().len()
        + uri.query().map_or(0, str::len);
    if size > state.config.max_header_bytes {
        let mut response = ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!(
                "request headers are larger than {} bytes",
                state.config.max_header_bytes
            ),
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    if let Some(preflight) = cors_preflight(&state.config, &request) {
        return preflight;
    }
    let origin = request.headers().get(header::ORIGIN).cloned();
    let mut response = json_error_body(next.run(request).await);
    cors_simple(&state.config, origin, &mut response);
    response
}

fn json_error_body(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return response;
    }
    let message = match status {
        StatusCode::METHOD_NOT_ALLOWED => "method not allowed for this endpoint".to_owned(),
        StatusCode::PAYLOAD_TOO_LARGE => {
            "request body is larger than the configured limit".to_owned()
        }
        other => other.canonical_reason().unwrap_or("error").to_owned(),
    };
    let (mut parts, _) = response.into_parts();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(error_body(status, &message)))
}

/// CORS (spec §2.6): an allowed `Origin` is echoed with credentials allowed; a preflight is
/// answered here with the requested method and headers and a 10-minute max age. Requests
/// without an `Origin` header (SDKs on servers) pay one header lookup.
fn cors_preflight(config: &Config, request: &Request) -> Option<Response> {
    let headers = request.headers();
    let origin = headers.get(header::ORIGIN)?;
    let method = headers.get(header::ACCESS_CONTROL_REQUEST_METHOD)?;
    if request.method() != Method::OPTIONS {
        return None;
    }
    let mut response = Response::new(axum::body::Body::empty());
    let h = response.headers_mut();
    if origin_allowed(config, origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        h.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, method.clone());
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
    match &config.allow_origins {
        None => true,
        Some(list) => list.iter().any(|o| o.as_bytes() == origin.as_bytes()),
    }
}

/// Adds the CORS headers of a simple request and `origin` to `Vary`.
fn cors_simple(config: &Config, origin: Option<HeaderValue>, response: &mut Response) {
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

/// Authenticates `X-Environment-Key` and loads the environment's current snapshot.
pub(crate) fn authorise(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<(KeyKind, Arc<Snapshot>), ApiError> {
    let key = headers
        .get("x-environment-key")
        .ok_or_else(|| ApiError::unauthorized("missing X-Environment-Key header"))?
        .to_str()
        .map_err(|_| ApiError::unauthorized("X-Environment-Key is not valid text"))?
        .trim();
    let entry = state.store.lookup(key).ok_or_else(|| {
        let shown: String = key.chars().take(64).collect();
        ApiError::unauthorized(format!("unknown key '{shown}'"))
    })?;
    let snapshot = entry
        .env
        .snapshot()
        .ok_or_else(|| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "environment not loaded"))?;
    Ok((entry.kind, snapshot))
}
