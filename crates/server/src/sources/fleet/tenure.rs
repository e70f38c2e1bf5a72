//! One replica's hold on one lease over time, whatever the lease is for (an environment, a
//! flag-set URL, an Unleash feed): the same upkeep for every subject, so that all of them
//! spread, hand over and fall back alike. Every third of a lease it renews one held; takes a
//! free one at once while under its share (`share.rs`), or one found free at two checks in a
//! row whatever its share (nobody under theirs wanted it: it is then kept, not handed back,
//! until a replica joins that could take it); hands one over when over its share. A lease key
//! no replica wrote is mended by the look or the renewal (`lease.rs`). While Redis does not
//! answer, a held lease is kept until its time is up in Redis, then dropped: the subject is
//! polled here, as without a fleet.

use std::time::Instant;

use super::lease::{self, Lease, Renewal};
use super::{Fleet, Names};

/// What a lease is for, as logs name it (never a key: an environment by its fingerprint).
#[derive(Debug, Clone)]
pub(crate) enum Subject {
    Environment(String),
    FlagSource(String),
    /// An Unleash client token's feed, by its fingerprint.
    UnleashFeed(String),
}

impl Subject {
    pub(crate) fn say(&self, level: tracing::Level, message: &str) {
        // Field names are static in `tracing`: one arm per subject and level used here.
        match (self, level) {
            (Subject::Environment(e), tracing::Level::WARN) => {
                tracing::warn!(environment = %e, "{message}")
            }
            (Subject::Environment(e), tracing::Level::INFO) => {
                tracing::info!(environment = %e, "{message}")
            }
            (Subject::Environment(e), _) => tracing::debug!(environment = %e, "{message}"),
            (Subject::FlagSource(u), tracing::Level::WARN) => tracing::warn!(url = %u, "{message}"),
            (Subject::FlagSource(u), tracing::Level::INFO) => tracing::info!(url = %u, "{message}"),
            (Subject::FlagSource(u), _) => tracing::debug!(url = %u, "{message}"),
            (Subject::UnleashFeed(f), tracing::Level::WARN) => {
                tracing::warn!(feed = %f, "{message}")
            }
            (Subject::UnleashFeed(f), tracing::Level::INFO) => {
                tracing::info!(feed = %f, "{message}")
            }
            (Subject::UnleashFeed(f), _) => tracing::debug!(feed = %f, "{message}"),
        }
    }

    pub(crate) fn noun(&self) -> &'static str {
        match self {
            Subject::Environment(_) => "environment",
            Subject::FlagSource(_) => "flag source",
            Subject::UnleashFeed(_) => "Unleash feed",
        }
    }
}

/// What an upkeep changed about the lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Still held, or still not held.
    None,
    /// Taken now: what the fleet holds is the holder's starting point (load it before writing).
    Taken,
    /// No longer held (handed over, lost, or run out while Redis did not answer).
    Dropped,
}

/// This replica's hold on one lease.
pub(crate) struct Tenure {
    pub names: Names,
    pub subject: Subject,
    /// The lease, while this replica holds it.
    lease: Option<Lease>,
    /// When Redis last confirmed the lease (taken or renewed): it is this replica's until a
    /// lease after that, whatever Redis answers meanwhile.
    renewed: Instant,
    /// The lease was taken beyond this replica's share (it stayed free for a whole check
    /// period) while the fleet counted this many replicas: handing it back over would only
    /// leave it free again, until more replicas are alive (one of them then has room for it).
    kept: Option<usize>,
    /// The lease was free at the last check (and not taken here).
    seen_free: bool,
}

impl Tenure {
    pub(crate) fn new(names: Names, subject: Subject) -> Tenure {
        Tenure {
            names,
            subject,
            lease: None,
            renewed: Instant::now(),
            kept: None,
            seen_free: false,
        }
    }

    /// The lease, while held here.
    pub(crate) fn held(&self) -> Option<&Lease> {
        self.lease.as_ref()
    }

    pub(crate) fn holds(&self) -> bool {
        self.lease.is_some()
    }

