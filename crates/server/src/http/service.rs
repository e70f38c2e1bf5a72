//! The service hyper calls per request: the header-size guard, CORS, routing by path and
//! method (every SDK path with and without its trailing slash, no redirects), and the JSON
//! error shape for everything that is not found or not allowed. Requests that need no body
//! are answered without allocating a future. Each request is observed (metrics, access log;
//! see `observe`) from `call` until its response is ready.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{header, HeaderValue, Method, Request, StatusCode};
use hyper::body::Incoming;

use super::error::ApiError;
use super::observe::{Observation, Observer};
use super::{cors, document, flags, health, identities, realtime, AppState, Response};
use crate::telemetry::http::RouteLabel;

/// The Flagpole HTTP service (cheap to clone: one per connection).
#[derive(Clone)]
pub struct Api {
    state: AppState,
    observer: Observer,
}

impl Api {
    pub fn new(state: AppState) -> Api {
        let observer = Observer::new(&state.config);
        Api { state, observer }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Flags,
    Identities,
    EnvironmentDocument,
    Liveness,
    Readiness,
    Metrics,
    Status,
}

impl Route {
    fn of(path: &str) -> Option<Route> {
        let path = path.strip_suffix('/').unwrap_or(path);
        Some(match path {
            "/api/v1/flags" => Route::Flags,
            "/api/v1/identities" => Route::Identities,
            "/api/v1/environment-document" => Route::EnvironmentDocument,
            "/proxy/health/liveness" => Route::Liveness,
            "/proxy/health/readiness" | "/proxy/health" | "/health" => Route::Readiness,
            "/metrics" => Route::Metrics,
            "/proxy/status" => Route::Status,
            _ => return None,
        })
    }

    /// The `route` label of its metrics.
    fn label(self) -> RouteLabel {
        match self {
            Route::Flags => RouteLabel::Flags,
            Route::Identities => RouteLabel::Identities,
            Route::EnvironmentDocument => RouteLabel::EnvironmentDocument,
            Route::Liveness | Route::Readiness => RouteLabel::Health,
            Route::Metrics => RouteLabel::Metrics,
            Route::Status => RouteLabel::Status,
        }
    }

    /// The `Allow` header of a route.
    fn allow(self) -> &'static str {
        match self {
            Route::Identities => "GET, HEAD, POST",
            _ => "GET, HEAD",
        }
    }
}

/// A response now, or one that waits for the request body (observed when it is ready).
pub enum ApiFuture {
    Ready(Option<Response>),
    Body(
        Pin<Box<dyn Future<Output = Response> + Send>>,
        Option<Observation>,
    ),
}

impl ApiFuture {
    fn body(future: impl Future<Output = Response> + Send + 'static) -> ApiFuture {
        ApiFuture::Body(Box::pin(future), None)
    }

    /// Records a ready response now, or a pending one when it completes.
    fn observed(self, mut observation: Observation, route: RouteLabel) -> ApiFuture {
        observation.route = route;
        match self {
            ApiFuture::Ready(response) => {
                if let Some(response) = &response {
                    observation.finish(response);
                }
                ApiFuture::Ready(response)
            }
            ApiFuture::Body(future, _) => ApiFuture::Body(future, Some(observation)),
        }
    }
}

impl Future for ApiFuture {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            ApiFuture::Ready(response) => {
                Poll::Ready(Ok(response.take().expect("polled after completion")))
            }
            ApiFuture::Body(future, observation) => {
                let response = std::task::ready!(future.as_mut().poll(cx));
                if let Some(observation) = observation.take() {
                    observation.finish(&response);
                }
                Poll::Ready(Ok(response))
            }
        }
    }
}

impl hyper::service::Service<Request<Incoming>> for Api {
    type Response = Response;
    type Error = Infallible;
    type Future = ApiFuture;

    fn call(&self, request: Request<Incoming>) -> ApiFuture {
        match self.observer.start(request.method(), request.uri()) {
            None => self.answer(request).1,
            Some(observation) => {
                let (route, future) = self.answer(request);
                future.observed(observation, route)
            }
        }
    }
}

