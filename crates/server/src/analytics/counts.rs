//! One environment's flag analytics: evaluation counts received since the last flush, in
//! shards (a request locks one shard per feature name, for one map update; the forwarder
//! swaps a shard's map out under the same short lock), and what became of them (atomics and
//! Prometheus handles, read by the status page and `/metrics`).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::SystemTime;

use parking_lot::Mutex;

/// Shards of the live counts: enough that SDKs of one environment rarely meet on a lock.
const SHARDS: usize = 16;

pub(crate) const EVENTS: &str = "flagpole_analytics_events_total";
pub(crate) const FORWARDED: &str = "flagpole_analytics_forwarded_total";
pub(crate) const FAILED: &str = "flagpole_analytics_failed_total";
pub(crate) const DROPPED: &str = "flagpole_analytics_dropped_total";

/// The metrics' help texts (shown once the recorder is installed).
pub(crate) fn describe() {
    use metrics::{describe_counter, Unit};
    describe_counter!(
        EVENTS,
        Unit::Count,
        "Flag evaluations reported by SDKs (flag analytics accepted)."
    );
    describe_counter!(
        FORWARDED,
        Unit::Count,
        "Flag evaluations delivered upstream."
    );
    describe_counter!(
        FAILED,
        Unit::Count,
        "Flag analytics posts upstream that failed (5xx or network) and were kept for a retry."
    );
    describe_counter!(DROPPED, Unit::Count, "Flag evaluations dropped: refused upstream (4xx), past the pending cap, or undelivered at exit.");
}

/// Why evaluations were dropped (the `reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DropReason {
    /// Upstream refused them with a 4xx.
    Refused,
    /// Past `max_pending_features`: the oldest kept counts, or names past the cap.
    Overflow,
    /// Still undelivered when the proxy stopped.
    Shutdown,
}

impl DropReason {
    const ALL: [DropReason; 3] = [
        DropReason::Refused,
        DropReason::Overflow,
        DropReason::Shutdown,
    ];

    fn name(self) -> &'static str {
        match self {
            DropReason::Refused => "refused",
            DropReason::Overflow => "overflow",
            DropReason::Shutdown => "shutdown",
        }
    }
}

/// What the last flush did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlushOutcome {
    /// Upstream accepted the counts.
    Delivered,
    /// A 5xx or a network error: kept for a retry.
    Failed,
    /// Upstream refused them (4xx): dropped.
    Refused,
    /// No upstream for this environment: counted, not forwarded.
    Offline,
}

impl FlushOutcome {
    pub(crate) fn name(self) -> &'static str {
        match self {
            FlushOutcome::Delivered => "delivered",
            FlushOutcome::Failed => "failed",
            FlushOutcome::Refused => "refused",
            FlushOutcome::Offline => "offline",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct LastFlush {
    pub at: SystemTime,
    pub outcome: FlushOutcome,
    /// Evaluations the flush carried.
    pub events: u64,
}

/// Counts taken out of the live shards: one flush interval's worth.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub counts: HashMap<String, u64>,
    pub events: u64,
}

impl Batch {
    /// Adds `other` into this batch.
    pub(crate) fn merge(&mut self, other: &Batch) {
        for (name, n) in &other.counts {
            let slot = self.counts.entry(name.clone()).or_default();
            *slot = slot.saturating_add(*n);
        }
        self.events = self.events.saturating_add(other.events);
    }
}

pub(crate) struct EnvCounts {
    pub client_key: String,
    pub fingerprint: String,
    /// Whether the environment has an upstream to forward to.
    pub forwarded_upstream: bool,
    shards: [Mutex<HashMap<String, u64>>; SHARDS],
    hasher: foldhash::fast::FixedState,
    /// Distinct names in the shards now (bounded by the pending cap).
    live_names: AtomicUsize,
    received: AtomicU64,
    forwarded: AtomicU64,
    failed_requests: AtomicU64,
    dropped: AtomicU64,
    /// Evaluations held for a retry, as the forwarder last saw them.
    pub pending: AtomicU64,
    last_flush: Mutex<Option<LastFlush>>,
    metrics: Handles,
}

struct Handles {
    events: metrics::Counter,
    forwarded: metrics::Counter,
    failed: metrics::Counter,
    dropped: [metrics::Counter; 3],
}

/// What the status page shows of one environment's analytics.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    pub fingerprint: String,
    pub received: u64,
    pub forwarded: u64,
    pub failed_requests: u64,
    pub dropped: u64,
    pub pending: u64,
    pub last_flush: Option<LastFlush>,
}

