//! The HTTP API: the Flagsmith SDK endpoints, health, metrics, the status page, CORS and the
//! error shape. Handlers only look up a snapshot, evaluate what depends on the caller and write
//! bytes.
//!
//! The service is hand-written on hyper rather than built with a routing framework: there are
//! a handful of fixed paths, and the framework's per-request layers (boxed route services,
//! middleware futures, body conversions) cost more CPU than serving a prepared `/flags` body
//! itself (measured in bench/RESULTS.md).

mod cors;
pub mod direct_stream;
mod document;
pub mod error;
mod flags;
mod health;
pub mod identities;
mod metrics;
mod observe;
mod realtime;
mod respond;
mod service;
mod status;
mod status_html;

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_body_util::{Either, Full};

use crate::config::Config;
use crate::snapshot::{KeyKind, Snapshot};
use crate::store::Store;
use error::ApiError;
pub(crate) use identities::read_body;
pub use observe::ACCESS_TARGET as ACCESS_LOG_TARGET;
pub use service::Api;

/// A response body: whole bytes written at once, or an OFREP event stream.
pub type Body = Either<Full<Bytes>, Box<crate::ofrep::sse::EventStream>>;
pub type Response = http::Response<Body>;

/// Shared, read-only state of the HTTP layer.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    pub config: Arc<Config>,
    /// OFREP change streams: tokens, open connections, shutdown.
    pub streams: Arc<crate::ofrep::sse::Streams>,
}

/// A response with a status and a body.
pub(crate) fn full(status: StatusCode, body: impl Into<Bytes>) -> Response {
    let mut response = http::Response::new(Either::Left(Full::new(body.into())));
    *response.status_mut() = status;
    response
}

/// A response with a status and no body.
pub(crate) fn empty(status: StatusCode) -> Response {
    full(status, Bytes::new())
}

/// Authenticates `X-Environment-Key` and loads the environment's current snapshot.
/// Each authorised request is counted as a use of `resource`.
pub(crate) fn authorise(
    state: &AppState,
    headers: &HeaderMap,
    resource: crate::usage::Resource,
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
    crate::rate_limit::check(entry.limits.flagsmith.as_ref())
        .map_err(ApiError::too_many_requests)?;
    entry.env.usage.count(resource);
    let snapshot = entry
        .env
        .snapshot()
        .ok_or_else(|| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "environment not loaded"))?;
    Ok((entry.kind, snapshot))
}
