//! One environment in a fleet: the task that replaces the plain poll loop. Every third of a
//! lease it keeps up its lease: renews one held; takes a free one at once while under its share
//! (`share.rs`), or one found free at two checks in a row whatever its share (nobody under
//! theirs wanted it: it is then kept, not handed back, until a replica joins that could take
//! it); hands one over when over its share. A lease key no replica wrote is mended by the
//! look or the renewal (`lease.rs`). At each poll time the holder polls the upstream and writes
//! a new document to Redis (fenced), or repairs what Redis holds instead of its own; the others
//! check Redis instead, and load on every notice. While Redis does not answer, the environment
//! is polled upstream here, as without a fleet.

use std::sync::Arc;
use std::time::Instant;

use super::lease::{self, Lease, Renewal};
use super::stored::{self, Checked, Loaded, Stored, Written};
use super::traced::Connection;
use super::{Fleet, Names};
use crate::sources::poll_schedule::PollSchedule;
use crate::sources::upstream::{poll_one, Pollers};
use crate::sources::warm_start::WarmStart;
use crate::store::EnvSlot;

/// The fleet's [`Runner`](crate::sources::upstream::Runner).
pub(crate) fn runner(fleet: Arc<Fleet>) -> crate::sources::upstream::Runner {
    Arc::new(move |slot, pollers| Box::pin(run(slot, pollers, fleet.clone())))
}

/// What this replica knows of one environment's place in the fleet.
struct Place {
    names: Names,
    /// The lease, while this replica holds it.
    lease: Option<Lease>,
    /// What this replica, as the holder, last wrote to Redis (checked at each poll).
    written: Option<Stored>,
    /// A value Redis holds that was refused (not read again until it changes).
    refused: Option<String>,
    /// When Redis last confirmed the lease (taken or renewed): it is this replica's until a
    /// lease after that, whatever Redis answers meanwhile.
    renewed: Instant,
    /// The lease was taken beyond this replica's share (it stayed free for a whole check
    /// period) while the fleet counted this many replicas: handing it back over would only
    /// leave it free again, until more replicas are alive (one of them then has room for it).
    kept: Option<usize>,
    /// The lease was free at the last check (and not taken here).
    seen_free: bool,
    /// Where new documents are saved for a restart (`snapshot_dir`), wherever they came from.
    warm: Option<Arc<WarmStart>>,
}

async fn run(slot: Arc<EnvSlot>, pollers: Pollers, fleet: Arc<Fleet>) {
    let mut place = Place {
        names: Names::environment(&slot.client_key),
        lease: None,
        written: None,
        refused: None,
        renewed: Instant::now(),
        kept: None,
        seen_free: false,
        warm: pollers.warm.clone(),
    };
    let notice = fleet.register(&place.names.id);
    let mut schedule = PollSchedule::new(pollers.period(), Instant::now());
    let upkeep_every = fleet.lease / 3;
    let mut next_poll = Instant::now();
    let mut next_upkeep = Instant::now();
    loop {
        if Instant::now() >= next_upkeep {
            upkeep(&fleet, &slot, &mut place).await;
            next_upkeep = Instant::now() + upkeep_every;
        }
        if Instant::now() >= next_poll {
            match fleet.connection().await {
                Some(mut conn) if fleet.reachable() && place.lease.is_none() => {
                    if load(&fleet, &mut conn, &slot, &mut place).await {
                        fleet.figures.saved();
                    }
                }
                _ => {
                    let (before, heard) = (revision(&slot), slot.last_success());
                    poll_one(&slot, &pollers).await;
                    if revision(&slot) != before {
                        fleet.figures.document(false);
                    }
                    write(&fleet, &slot, &mut place, slot.last_success() != heard).await;
                }
            }
            next_poll = schedule.next_after(Instant::now());
        }
        tokio::select! {
            _ = tokio::time::sleep_until(next_poll.min(next_upkeep).into()) => {}
            _ = notice.notified() => {
                if place.lease.is_none() {
                    if let Some(mut conn) = fleet.connection().await {
                        load(&fleet, &mut conn, &slot, &mut place).await;
                    }
                }
            }
            // A client saw a newer revision elsewhere: poll (or check Redis) now.
            _ = slot.poll_now.notified() => next_poll = Instant::now(),
            _ = slot.stop.cancelled() => break,
        }
    }
    fleet.unregister(&place.names.id);
    if let Some(held) = place.lease.take() {
        fleet.shares.gone();
        if let Some(mut conn) = fleet.connection().await {
            let _ = tokio::time::timeout(
                super::TIMEOUT,
                lease::release(&mut conn, &place.names, &held),
            )
            .await;
        }
    }
}

fn revision(slot: &EnvSlot) -> Option<String> {
    slot.snapshot().map(|s| s.content_revision.clone())
}

