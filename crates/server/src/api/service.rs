//! The service hyper calls per request: the header-size guard, CORS, dispatch on the
//! [`Route`] and the method, and the JSON
//! error shape for everything that is not found or not allowed. Requests that need no body
//! are answered without allocating a future. Each request is observed (metrics, access log;
//! see `observe`) from `call` until its response is ready.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{header, HeaderValue, Method, Request, StatusCode};
use hyper::body::Incoming;

use super::error::ApiError;
use super::flagsmith::{analytics, document, flags, identities, realtime};
use super::observe::{Head, Observation, Observer};
use super::ops::{health, metrics, status};
use super::route::{Route, UnleashRoute};
use super::{cors, ofrep, unleash, AppState, Response};
use crate::telemetry::http::RouteLabel;
use crate::telemetry::otel::spans::Peer;

/// The Flagpole HTTP service (cheap to clone: one per connection).
#[derive(Clone)]
pub(crate) struct Api {
    state: AppState,
    observer: Observer,
    /// The connection served (its spans record it).
    peer: Peer,
    /// Unleash toggles (`unleash`, `--unleash-features`), when configured.
    unleash: Option<Arc<crate::unleash::Unleash>>,
}

impl Api {
    pub(crate) fn new(state: AppState) -> Api {
        let observer = Observer::new(&state.config);
        Api {
            state,
            observer,
            peer: Peer::default(),
            unleash: None,
        }
    }

    /// The service with the Unleash toggles it serves.
    pub(crate) fn with_unleash(self, unleash: Option<Arc<crate::unleash::Unleash>>) -> Api {
        Api { unleash, ..self }
    }

    /// The service of one connection.
    pub(crate) fn on(&self, peer: Peer) -> Api {
        Api {
            peer,
            ..self.clone()
        }
    }
}