impl Api {
    /// Routes and answers a request; also says which route it was, for its metrics.
    fn answer(&self, request: Request<Incoming>) -> (RouteLabel, ApiFuture) {
        let config = &self.state.config;
        if let Some(too_large) = header_guard(config.limits.max_header_bytes, &request) {
            return (
                route_label(request.uri().path()),
                ApiFuture::Ready(Some(too_large)),
            );
        }
        let origin = request.headers().get(header::ORIGIN).cloned();
        if let Some(endpoint) = crate::ofrep::endpoint(request.uri().path()) {
            return self.ofrep(request, endpoint, origin);
        }
        if let Some(preflight) = cors::preflight(
            config,
            request.method(),
            request.headers(),
            cors::Preflight::Flagsmith,
        ) {
            return (RouteLabel::Preflight, ApiFuture::Ready(Some(preflight)));
        }
        let route = Route::of(request.uri().path());
        let method = request.method();
        let is_get = method == Method::GET || method == Method::HEAD;
        if let (Some(key), true) = (realtime::stream_key(request.uri().path()), is_get) {
            let mut response =
                realtime::stream(&self.state, key).unwrap_or_else(ApiError::into_response);
            cors::finish(config, origin, &mut response);
            return (RouteLabel::RealtimeStream, ApiFuture::Ready(Some(response)));
        }
        let label = route.map_or(RouteLabel::NotFound, Route::label);
        let answer = match route {
            None => ApiError::not_found(format!(
                "no such endpoint: {method} {}",
                request.uri().path()
            ))
            .into_response(),
            Some(Route::Identities) if method == Method::POST => {
                let state = self.state.clone();
                let future = ApiFuture::body(async move {
                    let mut response = match identities::post_identity(&state, request).await {
                        Ok(response) => response,
                        Err(e) => e.into_response(),
                    };
                    cors::finish(&state.config, origin, &mut response);
                    response
                });
                return (label, future);
            }
            Some(route) if !is_get => {
                let mut response = ApiError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "method not allowed for this endpoint",
                )
                .into_response();
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(route.allow()));
                response
            }
            Some(route) => {
                let (parts, _body) = request.into_parts();
                let answered = match route {
                    Route::Flags => flags::flags(&self.state, &parts),
                    Route::Identities => identities::get_identity(&self.state, &parts),
                    Route::EnvironmentDocument => {
                        document::environment_document(&self.state, &parts)
                    }
                    Route::Liveness => Ok(health::liveness()),
                    Route::Readiness => Ok(health::readiness(&self.state)),
                    Route::Metrics => super::metrics::metrics(&self.state).ok_or_else(|| {
                        ApiError::not_found("metrics are disabled (flagpole.metrics.enabled)")
                    }),
                    Route::Status => match config.telemetry.status_page {
                        true => Ok(super::status::status(&self.state, &parts)),
                        false => Err(ApiError::not_found(
                            "the status page is disabled (flagpole.status_page.enabled)",
                        )),
                    },
                };
                answered.unwrap_or_else(ApiError::into_response)
            }
        };
        let mut response = answer;
        cors::finish(config, origin, &mut response);
        (label, ApiFuture::Ready(Some(response)))
    }

    /// Whether a `GET` of `path` opens a change stream (OFREP's or the Flagsmith real-time one):
    /// such requests may be served straight on the socket (see `direct_stream`).
    pub fn is_change_stream(path: &str) -> bool {
        realtime::stream_key(path).is_some()
            || crate::ofrep::endpoint(path) == Some(Ok(crate::ofrep::Endpoint::Events))
    }

    /// The answer to a `GET` change-stream request read off the socket, CORS included: an open
    /// stream or an error with a whole body. `None` if the request is not one.
    pub fn change_stream(&self, request: &http::request::Parts) -> Option<Response> {
        let config = &self.state.config;
        if request.method != Method::GET {
            return None;
        }
        let observation = self.observer.start(&request.method, &request.uri);
        let origin = request.headers.get(header::ORIGIN).cloned();
        let path = request.uri.path();
        let (route, mut response) = if let Some(key) = realtime::stream_key(path) {
            let response =
                realtime::stream(&self.state, key).unwrap_or_else(ApiError::into_response);
            (RouteLabel::RealtimeStream, response)
        } else if Api::is_change_stream(path) {
            let mut response = crate::ofrep::events(&self.state, request);
            cors::expose_ofrep_headers(&mut response);
            (RouteLabel::OfrepEvents, response)
        } else {
            return None;
        };
        cors::finish(config, origin, &mut response);
        if let Some(mut observation) = observation {
            observation.route = route;
            observation.finish(&response);
        }
        Some(response)
    }

    /// The 431 for a head over the limits (JSON body, connection closed).
    pub fn headers_too_large(&self) -> Response {
        too_large_headers(self.state.config.limits.max_header_bytes)
    }

    /// The configuration the service answers with.
    pub fn config(&self) -> &crate::config::Config {
        &self.state.config
    }

    /// OFREP: CORS preflight, a 404 for a key that is not UTF-8, else the evaluation (which
    /// waits for the body). Every answer exposes `ETag` and `Retry-After`.
    fn ofrep(
        &self,
        request: Request<Incoming>,
        endpoint: Result<crate::ofrep::Endpoint, ()>,
        origin: Option<HeaderValue>,
    ) -> (RouteLabel, ApiFuture) {
        let config = &self.state.config;
        let label = ofrep_label(&endpoint);
        let preflight = cors::preflight(
            config,
            request.method(),
            request.headers(),
            cors::Preflight::Ofrep,
        );
        let early = match (preflight, endpoint) {
            (Some(mut preflight), _) => {
                cors::expose_ofrep_headers(&mut preflight);
                return (RouteLabel::Preflight, ApiFuture::Ready(Some(preflight)));
            }
            (None, Err(())) => Some(
                ApiError::not_found("the flag key is not UTF-8 once percent-decoded")
                    .into_response(),
            ),
            (None, Ok(endpoint)) => {
                let state = self.state.clone();
                let future = ApiFuture::body(async move {
                    let mut response = crate::ofrep::handle(state.clone(), request, endpoint).await;
                    cors::finish(&state.config, origin, &mut response);
                    cors::expose_ofrep_headers(&mut response);
                    response
                });
                return (label, future);
            }
        };
        let mut response = early.expect("answered above");
        cors::finish(config, origin, &mut response);
        cors::expose_ofrep_headers(&mut response);
        (label, ApiFuture::Ready(Some(response)))
    }
}

