//! Operational telemetry: Prometheus metrics (`GET /metrics`), the process start time the status
//! page shows, and upstream fetch accounting.
//!
//! Metrics go through the `metrics` facade into `metrics-exporter-prometheus`, installed as the
//! process-wide recorder by [`init`] when `flagpole.metrics.enabled` (the default); without it
//! every handle is a no-op and `/metrics` answers 404. Request metrics never look a label set up
//! per request: `http::HttpMetrics` holds one counter and histogram handle per route × status,
//! registered on first use, so a request costs a clock read and a few atomic operations.
//!
//! Per-environment figures are not kept in the exporter's registry: they are read from the store
//! when scraped and written as text after the exporter's own output (`environments`), so an
//! environment that key discovery removes disappears from the next scrape instead of lingering
//! as a stale series.
//!
//! OpenTelemetry (traces and, beside these meters, the same figures over OTLP) is `otel`, set up
//! by the same [`init`] when an endpoint is configured.

pub(crate) mod environments;
pub(crate) mod flag_sets;
pub(crate) mod flagd;
pub(crate) mod fleet;
pub(crate) mod http;
pub(crate) mod otel;
pub(crate) mod summary;

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::shutdown::Shutdown;
use flagpole_config::Config;

/// Request latency buckets, seconds: a prepared `/flags` body takes a few µs, an identity with
/// many segments some tens of µs, a large environment document or a slow client milliseconds.
const HTTP_BUCKETS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];
/// Upstream fetch buckets, seconds (the poll timeout is 5 s by default).
const FETCH_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// How often recorded histogram samples are folded into their buckets (bounds the memory the
/// exporter holds between scrapes: about 16 bytes per request in between).
const UPKEEP_EVERY: Duration = Duration::from_secs(2);

pub(crate) const HTTP_REQUESTS: &str = "flagpole_http_requests_total";
pub(crate) const HTTP_DURATION: &str = "flagpole_http_request_duration_seconds";
pub(crate) const UPSTREAM_FETCHES: &str = "flagpole_upstream_fetches_total";
pub(crate) const UPSTREAM_DURATION: &str = "flagpole_upstream_fetch_duration_seconds";
pub(crate) const IDENTITY_CACHE: &str = "flagpole_identity_cache_requests_total";
pub(crate) const FLAGD_CALLS: &str = "flagpole_flagd_calls_total";
pub(crate) const FLAGD_DURATION: &str = "flagpole_flagd_call_duration_seconds";
const BUILD_INFO: &str = "flagpole_build_info";
const START_TIME: &str = "flagpole_start_time_seconds";

struct Process {
    started: Instant,
    started_at: SystemTime,
    prometheus: Option<PrometheusHandle>,
}

static PROCESS: OnceLock<Process> = OnceLock::new();

/// Records the start time and, when metrics are enabled, installs the Prometheus recorder and
/// starts its upkeep (inside a Tokio runtime; a background task of `shutdown`, ending when
/// shutdown is requested). Later calls change nothing.
pub(crate) fn init(config: &Config, shutdown: &Shutdown) {
    PROCESS.get_or_init(|| {
        let prometheus = config
            .telemetry
            .metrics
            .then(|| install(shutdown))
            .flatten();
        Process {
            started: Instant::now(),
            started_at: SystemTime::now(),
            prometheus,
        }
    });
    otel::init(config, shutdown);
}

fn install(shutdown: &Shutdown) -> Option<PrometheusHandle> {
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(HTTP_DURATION.into()), HTTP_BUCKETS)
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full(UPSTREAM_DURATION.into()), FETCH_BUCKETS)
        })
        .and_then(|b| b.set_buckets_for_metric(Matcher::Full(FLAGD_DURATION.into()), HTTP_BUCKETS))
        .expect("bucket lists are not empty")
        .build_recorder();
    let handle = recorder.handle();
    if let Err(e) = metrics::set_global_recorder(recorder) {
        tracing::warn!(error = %e, "metrics disabled: another metrics recorder is installed");
        return None;
    }
    describe();
    fleet::describe();
    metrics::gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    metrics::gauge!(START_TIME).set(unix_seconds(SystemTime::now()));
    let upkeep = handle.clone();
    let stop = shutdown.requested.clone();
    shutdown.spawn(async move {
        let mut ticks = tokio::time::interval(UPKEEP_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = stop.cancelled() => return,
            }
            let handle = upkeep.clone();
            let _ = crate::background::run(move || handle.run_upkeep()).await;
        }
    });
    Some(handle)
}

fn describe() {
    use metrics::Unit;
    metrics::describe_counter!(
        HTTP_REQUESTS,
        Unit::Count,
        "HTTP requests answered, by route and status (streams count when opened)."
    );
    metrics::describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "Time from receiving a request to its response being ready (streams: to the stream opening)."
    );
    metrics::describe_counter!(
        UPSTREAM_FETCHES,
        Unit::Count,
        "Environment document fetches from upstream, by result (200, 304 or the kind of failure)."
    );
    metrics::describe_histogram!(
        UPSTREAM_DURATION,
        Unit::Seconds,
        "Duration of environment document fetches from upstream, every page included."
    );
    metrics::describe_counter!(
        IDENTITY_CACHE,
        Unit::Count,
        "Identity requests by whether the identity cache answered them (hit) or they were evaluated (miss)."
    );
    metrics::describe_counter!(
        FLAGD_CALLS,
        Unit::Count,
        "flagd front door calls (gRPC and Connect, v1 and v2 together), by method and gRPC status code."
    );
    metrics::describe_histogram!(
        FLAGD_DURATION,
        Unit::Seconds,
        "Time to answer a flagd call (event streams: to the stream opening), by method."
    );
    metrics::describe_gauge!(BUILD_INFO, "Always 1; the version is a label.");
    metrics::describe_gauge!(
        START_TIME,
        Unit::Seconds,
        "When the process started, in Unix seconds."
    );
}

/// The exporter, when metrics are enabled.
pub(crate) fn prometheus() -> Option<&'static PrometheusHandle> {
    PROCESS.get()?.prometheus.as_ref()
}

/// Since when the process runs (as a wall-clock time) and for how long.
pub(crate) fn uptime() -> (SystemTime, Duration) {
    match PROCESS.get() {
        Some(p) => (p.started_at, p.started.elapsed()),
        None => (SystemTime::now(), Duration::ZERO),
    }
}

/// Counts one upstream document fetch. `result`: `200`, `304`, or a failure kind (see
/// `sources::upstream::FetchError`). Once per poll, so a registry lookup is fine here.
pub(crate) fn upstream_fetch(result: &'static str, took: Duration) {
    metrics::counter!(UPSTREAM_FETCHES, "result" => result).increment(1);
    metrics::histogram!(UPSTREAM_DURATION).record(took.as_secs_f64());
    if let Some(meters) = otel::meters::get() {
        meters.upstream_fetch(result, took);
    }
}

/// Counts one identity request answered from the identity cache (`hit`) or evaluated. On the
/// request path: the two handles are registered once, then each count is one atomic add.
pub(crate) fn identity_cache(hit: bool) {
    static HANDLES: std::sync::OnceLock<[metrics::Counter; 2]> = std::sync::OnceLock::new();
    let handles = HANDLES.get_or_init(|| {
        ["miss", "hit"].map(|result| metrics::counter!(IDENTITY_CACHE, "result" => result))
    });
    handles[usize::from(hit)].increment(1);
    if let Some(meters) = otel::meters::get() {
        meters.identity_cache(hit);
    }
}

/// `at` in Unix seconds (fractional).
pub(crate) fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}