/// A response now, or one that waits for the request body (observed when it is ready).
pub(crate) enum ApiFuture {
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
        let head = Head {
            method: request.method(),
            uri: request.uri(),
            version: request.version(),
            headers: request.headers(),
            peer: self.peer,
        };
        match self.observer.start(head) {
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
        let (parts, body) = request.into_parts();
        let route = Route::of(parts.uri.path());
        let label = route.label();
        if let Some(too_large) = header_guard(config.limits.max_header_bytes, &parts) {
            return (label, ApiFuture::Ready(Some(too_large)));
        }
        let origin = parts.headers.get(header::ORIGIN).cloned();
        if route.is_ofrep() {
            let route = match route {
                Route::OfrepFlag(key) => OfrepRoute::Flag(key.into_owned()),
                Route::OfrepEvents => OfrepRoute::Events,
                Route::OfrepBadKey => OfrepRoute::BadKey,
                _ => OfrepRoute::Bulk,
            };
            return self.ofrep(Request::from_parts(parts, body), label, route, origin);
        }
        if let Some(preflight) = cors::preflight(
            config,
            &parts.method,
            &parts.headers,
            cors::Preflight::Flagsmith,
        ) {
            return (RouteLabel::Preflight, ApiFuture::Ready(Some(preflight)));
        }
        if let Route::Unleash(route) = route {
            let route = owned(route);
            return (label, self.unleash(parts, body, route, origin));
        }
        let method = &parts.method;
        let is_get = method == Method::GET || method == Method::HEAD;
        let answer = match route {
            Route::RealtimeStream(key) if is_get => {
                realtime::stream(&self.state, key).unwrap_or_else(ApiError::into_response)
            }
            // A real-time stream path with another method is no endpoint.
            Route::NotFound | Route::RealtimeStream(_) => {
                let mut response =
                    ApiError::not_found(format!("no such endpoint: {method} {}", parts.uri.path()))
                        .into_response();
                cors::finish(config, origin, &mut response);
                return (RouteLabel::NotFound, ApiFuture::Ready(Some(response)));
            }
            Route::Identities if method == Method::POST => {
                let state = self.state.clone();
                let request = Request::from_parts(parts, body);
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
            Route::Analytics if method == Method::POST => {
                let state = self.state.clone();
                let request = Request::from_parts(parts, body);
                let future = ApiFuture::body(async move {
                    let mut response = analytics::post_analytics(&state, request)
                        .await
                        .unwrap_or_else(ApiError::into_response);
                    cors::finish(&state.config, origin, &mut response);
                    response
                });
                return (label, future);
            }
            route if !is_get || route == Route::Analytics => {
                let mut response = ApiError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    format!(
                        "method {method} is not allowed here; allowed: {}",
                        route.allow()
                    ),
                )
                .into_response();
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(route.allow()));
                response
            }
            route => {
                let answered = match route {
                    Route::Flags => flags::flags(&self.state, &parts),
                    Route::Identities => identities::get_identity(&self.state, &parts),
                    Route::EnvironmentDocument => {
                        document::environment_document(&self.state, &parts)
                    }
                    Route::Liveness => Ok(health::liveness()),
                    Route::Readiness => Ok(health::readiness(
                        &self.state,
                        health::Readiness::Strict,
                        self.unleash.as_deref(),
                    )),
                    Route::Serving => Ok(health::readiness(
                        &self.state,
                        health::Readiness::Serving,
                        self.unleash.as_deref(),
                    )),
                    Route::Metrics => metrics::metrics(&self.state).ok_or_else(|| {
                        ApiError::not_found("metrics are disabled (flagpole.metrics.enabled)")
                    }),
                    Route::Status => match config.telemetry.status_page {
                        true => Ok(status::status(&self.state, &parts, self.unleash.as_deref())),
                        false => Err(ApiError::not_found(
                            "the status page is disabled (flagpole.status_page.enabled)",
                        )),
                    },
                    // Answered above; listed so that a new route cannot be forgotten here.
                    Route::NotFound
                    | Route::RealtimeStream(_)
                    | Route::Analytics
                    | Route::OfrepBulk
                    | Route::OfrepFlag(_)
                    | Route::OfrepBadKey
                    | Route::OfrepEvents
                    | Route::Unleash(_) => Err(ApiError::not_found("no such endpoint")),
                };
                answered.unwrap_or_else(ApiError::into_response)
            }
        };
        let mut response = answer;
        cors::finish(config, origin, &mut response);
        (label, ApiFuture::Ready(Some(response)))
    }

    /// Whether a `GET` of `path` opens a change stream (OFREP's or the Flagsmith real-time one):
    /// such requests may be served straight on the socket (see `server::direct_stream`).
    pub(crate) fn is_change_stream(path: &str) -> bool {
        Route::of(path).is_change_stream()
    }

    /// The answer to a `GET` change-stream request read off the socket, CORS included: an open
    /// stream or an error with a whole body. `None` if the request is not one.
    pub(crate) fn change_stream(&self, request: &http::request::Parts) -> Option<Response> {
        let config = &self.state.config;
        if request.method != Method::GET {
            return None;
        }
        let route = Route::of(request.uri.path());
        if !route.is_change_stream() {
            return None;
        }
        let observation = self.observer.start(Head {
            method: &request.method,
            uri: &request.uri,
            version: request.version,
            headers: &request.headers,
            peer: self.peer,
        });
        let origin = request.headers.get(header::ORIGIN).cloned();
        let mut response = match route {
            Route::RealtimeStream(key) => {
                realtime::stream(&self.state, key).unwrap_or_else(ApiError::into_response)
            }
            _ => {
                let mut response = ofrep::events(&self.state, request);
                cors::expose_ofrep_headers(&mut response);
                response
            }
        };
        cors::finish(config, origin, &mut response);
        if let Some(mut observation) = observation {
            observation.route = route.label();
            observation.finish(&response);
        }
        Some(response)
    }

    /// The 431 for a head over the limits (JSON body, connection closed).
    pub(crate) fn headers_too_large(&self) -> Response {
        too_large_headers(self.state.config.limits.max_header_bytes)
    }

    /// OFREP: CORS preflight, a 404 for a key that is not UTF-8, else the evaluation (which
    /// waits for the body) or the change stream. Every answer exposes `ETag` and `Retry-After`.
    fn ofrep(
        &self,
        request: Request<Incoming>,
        label: RouteLabel,
        route: OfrepRoute,
        origin: Option<HeaderValue>,
    ) -> (RouteLabel, ApiFuture) {
        let config = &self.state.config;
        if let Some(mut preflight) = cors::preflight(
            config,
            request.method(),
            request.headers(),
            cors::Preflight::Ofrep,
        ) {
            cors::expose_ofrep_headers(&mut preflight);
            return (RouteLabel::Preflight, ApiFuture::Ready(Some(preflight)));
        }
        if let OfrepRoute::BadKey = route {
            let mut response =
                ApiError::not_found("the flag key is not UTF-8 once percent-decoded")
                    .into_response();
            cors::finish(config, origin, &mut response);
            cors::expose_ofrep_headers(&mut response);
            return (label, ApiFuture::Ready(Some(response)));
        }
        let state = self.state.clone();
        let future = ApiFuture::body(async move {
            let mut response = match route {
                OfrepRoute::Events => ofrep::events(&state, &request.into_parts().0),
                OfrepRoute::Flag(key) => ofrep::evaluate(&state, request, Some(&key)).await,
                OfrepRoute::Bulk | OfrepRoute::BadKey => {
                    ofrep::evaluate(&state, request, None).await
                }
            };
            cors::finish(&state.config, origin, &mut response);
            cors::expose_ofrep_headers(&mut response);
            response
        });
        (label, future)
    }
}

