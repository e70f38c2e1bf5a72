//! When an environment polls upstream: once at start (all environments together, bounded by
//! `max_concurrent_fetches`, so readiness is not delayed), then once per period at a phase of
//! its own, a random offset within the period drawn once, plus a little jitter per poll. With
//! a fixed period for every environment and jitter alone, all of them would keep polling in the
//! burst of the start (200 environments polled within the first 1.5 s of every 5 s): a burst
//! that grows with the count. With a phase each, the polls of N environments spread evenly
//! over the period, whatever N is.
//!
//! The times are anchored (start + phase + k × period), so jitter never accumulates into drift
//! and an environment is polled once per period; a fetch that overruns its slot skips to the
//! next one instead of polling twice in a row.

use std::time::{Duration, Instant};

/// Jitter per poll: up to this fraction of the period, either way.
const JITTER: f64 = 0.02;

/// One environment's poll times.
#[derive(Debug, Clone)]
pub(crate) struct PollSchedule {
    period: Duration,
    /// The anchor of the current slot: start + phase + k × period.
    slot: Instant,
}

impl PollSchedule {
    /// A schedule for polls every `period` from `start` (the first poll, which is immediate),
    /// at a random phase.
    pub(crate) fn new(period: Duration, start: Instant) -> PollSchedule {
        Self::with_phase(period, start, rand::random::<f64>())
    }

    /// The same with the phase given as a fraction of the period (`0.0..1.0`).
    pub(crate) fn with_phase(period: Duration, start: Instant, phase: f64) -> PollSchedule {
        PollSchedule {
            period,
            // The first slot after the immediate poll: its phase within the first period, so
            // the second poll comes less than a period after the first.
            slot: start + period.mul_f64(phase.clamp(0.0, 1.0)),
        }
    }

    /// When to poll next, after a poll that ended at `now`: the next slot not in the past, with
    /// jitter.
    pub(crate) fn next_after(&mut self, now: Instant) -> Instant {
        self.next_with(now, rand::random::<f64>() * 2.0 - 1.0)
    }

    /// The same with the jitter given as a fraction of [`JITTER`] (`-1.0..=1.0`).
    pub(crate) fn next_with(&mut self, now: Instant, jitter: f64) -> Instant {
        // A fetch that ran past its slot (a slow upstream) waits for the next one.
        while self.slot <= now {
            self.slot += self.period;
        }
        let at = self.slot;
        self.slot += self.period;
        let shift = self.period.mul_f64(JITTER * jitter.abs().min(1.0));
        if jitter < 0.0 {
            at.checked_sub(shift).filter(|t| *t > now).unwrap_or(at)
        } else {
            at + shift
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn polls_once_per_period_at_the_phase() {
        let start = Instant::now();
        let mut schedule = PollSchedule::with_phase(10 * SECOND, start, 0.3);
        let mut now = start + Duration::from_millis(50);
        for k in 0..5 {
            let at = schedule.next_with(now, 0.0);
            assert_eq!(at, start + 3 * SECOND + k * 10 * SECOND);
            now = at + Duration::from_millis(50);
        }
    }

    #[test]
    fn jitter_stays_within_its_bound_and_does_not_drift() {
        let start = Instant::now();
        let mut schedule = PollSchedule::with_phase(10 * SECOND, start, 0.5);
        let mut now = start;
        for k in 0..20u32 {
            let jitter = if k % 2 == 0 { 1.0 } else { -1.0 };
            let at = schedule.next_with(now, jitter);
            let anchor = start + 5 * SECOND + k * 10 * SECOND;
            let off = if at > anchor {
                at - anchor
            } else {
                anchor - at
            };
            assert!(off <= Duration::from_millis(200), "{off:?}");
            now = at;
        }
    }

    #[test]
    fn an_overrunning_fetch_skips_to_the_next_slot() {
        let start = Instant::now();
        let mut schedule = PollSchedule::with_phase(10 * SECOND, start, 0.1);
        // The first fetch took 25 s: slots at 1 s and 11 s have passed; the next is 31 s.
        let at = schedule.next_with(start + 25 * SECOND, 0.0);
        assert_eq!(at, start + 31 * SECOND);
        let at = schedule.next_with(at, 0.0);
        assert_eq!(at, start + 41 * SECOND);
    }
}
