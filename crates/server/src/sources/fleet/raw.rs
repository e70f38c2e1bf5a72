//! A raw text polled for the whole fleet (a flag-set URL's flag file, an Unleash client token's
//! features body): one replica, the holder of its lease (`tenure.rs`), polls the upstream and
//! writes each new accepted text, raw, with its ETag to Redis under a digest of what it is (never
//! a URL or a token) and announces it (`stored.rs`). The others load it on the announcement or
//! at their own poll times, compiled as a polled answer is (a text that does not compile never
//! replaces a good one: refused, logged and counted the same way). While Redis does not answer,
//! or before anyone holds the lease, each replica polls the upstream itself, as without a fleet.
//! Staleness is judged by when the holder last heard from upstream, which it records in Redis
//! at each poll. [`run`] is that loop, for any [`RawSource`] (reached through `Fleet::run_raw`):
//! `flagsets/fleet.rs` and `unleash/fleet.rs` say what their source is, and what it is for the
//! fleet ([`RawSubject`]: the names of its lease and keys).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use super::stored::{self, Checked, Stored, Value, Written};
use super::tenure::{Change, Subject, Tenure};
use super::traced::Connection;
use super::{Fleet, Names};
use crate::sources::poll_schedule::PollSchedule;
use crate::telemetry::fleet::Refusal;

/// What one poll of the upstream heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heard {
    /// The upstream answered with the text served (or a 304).
    Same,
    /// The upstream answered with new text, now served.
    New,
    /// No usable answer (a failure, or a text refused).
    Nothing,
}

/// What a raw text is for the fleet: it names the lease and the Redis keys (by a digest, never a
/// URL or a token) and the log lines. No `Debug`: a feed carries its token.
pub(crate) enum RawSubject {
    /// A flag-set URL source.
    FlagSource { uri: String },
    /// An Unleash client token's features from `upstream`; `feed`: its name in logs (the
    /// token's fingerprint).
    UnleashFeed {
        upstream: String,
        token: String,
        feed: String,
    },
}

impl RawSubject {
    /// This replica's hold on the subject's lease, none yet.
    pub(super) fn tenure(self) -> Tenure {
        match self {
            RawSubject::FlagSource { uri } => {
                Tenure::new(Names::flag_source(&uri), Subject::FlagSource(uri))
            }
            RawSubject::UnleashFeed {
                upstream,
                token,
                feed,
            } => Tenure::new(
                Names::unleash_feed(&upstream, &token),
                Subject::UnleashFeed(feed),
            ),
        }
    }
}

/// One source polled upstream, as the fleet drives it.
pub(crate) trait RawSource: Send {
    /// The text served, as accepted (what the holder writes to Redis).
    fn text(&self) -> Option<Arc<[u8]>>;
    /// The upstream's ETag for the text served.
    fn etag(&self) -> Option<String>;
    /// When the upstream last gave or confirmed the text served (here, or to the holder).
    fn last_good(&self) -> Option<SystemTime>;
    /// The holder heard from upstream at `at` (later than [`RawSource::last_good`]) about the
    /// text served here: it counts as this replica's own word.
    fn confirm(&mut self, at: SystemTime);
    /// One conditional request upstream; new text compiled and served, or refused.
    fn poll(&mut self) -> impl Future<Output = Heard> + Send;
    /// Text the fleet's store holds, compiled and served as a polled answer is (a new one saved
    /// for a warm start): whether it changed what is served; refused: why (logged here).
    fn take_stored(
        &mut self,
        text: Vec<u8>,
        etag: Option<String>,
    ) -> impl Future<Output = Result<bool, Refusal>> + Send;
    /// The time between polls.
    fn interval(&self) -> Duration;
    /// When to poll next, after a poll or a load (a source backing off while its upstream fails
    /// says so here).
    fn next_poll(&self, schedule: &mut PollSchedule) -> Instant {
        schedule.next_after(Instant::now())
    }
    /// After each poll or load: staleness judged, for a source that keeps a flag of it.
    fn judge(&self) {}
}

/// What this replica knows of one source's place in the fleet.
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

