//! Spans: the server span of a request, inside the caller's trace (W3C `traceparent`,
//! `tracestate`, `baggage`), and the client span of a request Flagpole sends, whose
//! `traceparent` goes with it. Attributes follow the OpenTelemetry semantic conventions for
//! HTTP, RPC and feature flags; a key never appears in one (its fingerprint does, as in the
//! logs), nor an identifier unless `flagpole.telemetry.record_identifier` says so.
//!
//! A span is started only when spans are exported ([`super::tracer`]); its attributes are
//! written only when the sampler kept it, so a request in the 99 % a 1 % sampler drops pays for
//! the sampling decision and little else. What does not depend on the request is made once and
//! shared (`attributes`); a Redis connection's attributes per connection.
//!
//! Client spans are of two kinds ([`Cause`]): those a request caused (a shadow verification's
//! post) and background work (upstream polls, the fleet's Redis commands, analytics flushes),
//! which would otherwise make a steady stream of root traces from an idle replica: those are
//! made only with `flagpole.telemetry.background_spans`.

use std::borrow::Cow;
use std::sync::Arc;

use http::{HeaderMap, Method, StatusCode, Version};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{SdkTracer, Span};

pub(crate) use super::attributes::Peer;
use super::attributes::{
    client_address, fingerprint_attribute, method_name, server_address, shared, span_name,
    user_agent, version_name,
};

/// What the feature-flag conventions say about one evaluated flag; a front door that evaluated
/// one flag puts it in its response's extensions (only when spans are exported).
#[derive(Clone, Debug)]
pub(crate) struct FlagEvaluated {
    pub key: Arc<str>,
    pub variant: Arc<str>,
    pub reason: &'static str,
    /// The evaluation's identifier, kept only with `record_identifier`.
    pub identifier: Option<Arc<str>>,
    /// Why the evaluation failed (`error.type` of the feature-flag conventions:
    /// `flag_not_found`, `parse_error`, …), if it did.
    pub error: Option<&'static str>,
}

impl FlagEvaluated {
    /// The record of an evaluation, when spans are exported (`None` otherwise, at no cost).
    #[inline]
    pub(crate) fn note(
        key: &str,
        variant: &str,
        reason: &'static str,
        identifier: Option<&str>,
    ) -> Option<FlagEvaluated> {
        super::tracer()?;
        Some(FlagEvaluated {
            key: key.into(),
            variant: variant.into(),
            reason,
            identifier: identifier
                .filter(|_| super::record_identifier())
                .map(Arc::from),
            error: None,
        })
    }

    /// The record of an evaluation of `key` that failed with the OpenFeature error code `code`
    /// (`FLAG_NOT_FOUND`), when spans are exported.
    pub(crate) fn failed(key: &str, code: &str) -> Option<FlagEvaluated> {
        super::tracer()?;
        Some(FlagEvaluated {
            key: key.into(),
            variant: Arc::from(""),
            reason: "error",
            identifier: None,
            error: Some(error_type(code)),
        })
    }
}

impl FlagEvaluated {
    /// `status` carrying this record (as its source): a flagd call that fails answers a
    /// `tonic::Status`, whose response has no extensions of the method's own; the status
    /// itself is in them (`Status::into_http`), and the span finds the record there.
    pub(crate) fn ride(self, mut status: tonic::Status) -> tonic::Status {
        status.set_source(Arc::new(OnStatus(self)));
        status
    }

    /// The record a failed call's status carries, if any.
    fn of_status(status: &tonic::Status) -> Option<&FlagEvaluated> {
        std::error::Error::source(status)?
            .downcast_ref::<OnStatus>()
            .map(|on| &on.0)
    }
}

/// A failed evaluation's record as the source of its `tonic::Status`.
#[derive(Debug)]
struct OnStatus(FlagEvaluated);

impl std::fmt::Display for OnStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the evaluation of flag '{}' failed", self.0.key)
    }
}

impl std::error::Error for OnStatus {}

