//! `GET /metrics`: Prometheus text exposition. The exporter's own metrics (requests, upstream
//! fetches, build info) followed by totals over the environments and the per-environment families
//! (unless `flagpole.metrics.per_environment` is false), read from the store now. 404 when
//! `flagpole.metrics.enabled` is false.

use http::{header, HeaderValue, StatusCode};

use crate::api::{full, AppState, Response};
use crate::telemetry::{self, environments};

const CONTENT_TYPE: HeaderValue =
    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8");

/// The exposition, or `None` when metrics are disabled.
pub(crate) fn metrics(state: &AppState) -> Option<Response> {
    let prometheus = telemetry::prometheus().filter(|_| state.config.telemetry.metrics)?;
    let now = std::time::SystemTime::now();
    let facts: Vec<_> = state
        .store
        .environments()
        .iter()
        .map(|env| environments::EnvFacts::of(env, now))
        .collect();
    let mut text = prometheus.render();
    if !text.is_empty() && !text.ends_with("\n\n") {
        text.push('\n');
    }
    telemetry::summary::render(&mut text, &facts);
    telemetry::flag_sets::render(&mut text, &state.flag_sets);
    if state.config.telemetry.metrics_per_environment {
        environments::render(&mut text, &facts, state.streams.open_count());
    } else {
        environments::render_connections(&mut text, state.streams.open_count());
    }
    let mut response = full(StatusCode::OK, text);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, CONTENT_TYPE);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Some(response)
}
