//! Requests served per environment and resource: one relaxed atomic add per request. Read by the
//! status page and metrics (totals) and by usage reporting to the Flagsmith API with `proxy_key`
//! (what was served since the last batch it delivered). Requests refused with a 4xx are counted
//! apart (per environment when the key was known, else once for the process): they were not
//! served, and are never reported upstream as use.

use std::sync::atomic::{AtomicU64, Ordering};

/// What a request was for, as Flagsmith's usage rows name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Flags,
    Identities,
    EnvironmentDocument,
}

impl Resource {
    pub const ALL: [Resource; 3] = [
        Resource::Flags,
        Resource::Identities,
        Resource::EnvironmentDocument,
    ];

    /// The name in usage rows, metrics labels and the status page.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Flags => "flags",
            Resource::Identities => "identities",
            Resource::EnvironmentDocument => "environment-document",
        }
    }
}

/// Counts of one environment.
#[derive(Debug, Default)]
pub struct Usage {
    served: [AtomicU64; 3],
    /// What usage reporting has delivered (or dropped) so far.
    reported: [AtomicU64; 3],
    /// Requests with this environment's key refused with a 4xx (bad input, unknown flag, over
    /// the rate limit, a kind of key not allowed).
    rejected: AtomicU64,
}

/// Requests refused before an environment was known: no key, or a key that reaches none.
#[derive(Debug, Default)]
pub struct Unrecognised(AtomicU64);

impl Unrecognised {
    pub fn count(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub fn total(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Usage {
    pub fn count(&self, resource: Resource) {
        self.served[resource as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn reject(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests refused with a 4xx since start.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// Requests served since start.
    pub fn served(&self, resource: Resource) -> u64 {
        self.served[resource as usize].load(Ordering::Relaxed)
    }

    /// Served but not yet reported: `(resource, count, served total)` for non-zero counts.
    pub fn unreported(&self) -> Vec<(Resource, u64, u64)> {
        Resource::ALL
            .iter()
            .filter_map(|&r| {
                let served = self.served(r);
                let reported = self.reported[r as usize].load(Ordering::Relaxed);
                (served > reported).then_some((r, served - reported, served))
            })
            .collect()
    }

    /// Marks counts up to `served_total` as reported (delivered, or dropped after a 4xx).
    pub fn mark_reported(&self, resource: Resource, served_total: u64) {
        self.reported[resource as usize].fetch_max(served_total, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreported_is_what_was_served_since_the_last_report() {
        let usage = Usage::default();
        usage.count(Resource::Flags);
        usage.count(Resource::Flags);
        usage.count(Resource::Identities);
        let rows = usage.unreported();
        assert_eq!(
            rows,
            vec![(Resource::Flags, 2, 2), (Resource::Identities, 1, 1)]
        );
        usage.mark_reported(Resource::Flags, 2);
        usage.count(Resource::Flags);
        assert_eq!(
            usage.unreported(),
            vec![(Resource::Flags, 1, 3), (Resource::Identities, 1, 1)]
        );
    }
}
