//! The meters exported over OTLP when a metrics endpoint is set, named after the OpenTelemetry
//! semantic conventions where one exists (`http.server.request.duration`,
//! `rpc.server.call.duration`) and `flagpole.*` otherwise. They are recorded beside the
//! Prometheus handles at the same points (`/metrics` is unchanged); without an endpoint
//! [`get`] is `None` and nothing is recorded.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{SdkMeterProvider, Temporality};

use super::failures::Failures;

/// Request durations, seconds: the Prometheus histogram's buckets.
const DURATION_BOUNDS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];
const FETCH_BOUNDS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

pub(crate) struct Meters {
    http_duration: Histogram<f64>,
    rpc_duration: Histogram<f64>,
    upstream_duration: Histogram<f64>,
    identity_cache: Counter<u64>,
}

static METERS: OnceLock<Meters> = OnceLock::new();

/// The meters, when metrics are exported.
#[inline]
pub(crate) fn get() -> Option<&'static Meters> {
    METERS.get()
}

pub(super) fn install(provider: &SdkMeterProvider) {
    let meter = provider.meter("flagpole");
    let _ = METERS.set(Meters {
        http_duration: meter
            .f64_histogram("http.server.request.duration")
            .with_unit("s")
            .with_description("Duration of HTTP server requests (streams: to the stream opening).")
            .with_boundaries(DURATION_BOUNDS.to_vec())
            .build(),
        rpc_duration: meter
            .f64_histogram("rpc.server.call.duration")
            .with_unit("s")
            .with_description(
                "Duration of flagd calls, gRPC and Connect (event streams: to the stream opening).",
            )
            .with_boundaries(DURATION_BOUNDS.to_vec())
            .build(),
        upstream_duration: meter
            .f64_histogram("flagpole.upstream.fetch.duration")
            .with_unit("s")
            .with_description(
                "Environment document fetches from upstream, every page included, by result.",
            )
            .with_boundaries(FETCH_BOUNDS.to_vec())
            .build(),
        identity_cache: meter
            .u64_counter("flagpole.identity_cache.requests")
            .with_unit("{request}")
            .with_description("Identity requests by whether the identity cache answered them.")
            .build(),
    });
}

impl Meters {
    pub(crate) fn http(&self, method: &str, route: &'static str, status: u16, took: Duration) {
        self.http_duration.record(
            took.as_secs_f64(),
            &[
                KeyValue::new("http.request.method", method.to_owned()),
                KeyValue::new("http.route", route),
                KeyValue::new("http.response.status_code", i64::from(status)),
            ],
        );
    }

    pub(crate) fn rpc(&self, method: &'static str, code: i64, took: Duration) {
        self.rpc_duration.record(
            took.as_secs_f64(),
            &[
                KeyValue::new("rpc.system", "grpc"),
                KeyValue::new("rpc.service", "flagd.evaluation.Service"),
                KeyValue::new("rpc.method", method),
                KeyValue::new("rpc.grpc.status_code", code),
            ],
        );
    }

    pub(crate) fn upstream_fetch(&self, result: &'static str, took: Duration) {
        self.upstream_duration
            .record(took.as_secs_f64(), &[KeyValue::new("result", result)]);
    }

    pub(crate) fn identity_cache(&self, hit: bool) {
        let result = if hit { "hit" } else { "miss" };
        self.identity_cache
            .add(1, &[KeyValue::new("result", result)]);
    }
}

/// A metric exporter run inside the Tokio runtime (the periodic reader calls it from its own
/// thread, and the OTLP clients need the runtime's reactor), whose failed exports are counted
/// and logged (the reader would only tell the SDK's internal log).
pub(super) struct InRuntime<E> {
    inner: E,
    runtime: tokio::runtime::Handle,
    failures: Failures,
}

impl<E> InRuntime<E> {
    pub(super) fn new(inner: E, runtime: tokio::runtime::Handle, failures: Failures) -> Self {
        InRuntime {
            inner,
            runtime,
            failures,
        }
    }
}

impl<E: PushMetricExporter> PushMetricExporter for InRuntime<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let outcome = self.runtime.block_on(self.inner.export(metrics));
        match &outcome {
            Ok(()) => {
                self.failures.succeeded();
            }
            Err(e) => self.failures.failed(&e.to_string()),
        }
        outcome
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}