/// Polls (or follows the fleet's holder of) `source` until `stop`; `tenure` names its lease.
pub(super) async fn run<S: RawSource>(
    mut source: S,
    tenure: Tenure,
    fleet: Arc<Fleet>,
    stop: CancellationToken,
) {
    let mut place = Place {
        tenure,
        written: None,
        refused: None,
        updated_at_ms: 0,
    };
    let notice = fleet.register(&place.tenure.names.id);
    // A new replica serves what the fleet holds before any upstream answer.
    if let Some(mut conn) = fleet.connection().await {
        load(&fleet, &mut conn, &mut source, &mut place).await;
    }
    let mut schedule = PollSchedule::new(source.interval(), Instant::now());
    let upkeep_every = fleet.lease / 3;
    let mut next_poll = Instant::now();
    let mut next_upkeep = Instant::now();
    loop {
        if Instant::now() >= next_upkeep {
            upkeep(&fleet, &mut source, &mut place).await;
            next_upkeep = Instant::now() + upkeep_every;
        }
        if Instant::now() >= next_poll {
            match fleet.connection().await {
                Some(mut conn) if fleet.reachable() && !place.tenure.holds() => {
                    if load(&fleet, &mut conn, &mut source, &mut place).await {
                        fleet.figures.saved();
                    }
                }
                _ => {
                    let heard = source.poll().await;
                    if heard == Heard::New {
                        place.updated_at_ms = now_ms();
                        fleet.figures.document(false);
                    }
                    write(&fleet, &mut source, &mut place, heard).await;
                }
            }
            source.judge();
            next_poll = source.next_poll(&mut schedule);
        }
        tokio::select! {
            _ = tokio::time::sleep_until(next_poll.min(next_upkeep).into()) => {}
            _ = notice.notified() => {
                if !place.tenure.holds() {
                    if let Some(mut conn) = fleet.connection().await {
                        load(&fleet, &mut conn, &mut source, &mut place).await;
                        source.judge();
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
async fn upkeep<S: RawSource>(fleet: &Fleet, source: &mut S, place: &mut Place) {
    match place.tenure.upkeep(fleet).await {
        Change::None => {}
        Change::Dropped => place.written = None,
        Change::Taken => {
            place.written = None;
            if let Some(mut conn) = fleet.connection().await {
                load(fleet, &mut conn, source, place).await;
            }
        }
    }
}

/// The revision a raw text is stored under: a digest of its bytes (equal on every replica).
fn revision_of(text: &[u8]) -> String {
    super::digest(text)
}

/// The holder's last word from upstream counts as this replica's, once its text is served.
fn confirm<S: RawSource>(source: &mut S, confirmed_ms: Option<u64>) {
    let Some(ms) = confirmed_ms else {
        return;
    };
    let heard = UNIX_EPOCH + Duration::from_millis(ms);
    if source.last_good().is_none_or(|t| t < heard) {
        source.confirm(heard);
    }
}

/// Loads the source's text from Redis unless it is what is served, older, or a value already
/// refused; whether Redis answered with one (new, the same, or refused).
async fn load<S: RawSource>(
    fleet: &Fleet,
    conn: &mut Connection,
    source: &mut S,
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
    if place.refused.as_deref() == Some(revision.as_str()) {
        return true;
    }
    let served = source.text();
    if served.as_deref().map(revision_of).as_deref() == Some(revision.as_str()) {
        confirm(source, confirmed_ms);
        return true;
    }
    if served.is_some() && updated_at_ms < place.updated_at_ms {
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
    match source.take_stored(body, etag).await {
        Ok(changed) => {
            if changed {
                fleet.figures.document(true);
            }
            place.refused = None;
            place.updated_at_ms = updated_at_ms;
            confirm(source, confirmed_ms);
        }
        Err(why) => {
            // Refused as a polled answer is (logged by the source).
            fleet.figures.refused(why);
            place.refused = Some(revision);
        }
    }
    true
}

/// The holder writes a text Redis does not have yet. At every poll, whatever the upstream
/// answered, it checks that Redis still holds what it wrote, and repairs what it finds instead;
/// when the upstream answered it also records when, for the others' staleness.
async fn write<S: RawSource>(fleet: &Fleet, source: &mut S, place: &mut Place, heard: Heard) {
    let Some(held) = place.tenure.held().cloned() else {
        return;
    };
    let Some(text) = source.text() else {
        return;
    };
    let Some(mut conn) = fleet.connection().await else {
        return;
    };
    let noun = place.tenure.subject.noun();
    let revision = revision_of(&text);
    let confirmed_ms = source.last_good().map_or(0, unix_ms);
    if let Some(written) = place.written.clone().filter(|w| w.revision == revision) {
        let at = (heard != Heard::Nothing).then_some(confirmed_ms);
        let checked = stored::check(&mut conn, &place.tenure.names, &held, &written, at).await;
        fleet.answered(checked.as_ref());
        if checked != Ok(Checked::Foreign) {
            // Intact; or the lease is gone (the next upkeep finds out); or no answer.
            return;
        }
        place.tenure.subject.say(
            tracing::Level::WARN,
            &format!("the fleet's store holds a text this replica did not write for the {noun} it holds: repairing it"),
        );
        place.written = None;
    }
    let etag = source.etag();
    let value = Value {
        body: &text,
        revision: &revision,
        updated_at_ms: place.updated_at_ms,
        confirmed_ms,
        etag: etag.as_deref(),
    };
    let mut written = stored::put(&mut conn, &place.tenure.names, &held, &value, false).await;
    if matches!(written, Ok(Written::Newer)) {
        // Newer than what the upstream just gave: serve it if it is good, replace it if not.
        load(fleet, &mut conn, source, place).await;
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
            place.tenure.subject.say(
                tracing::Level::INFO,
                &format!("lease on the {noun} expired during the fetch: its text is not written for the fleet"),
            );
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
    fn a_raw_text_revision_is_its_digest() {
        let a = super::revision_of(br#"{"flags": {}}"#);
        assert_eq!(a.len(), 32);
        assert_eq!(a, super::revision_of(br#"{"flags": {}}"#));
        assert_ne!(a, super::revision_of(br#"{"flags": {} }"#));
        assert_eq!(a, super::super::environment_id(r#"{"flags": {}}"#));
    }
}