/// The feature-flag conventions' `error.type` of an OpenFeature error code.
fn error_type(code: &str) -> &'static str {
    match code {
        "FLAG_NOT_FOUND" => "flag_not_found",
        "PARSE_ERROR" => "parse_error",
        "TYPE_MISMATCH" => "type_mismatch",
        "TARGETING_KEY_MISSING" => "targeting_key_missing",
        "INVALID_CONTEXT" => "invalid_context",
        "PROVIDER_NOT_READY" => "provider_not_ready",
        _ => "general",
    }
}

/// The caller's context from a request's headers: its span as the parent, its baggage. A
/// request without `traceparent` starts a new trace.
pub(crate) fn parent(headers: &HeaderMap) -> Context {
    if !headers.contains_key("traceparent") {
        return Context::new();
    }
    let carrier = Headers(headers);
    let cx = TraceContextPropagator::new().extract(&carrier);
    if headers.contains_key("baggage") {
        return BaggagePropagator::new().extract_with_context(&cx, &carrier);
    }
    cx
}

struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct HeadersMut<'a>(&'a mut HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::try_from(key),
            http::HeaderValue::try_from(value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// The key a request presents, for its fingerprint (the headers every front door reads).
fn presented_key(headers: &HeaderMap) -> Option<&str> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    text("x-environment-key")
        .or_else(|| text("x-api-key"))
        .or_else(|| text("flagd-selector"))
        .or_else(|| {
            text("authorization").and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
        })
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

/// A request's server span, until its response is ready.
pub(crate) struct ServerSpan {
    span: Span,
}

impl ServerSpan {
    /// Starts the server span of an HTTP request (the Flagsmith API, OFREP, the streams).
    /// `route` is the route's template (`/api/v1/identities/`), `None` for a path that is no
    /// endpoint; `path_key` a key the path carries (the real-time stream's); `path` is the path
    /// as it may be recorded (keys fingerprinted); `peer` the connection it came on.
    pub(crate) fn http(
        tracer: &SdkTracer,
        (method, uri, version, headers): (&Method, &http::Uri, Version, &HeaderMap),
        (route, path_key): (Option<&'static str>, Option<&str>),
        peer: Peer,
        path: impl FnOnce() -> String,
    ) -> ServerSpan {
        let method = method_name(method);
        let name = route.map_or(method, |route| span_name(method, route));
        let mut span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .start_with_context(tracer, &parent(headers));
        if span.is_recording() {
            let path = match route {
                // A route without parameters is its own path: nothing to copy.
                Some(route) if route == uri.path() => Value::from(route),
                _ => Value::from(path()),
            };
            span.set_attributes([
                KeyValue::new("http.request.method", method),
                KeyValue::new("url.scheme", peer.scheme()),
                KeyValue::new("url.path", path),
                KeyValue::new("network.protocol.version", version_name(version)),
            ]);
            if let Some(route) = route {
                span.set_attribute(KeyValue::new("http.route", route));
            }
            if let Some(address) = server_address(headers, uri) {
                span.set_attributes(address.iter().cloned());
            }
            peer_attributes(&mut span, peer, headers);
            fingerprint(&mut span, presented_key(headers).or(path_key));
        }
        ServerSpan { span }
    }

    /// Starts the server span of a flagd call (gRPC or Connect): named by its path
    /// (`flagd.evaluation.v1.Service/ResolveBoolean`).
    pub(crate) fn rpc(
        tracer: &SdkTracer,
        system: &'static str,
        (uri, headers): (&http::Uri, &HeaderMap),
        peer: Peer,
    ) -> ServerSpan {
        let path = uri.path().trim_start_matches('/');
        let mut span = tracer
            .span_builder(path.to_owned())
            .with_kind(SpanKind::Server)
            .start_with_context(tracer, &parent(headers));
        if span.is_recording() {
            let (service, method) = path.split_once('/').unwrap_or((path, ""));
            span.set_attribute(KeyValue::new("rpc.system", system));
            span.set_attribute(KeyValue::new("rpc.service", service.to_owned()));
            span.set_attribute(KeyValue::new("rpc.method", method.to_owned()));
            if let Some(address) = server_address(headers, uri) {
                span.set_attributes(address.iter().cloned());
            }
            peer_attributes(&mut span, peer, headers);
            fingerprint(&mut span, presented_key(headers));
        }
        ServerSpan { span }
    }

    /// Ends an HTTP request's span with its response.
    pub(crate) fn finish_http(mut self, status: StatusCode, extensions: &http::Extensions) {
        if self.span.is_recording() {
            self.span.set_attribute(KeyValue::new(
                "http.response.status_code",
                i64::from(status.as_u16()),
            ));
            let flagged = flag(&mut self.span, extensions);
            if status.is_server_error() {
                // A failed evaluation's own `error.type` says more than the status.
                if !flagged {
                    self.span
                        .set_attribute(KeyValue::new("error.type", status.as_str().to_owned()));
                }
                self.span.set_status(Status::error(""));
            }
        }
        self.span.end();
    }

    /// Ends a flagd call's span with its gRPC status code (Connect's too: the same codes).
    pub(crate) fn finish_rpc(mut self, code: i64, extensions: &http::Extensions) {
        if self.span.is_recording() {
            self.span
                .set_attribute(KeyValue::new("rpc.grpc.status_code", code));
            let flagged = flag(&mut self.span, extensions);
            // The server-side errors of the RPC conventions.
            if matches!(code, 2 | 4 | 12 | 13 | 14 | 15) {
                if !flagged {
                    self.span
                        .set_attribute(KeyValue::new("error.type", code.to_string()));
                }
                self.span.set_status(Status::error(""));
            }
        }
        self.span.end();
    }
}

/// `client.address`/`client.port` (the peer: Flagpole reads no forwarding header) and
/// `user_agent.original`.
fn peer_attributes(span: &mut Span, peer: Peer, headers: &HeaderMap) {
    if let Some(address) = peer.address {
        span.set_attributes(client_address(address));
    }
    if let Some(agent) = user_agent(headers) {
        span.set_attribute(agent);
    }
}

/// The presented key's fingerprint, as the logs show it.
fn fingerprint(span: &mut Span, key: Option<&str>) {
    if let Some(key) = key {
        span.set_attribute(fingerprint_attribute(key));
    }
}

/// The evaluated flag's attributes; returns whether they include a failure's `error.type`.
fn flag(span: &mut Span, extensions: &http::Extensions) -> bool {
    let flag = extensions.get::<FlagEvaluated>().or_else(|| {
        extensions
            .get::<tonic::Status>()
            .and_then(FlagEvaluated::of_status)
    });
    let Some(flag) = flag else {
        return false;
    };
    span.set_attributes([
        KeyValue::new("feature_flag.key", shared(flag.key.clone())),
        KeyValue::new("feature_flag.provider.name", "flagpole"),
        KeyValue::new("feature_flag.result.reason", flag.reason),
    ]);
    if !flag.variant.is_empty() {
        span.set_attribute(KeyValue::new(
            "feature_flag.result.variant",
            shared(flag.variant.clone()),
        ));
    }
    if let Some(id) = &flag.identifier {
        span.set_attribute(KeyValue::new("feature_flag.context.id", shared(id.clone())));
    }
    match flag.error {
        Some(error) => {
            span.set_attribute(KeyValue::new("error.type", error));
            true
        }
        None => false,
    }
}

/// Why a client span is made: for the request being served, or for background work (made
/// only with `flagpole.telemetry.background_spans`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    Request,
    Background,
}

/// The tracer for a client span of `cause`, if one is made.
#[inline]
fn client_tracer(cause: Cause) -> Option<&'static SdkTracer> {
    let tracer = super::tracer()?;
    (cause == Cause::Request || super::background_spans()).then_some(tracer)
}

