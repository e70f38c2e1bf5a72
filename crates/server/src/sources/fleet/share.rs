//! How many leases one replica takes and keeps: its even share of the environments it serves
//! (environments ÷ replicas alive, rounded up), so that leases spread over the fleet instead of
//! going to whoever started first. A replica holding more than its share hands leases over
//! until it holds its share: with every replica counting the same fleet, the shares add up to
//! at least the environments, so some replica is then under its share and takes the lease at
//! its next look; none is over, so nothing is passed back. (A lease taken beyond the share,
//! because nobody under theirs took it, is kept until a replica joins: `environment.rs`.)
//!
//! Two counts are kept apart: leases this replica holds in Redis, and places reserved for
//! leases it is trying to take right now. Only held leases decide a hand-over; a take in flight
//! (every environment's task checks at once) never makes the replica give up a lease it holds,
//! or the fleet would release leases as fast as it takes them and leave environments unpolled.

use std::sync::atomic::{AtomicUsize, Ordering};

/// One replica's lease counts.
pub(crate) struct Shares {
    /// Leases held in Redis.
    held: AtomicUsize,
    /// Places reserved for leases being taken.
    pending: AtomicUsize,
    /// Replicas alive in the fleet (this one included), from the member list.
    replicas: AtomicUsize,
}

/// A place for one more lease, given back when dropped unless the lease was taken.
pub(crate) struct Reservation<'a> {
    shares: &'a Shares,
    /// Beyond this replica's share: the lease was free for a whole check period and nobody
    /// under their share took it.
    pub beyond_share: bool,
}

impl Shares {
    pub(crate) fn new() -> Shares {
        Shares {
            held: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            replicas: AtomicUsize::new(1),
        }
    }

    pub(crate) fn set_replicas(&self, n: usize) {
        self.replicas.store(n.max(1), Ordering::Release);
        crate::telemetry::fleet::replicas_alive(n.max(1));
    }

    /// Replicas alive in the fleet (this one included), as last counted.
    pub(crate) fn replicas(&self) -> usize {
        self.replicas.load(Ordering::Acquire)
    }

    /// Leases held in Redis.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The even share of `environments` (at least one).
    fn share(&self, environments: usize) -> usize {
        let replicas = self.replicas.load(Ordering::Acquire).max(1);
        environments.div_ceil(replicas).max(1)
    }

    /// A place for a free lease: while held and reserved stay under the share, or `anyway`
    /// (the lease stayed free a whole check period: an environment nobody polls is worse than
    /// an uneven spread).
    pub(crate) fn reserve(&self, environments: usize, anyway: bool) -> Option<Reservation<'_>> {
        let share = self.share(environments);
        let within = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (self.held() + p < share).then_some(p + 1)
            })
            .is_ok();
        if within {
            return Some(Reservation {
                shares: self,
                beyond_share: false,
            });
        }
        anyway.then(|| {
            self.pending.fetch_add(1, Ordering::AcqRel);
            Reservation {
                shares: self,
                beyond_share: true,
            }
        })
    }

    /// A held lease was lost or released.
    pub(crate) fn gone(&self) {
        let dropped = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| h.checked_sub(1));
        if dropped.is_ok() {
            crate::telemetry::fleet::leases_changed(-1);
        }
    }

    /// Whether this replica holds more than its share and so should hand one lease over; when
    /// it says yes the lease no longer counts as held. (No spare lease: 2 environments on 3
    /// replicas are a share of 1 each, and a holder of both must give one up.)
    pub(crate) fn over(&self, environments: usize) -> bool {
        let share = self.share(environments);
        let over = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                (h > share).then(|| h - 1)
            })
            .is_ok();
        if over {
            crate::telemetry::fleet::leases_changed(-1);
        }
        over
    }
}

impl Reservation<'_> {
    /// The lease was taken: the place becomes a held lease.
    pub(crate) fn taken(self) {
        self.shares.held.fetch_add(1, Ordering::AcqRel);
        crate::telemetry::fleet::leases_changed(1);
        // Drop gives the reserved place back.
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.shares.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::Shares;

    fn holding(replicas: usize, held: usize) -> Shares {
        let shares = Shares::new();
        shares.set_replicas(replicas);
        for _ in 0..held {
            shares.reserve(usize::MAX, true).unwrap().taken();
        }
        shares
    }

    #[test]
    fn takes_in_flight_never_make_a_replica_hand_a_lease_over() {
        // 100 environments, 3 replicas: a share of 34. Holding 30, every other environment's
        // task tries at once; the reservations beyond the share are the "anyway" ones.
        let shares = holding(3, 30);
        let in_flight: Vec<_> = (0..70)
            .map(|_| shares.reserve(100, true).unwrap())
            .collect();
        assert_eq!(in_flight.iter().filter(|r| !r.beyond_share).count(), 4);
        assert!(!shares.over(100));
        drop(in_flight);
        assert_eq!(shares.held(), 30);
        assert!(shares.reserve(100, false).is_some());
    }

    #[test]
    fn reservations_stop_at_the_share_unless_the_lease_stayed_free() {
        let shares = holding(3, 33);
        let last = shares.reserve(100, false).unwrap();
        assert!(!last.beyond_share);
        assert!(shares.reserve(100, false).is_none());
        last.taken();
        assert_eq!(shares.held(), 34);
        assert!(shares.reserve(100, true).unwrap().beyond_share);
        assert_eq!(shares.held(), 34);
    }

    #[test]
    fn a_replica_over_its_share_hands_leases_over_down_to_it() {
        // A replica that held all 100 alone, then two more joined.
        let shares = holding(3, 100);
        let handed = (0..100).filter(|_| shares.over(100)).count();
        assert_eq!(handed, 66);
        assert_eq!(shares.held(), 34);
        assert!(!shares.over(100));
    }

    #[test]
    fn fewer_environments_than_replicas_end_one_lease_each() {
        // 2 environments, both taken alone; two more replicas joined: one is handed over.
        let shares = holding(3, 2);
        assert!(shares.over(2));
        assert!(!shares.over(2));
        assert_eq!(shares.held(), 1);
        // 4 environments on 2 replicas: 2 each, the first hands 2 of its 4 over.
        let shares = holding(2, 4);
        assert_eq!((0..4).filter(|_| shares.over(4)).count(), 2);
        // At its share it neither hands over nor takes more (unless the lease stayed free).
        assert!(shares.reserve(4, false).is_none());
    }
}
