//! What became of a sampled identity request: the `result` label of
//! `flagpole_shadow_comparisons_total`, and `flagpole_shadow_dropped_total` for samples never
//! compared (the queue was full, or over the rate limit).

pub(crate) const COMPARISONS: &str = "flagpole_shadow_comparisons_total";
pub(crate) const DROPPED: &str = "flagpole_shadow_dropped_total";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every feature equal.
    Match,
    /// At least one feature differs.
    Mismatch,
    /// The two sides answered from different document revisions (or it could not be told).
    Skipped,
    /// Upstream failed or answered something that is not an identities answer.
    Error,
}

impl Outcome {
    const ALL: [Outcome; 4] = [
        Outcome::Match,
        Outcome::Mismatch,
        Outcome::Skipped,
        Outcome::Error,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Outcome::Match => "match",
            Outcome::Mismatch => "mismatch",
            Outcome::Skipped => "skipped",
            Outcome::Error => "error",
        }
    }
}

/// Counters of outcomes and drops (Prometheus handles).
pub(crate) struct Tally {
    comparisons: [metrics::Counter; 4],
    dropped: [metrics::Counter; 2],
}

impl Default for Tally {
    fn default() -> Self {
        metrics::describe_counter!(
            COMPARISONS,
            metrics::Unit::Count,
            "Shadow comparisons with the Flagsmith API, by result (match, mismatch, skipped, error)."
        );
        metrics::describe_counter!(
            DROPPED,
            metrics::Unit::Count,
            "Sampled identity requests not compared: over the rate limit, or the queue was full."
        );
        Tally {
            comparisons: Outcome::ALL.map(|o| metrics::counter!(COMPARISONS, "result" => o.name())),
            dropped: ["queue_full", "rate_limited"]
                .map(|reason| metrics::counter!(DROPPED, "reason" => reason)),
        }
    }
}

impl Tally {
    pub(crate) fn record(&self, outcome: Outcome) {
        self.comparisons[outcome as usize].increment(1);
    }

    /// A sample dropped before comparison: `rate_limited`, else the queue was full.
    pub(crate) fn dropped(&self, rate_limited: bool) {
        self.dropped[usize::from(rate_limited)].increment(1);
    }
}
