//! Spans: the server span of a request, inside the caller's trace (W3C `traceparent`,
//! `tracestate`, `baggage`), and the client span of a request Flagpole sends, whose
//! `traceparent` goes with it. Attributes follow the OpenTelemetry semantic conventions for
//! HTTP, RPC and feature flags; a key never appears in one (its fingerprint does, as in the
//! logs), nor an identifier unless `flagpole.telemetry.record_identifier` says so.
//!
//! A span is started only when spans are exported ([`super::tracer`]); its attributes are
//! written only when the sampler kept it, so a request in the 99 % a 1 % sampler drops pays for
//! the sampling decision and little else.

use std::borrow::Cow;

use http::{HeaderMap, Method, StatusCode, Version};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{SdkTracer, Span};

/// What the feature-flag conventions say about one evaluated flag; a front door that evaluated
/// one flag puts it in its response's extensions (only when spans are exported).
#[derive(Clone, Debug)]
pub(crate) struct FlagEvaluated {
    pub key: String,
    pub variant: String,
    pub reason: &'static str,
    /// The evaluation's identifier, kept only with `record_identifier`.
    pub identifier: Option<String>,
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
            key: key.to_owned(),
            variant: variant.to_owned(),
            reason,
            identifier: identifier
                .filter(|_| super::record_identifier())
                .map(str::to_owned),
        })
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

/// A standard method's name as a static string (span names start as it).
fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        _ => "HTTP",
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

fn version_name(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "0.9",
        Version::HTTP_10 => "1.0",
        Version::HTTP_2 => "2",
        Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

/// `server.address` and `server.port` from the `Host` header (HTTP/1.1) or the authority.
fn server_address(headers: &HeaderMap, uri: &http::Uri) -> Vec<KeyValue> {
    let authority = uri
        .authority()
        .map(http::uri::Authority::as_str)
        .or_else(|| {
            headers
                .get(http::header::HOST)
                .and_then(|v| v.to_str().ok())
        });
    let Some(authority) = authority else {
        return Vec::new();
    };
    let Ok(authority) = authority.parse::<http::uri::Authority>() else {
        return Vec::new();
    };
    let mut out = vec![KeyValue::new("server.address", authority.host().to_owned())];
    if let Some(port) = authority.port_u16() {
        out.push(KeyValue::new("server.port", i64::from(port)));
    }
    out
}

/// A request's server span, until its response is ready.
pub(crate) struct ServerSpan {
    span: Span,
}

impl ServerSpan {
    /// Starts the server span of an HTTP request (the Flagsmith API, OFREP, the streams).
    /// `route` is the route's template (`/api/v1/identities/`), `None` for a path that is no
    /// endpoint; `path_key` a key the path carries (the real-time stream's); `path` is the path
    /// as it may be recorded (keys fingerprinted).
    pub(crate) fn http(
        tracer: &SdkTracer,
        (method, uri, version, headers): (&Method, &http::Uri, Version, &HeaderMap),
        (route, path_key): (Option<&'static str>, Option<&str>),
        path: impl FnOnce() -> String,
    ) -> ServerSpan {
        let method = method_name(method);
        let mut span = tracer
            .span_builder(method)
            .with_kind(SpanKind::Server)
            .start_with_context(tracer, &parent(headers));
        if span.is_recording() {
            if let Some(route) = route {
                span.update_name(format!("{method} {route}"));
                span.set_attribute(KeyValue::new("http.route", route));
            }
            span.set_attribute(KeyValue::new("http.request.method", method));
            span.set_attribute(KeyValue::new("url.path", path()));
            span.set_attribute(KeyValue::new(
                "network.protocol.version",
                version_name(version),
            ));
            for kv in server_address(headers, uri) {
                span.set_attribute(kv);
            }
            fingerprint(&mut span, presented_key(headers).or(path_key));
        }
        ServerSpan { span }
    }

    /// Starts the server span of a flagd call (gRPC or Connect): named by its path
    /// (`flagd.evaluation.v1.Service/ResolveBoolean`).
    pub(crate) fn rpc(
        tracer: &SdkTracer,
        system: &'static str,
        uri: &http::Uri,
        headers: &HeaderMap,
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
            for kv in server_address(headers, uri) {
                span.set_attribute(kv);
            }
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
            if status.is_server_error() {
                self.span
                    .set_attribute(KeyValue::new("error.type", status.as_str().to_owned()));
                self.span.set_status(Status::error(""));
            }
            flag(&mut self.span, extensions);
        }
        self.span.end();
    }

    /// Ends a flagd call's span with its gRPC status code (Connect's too: the same codes).
    pub(crate) fn finish_rpc(mut self, code: i64, extensions: &http::Extensions) {
        if self.span.is_recording() {
            self.span
                .set_attribute(KeyValue::new("rpc.grpc.status_code", code));
            // The server-side errors of the RPC conventions.
            if matches!(code, 2 | 4 | 12 | 13 | 14 | 15) {
                self.span
                    .set_attribute(KeyValue::new("error.type", code.to_string()));
                self.span.set_status(Status::error(""));
            }
            flag(&mut self.span, extensions);
        }
        self.span.end();
    }
}

/// The presented key's fingerprint, as the logs show it.
fn fingerprint(span: &mut Span, key: Option<&str>) {
    if let Some(key) = key {
        span.set_attribute(KeyValue::new(
            "flagpole.environment_key.fingerprint",
            crate::keys::fingerprint(key),
        ));
    }
}

fn flag(span: &mut Span, extensions: &http::Extensions) {
    let Some(flag) = extensions.get::<FlagEvaluated>() else {
        return;
    };
    span.set_attribute(KeyValue::new("feature_flag.key", flag.key.clone()));
    span.set_attribute(KeyValue::new("feature_flag.provider.name", "flagpole"));
    span.set_attribute(KeyValue::new("feature_flag.result.reason", flag.reason));
    if !flag.variant.is_empty() {
        span.set_attribute(KeyValue::new(
            "feature_flag.result.variant",
            flag.variant.clone(),
        ));
    }
    if let Some(id) = &flag.identifier {
        span.set_attribute(KeyValue::new("feature_flag.context.id", id.clone()));
    }
}

/// The span of a request Flagpole sends (an upstream fetch, an analytics post), a root span
/// of its own trace; `None` when spans are not exported.
pub(crate) struct ClientSpan {
    span: Span,
    cx: Context,
}

impl ClientSpan {
    /// Starts it: `name` (`GET /environment-document/`), the method and the URL (without
    /// query: none of Flagpole's carries anything but pages).
    pub(crate) fn start(
        name: &'static str,
        method: &'static str,
        url: &url::Url,
        environment: Option<&str>,
    ) -> Option<ClientSpan> {
        let tracer = super::tracer()?;
        let mut span = tracer
            .span_builder(Cow::Borrowed(name))
            .with_kind(SpanKind::Client)
            .start_with_context(tracer, &Context::new());
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
            if let Some(key) = environment {
                span.set_attribute(KeyValue::new(
                    "flagpole.environment_key.fingerprint",
                    crate::keys::fingerprint(key),
                ));
            }
        }
        let cx = Context::new().with_remote_span_context(span.span_context().clone());
        Some(ClientSpan { span, cx })
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
                Err(kind) => {
                    self.span
                        .set_attribute(KeyValue::new("error.type", kind.to_owned()));
                    self.span.set_status(Status::error(kind.to_owned()));
                }
            }
        }
        self.span.end();
    }
}
