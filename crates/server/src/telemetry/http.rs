//! Request metrics on the hot path: a fixed table of counter and histogram handles indexed by
//! route × status, each registered with the recorder the first time it is used. Recording a
//! request is one index computation, one `OnceLock` load and two atomic updates: no label set is
//! built or hashed per request.

use std::sync::OnceLock;
use std::time::Duration;

use http::StatusCode;

/// What a request was for: the `route` label (a small fixed set, never the raw path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RouteLabel {
    Flags,
    Identities,
    EnvironmentDocument,
    Analytics,
    OfrepBulk,
    OfrepFlag,
    OfrepEvents,
    RealtimeStream,
    /// Unleash's client API: `/api/client/features` (and one toggle).
    UnleashClient,
    /// Unleash's frontend API: `/api/frontend`, `/api/proxy` (and one toggle).
    UnleashFrontend,
    /// Unleash SDKs' registrations and metrics (`/api/client/register`, `…/metrics`).
    UnleashMetrics,
    Health,
    Metrics,
    Status,
    /// A CORS preflight (`OPTIONS`), whatever its path.
    Preflight,
    NotFound,
}

impl RouteLabel {
    const COUNT: usize = 16;

    pub(crate) fn name(self) -> &'static str {
        match self {
            RouteLabel::Flags => "flags",
            RouteLabel::Identities => "identities",
            RouteLabel::EnvironmentDocument => "environment_document",
            RouteLabel::Analytics => "analytics",
            RouteLabel::OfrepBulk => "ofrep_bulk",
            RouteLabel::OfrepFlag => "ofrep_flag",
            RouteLabel::OfrepEvents => "ofrep_events",
            RouteLabel::RealtimeStream => "realtime_stream",
            RouteLabel::UnleashClient => "unleash_client",
            RouteLabel::UnleashFrontend => "unleash_frontend",
            RouteLabel::UnleashMetrics => "unleash_metrics",
            RouteLabel::Health => "health",
            RouteLabel::Metrics => "metrics",
            RouteLabel::Status => "status",
            RouteLabel::Preflight => "cors_preflight",
            RouteLabel::NotFound => "not_found",
        }
    }
}

impl RouteLabel {
    /// The route as the OpenTelemetry `http.route` attribute says it (a template: keys are
    /// `{key}`); `None` for no endpoint and for a preflight, which may be of any path.
    pub(crate) fn template(self) -> Option<&'static str> {
        Some(match self {
            RouteLabel::Flags => "/api/v1/flags/",
            RouteLabel::Identities => "/api/v1/identities/",
            RouteLabel::EnvironmentDocument => "/api/v1/environment-document/",
            RouteLabel::Analytics => "/api/v1/analytics/flags/",
            RouteLabel::OfrepBulk => "/ofrep/v1/evaluate/flags",
            RouteLabel::OfrepFlag => "/ofrep/v1/evaluate/flags/{key}",
            RouteLabel::OfrepEvents => "/ofrep/v1/events",
            RouteLabel::RealtimeStream => "/sse/environments/{key}/stream",
            RouteLabel::UnleashClient => "/api/client/features",
            RouteLabel::UnleashFrontend => "/api/frontend",
            RouteLabel::UnleashMetrics => "/api/client/metrics",
            RouteLabel::Health => "/proxy/health",
            RouteLabel::Metrics => "/metrics",
            RouteLabel::Status => "/proxy/status",
            RouteLabel::Preflight | RouteLabel::NotFound => return None,
        })
    }
}

/// The statuses the proxy answers with, each its own `status` label; anything else is counted
/// as `other`.
const STATUSES: [(u16, &str); 18] = [
    (200, "200"),
    (204, "204"),
    (304, "304"),
    (400, "400"),
    (401, "401"),
    (403, "403"),
    (404, "404"),
    (405, "405"),
    (406, "406"),
    (413, "413"),
    (415, "415"),
    (422, "422"),
    (429, "429"),
    (431, "431"),
    (500, "500"),
    (502, "502"),
    (503, "503"),
    (504, "504"),
];
const STATUS_SLOTS: usize = STATUSES.len() + 1;

fn status_slot(status: StatusCode) -> usize {
    let code = status.as_u16();
    STATUSES
        .iter()
        .position(|(c, _)| *c == code)
        .unwrap_or(STATUSES.len())
}

fn status_name(slot: usize) -> &'static str {
    STATUSES.get(slot).map_or("other", |(_, name)| name)
}

/// One route × status: its request counter and latency histogram.
struct Cell {
    requests: metrics::Counter,
    duration: metrics::Histogram,
}

/// Handles for every route × status, registered on first use.
pub(crate) struct HttpMetrics {
    cells: [OnceLock<Cell>; RouteLabel::COUNT * STATUS_SLOTS],
}

impl HttpMetrics {
    /// The process-wide table (handles belong to the global recorder).
    pub(crate) fn global() -> &'static HttpMetrics {
        static TABLE: OnceLock<HttpMetrics> = OnceLock::new();
        TABLE.get_or_init(|| HttpMetrics {
            cells: std::array::from_fn(|_| OnceLock::new()),
        })
    }

    /// Counts one request and its latency.
    #[inline]
    pub(crate) fn record(&self, route: RouteLabel, status: StatusCode, took: Duration) {
        let slot = status_slot(status);
        let cell = self.cells[route as usize * STATUS_SLOTS + slot].get_or_init(|| {
            let labels = [("route", route.name()), ("status", status_name(slot))];
            Cell {
                requests: metrics::counter!(super::HTTP_REQUESTS, &labels),
                duration: metrics::histogram!(super::HTTP_DURATION, &labels),
            }
        });
        cell.requests.increment(1);
        cell.duration.record(took.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_have_their_own_slot_or_other() {
        assert_eq!(status_name(status_slot(StatusCode::OK)), "200");
        assert_eq!(status_name(status_slot(StatusCode::NOT_MODIFIED)), "304");
        assert_eq!(status_name(status_slot(StatusCode::IM_A_TEAPOT)), "other");
        assert_eq!(RouteLabel::NotFound as usize + 1, RouteLabel::COUNT);
    }
}