fn ofrep_label(endpoint: &Result<crate::ofrep::Endpoint, ()>) -> RouteLabel {
    match endpoint {
        Ok(crate::ofrep::Endpoint::Bulk) => RouteLabel::OfrepBulk,
        Ok(crate::ofrep::Endpoint::Events) => RouteLabel::OfrepEvents,
        Ok(crate::ofrep::Endpoint::Flag(_)) | Err(()) => RouteLabel::OfrepFlag,
    }
}

/// The route label of a path, for requests refused before routing.
fn route_label(path: &str) -> RouteLabel {
    if let Some(endpoint) = crate::ofrep::endpoint(path) {
        return ofrep_label(&endpoint);
    }
    if realtime::stream_key(path).is_some() {
        return RouteLabel::RealtimeStream;
    }
    Route::of(path).map_or(RouteLabel::NotFound, Route::label)
}

/// Headers larger than `flagpole.limits.max_header_bytes` in all get a 431 with the JSON error
/// body (the connection layer only stops headers far beyond the limit, and without a body).
fn header_guard(limit: usize, request: &Request<Incoming>) -> Option<Response> {
    let uri = request.uri();
    let size = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum::<usize>()
        + uri.path().len()
        + uri.query().map_or(0, str::len);
    if size <= limit {
        return None;
    }
    Some(too_large_headers(limit))
}

fn too_large_headers(limit: usize) -> Response {
    let mut response = ApiError::new(
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        format!("request headers are larger than {limit} bytes, or more than 100 lines"),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_with_and_without_trailing_slash() {
        assert_eq!(Route::of("/api/v1/flags/"), Some(Route::Flags));
        assert_eq!(Route::of("/api/v1/flags"), Some(Route::Flags));
        assert_eq!(Route::of("/api/v1/identities"), Some(Route::Identities));
        assert_eq!(Route::of("/health/"), Some(Route::Readiness));
        assert_eq!(Route::of("/api/v1/flags//"), None);
        assert_eq!(Route::of("/"), None);
        assert_eq!(Route::of("/api/v1/flagsx"), None);
    }
}
