//! One environment in a fleet: the task that replaces the plain poll loop. Every third of a
//! lease it keeps up its lease (`tenure.rs`: the upkeep every subject shares). At each poll time
//! the holder polls the upstream and writes a new document to Redis (fenced), or repairs what
//! Redis holds instead of its own; the others check Redis instead, and load on every notice.
//! While Redis does not answer, the environment is polled upstream here, as without a fleet.
//! The poll loop reaches it through the fleet's [`EnvironmentRunner`], so that `upstream.rs`
//! knows nothing of Redis.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use super::stored::{self, Checked, Loaded, Stored, Written};
use super::tenure::{Change, Subject, Tenure};
use super::traced::Connection;
use super::{Fleet, Names};
use crate::sources::poll_schedule::PollSchedule;
use crate::sources::upstream::{poll_one, EnvironmentRunner, Pollers};
use crate::sources::warm_start::WarmStart;
use crate::store::EnvSlot;

/// The fleet keeps each upstream environment up to date: polled here while this replica holds
/// its lease, loaded from Redis while another does.
impl EnvironmentRunner for Fleet {
    fn run(
        self: Arc<Self>,
        slot: Arc<EnvSlot>,
        pollers: Pollers,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(run(slot, pollers, self))
    }
}

/// What this replica knows of one environment's place in the fleet.
struct Place {
    tenure: Tenure,
    /// What this replica, as the holder, last wrote to Redis (checked at each poll).
    written: Option<Stored>,
    /// A value Redis holds that was refused (not read again until it changes).
    refused: Option<String>,
    /// Where new documents are saved for a restart (`snapshot_dir`), wherever they came from.
    warm: Option<Arc<WarmStart>>,
}

async fn run(slot: Arc<EnvSlot>, pollers: Pollers, fleet: Arc<Fleet>) {
    let mut place = Place {
        tenure: Tenure::new(
            Names::environment(&slot.client_key),
            Subject::Environment(crate::keys::fingerprint(&slot.client_key)),
        ),
        written: None,
        refused: None,
        warm: pollers.warm.clone(),
    };
    let notice = fleet.register(&place.tenure.names.id);
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
                Some(mut conn) if fleet.reachable() && !place.tenure.holds() => {
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
                if !place.tenure.holds() {
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
    fleet.unregister(&place.tenure.names.id);
    place.tenure.release(&fleet).await;
}

fn revision(slot: &EnvSlot) -> Option<String> {
    slot.snapshot().map(|s| s.content_revision.clone())
}

/// Keeps up the lease; one just taken starts from what the fleet has (never written over with
/// older).
async fn upkeep(fleet: &Fleet, slot: &Arc<EnvSlot>, place: &mut Place) {
    match place.tenure.upkeep(fleet).await {
        Change::None => {}
        Change::Dropped => place.written = None,
        Change::Taken => {
            place.written = None;
            if let Some(mut conn) = fleet.connection().await {
                load(fleet, &mut conn, slot, place).await;
            }
        }
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
        &place.tenure.names,
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
    let Some(held) = place.tenure.held().cloned() else {
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
        let checked = stored::check(&mut conn, &place.tenure.names, &held, &written, at).await;
        fleet.answered(checked.as_ref());
        if checked != Ok(Checked::Foreign) {
            // Intact; or the lease is gone (the next upkeep finds out); or no answer.
            return;
        }
        tracing::warn!(environment = %crate::keys::fingerprint(&slot.client_key), "the fleet's store holds a document this replica did not write for the environment it holds: repairing it");
        place.written = None;
    }
    let mut written = stored::write(&mut conn, &place.tenure.names, &held, slot, false).await;
    if matches!(written, Ok(Written::Newer)) {
        // Newer than what upstream just gave: serve it if it is good, replace it if it is not.
        load(fleet, &mut conn, slot, place).await;
        if place.refused.is_some() {
            written = stored::write(&mut conn, &place.tenure.names, &held, slot, true).await;
        }
    }
    fleet.answered(written.as_ref());
    match written {
        Ok(Written::Stored(stored)) => place.written = Some(stored),
        // Served here now; the next poll writes it in this replica's own bytes, which it checks.
        Ok(Written::Newer) => place.written = None,
        Ok(Written::LeaseLost) => {
            tracing::info!(environment = %crate::keys::fingerprint(&slot.client_key), "lease expired during the fetch: the document is not written for the fleet");
            place.tenure.drop_lease(fleet);
            place.written = None;
        }
        Err(_) => {}
    }
}
