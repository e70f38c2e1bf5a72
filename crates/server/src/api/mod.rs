//! The front doors: the Flagsmith SDK API (`flagsmith/`), OpenFeature remote evaluation
//! (`ofrep/`) and the operators' endpoints (`ops/`: health, metrics, status page), on one
//! hand-written hyper service. A request's route is decided once (`route`), its key is
//! authorised once (`authorise`), and each front door maps refusals to its own error shape.
//! Handlers only look up a snapshot, evaluate what depends on the caller and write bytes.
//!
//! The service is hand-written on hyper rather than built with a routing framework: there are
//! a handful of fixed paths, and the framework's per-request layers (boxed route services,
//! middleware futures, body conversions) cost more CPU than serving a prepared `/flags` body
//! itself (measured in bench/RESULTS.md).

pub(crate) mod authorise;
mod cors;
pub(crate) mod error;
pub(crate) mod flagsmith;
mod observe;
pub(crate) mod ofrep;
mod ops;
pub(crate) mod request_body;
mod respond;
pub(crate) mod route;
mod service;
mod unleash;

use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderValue, StatusCode};
use http_body_util::{Either, Full};

use crate::store::Store;
use crate::streams::{EventStream, Streams};
use flagpole_config::Config;
pub(crate) use service::Api;

/// A response body: whole bytes written at once, or a change stream.
pub(crate) type Body = Either<Full<Bytes>, Box<EventStream>>;
pub(crate) type Response = http::Response<Body>;

/// Shared, read-only state of the front doors.
#[derive(Clone)]
pub(crate) struct AppState {
    pub store: Arc<Store>,
    pub config: Arc<Config>,
    /// Change streams: tokens, open connections.
    pub streams: Arc<Streams>,
    /// SDK flag analytics received, per environment.
    pub analytics: Arc<crate::analytics::Analytics>,
    /// Shadow verification (`flagpole.shadow`), when on.
    pub shadow: Option<Arc<crate::shadow::Shadow>>,
    /// The fleet's shared store (`flagpole.fleet`), for the status page.
    pub fleet: Option<Arc<crate::sources::fleet::Fleet>>,
    /// flagd flag sets (`flags`, `--flags`): every OpenFeature door's keyless sets.
    pub flag_sets: Arc<crate::flagsets::FlagSets>,
    /// Unleash toggles (`unleash`), when configured: the OpenFeature doors answer an Unleash
    /// token presented as their key with its toggles.
    pub unleash: Option<Arc<crate::unleash::Unleash>>,
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

/// The 200 that carries a change stream: never cached, never buffered by a reverse proxy.
pub(crate) fn stream_response(body: EventStream) -> Response {
    let mut response = http::Response::new(Either::Right(Box::new(body)));
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