    /// Renews, takes or hands over the lease.
    pub(crate) async fn upkeep(&mut self, fleet: &Fleet) -> Change {
        let noun = self.subject.noun();
        let Some(mut conn) = fleet.connection().await else {
            return self.lapse(fleet);
        };
        if let Some(held) = self.lease.clone() {
            let kept = still_kept(self.kept, fleet.shares.replicas());
            if !kept && fleet.shares.over(fleet.subjects()) {
                let released = lease::release(&mut conn, &self.names, &held).await;
                fleet.answered(released.as_ref());
                self.lease = None;
                self.kept = None;
                self.seen_free = false;
                self.subject.say(
                    tracing::Level::DEBUG,
                    &format!(
                        "handing the lease on the {noun} over: more than this replica's share"
                    ),
                );
                return Change::Dropped;
            }
            // Its time in Redis runs from before the answer: counted from the asking, to be safe.
            let asked = Instant::now();
            let renewed = lease::renew(&mut conn, &self.names, &held, fleet.lease).await;
            fleet.answered(renewed.as_ref());
            return match renewed {
                Ok(Renewal::Renewed) => {
                    self.renewed = asked;
                    Change::None
                }
                Ok(Renewal::Reclaimed) => {
                    self.subject.say(tracing::Level::WARN, &format!("the {noun}'s lease key held a value no replica wrote: taken back by its holder"));
                    self.renewed = asked;
                    Change::None
                }
                Ok(Renewal::Lost) => {
                    self.subject.say(
                        tracing::Level::INFO,
                        &format!("lease on the {noun} lost (expired, or taken by another replica)"),
                    );
                    self.drop_lease(fleet)
                }
                // No answer: the lease is still this replica's until its time runs out in Redis.
                Err(_) => self.lapse(fleet),
            };
        }
        // Free leases are found first, so that places under the share go to them (every
        // subject's task checks at once), not to those another replica holds. The look mends a
        // lease key no replica could read (`lease.rs`), so that garbage never keeps the subject
        // without a holder.
        let probe = lease::probe(&mut conn, &self.names, fleet.lease).await;
        fleet.answered(probe.as_ref());
        if let Ok(lease::Probe {
            repaired: Some(repair),
            ..
        }) = probe
        {
            self.subject.say(tracing::Level::WARN, repair.describe());
        }
        let was_free = std::mem::replace(&mut self.seen_free, matches!(probe, Ok(p) if p.free));
        if !self.seen_free {
            return Change::None;
        }
        let Some(reservation) = fleet.shares.reserve(fleet.subjects(), was_free) else {
            return Change::None;
        };
        let asked = Instant::now();
        let taken = lease::acquire(&mut conn, &self.names, &fleet.replica, fleet.lease).await;
        fleet.answered(taken.as_ref());
        let Ok(lease::Taken { lease, repaired }) = taken else {
            return Change::None;
        };
        if let Some(repair) = repaired {
            self.subject.say(tracing::Level::WARN, repair.describe());
        }
        let Some(held) = lease else {
            return Change::None;
        };
        self.kept = reservation.beyond_share.then(|| fleet.shares.replicas());
        reservation.taken();
        self.lease = Some(held);
        self.renewed = asked;
        self.seen_free = false;
        self.subject.say(
            tracing::Level::DEBUG,
            &format!("holding the lease on the {noun}"),
        );
        Change::Taken
    }

    /// Redis did not answer about a held lease: it is dropped once its time is up (Redis has
    /// let it go by then), not at the first slow answer, which would leave the subject unpolled
    /// until the lease ran out.
    fn lapse(&mut self, fleet: &Fleet) -> Change {
        if self.lease.is_some() && self.renewed.elapsed() >= fleet.lease {
            return self.drop_lease(fleet);
        }
        Change::None
    }

    /// The lease is no longer this replica's (lost, or a fenced write found it gone).
    pub(crate) fn drop_lease(&mut self, fleet: &Fleet) -> Change {
        if self.lease.take().is_some() {
            fleet.shares.gone();
            self.kept = None;
            return Change::Dropped;
        }
        Change::None
    }

    /// Gives a held lease up at the end (another replica may take it at once).
    pub(crate) async fn release(&mut self, fleet: &Fleet) {
        let Some(held) = self.lease.take() else {
            return;
        };
        fleet.shares.gone();
        if let Some(mut conn) = fleet.connection().await {
            let _ = tokio::time::timeout(
                super::TIMEOUT,
                lease::release(&mut conn, &self.names, &held),
            )
            .await;
        }
    }
}

/// Whether a lease taken beyond the share (`kept`: with how many replicas alive then) is still
/// exempt from handing over, with `replicas` alive now: only while no replica has joined since.
fn still_kept(kept: Option<usize>, replicas: usize) -> bool {
    kept.is_some_and(|then| replicas <= then)
}

#[cfg(test)]
mod tests {
    use super::still_kept;

    #[test]
    fn a_lease_taken_beyond_the_share_is_kept_until_a_replica_joins() {
        assert!(
            !still_kept(None, 3),
            "a lease within the share is never exempt"
        );
        assert!(still_kept(Some(3), 3));
        assert!(
            still_kept(Some(3), 2),
            "fewer replicas: nobody else has room for it"
        );
        assert!(
            !still_kept(Some(3), 4),
            "a replica joined: it may be handed over"
        );
    }
}
