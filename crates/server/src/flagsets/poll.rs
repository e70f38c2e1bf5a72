//! Polling one URL source: conditional on the last `ETag`, on each source's own schedule (a
//! phase of its own plus jitter, as environments are polled), on the upstream poller's HTTP
//! client. An answer that does not compile keeps the last good set (refused, logged naming the
//! source, the flag's JSON path and why, and counted for `/metrics`); the source is marked
//! stale when its last good answer is older than the interval plus the grace period. Without a
//! fleet [`run`] polls until shutdown; in one, `fleet.rs` drives the same [`UrlSource`].

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::sources::fleet::Heard;
use crate::sources::poll_schedule::PollSchedule;
use crate::sources::warm_start::WarmStart;
use flagpole_config::flags::FlagSource;
use flagpole_config::Config;

use super::FlagSets;

/// One URL source and what this replica knows of it.
pub(super) struct UrlSource {
    pub(super) sets: Arc<FlagSets>,
    pub(super) index: usize,
    client: reqwest::Client,
    pub(super) config: Arc<Config>,
    warm: Option<Arc<WarmStart>>,
    /// The ETag of the text served (asked with `If-None-Match`).
    pub(super) etag: Option<String>,
    /// The text served, as accepted (what a fleet's holder writes to Redis).
    pub(super) text: Option<Arc<str>>,
    /// When the upstream last gave (or confirmed) the text served: here, or to the fleet's
    /// holder.
    pub(super) last_good: Option<SystemTime>,
    started: SystemTime,
}

/// Where an accepted text came from, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    Upstream,
    Fleet,
}

impl UrlSource {
    pub(super) fn new(
        sets: Arc<FlagSets>,
        index: usize,
        client: reqwest::Client,
        config: Arc<Config>,
        warm: Option<Arc<WarmStart>>,
    ) -> UrlSource {
        UrlSource {
            sets,
            index,
            client,
            config,
            warm,
            etag: None,
            text: None,
            last_good: None,
            started: SystemTime::now(),
        }
    }

    pub(super) fn source(&self) -> &FlagSource {
        &self.sets.sources[self.index].config
    }

    pub(super) fn interval(&self) -> Duration {
        self.source().interval
    }

    /// One conditional request; new text is compiled and served (or refused).
    pub(super) async fn poll(&mut self) -> Heard {
        let fetched = tokio::time::timeout(
            self.config.upstream.poll_timeout,
            fetch(&self.client, self.source(), self.etag.as_deref()),
        )
        .await
        .unwrap_or_else(|_| Err("timed out".into()));
        match fetched {
            Ok(Fetched::NotModified) => {
                self.last_good = Some(SystemTime::now());
                Heard::Same
            }
            Ok(Fetched::Body { text, etag }) => match self.take(text, etag, Origin::Upstream).await
            {
                Ok(true) => {
                    self.last_good = Some(SystemTime::now());
                    Heard::New
                }
                Ok(false) => {
                    self.last_good = Some(SystemTime::now());
                    Heard::Same
                }
                Err(()) => Heard::Nothing,
            },
            Err(reason) => {
                let source = &self.sets.sources[self.index];
                *source.last_error.lock() = Some(reason.clone());
                tracing::warn!(url = %source.config.uri, %reason, "flag source fetch failed; the last good flags are kept");
                Heard::Nothing
            }
        }
    }

    /// Compiles and serves `text` (from the upstream or the fleet's store): whether it changed
    /// what is served. A text that does not compile is refused (counted, logged) and the last
    /// good set kept; a new one is saved for a warm start.
    pub(super) async fn take(
        &mut self,
        text: String,
        etag: Option<String>,
        from: Origin,
    ) -> Result<bool, ()> {
        let uri = self.source().uri.clone();
        let text: Arc<str> = Arc::from(text);
        match self
            .sets
            .publish_off_the_side(self.index, text.to_string())
            .await
        {
            Ok(changed) => {
                self.etag = etag;
                self.text = Some(text.clone());
                if changed {
                    let flags = self.sets.source_flag_count(self.index);
                    match from {
                        Origin::Upstream => tracing::info!(url = %uri, flags, "flag source loaded"),
                        Origin::Fleet => {
                            tracing::info!(url = %uri, flags, "flag source loaded from the fleet's store")
                        }
                    }
                    if let Some(warm) = &self.warm {
                        warm.save_flags(&uri, text.to_string()).await;
                    }
                }
                Ok(changed)
            }
            Err(e) => {
                tracing::warn!(
                    url = %uri,
                    path = %e.path,
                    reason = %e.message,
                    "flag source refused ({}: {}); the last good flags are kept",
                    e.path,
                    e.message
                );
                Err(())
            }
        }
    }

    /// Marks the source stale while its last good answer is older than its interval plus the
    /// grace period (no grace configured: never).
    pub(super) fn judge(&self) {
        let Some(grace) = self.config.health.stale_grace else {
            return;
        };
        let since = SystemTime::now()
            .duration_since(self.last_good.unwrap_or(self.started))
            .unwrap_or_default();
        let loaded = self.sets.sources[self.index].loaded();
        self.sets
            .set_stale(self.index, loaded && since > self.interval() + grace);
    }
}

/// Polls one URL source until `stop`: at once, then every interval.
pub(super) async fn run(mut url: UrlSource, stop: tokio_util::sync::CancellationToken) {
    let mut schedule = PollSchedule::new(url.interval(), Instant::now());
    loop {
        url.poll().await;
        url.judge();
        let next = schedule.next_after(Instant::now());
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()) => {}
            _ = stop.cancelled() => return,
        }
    }
}

enum Fetched {
    NotModified,
    Body { text: String, etag: Option<String> },
}

async fn fetch(
    client: &reqwest::Client,
    source: &FlagSource,
    etag: Option<&str>,
) -> Result<Fetched, String> {
    let mut request = client.get(&source.uri).header("accept", "application/json");
    if let Some(auth) = &source.auth_header {
        request = request.header("authorization", auth);
    }
    for (name, value) in &source.headers {
        request = request.header(name, value);
    }
    if let Some(etag) = etag {
        request = request.header("if-none-match", etag);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_MODIFIED {
        return Ok(Fetched::NotModified);
    }
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let etag = response
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.map_err(|e| e.to_string())?;
    Ok(Fetched::Body { text, etag })
}