impl Api {
    /// The Unleash door: answered now, or once the body is read; CORS as every door.
    fn unleash(
        &self,
        parts: http::request::Parts,
        body: Incoming,
        route: UnleashRoute<'static>,
        origin: Option<HeaderValue>,
    ) -> ApiFuture {
        let peer = self.peer.address;
        if !unleash::needs_body(&route, &parts.method) {
            let mut response = unleash::now(self.unleash.as_deref(), &parts, &route, peer);
            cors::finish(&self.state.config, origin, &mut response);
            return ApiFuture::Ready(Some(response));
        }
        let (toggles, config) = (self.unleash.clone(), self.state.config.clone());
        ApiFuture::body(async move {
            let limit = config.limits.max_body_bytes;
            let mut response = unleash::with_body(toggles, limit, parts, body, route, peer).await;
            cors::finish(&config, origin, &mut response);
            response
        })
    }
}

/// An Unleash route with its toggle name owned (the answer may outlive the request head).
fn owned(route: UnleashRoute<'_>) -> UnleashRoute<'static> {
    match route {
        UnleashRoute::ClientFeature(name) => UnleashRoute::ClientFeature(name.into_owned().into()),
        UnleashRoute::FrontendFeature(name) => {
            UnleashRoute::FrontendFeature(name.into_owned().into())
        }
        UnleashRoute::ClientFeatures => UnleashRoute::ClientFeatures,
        UnleashRoute::ClientRegister => UnleashRoute::ClientRegister,
        UnleashRoute::ClientMetrics => UnleashRoute::ClientMetrics,
        UnleashRoute::Frontend => UnleashRoute::Frontend,
        UnleashRoute::FrontendMetrics => UnleashRoute::FrontendMetrics,
        UnleashRoute::FrontendRegister => UnleashRoute::FrontendRegister,
        UnleashRoute::BackstageHealth => UnleashRoute::BackstageHealth,
        UnleashRoute::BackstageReady => UnleashRoute::BackstageReady,
    }
}

/// An OFREP route, owned (the evaluation outlives the request head it was read from).
enum OfrepRoute {
    Bulk,
    Flag(String),
    BadKey,
    Events,
}

/// Headers larger than `flagpole.limits.max_header_bytes` in all get a 431 with the JSON error
/// body (the connection layer only stops headers far beyond the limit, and without a body).
fn header_guard(limit: usize, request: &http::request::Parts) -> Option<Response> {
    let uri = &request.uri;
    let size = request
        .headers
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
