//! The fleet's figures on `/metrics`: whether the shared store answers, how many environments
//! this replica polls for the fleet, and where its documents came from (the store, or its own
//! upstream fetch), the upstream fetches a load from the store replaced, and refused store
//! values.

pub(crate) const STORE_REACHABLE: &str = "flagpole_fleet_store_reachable";
pub(crate) const LEASES_HELD: &str = "flagpole_fleet_leases_held";
pub(crate) const DOCUMENTS: &str = "flagpole_fleet_documents_total";
pub(crate) const REFUSED: &str = "flagpole_fleet_store_documents_refused_total";
pub(crate) const SAVED: &str = "flagpole_fleet_upstream_fetches_saved_total";

/// Says what each figure means (once, when the exporter is installed).
pub(crate) fn describe() {
    use metrics::Unit;
    metrics::describe_gauge!(
        STORE_REACHABLE,
        "1 while the fleet's Redis answers, 0 while this replica polls upstream on its own."
    );
    metrics::describe_gauge!(
        LEASES_HELD,
        "Environments this replica polls upstream for the whole fleet (leases held)."
    );
    metrics::describe_counter!(
        DOCUMENTS,
        Unit::Count,
        "New document revisions this replica served, by where they came from (store or upstream)."
    );
    metrics::describe_counter!(
        SAVED,
        Unit::Count,
        "Poll times at which this replica read the document from the fleet's Redis instead of fetching it upstream."
    );
    metrics::describe_counter!(
        REFUSED,
        Unit::Count,
        "Documents read from the fleet's Redis and refused, by reason: undecodable (not a whole gzip stream) or rejected (not the environment's valid document); the last good one is kept."
    );
}

pub(crate) fn store_reachable(up: bool) {
    metrics::gauge!(STORE_REACHABLE).set(if up { 1.0 } else { 0.0 });
}

pub(crate) fn leases_held(n: usize) {
    metrics::gauge!(LEASES_HELD).set(n as f64);
}

/// A new revision served; `from_store`: read from Redis, else fetched upstream by this replica.
pub(crate) fn document(from_store: bool) {
    let source = if from_store { "store" } else { "upstream" };
    metrics::counter!(DOCUMENTS, "source" => source).increment(1);
}

pub(crate) fn fetch_saved() {
    metrics::counter!(SAVED).increment(1);
}

/// Why a value read from the store was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not a whole gzip stream (corrupt, cut short) or too large once decompressed.
    Undecodable,
    /// Decompressed, but not this environment's valid document.
    Rejected,
}

pub(crate) fn refused(why: Refusal) {
    let reason = match why {
        Refusal::Undecodable => "undecodable",
        Refusal::Rejected => "rejected",
    };
    metrics::counter!(REFUSED, "reason" => reason).increment(1);
}