impl EnvCounts {
    pub(crate) fn new(client_key: &str, forwarded_upstream: bool) -> EnvCounts {
        let fingerprint = crate::keys::fingerprint(client_key);
        let label = fingerprint.clone();
        let metrics = Handles {
            events: metrics::counter!(EVENTS, "environment" => label.clone()),
            forwarded: metrics::counter!(FORWARDED, "environment" => label.clone()),
            failed: metrics::counter!(FAILED, "environment" => label.clone()),
            dropped: DropReason::ALL.map(|reason| {
                metrics::counter!(DROPPED, "environment" => label.clone(), "reason" => reason.name())
            }),
        };
        EnvCounts {
            client_key: client_key.to_owned(),
            fingerprint,
            forwarded_upstream,
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
            hasher: foldhash::fast::FixedState::with_seed(0x5eed),
            live_names: AtomicUsize::new(0),
            received: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            failed_requests: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            pending: AtomicU64::new(0),
            last_flush: Mutex::new(None),
            metrics,
        }
    }

    /// Adds one request's counts. A name not yet held once `max_names` are is dropped (and
    /// counted as dropped), so a flood of made-up names cannot grow memory without bound.
    pub(crate) fn record<'a>(
        &self,
        counts: impl IntoIterator<Item = (&'a str, u64)>,
        max_names: usize,
    ) {
        let mut received = 0u64;
        let mut overflow = 0u64;
        for (name, n) in counts {
            received = received.saturating_add(n);
            let shard = (self.hasher.hash_one(name) as usize) % SHARDS;
            let mut shard = self.shards[shard].lock();
            if let Some(total) = shard.get_mut(name) {
                *total = total.saturating_add(n);
            } else if self.live_names.fetch_add(1, Ordering::Relaxed) < max_names {
                shard.insert(name.to_owned(), n);
            } else {
                self.live_names.fetch_sub(1, Ordering::Relaxed);
                overflow = overflow.saturating_add(n);
            }
        }
        self.received.fetch_add(received, Ordering::Relaxed);
        self.metrics.events.increment(received);
        if overflow > 0 {
            self.drop_events(DropReason::Overflow, overflow);
        }
    }

    /// Everything received since the last call (the forwarder's, once per interval).
    pub(crate) fn take(&self) -> Batch {
        let mut batch = Batch::default();
        for shard in &self.shards {
            let taken = std::mem::take(&mut *shard.lock());
            self.live_names.fetch_sub(taken.len(), Ordering::Relaxed);
            for (name, n) in taken {
                batch.events = batch.events.saturating_add(n);
                batch.counts.insert(name, n);
            }
        }
        batch
    }

    pub(crate) fn delivered(&self, events: u64) {
        self.forwarded.fetch_add(events, Ordering::Relaxed);
        self.metrics.forwarded.increment(events);
    }

    pub(crate) fn failed(&self) {
        self.failed_requests.fetch_add(1, Ordering::Relaxed);
        self.metrics.failed.increment(1);
    }

    pub(crate) fn drop_events(&self, reason: DropReason, events: u64) {
        self.dropped.fetch_add(events, Ordering::Relaxed);
        self.metrics.dropped[reason as usize].increment(events);
    }

    pub(crate) fn flushed(&self, outcome: FlushOutcome, events: u64) {
        *self.last_flush.lock() = Some(LastFlush {
            at: SystemTime::now(),
            outcome,
            events,
        });
    }

    pub(crate) fn facts(&self) -> Facts {
        Facts {
            fingerprint: self.fingerprint.clone(),
            received: self.received.load(Ordering::Relaxed),
            forwarded: self.forwarded.load(Ordering::Relaxed),
            failed_requests: self.failed_requests.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            pending: self.pending.load(Ordering::Relaxed),
            last_flush: *self.last_flush.lock(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_and_names_past_the_cap_are_dropped() {
        let env = EnvCounts::new("k", true);
        env.record([("a", 2), ("b", 1)], 2);
        env.record([("a", 3), ("c", 7)], 2);
        let batch = env.take();
        assert_eq!(batch.counts.get("a"), Some(&5));
        assert_eq!(batch.counts.get("b"), Some(&1));
        assert_eq!(batch.counts.get("c"), None);
        assert_eq!(batch.events, 6);
        let facts = env.facts();
        assert_eq!((facts.received, facts.dropped), (13, 7));
        // Taken: room for new names again.
        env.record([("c", 1)], 2);
        assert_eq!(env.take().events, 1);
    }
}