/// The span of a request Flagpole sends (an upstream fetch, an analytics or shadow post, a Redis
/// command), a root span of its own trace; `None` when spans are not exported, or not for
/// background work.
pub(crate) struct ClientSpan {
    span: Span,
    cx: Context,
}

impl ClientSpan {
    /// Starts it: `name` (`GET /environment-document/`), the method and the URL (without
    /// query: none of Flagpole's carries anything but pages).
    pub(crate) fn start(
        (name, cause): (&'static str, Cause),
        method: &'static str,
        url: &url::Url,
        environment: Option<&str>,
    ) -> Option<ClientSpan> {
        let tracer = client_tracer(cause)?;
        let mut span = client_span(tracer, Cow::Borrowed(name));
        if span.is_recording() {
            span.set_attribute(KeyValue::new("http.request.method", method));
            let mut full = url.clone();
            full.set_query(None);
            let _ = full.set_password(None);
            span.set_attribute(KeyValue::new("url.full", full.to_string()));
            if let Some(host) = url.host_str() {
                span.set_attribute(KeyValue::new("server.address", host.to_owned()));
            }
            if let Some(port) = url.port_or_known_default() {
                span.set_attribute(KeyValue::new("server.port", i64::from(port)));
            }
            fingerprint(&mut span, environment);
        }
        let cx = Context::new().with_remote_span_context(span.span_context().clone());
        Some(ClientSpan { span, cx })
    }

    /// Sends `request` as `client.execute` does, inside a client span named `name` whose
    /// `traceparent` goes with it when spans are exported (and made for `cause`).
    pub(crate) async fn send(
        client: &reqwest::Client,
        mut request: reqwest::Request,
        name: (&'static str, Cause),
        environment: Option<&str>,
    ) -> reqwest::Result<reqwest::Response> {
        let method = method_name(request.method());
        let Some(span) = ClientSpan::start(name, method, request.url(), environment) else {
            return client.execute(request).await;
        };
        span.inject(request.headers_mut());
        let response = client.execute(request).await;
        span.finish(match &response {
            Ok(r) => Ok(r.status().as_u16()),
            Err(e) => Err(transport_kind(e)),
        });
        response
    }

    /// Starts the span of a database command, named by its operation (`EVALSHA`); `peer` holds
    /// what every command on the connection shares (`db.system.name`, `server.address`, …),
    /// made once per connection. `None` when spans are not exported; the fleet's commands are
    /// background work.
    pub(crate) fn database(
        operation: impl FnOnce() -> String,
        peer: &[KeyValue],
    ) -> Option<ClientSpan> {
        let tracer = client_tracer(Cause::Background)?;
        let operation = operation();
        let mut span = client_span(tracer, Cow::Owned(operation.clone()));
        if span.is_recording() {
            span.set_attributes(peer.iter().cloned());
            span.set_attribute(KeyValue::new("db.operation.name", operation));
        }
        Some(ClientSpan {
            span,
            cx: Context::new(),
        })
    }

    /// Adds `traceparent` (and `tracestate`) naming this span to an outgoing request's headers.
    pub(crate) fn inject(&self, headers: &mut HeaderMap) {
        TraceContextPropagator::new().inject_context(&self.cx, &mut HeadersMut(headers));
    }

    /// Ends it with the response's status, or the failure's kind.
    pub(crate) fn finish(mut self, outcome: Result<u16, &str>) {
        if self.span.is_recording() {
            match outcome {
                Ok(status) => {
                    self.span.set_attribute(KeyValue::new(
                        "http.response.status_code",
                        i64::from(status),
                    ));
                    if status >= 400 {
                        self.span
                            .set_attribute(KeyValue::new("error.type", status.to_string()));
                        self.span.set_status(Status::error(""));
                    }
                }
                Err(kind) => self.failed(kind.to_owned()),
            }
        }
        self.span.end();
    }

    /// Ends a database command's span: `error` is the failure's kind, if it failed.
    pub(crate) fn finish_database(mut self, error: Option<String>) {
        if let Some(kind) = error {
            if self.span.is_recording() {
                self.failed(kind);
            }
        }
        self.span.end();
    }

    fn failed(&mut self, kind: String) {
        self.span
            .set_attribute(KeyValue::new("error.type", kind.clone()));
        self.span.set_status(Status::error(kind));
    }
}

fn client_span(tracer: &SdkTracer, name: Cow<'static, str>) -> Span {
    tracer
        .span_builder(name)
        .with_kind(SpanKind::Client)
        .start_with_context(tracer, &Context::new())
}

/// How a request that got no response failed.
pub(crate) fn transport_kind(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connect"
    } else {
        "network"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openfeature_error_codes_become_the_conventions_error_types() {
        assert_eq!(error_type("FLAG_NOT_FOUND"), "flag_not_found");
        assert_eq!(error_type("TARGETING_KEY_MISSING"), "targeting_key_missing");
        assert_eq!(error_type("GENERAL"), "general");
        assert_eq!(error_type("SOMETHING_NEW"), "general");
    }
}
