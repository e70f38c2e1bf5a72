//! Failed exports, per signal: each export the collector did not take (refused with a status,
//! unreachable, too slow) is counted in `flagpole_otel_export_failures_total{signal}` (present
//! at 0 from the start, so an alert on its rate works before the first failure) and logged at
//! WARN with the endpoint and the reason, at most once a minute per signal, so a collector down
//! for hours costs a line a minute, not one per export. The export that works again after a
//! logged failure says so once (so a flapping collector costs no more INFO lines than WARN).
//!
//! Without this a metrics endpoint answering 404 (a trace-only backend such as Jaeger) looked
//! exactly like a working one.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

use flagpole_config::Signal;

/// The Prometheus counter of exports that failed, by signal.
pub(crate) const EXPORT_FAILURES: &str = "flagpole_otel_export_failures_total";

/// The least time between two WARN lines of one signal.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// What failed exports of one signal have been, shared by its exporter.
#[derive(Debug)]
pub(super) struct Failures {
    /// The counter's label (`traces`, `metrics`).
    signal: &'static str,
    /// What is exported (`spans`, `metrics`).
    what: &'static str,
    /// What a failure loses.
    lost: &'static str,
    endpoint: String,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Whether a failure was logged since the last "takes … again" line (a collector that
    /// flaps gets as few recovery lines as WARN lines).
    warned: bool,
    /// When the last WARN line was written.
    logged: Option<Instant>,
    /// Failures since that line.
    unlogged: u64,
}

impl Failures {
    /// The failures of exporting `signal` to `endpoint`; its counter starts at 0.
    pub(super) fn new(signal: Signal, endpoint: &str) -> Failures {
        let (signal, what, lost) = match signal {
            Signal::Traces => (
                "traces",
                "spans",
                "they are dropped (and counted in flagpole_otel_spans_dropped_total) until the collector takes them again",
            ),
            Signal::Metrics => (
                "metrics",
                "metrics",
                "each interval's points are lost until the collector takes them again",
            ),
        };
        metrics::describe_counter!(
            EXPORT_FAILURES,
            metrics::Unit::Count,
            "OTLP exports the collector did not take (refused, unreachable or too slow), by signal."
        );
        metrics::counter!(EXPORT_FAILURES, "signal" => signal).increment(0);
        Failures {
            signal,
            what,
            lost,
            endpoint: endpoint.to_owned(),
            state: Mutex::new(State::default()),
        }
    }

    /// One export failed for `reason`.
    pub(super) fn failed(&self, reason: &str) {
        metrics::counter!(EXPORT_FAILURES, "signal" => self.signal).increment(1);
        let mut state = self.state.lock();
        state.unlogged += 1;
        let now = Instant::now();
        if state
            .logged
            .is_some_and(|at| now.duration_since(at) < LOG_EVERY)
        {
            return;
        }
        tracing::warn!(
            signal = self.signal,
            endpoint = %self.endpoint,
            error = %reason,
            failures = state.unlogged,
            "OpenTelemetry: {} cannot be exported; {} (failed exports are counted in {EXPORT_FAILURES}; this line comes at most once a minute)",
            self.what,
            self.lost,
        );
        state.logged = Some(now);
        state.unlogged = 0;
        state.warned = true;
    }

    /// One export worked; returns whether it said so (the first success after a logged
    /// failure).
    pub(super) fn succeeded(&self) -> bool {
        let mut state = self.state.lock();
        if !std::mem::take(&mut state.warned) {
            return false;
        }
        tracing::info!(
            signal = self.signal,
            endpoint = %self.endpoint,
            "OpenTelemetry: the collector takes {} again",
            self.what
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_failures_is_logged_once_and_its_end_once() {
        let failures = Failures::new(Signal::Traces, "http://collector:4318/v1/traces");
        for _ in 0..5 {
            failures.failed("HTTP export failed with status code: 404");
        }
        {
            let state = failures.state.lock();
            assert!(state.warned);
            assert!(state.logged.is_some());
            assert_eq!(state.unlogged, 4, "only the first failure was logged");
        }
        assert!(failures.succeeded());
        assert!(!failures.succeeded(), "a second success ends nothing");
        // Failing again within the minute: counted, not logged, and so no recovery line either.
        failures.failed("HTTP export failed with status code: 404");
        assert_eq!(
            failures.state.lock().unlogged,
            5,
            "failures since the last line"
        );
        assert!(!failures.succeeded());
    }
}
