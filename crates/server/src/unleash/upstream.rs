//! The edge mode: an Unleash server's client API (`GET {upstream}/api/client/features`) polled
//! with each client token, as Unleash Edge polls it: one poller per token (the server answers
//! each with its own projects and environment), conditional (`If-None-Match` with the last
//! ETag, so an unchanged state costs a 304), at a phase of its own within the refresh interval
//! (`sources::poll_schedule`), backing off while the server fails. A body that does not load,
//! a refused token or an unreachable server keeps the last good toggles; the feed's health
//! says why, and how long ago it last took an update. In a fleet (`flagpole.fleet`) a poller
//! is driven by the fleet's loop instead of its own (`fleet.rs`): one replica polls each token
//! for the whole fleet.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{AUTHORIZATION, ETAG, IF_NONE_MATCH};
use reqwest::StatusCode;

use crate::shutdown::Shutdown;
use crate::sources::fleet::Heard;
use crate::sources::poll_schedule::PollSchedule;
use crate::sources::warm_start::WarmStart;
use flagpole_config::unleash::Unleash as UnleashConfig;

use super::{Feed, Unleash};

/// A whole fetch, body included, takes at most this long.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// While the server fails, polls are this many periods apart at most (doubling from one).
const MAX_BACKOFF_PERIODS: u32 = 8;

/// `/metrics`: fetches by feed and result (`200`, `304`, `refused`, `error`).
const FETCHES: &str = "flagpole_unleash_fetches_total";

