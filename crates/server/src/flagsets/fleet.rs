//! A URL source in a fleet (`flagpole.fleet`): one replica polls each URL for the whole fleet,
//! so that a fleet of N asks the flag server as often as one proxy does. The lease per URL is
//! kept up as an environment's is (`sources/fleet/tenure.rs`); its holder polls the URL and
//! writes each new accepted text, raw, with its ETag to Redis under a digest of the URL (never
//! the URL, which may carry a token) and announces it (`sources/fleet/stored.rs`). The others
//! load it on the announcement or at their own poll times, compiled as a polled answer is (a
//! text that does not compile never replaces a good set: refused, logged and counted the same
//! way). While Redis does not answer, or before anyone holds the lease, each replica polls the
//! URL itself (`poll.rs`), as without a fleet. Staleness is judged by when the holder last
//! heard from the URL, which it records in Redis at each poll.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use super::poll::{Heard, Origin, UrlSource};
use crate::sources::fleet::stored::{self, Checked, Stored, Value, Written};
use crate::sources::fleet::tenure::{Change, Subject, Tenure};
use crate::sources::fleet::traced::Connection;
use crate::sources::fleet::{Fleet, Names};
use crate::sources::poll_schedule::PollSchedule;
use crate::telemetry::fleet::Refusal;

/// What this replica knows of one URL's place in the fleet.
struct Place {
    tenure: Tenure,
    /// What this replica, as the holder, last wrote to Redis (checked at each poll).
    written: Option<Stored>,
    /// A revision Redis holds that was refused (not read again until it changes).
    refused: Option<String>,
    /// When the text served here was first accepted (upstream, by whichever replica polled it):
    /// Redis never takes an older text over a newer one.
    updated_at_ms: u64,
}

/// Polls (or follows the fleet's holder of) one URL source until `stop`.
pub(super) async fn run(mut url: UrlSource, fleet: Arc<Fleet>, stop: CancellationToken) {
    let uri = url.source().uri.clone();
    let mut place = Place {
        tenure: Tenure::new(Names::flag_source(&uri), Subject::FlagSource(uri)),
        written: None,
        refused: None,
        updated_at_ms: 0,
    };
    let notice = fleet.register(&place.tenure.names.id);
    // A new replica serves what the fleet holds before any upstream answer.
    if let Some(mut conn) = fleet.connection().await {
        load(&fleet, &mut conn, &mut url, &mut place).await;
    }
    let mut schedule = PollSchedule::new(url.interval(), Instant::now());
    let upkeep_every = fleet.lease / 3;
    let mut next_poll = Instant::now();
    let mut next_upkeep = Instant::now();
    loop {
        if Instant::now() >= next_upkeep {
            upkeep(&fleet, &mut url, &mut place).await;
            next_upkeep = Instant::now() + upkeep_every;
        }
        if Instant::now() >= next_poll {
            match fleet.connection().await {
                Some(mut conn) if fleet.reachable() && !place.tenure.holds() => {
                    if load(&fleet, &mut conn, &mut url, &mut place).await {
                        fleet.figures.saved();
                    }
                }
                _ => {
                    let heard = url.poll().await;
                    if heard == Heard::New {
                        place.updated_at_ms = now_ms();
                        fleet.figures.document(false);
                    }
                    write(&fleet, &mut url, &mut place, heard).await;
                }
            }
            url.judge();
            next_poll = schedule.next_after(Instant::now());
        }
        tokio::select! {
            _ = tokio::time::sleep_until(next_poll.min(next_upkeep).into()) => {}
            _ = notice.notified() => {
                if !place.tenure.holds() {
                    if let Some(mut conn) = fleet.connection().await {
                        load(&fleet, &mut conn, &mut url, &mut place).await;
                    }
                }
            }
            _ = stop.cancelled() => break,
        }
    }
    fleet.unregister(&place.tenure.names.id);
    place.tenure.release(&fleet).await;
}

/// Keeps up the lease; one just taken starts from what the fleet has (never written over with
/// older).
async fn upkeep(fleet: &Fleet, url: &mut UrlSource, place: &mut Place) {
    match place.tenure.upkeep(fleet).await {
        Change::None => {}
        Change::Dropped => place.written = None,
        Change::Taken => {
            place.written = None;
            if let Some(mut conn) = fleet.connection().await {
                load(fleet, &mut conn, url, place).await;
            }
        }
    }
}

/// The revision a flag file is stored under: a digest of its text (equal on every replica).
fn revision_of(text: &str) -> String {
    crate::sources::fleet::environment_id(text)
}

