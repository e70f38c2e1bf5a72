//! The edge mode in a fleet (`flagpole.fleet`): each client token's features are polled by one
//! replica for the whole fleet, so that a fleet of N asks the Unleash server as often as one
//! Edge does. The loop is the one every raw text polled for the fleet runs
//! (`sources/fleet/raw.rs`): a lease per upstream and token (Redis names carry a digest of both,
//! never the token), its holder writing each accepted body, raw, with its ETag to Redis and
//! announcing it; the others loading it on the announcement or at their refresh times, compiled
//! as a fetched body is (a body that does not load never replaces good toggles); a new replica
//! serving what Redis holds before any upstream answer; and, while Redis does not answer or
//! nobody holds the lease, each replica polling the upstream itself (`upstream.rs`). A feed's
//! health follows when the holder last heard from the upstream. Here: what a poller is to that
//! loop.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio_util::sync::CancellationToken;

use super::upstream::{FeedRunner, Poller};
use crate::sources::fleet::{Fleet, Heard, RawSource, RawSubject};
use crate::sources::poll_schedule::PollSchedule;
use crate::telemetry::fleet::Refusal;

/// The fleet's loop runs the pollers `upstream::start` makes.
impl FeedRunner for Fleet {
    fn run(
        self: Arc<Self>,
        poller: Poller,
        stop: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(run(poller, self, stop))
    }
}

/// Polls (or follows the fleet's holder of) one client token's features until `stop`.
async fn run(poller: Poller, fleet: Arc<Fleet>, stop: CancellationToken) {
    let subject = RawSubject::UnleashFeed {
        upstream: poller.upstream.clone(),
        token: poller.token.clone(),
        feed: poller.feed.name.clone(),
    };
    fleet.run_raw(poller, subject, stop).await;
}

impl RawSource for Poller {
    fn text(&self) -> Option<Arc<[u8]>> {
        self.text.clone()
    }

    fn etag(&self) -> Option<String> {
        self.etag.clone()
    }

    fn last_good(&self) -> Option<SystemTime> {
        self.feed.health().last_ok.map(|(_, at)| at)
    }

    fn confirm(&mut self, at: SystemTime) {
        self.feed.confirmed_at(at);
    }

    async fn poll(&mut self) -> Heard {
        self.poll_once().await
    }

    async fn take_stored(&mut self, text: Vec<u8>, etag: Option<String>) -> Result<bool, Refusal> {
        let kept: Arc<[u8]> = Arc::from(text.as_slice());
        let saved = self.warm.is_some().then(|| text.clone());
        match self.feed.publish_off_the_side(0, text).await {
            Ok(changed) => {
                if changed {
                    tracing::info!(
                        feed = %self.feed.name,
                        toggles = self.feed.view().map_or(0, |v| v.features.len()),
                        "Unleash toggles loaded from the fleet's store"
                    );
                    if let (Some(warm), Some(body)) = (&self.warm, saved) {
                        warm.save_unleash(&self.upstream, &self.token, body, etag.clone())
                            .await;
                    }
                }
                self.etag = etag;
                self.text = Some(kept);
                Ok(changed)
            }
            Err(reason) => {
                // Counted by the feed as any refused body; the last good toggles are kept.
                tracing::warn!(feed = %self.feed.name, %reason, "refused the Unleash features the fleet's store holds; the last good toggles are kept");
                Err(Refusal::Rejected)
            }
        }
    }

    fn interval(&self) -> Duration {
        self.period
    }

    fn next_poll(&self, schedule: &mut PollSchedule) -> Instant {
        Poller::next_poll(self, schedule)
    }
}
