//! What the fleet has done on this replica, kept for the status page as it goes to `/metrics`:
//! where its documents came from (the store, or its own upstream fetch), the upstream fetches a
//! load from the store replaced, and the store values it refused.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::telemetry::fleet::{self as metrics, Refusal};

#[derive(Default)]
pub(crate) struct Figures {
    from_store: AtomicU64,
    from_upstream: AtomicU64,
    saved: AtomicU64,
    refused: AtomicU64,
}

/// The fleet as the status page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Facts {
    pub store_reachable: bool,
    /// Replicas alive on the store (this one included), as last counted.
    pub replicas: usize,
    pub leases_held: usize,
    pub documents_from_store: u64,
    pub documents_from_upstream: u64,
    /// Poll times at which this replica read the store instead of asking upstream.
    pub upstream_fetches_saved: u64,
    pub store_values_refused: u64,
}

impl Figures {
    /// A new revision served; `from_store`: read from Redis, else fetched upstream here.
    pub(crate) fn document(&self, from_store: bool) {
        let counter = if from_store {
            &self.from_store
        } else {
            &self.from_upstream
        };
        counter.fetch_add(1, Ordering::Relaxed);
        metrics::document(from_store);
    }

    /// A poll time at which the store answered instead of upstream.
    pub(crate) fn saved(&self) {
        self.saved.fetch_add(1, Ordering::Relaxed);
        metrics::fetch_saved();
    }

    pub(crate) fn refused(&self, why: Refusal) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        metrics::refused(why);
    }

    /// The counts, into `facts`.
    pub(super) fn fill(&self, facts: &mut Facts) {
        facts.documents_from_store = self.from_store.load(Ordering::Relaxed);
        facts.documents_from_upstream = self.from_upstream.load(Ordering::Relaxed);
        facts.upstream_fetches_saved = self.saved.load(Ordering::Relaxed);
        facts.store_values_refused = self.refused.load(Ordering::Relaxed);
    }
}