/// Renews, takes or hands over the lease.
async fn upkeep(fleet: &Fleet, slot: &Arc<EnvSlot>, place: &mut Place) {
    let environment = || crate::keys::fingerprint(&slot.client_key);
    let Some(mut conn) = fleet.connection().await else {
        lapse(fleet, place);
        return;
    };
    if let Some(held) = place.lease.clone() {
        let kept = still_kept(place.kept, fleet.shares.replicas());
        if !kept && fleet.shares.over(fleet.environments()) {
            let released = lease::release(&mut conn, &place.names, &held).await;
            fleet.answered(released.as_ref());
            place.lease = None;
            place.written = None;
            place.seen_free = false;
            tracing::debug!(environment = %environment(), "handing the lease on the environment over: more than this replica's share");
            return;
        }
        // Its time in Redis runs from before the answer: counted from the asking, to be safe.
        let asked = Instant::now();
        let renewed = lease::renew(&mut conn, &place.names, &held, fleet.lease).await;
        fleet.answered(renewed.as_ref());
        match renewed {
            Ok(Renewal::Renewed) => place.renewed = asked,
            Ok(Renewal::Reclaimed) => {
                tracing::warn!(environment = %environment(), "the environment's lease key held a value no replica wrote: taken back by its holder");
                place.renewed = asked;
            }
            Ok(Renewal::Lost) => {
                tracing::info!(environment = %environment(), "lease on the environment lost (expired, or taken by another replica)");
                drop_lease(fleet, place);
            }
            // No answer: the lease is still this replica's until its time runs out in Redis.
            Err(_) => lapse(fleet, place),
        }
        return;
    }
    // Free leases are found first, so that places under the share go to them (every
    // environment's task checks at once), not to environments another replica holds. The look
    // mends a lease key no replica could read (`lease.rs`), so that garbage never keeps the
    // environment without a holder.
    let probe = lease::probe(&mut conn, &place.names, fleet.lease).await;
    fleet.answered(probe.as_ref());
    if let Ok(lease::Probe {
        repaired: Some(repair),
        ..
    }) = probe
    {
        tracing::warn!(environment = %environment(), "{}", repair.describe());
    }
    let was_free = std::mem::replace(&mut place.seen_free, matches!(probe, Ok(p) if p.free));
    if !place.seen_free {
        return;
    }
    let Some(reservation) = fleet.shares.reserve(fleet.environments(), was_free) else {
        return;
    };
    let asked = Instant::now();
    let taken = lease::acquire(&mut conn, &place.names, &fleet.replica, fleet.lease).await;
    fleet.answered(taken.as_ref());
    let Ok(lease::Taken { lease, repaired }) = taken else {
        return;
    };
    if let Some(repair) = repaired {
        tracing::warn!(environment = %environment(), "{}", repair.describe());
    }
    let Some(held) = lease else {
        return;
    };
    place.kept = reservation.beyond_share.then(|| fleet.shares.replicas());
    reservation.taken();
    place.lease = Some(held);
    place.renewed = asked;
    place.seen_free = false;
    place.written = None;
    // What the fleet has is the starting point: never write over it with older.
    load(fleet, &mut conn, slot, place).await;
    tracing::debug!(environment = %environment(), kept = place.kept.is_some(), "holding the lease on the environment");
}

/// Redis did not answer about a held lease: it is dropped once its time is up (Redis has let
/// it go by then), not at the first slow answer, which would leave the environment unpolled
/// until the lease ran out.
fn lapse(fleet: &Fleet, place: &mut Place) {
    if place.renewed.elapsed() >= fleet.lease {
        drop_lease(fleet, place);
    }
}

fn drop_lease(fleet: &Fleet, place: &mut Place) {
    if place.lease.take().is_some() {
        fleet.shares.gone();
        place.written = None;
        place.kept = None;
    }
}

/// Loads the environment's document from Redis (a non-holder's check, a notice); whether Redis
/// answered with one (new, the same, or refused).
async fn load(
    fleet: &Fleet,
    conn: &mut Connection,
    slot: &Arc<EnvSlot>,
    place: &mut Place,
) -> bool {
    let loaded = stored::load(
        conn,
        &place.names,
        slot,
        place.refused.as_deref(),
        &fleet.figures,
        place.warm.as_deref(),
    )
    .await;
    fleet.answered(loaded.as_ref());
    match loaded {
        Ok(Loaded::New) | Ok(Loaded::Unchanged) => {
            place.refused = None;
            true
        }
        Ok(Loaded::Refused { revision }) => {
            place.refused = Some(revision);
            true
        }
        Ok(Loaded::Nothing) | Err(_) => false,
    }
}

/// The holder writes a document Redis does not have yet. At every poll, whatever the upstream
/// answered (a 304, an error), it checks that Redis still holds what it wrote, and repairs what
/// it finds instead (another revision, or a garbage body under its own); with `heard` (upstream
/// answered) it also records when upstream last confirmed the document.
async fn write(fleet: &Fleet, slot: &Arc<EnvSlot>, place: &mut Place, heard: bool) {
    let Some(held) = place.lease.clone() else {
        return;
    };
    let Some(current) = revision(slot) else {
        return;
    };
    let Some(mut conn) = fleet.connection().await else {
        return;
    };
    if let Some(written) = place.written.clone().filter(|w| w.revision == current) {
        let at = heard.then(|| stored::last_success_ms(slot));
        let checked = stored::check(&mut conn, &place.names, &held, &written, at).await;
        fleet.answered(checked.as_ref());
        if checked != Ok(Checked::Foreign) {
            // Intact; or the lease is gone (the next upkeep finds out); or no answer.
            return;
        }
        tracing::warn!(environment = %crate::keys::fingerprint(&slot.client_key), "the fleet's store holds a document this replica did not write for the environment it holds: repairing it");
        place.written = None;
    }
    let mut written = stored::write(&mut conn, &place.names, &held, slot, false).await;
    if matches!(written, Ok(Written::Newer)) {
        // Newer than what upstream just gave: serve it if it is good, replace it if it is not.
        load(fleet, &mut conn, slot, place).await;
        if place.refused.is_some() {
            written = stored::write(&mut conn, &place.names, &held, slot, true).await;
        }
    }
    fleet.answered(written.as_ref());
    match written {
        Ok(Written::Stored(stored)) => place.written = Some(stored),
        // Served here now; the next poll writes it in this replica's own bytes, which it checks.
        Ok(Written::Newer) => place.written = None,
        Ok(Written::LeaseLost) => {
            tracing::info!(environment = %crate::keys::fingerprint(&slot.client_key), "lease expired during the fetch: the document is not written for the fleet");
            drop_lease(fleet, place);
        }
        Err(_) => {}
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