/// Loads the URL's text from Redis unless it is what is served, older, or a value already
/// refused; whether Redis answered with one (new, the same, or refused).
async fn load(
    fleet: &Fleet,
    conn: &mut Connection,
    url: &mut UrlSource,
    place: &mut Place,
) -> bool {
    let head = stored::head(conn, &place.tenure.names).await;
    fleet.answered(head.as_ref());
    let Ok(stored::Head {
        revision: Some(revision),
        updated_at_ms,
        confirmed_ms,
    }) = head
    else {
        return false;
    };
    // The holder's last word from upstream counts as this replica's, once its text is served.
    let confirm = |url: &mut UrlSource| {
        if let Some(ms) = confirmed_ms {
            let heard = UNIX_EPOCH + Duration::from_millis(ms);
            url.last_good = Some(url.last_good.map_or(heard, |t| t.max(heard)));
        }
    };
    if place.refused.as_deref() == Some(revision.as_str()) {
        return true;
    }
    if url.text.as_deref().map(revision_of).as_deref() == Some(revision.as_str()) {
        confirm(url);
        return true;
    }
    if url.text.is_some() && updated_at_ms < place.updated_at_ms {
        return true;
    }
    let fields: redis::RedisResult<(Option<Vec<u8>>, Option<String>)> = redis::cmd("HMGET")
        .arg(&place.tenure.names.document)
        .arg("body")
        .arg("etag")
        .query_async(conn)
        .await;
    fleet.answered(fields.as_ref());
    let Ok((Some(body), etag)) = fields else {
        return false;
    };
    let uri = url.source().uri.clone();
    let Ok(text) = String::from_utf8(body) else {
        fleet.figures.refused(Refusal::Undecodable);
        tracing::warn!(url = %uri, "refused the flag file the fleet's store holds (not UTF-8); the last good flags are kept");
        place.refused = Some(revision);
        return true;
    };
    match url.take(text, etag, Origin::Fleet).await {
        Ok(changed) => {
            if changed {
                fleet.figures.document(true);
            }
            place.refused = None;
            place.updated_at_ms = updated_at_ms;
            confirm(url);
        }
        Err(()) => {
            // Refused as a polled answer is (counted and logged by `take`).
            fleet.figures.refused(Refusal::Rejected);
            place.refused = Some(revision);
        }
    }
    true
}

/// The holder writes a text Redis does not have yet. At every poll, whatever the URL answered,
/// it checks that Redis still holds what it wrote, and repairs what it finds instead; when the
/// URL answered it also records when, for the others' staleness.
async fn write(fleet: &Fleet, url: &mut UrlSource, place: &mut Place, heard: Heard) {
    let Some(held) = place.tenure.held().cloned() else {
        return;
    };
    let Some(text) = url.text.clone() else {
        return;
    };
    let Some(mut conn) = fleet.connection().await else {
        return;
    };
    let revision = revision_of(&text);
    let confirmed_ms = url.last_good.map_or(0, unix_ms);
    if let Some(written) = place.written.clone().filter(|w| w.revision == revision) {
        let at = (heard != Heard::Nothing).then_some(confirmed_ms);
        let checked = stored::check(&mut conn, &place.tenure.names, &held, &written, at).await;
        fleet.answered(checked.as_ref());
        if checked != Ok(Checked::Foreign) {
            // Intact; or the lease is gone (the next upkeep finds out); or no answer.
            return;
        }
        tracing::warn!(url = %url.source().uri, "the fleet's store holds a flag file this replica did not write for the URL it holds: repairing it");
        place.written = None;
    }
    let etag = url.etag.clone();
    let value = Value {
        body: text.as_bytes(),
        revision: &revision,
        updated_at_ms: place.updated_at_ms,
        confirmed_ms,
        etag: etag.as_deref(),
    };
    let mut written = stored::put(&mut conn, &place.tenure.names, &held, &value, false).await;
    if matches!(written, Ok(Written::Newer)) {
        // Newer than what the URL just gave: serve it if it is good, replace it if it is not.
        load(fleet, &mut conn, url, place).await;
        if place.refused.is_some() {
            written = stored::put(&mut conn, &place.tenure.names, &held, &value, true).await;
        }
    }
    fleet.answered(written.as_ref());
    match written {
        Ok(Written::Stored(stored)) => place.written = Some(stored),
        // Served here now; the next poll writes it in this replica's own bytes, which it checks.
        Ok(Written::Newer) => place.written = None,
        Ok(Written::LeaseLost) => {
            tracing::info!(url = %url.source().uri, "lease expired during the fetch: the flag file is not written for the fleet");
            place.tenure.drop_lease(fleet);
            place.written = None;
        }
        Err(_) => {}
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn now_ms() -> u64 {
    unix_ms(SystemTime::now())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_flag_file_revision_is_its_text_digest() {
        let a = super::revision_of(r#"{"flags": {}}"#);
        assert_eq!(a.len(), 32);
        assert_eq!(a, super::revision_of(r#"{"flags": {}}"#));
        assert_ne!(a, super::revision_of(r#"{"flags": {} }"#));
    }
}
