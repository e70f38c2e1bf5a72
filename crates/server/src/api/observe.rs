//! Per-request observation: request metrics (route × status counters and latency), the access
//! log (`logging.enable_access_log`) and, when OpenTelemetry exports, the request's server span
//! and its OTLP duration. With all off nothing is read, not even the clock; with metrics on, a
//! request costs two clock reads and a few atomic operations.
//!
//! The access log is one `tracing` event per request (target `flagpole::access`, so it follows
//! `logging.log_format`): method, path without the query string (queries may hold identifiers),
//! status, duration in µs and the response size when known. A key in a path (the Flagsmith
//! real-time stream's) is logged as its fingerprint; headers are never logged.

use std::time::Instant;

use http::{HeaderMap, Method, StatusCode, Uri, Version};

use super::Response;
use crate::telemetry::http::{HttpMetrics, RouteLabel};
use crate::telemetry::otel::meters::{self, Meters};
use crate::telemetry::otel::spans::{Peer, ServerSpan};

/// The `tracing` target of access-log lines.
use crate::logging::ACCESS_LOG_TARGET;

/// What the service observes, fixed at start.
#[derive(Clone, Copy)]
pub(super) struct Observer {
    metrics: Option<&'static HttpMetrics>,
    access_log: bool,
    tracer: Option<&'static opentelemetry_sdk::trace::SdkTracer>,
    meters: Option<&'static Meters>,
    /// Whether anything at all is observed.
    active: bool,
}

/// The head of a request being observed.
pub(super) struct Head<'a> {
    pub method: &'a Method,
    pub uri: &'a Uri,
    pub version: Version,
    pub headers: &'a HeaderMap,
    /// The connection it came on.
    pub peer: Peer,
}

impl Observer {
    pub(super) fn new(config: &flagpole_config::Config) -> Observer {
        let metrics = (config.telemetry.metrics && crate::telemetry::prometheus().is_some())
            .then(HttpMetrics::global);
        let tracer = crate::telemetry::otel::tracer();
        let meters = meters::get();
        let access_log = config.logging.access_log;
        Observer {
            metrics,
            access_log,
            tracer,
            meters,
            active: metrics.is_some() || access_log || tracer.is_some() || meters.is_some(),
        }
    }

    /// Starts observing a request (`None`, at no cost, when there is nothing to observe).
    #[inline(always)]
    pub(super) fn start(&self, head: Head<'_>) -> Option<Observation> {
        if !self.active {
            return None;
        }
        self.begin(head)
    }

    fn begin(&self, head: Head<'_>) -> Option<Observation> {
        let log = self.access_log.then(|| {
            Box::new(Logged {
                method: head.method.clone(),
                path: loggable_path(head.uri.path()),
            })
        });
        let span = self.tracer.map(|tracer| {
            let route = super::route::Route::of(head.uri.path());
            // The real-time stream's key is in its path, not a header.
            let path_key = match route {
                super::route::Route::RealtimeStream(key) => Some(key),
                _ => None,
            };
            ServerSpan::http(
                tracer,
                (head.method, head.uri, head.version, head.headers),
                (route.label().template(), path_key),
                head.peer,
                || loggable_path(head.uri.path()),
            )
        });
        Some(Observation {
            started: Instant::now(),
            route: RouteLabel::NotFound,
            metrics: self.metrics,
            log,
            traced: (span.is_some() || self.meters.is_some()).then(|| {
                Box::new(Traced {
                    span,
                    meters: self.meters,
                    method: head.method.clone(),
                })
            }),
        })
    }
}

/// One request being observed.
pub(crate) struct Observation {
    started: Instant,
    pub route: RouteLabel,
    metrics: Option<&'static HttpMetrics>,
    log: Option<Box<Logged>>,
    traced: Option<Box<Traced>>,
}

/// What OpenTelemetry records of a request.
struct Traced {
    span: Option<ServerSpan>,
    meters: Option<&'static Meters>,
    method: Method,
}

struct Logged {
    method: Method,
    path: String,
}

impl Observation {
    /// Records the response (for a stream: its opening).
    pub(crate) fn finish(self, response: &Response) {
        let took = self.started.elapsed();
        let status = response.status();
        if let Some(metrics) = self.metrics {
            metrics.record(self.route, status, took);
        }
        if let Some(logged) = self.log {
            log(&logged, status, took.as_micros() as u64, response);
        }
        if let Some(traced) = self.traced {
            if let (Some(meters), Some(route)) = (traced.meters, self.route.template()) {
                meters.http(traced.method.as_str(), route, status.as_u16(), took);
            }
            if let Some(span) = traced.span {
                span.finish_http(status, response.extensions());
            }
        }
    }
}

fn log(logged: &Logged, status: StatusCode, duration_us: u64, response: &Response) {
    let bytes = http_body::Body::size_hint(response.body()).exact();
    let (method, path, status) = (
        logged.method.as_str(),
        logged.path.as_str(),
        status.as_u16(),
    );
    match bytes {
        Some(bytes) => tracing::info!(
            target: ACCESS_LOG_TARGET,
            method, path, status, duration_us, bytes, "request"
        ),
        None => {
            tracing::info!(target: ACCESS_LOG_TARGET, method, path, status, duration_us, "request")
        }
    }
}

/// The path as logged: a real-time stream's key replaced by its fingerprint, at most 256
/// characters.
fn loggable_path(path: &str) -> String {
    if let super::route::Route::RealtimeStream(key) = super::route::Route::of(path) {
        return format!("/sse/environments/{}/stream", crate::keys::fingerprint(key));
    }
    match path.char_indices().nth(256) {
        Some((cut, _)) => format!("{}…", &path[..cut]),
        None => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logged_paths_hide_keys() {
        let logged = loggable_path("/sse/environments/secret_client_key/stream");
        assert!(!logged.contains("secret_client_key"), "{logged}");
        assert!(logged.starts_with("/sse/environments/sec…"), "{logged}");
        assert_eq!(loggable_path("/api/v1/flags/"), "/api/v1/flags/");
        assert_eq!(loggable_path(&"/x".repeat(300)).chars().count(), 257);
    }
}