/// What runs a poller instead of its own loop: the fleet implements it (`fleet.rs`), so that
/// this file knows nothing of Redis.
pub(super) trait FeedRunner: Send + Sync {
    /// Runs `poller` until the token stops (`stop`).
    fn run(
        self: Arc<Self>,
        poller: Poller,
        stop: tokio_util::sync::CancellationToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// Starts a poller per client token, each until shutdown (run by `runner` when there is one);
/// with a warm-start directory, each token's saved features are served first (until the server
/// answers, or when it never does) and every new body is saved.
pub(super) async fn start(
    unleash: &Arc<Unleash>,
    url: &str,
    config: &UnleashConfig,
    warm: Option<Arc<WarmStart>>,
    runner: Option<Arc<dyn FeedRunner>>,
    shutdown: &Shutdown,
) {
    metrics::describe_counter!(
        FETCHES,
        "Unleash upstream fetches of /api/client/features, by feed and result"
    );
    let endpoint = format!("{}/api/client/features", url.trim_end_matches('/'));
    let client = crate::sources::upstream::client();
    for (token, feed) in unleash.client_tokens().iter().zip(unleash.feeds()) {
        let mut poller = Poller {
            endpoint: endpoint.clone(),
            upstream: url.to_owned(),
            token: token.secret_text().to_owned(),
            feed: feed.clone(),
            client: client.clone(),
            unleash: unleash.clone(),
            etag: None,
            text: None,
            warm: warm.clone(),
            period: config.refresh_interval.max(Duration::from_millis(100)),
        };
        poller.warm_start().await;
        let stop = shutdown.requested.clone();
        match &runner {
            Some(runner) => shutdown.spawn(runner.clone().run(poller, stop)),
            None => shutdown.spawn(poller.run(stop)),
        }
    }
}

/// One client token's poller.
pub(super) struct Poller {
    endpoint: String,
    /// The upstream's base URL (what a warm-start copy is kept under, with the token).
    pub(super) upstream: String,
    pub(super) token: String,
    pub(super) feed: Arc<Feed>,
    client: reqwest::Client,
    /// Whose identity the requests carry.
    unleash: Arc<Unleash>,
    /// The ETag of the body served now (sent as `If-None-Match`).
    pub(super) etag: Option<String>,
    /// The body served now, as accepted (what a fleet's holder writes to Redis).
    pub(super) text: Option<Arc<[u8]>>,
    pub(super) warm: Option<Arc<WarmStart>>,
    /// The refresh interval.
    pub(super) period: Duration,
}

/// What one fetch came to.
enum Fetched {
    Changed(Vec<u8>, Option<String>),
    Unchanged,
}

impl Poller {
    /// Serves the token's saved features, if any, with their real age and ETag (so the first
    /// poll can be a 304).
    async fn warm_start(&mut self) {
        let Some(saved) = self
            .warm
            .as_ref()
            .and_then(|w| w.read_unleash(&self.upstream, &self.token))
        else {
            return;
        };
        let text: Arc<[u8]> = Arc::from(saved.body.as_slice());
        match self.feed.publish_off_the_side(0, saved.body).await {
            Ok(_) => {
                self.etag = saved.etag;
                self.text = Some(text);
                if let Some(at) = saved.saved_at {
                    self.feed.mark_ok_at(at);
                }
                tracing::info!(feed = %self.feed.name, "serving the Unleash features' warm-start copy until the upstream answers");
            }
            Err(reason) => {
                tracing::warn!(feed = %self.feed.name, %reason, "ignoring an unreadable warm-start copy of Unleash features")
            }
        }
    }

    async fn run(mut self, stop: tokio_util::sync::CancellationToken) {
        let mut schedule = PollSchedule::new(self.period, Instant::now());
        loop {
            self.poll_once().await;
            let next = self.next_poll(&mut schedule);
            tokio::select! {
                _ = tokio::time::sleep_until(next.into()) => {}
                _ = stop.cancelled() => return,
            }
        }
    }

    /// When to poll next: the schedule's time, or later while the server fails (2, 4, …
    /// periods apart, never more than the cap).
    pub(super) fn next_poll(&self, schedule: &mut PollSchedule) -> Instant {
        let next = schedule.next_after(Instant::now());
        let failures = self.feed.health().failures;
        if failures <= 1 {
            return next;
        }
        let periods = 1u32 << (failures - 1).min(MAX_BACKOFF_PERIODS.ilog2());
        next.max(Instant::now() + self.period * periods)
    }

    /// One conditional fetch; a new body compiled and served, or refused.
    pub(super) async fn poll_once(&mut self) -> Heard {
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, self.fetch()).await;
        let result = match fetched {
            Err(_) => Err(("error", format!("no answer within {FETCH_TIMEOUT:?}"))),
            Ok(result) => result,
        };
        match result {
            Ok(Fetched::Unchanged) => {
                metrics::counter!(FETCHES, "feed" => self.feed.name.clone(), "result" => "304")
                    .increment(1);
                self.feed.mark_ok();
                Heard::Same
            }
            Ok(Fetched::Changed(body, etag)) => {
                metrics::counter!(FETCHES, "feed" => self.feed.name.clone(), "result" => "200")
                    .increment(1);
                let first = self.feed.view().is_none();
                let saved = self.warm.is_some().then(|| body.clone());
                let text: Arc<[u8]> = Arc::from(body.as_slice());
                match self.feed.publish_off_the_side(0, body).await {
                    Ok(changed) => {
                        if let (Some(warm), Some(body)) = (&self.warm, saved) {
                            warm.save_unleash(&self.upstream, &self.token, body, etag.clone())
                                .await;
                        }
                        self.etag = etag;
                        self.text = Some(text);
                        self.feed.mark_ok();
                        if first || changed {
                            tracing::info!(
                                feed = %self.feed.name,
                                toggles = self.feed.view().map_or(0, |v| v.features.len()),
                                "Unleash toggles fetched from the upstream"
                            );
                        }
                        if changed {
                            Heard::New
                        } else {
                            Heard::Same
                        }
                    }
                    Err(reason) => {
                        // The ETag is not taken: the next poll fetches the body again.
                        tracing::warn!(feed = %self.feed.name, %reason, "the upstream's Unleash features were refused; the last good toggles are kept");
                        self.feed
                            .mark_failure(format!("the body did not load: {reason}"));
                        Heard::Nothing
                    }
                }
            }
            Err((result, why)) => {
                metrics::counter!(FETCHES, "feed" => self.feed.name.clone(), "result" => result)
                    .increment(1);
                // Logged when it starts failing, and again when the reason changes (not at every
                // poll of a long outage).
                if self.feed.health().last_error.as_deref() != Some(why.as_str()) {
                    tracing::warn!(feed = %self.feed.name, reason = %why, "fetching Unleash features from the upstream failed; the last good toggles are kept");
                }
                self.feed.mark_failure(why);
                Heard::Nothing
            }
        }
    }

    async fn fetch(&self) -> Result<Fetched, (&'static str, String)> {
        let mut request = self
            .client
            .get(&self.endpoint)
            .header(AUTHORIZATION, &self.token);
        if let Some(etag) = &self.etag {
            request = request.header(IF_NONE_MATCH, etag);
        }
        let response = self
            .unleash
            .identity
            .apply(request)
            .send()
            .await
            .map_err(|e| ("error", format!("the upstream is unreachable: {e}")))?;
        let status = response.status();
        match status {
            StatusCode::NOT_MODIFIED => Ok(Fetched::Unchanged),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err((
                "refused",
                format!("the upstream refused this client token (HTTP {status})"),
            )),
            s if s.is_success() => {
                let etag = response
                    .headers()
                    .get(ETAG)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let body = response
                    .bytes()
                    .await
                    .map_err(|e| ("error", format!("reading the body failed: {e}")))?;
                Ok(Fetched::Changed(body.to_vec(), etag))
            }
            s => Err(("error", format!("the upstream answered HTTP {s}"))),
        }
    }
}
