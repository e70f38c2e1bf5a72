//! The fleet's figures on `/metrics`: whether the shared store answers, how many replicas are
//! alive on it, how many environments this replica polls for the fleet, and where its
//! documents came from (the store, or its own upstream fetch), the upstream fetches a load from
//! the store replaced, and refused store values. Every series exists from the start (counters at
//! 0, with each label value), so that a query or an alert on one sees it before the first event.

pub(crate) const STORE_REACHABLE: &str = "flagpole_fleet_store_reachable";
pub(crate) const LEASES_HELD: &str = "flagpole_fleet_leases_held";
pub(crate) const REPLICAS: &str = "flagpole_fleet_replicas_alive";
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
        "Environments, flag-set URLs and Unleash feeds this replica polls upstream for the whole fleet (leases held)."
    );
    metrics::describe_gauge!(
        REPLICAS,
        "Replicas alive on the fleet's Redis (this one included), as last counted: 1 until it answers."
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

/// Every fleet series at its starting value (a replica in a fleet, before anything happened).
pub(crate) fn start() {
    store_reachable(false);
    leases_held(0);
    replicas_alive(1);
    for source in [SOURCE_STORE, SOURCE_UPSTREAM] {
        metrics::counter!(DOCUMENTS, "source" => source).absolute(0);
    }
    metrics::counter!(SAVED).absolute(0);
    for why in Refusal::ALL {
        metrics::counter!(REFUSED, "reason" => why.label()).absolute(0);
    }
}

pub(crate) fn store_reachable(up: bool) {
    metrics::gauge!(STORE_REACHABLE).set(if up { 1.0 } else { 0.0 });
}

pub(crate) fn leases_held(n: usize) {
    metrics::gauge!(LEASES_HELD).set(n as f64);
}

/// A lease taken (+1) or given up (-1). Moved by the change, never set to a count read
/// beforehand: two tasks each setting the count they read could leave the older one showing for
/// good (the gauge then disagreed with the leases held until the next change).
pub(crate) fn leases_changed(by: i8) {
    metrics::gauge!(LEASES_HELD).increment(f64::from(by));
}

pub(crate) fn replicas_alive(n: usize) {
    metrics::gauge!(REPLICAS).set(n as f64);
}

const SOURCE_STORE: &str = "store";
const SOURCE_UPSTREAM: &str = "upstream";

/// A new revision served; `from_store`: read from Redis, else fetched upstream by this replica.
pub(crate) fn document(from_store: bool) {
    let source = if from_store {
        SOURCE_STORE
    } else {
        SOURCE_UPSTREAM
    };
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

impl Refusal {
    /// Every reason (each exported at 0 from the start).
    pub(crate) const ALL: [Refusal; 2] = [Refusal::Undecodable, Refusal::Rejected];

    fn label(self) -> &'static str {
        match self {
            Refusal::Undecodable => "undecodable",
            Refusal::Rejected => "rejected",
        }
    }
}

pub(crate) fn refused(why: Refusal) {
    metrics::counter!(REFUSED, "reason" => why.label()).increment(1);
}
