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
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer};

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
    let cors = cors_layer(&state.config);
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
        .layer(cors)
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
/// the HTTP library's plain or empty error bodies (405, 413, …) become the JSON shape; the
/// `Vary` headers CORS and content negotiation each add are merged into one.
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
    let response = next.run(request).await;
    merge_vary(json_error_body(response))
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

fn merge_vary(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let mut values = headers.get_all(header::VARY).iter();
    if values.next().is_none() || values.next().is_none() {
        return response;
    }
    let mut names: Vec<String> = Vec::new();
    for value in headers.get_all(header::VARY) {
        for name in value.to_str().unwrap_or("").split(',') {
            let name = name.trim().to_ascii_lowercase();
            if !name.is_empty() && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    if let Ok(merged) = HeaderValue::from_str(&names.join(", ")) {
        headers.insert(header::VARY, merged);
    }
    response
}

fn cors_layer(config: &Config) -> CorsLayer {
    let origin = match &config.allow_origins {
        None => AllowOrigin::mirror_request(),
        Some(list) => {
            let list: Vec<HeaderValue> = list
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect();
            AllowOrigin::list(list)
        }
    };
    CorsLayer::new()
        .allow_origin(origin)
        .allow_credentials(true)
        .allow_methods(AllowMethods::mirror_request())
        .allow_headers(AllowHeaders::mirror_request())
        .max_age(std::time::Duration::from_secs(600))
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
