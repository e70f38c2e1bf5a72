//! Per-key request rate limits (optional): a GCRA bucket per presented key and API family,
//! `rps` requests a second with a burst of `rps`, checked after the key is recognised and
//! before any work. A refused request gets 429 with `Retry-After` (whole seconds, at least 1).
//! The buckets are `governor`'s lock-free direct limiters: one atomic per key, no table to lock.

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// The buckets of one key: the Flagsmith SDK API and OFREP are limited separately.
#[derive(Debug, Default)]
pub struct KeyLimits {
    pub flagsmith: Option<DefaultDirectRateLimiter>,
    pub ofrep: Option<DefaultDirectRateLimiter>,
}

impl KeyLimits {
    pub fn new(flagsmith_rps: Option<u32>, ofrep_rps: Option<u32>) -> KeyLimits {
        KeyLimits {
            flagsmith: flagsmith_rps.and_then(limiter),
            ofrep: ofrep_rps.and_then(limiter),
        }
    }
}

fn limiter(rps: u32) -> Option<DefaultDirectRateLimiter> {
    NonZeroU32::new(rps).map(|rps| RateLimiter::direct(Quota::per_second(rps)))
}

/// `Ok` if a request may go ahead now, else the whole seconds (≥ 1) after which it may.
pub(crate) fn check(limiter: Option<&DefaultDirectRateLimiter>) -> Result<(), u64> {
    let Some(limiter) = limiter else {
        return Ok(());
    };
    limiter.check().map_err(|not_until| {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refused_with_a_whole_retry_after() {
        // Three an hour: the burst is three, and no token comes back while the test runs, however
        // slowly it runs (three a second would refill one if the machine stalled for 1/3 s).
        let limiter = RateLimiter::direct(Quota::per_hour(NonZeroU32::new(3).unwrap()));
        for _ in 0..3 {
            assert_eq!(check(Some(&limiter)), Ok(()));
        }
        let retry_after = check(Some(&limiter)).expect_err("over the burst");
        assert!((1..=1200).contains(&retry_after), "{retry_after}");
    }

    #[test]
    fn each_api_family_has_its_own_limit() {
        let limits = KeyLimits::new(Some(1), None);
        assert!(limits.flagsmith.is_some());
        assert_eq!(
            check(limits.ofrep.as_ref()),
            Ok(()),
            "no OFREP limit configured"
        );
    }

    #[test]
    fn zero_means_off() {
        assert!(KeyLimits::new(Some(0), Some(0)).flagsmith.is_none());
    }
}
