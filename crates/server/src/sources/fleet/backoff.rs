//! How often a connection to the fleet's Redis is tried while it fails: once a second at first,
//! then twice as long after each failure up to half a minute, so that a replica with a wrong
//! address or password does not knock on Redis many times a second for as long as it runs. A
//! success starts the count again.

use std::time::{Duration, Instant};

/// The first wait after a failure.
const FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two attempts.
const CAP: Duration = Duration::from_secs(30);

/// One kind of connection's attempts (the commands' connection, the notices' subscription).
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    /// Failures in a row.
    failures: u32,
    /// No attempt before this.
    next: Option<Instant>,
}

impl Backoff {
    /// Whether an attempt may be made at `now`.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.next.is_none_or(|t| now >= t)
    }

    /// An attempt failed at `now`: how long until the next.
    pub(crate) fn failed(&mut self, now: Instant) -> Duration {
        let wait = FIRST.saturating_mul(1 << self.failures.min(5)).min(CAP);
        self.failures = self.failures.saturating_add(1);
        self.next = Some(now + wait);
        wait
    }

    pub(crate) fn succeeded(&mut self) {
        *self = Backoff::default();
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;
    use std::time::{Duration, Instant};

    #[test]
    fn waits_double_up_to_half_a_minute_and_a_success_starts_again() {
        let now = Instant::now();
        let mut backoff = Backoff::default();
        assert!(backoff.due(now));
        let waits: Vec<u64> = (0..8).map(|_| backoff.failed(now).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert!(!backoff.due(now + Duration::from_secs(29)));
        assert!(backoff.due(now + Duration::from_secs(30)));
        backoff.succeeded();
        assert!(backoff.due(now));
        assert_eq!(backoff.failed(now), Duration::from_secs(1));
    }
}
