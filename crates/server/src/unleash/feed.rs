//! One stream of Unleash toggles and what is known of its freshness: the features files of the
//! offline mode (merged, one feed), or one client token's features fetched from the upstream
//! (a feed per token, since the Unleash server answers each token with its own projects and
//! environment). A feed's accepted state is one immutable [`View`], built off to the side and
//! swapped in atomically; a text that does not load keeps the last good view.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use arc_swap::ArcSwapOption;
use parking_lot::Mutex;

use super::View;

/// `/metrics`: the toggles served now, and the updates taken and refused.
const TOGGLES: &str = "flagpole_unleash_toggles";
const RELOADS: &str = "flagpole_unleash_reloads_total";

/// Registers the feeds' metrics once per process.
pub(super) fn describe_metrics() {
    metrics::describe_gauge!(TOGGLES, "Unleash toggles served, by feed");
    metrics::describe_counter!(
        RELOADS,
        "Unleash feature updates since start (files reloaded, upstream bodies), by feed and result (taken, refused)"
    );
}

/// One stream of toggles.
#[derive(Debug)]
pub(crate) struct Feed {
    /// What `/metrics`, the logs and the status page call it: `files`, or the client token's
    /// fingerprint.
    pub(crate) name: String,
    /// Each part's last good text, in order (the files; one upstream body).
    texts: Mutex<Vec<Arc<[u8]>>>,
    view: ArcSwapOption<View>,
    health: Mutex<Health>,
    /// Updates refused since start (a text that did not load; the last good view kept).
    pub(crate) refused: AtomicU64,
    /// Whether it is polled from an upstream (only a polled feed can go stale).
    polled: bool,
    /// What SDKs reading this feed reported, until forwarded (`usage.rs`).
    pub(super) usage: Mutex<flagpole_unleash::Usage>,
}

/// A feed as the status page shows it.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    pub(crate) name: String,
    pub(crate) polled: bool,
    pub(crate) loaded: bool,
    pub(crate) toggles: usize,
    pub(crate) revision: Option<String>,
    pub(crate) last_success: Option<SystemTime>,
    pub(crate) age_seconds: Option<f64>,
    pub(crate) last_error: Option<String>,
    pub(crate) stale: bool,
    pub(crate) refused: u64,
}

/// When the feed last took an update, and the last failure since.
#[derive(Debug, Clone, Default)]
pub(crate) struct Health {
    /// The last update taken or confirmed unchanged (a 304 counts).
    pub(crate) last_ok: Option<(Instant, SystemTime)>,
    /// Why the last attempt failed, when it did (cleared by a success).
    pub(crate) last_error: Option<String>,
    /// Attempts that failed in a row.
    pub(crate) failures: u32,
}

impl Feed {
    /// A feed whose first view is already built (the preflight compiled the files).
    pub(super) fn loaded(name: String, texts: Vec<Arc<[u8]>>, view: View) -> Feed {
        let mut feed = Feed::empty(name, texts.len());
        feed.polled = false;
        *feed.texts.lock() = texts;
        metrics::gauge!(TOGGLES, "feed" => feed.name.clone()).set(view.features.len() as f64);
        feed.view.store(Some(Arc::new(view)));
        feed.mark_ok();
        feed
    }

    /// A feed with no view yet (an upstream not fetched yet), of `parts` texts.
    pub(super) fn empty(name: String, parts: usize) -> Feed {
        for result in ["taken", "refused"] {
            metrics::counter!(RELOADS, "feed" => name.clone(), "result" => result).increment(0);
        }
        Feed {
            name,
            texts: Mutex::new(vec![Arc::from(&[][..]); parts]),
            view: ArcSwapOption::empty(),
            health: Mutex::new(Health::default()),
            refused: AtomicU64::new(0),
            polled: true,
            usage: Mutex::new(flagpole_unleash::Usage::default()),
        }
    }

    /// The toggles served now; `None` before the first update.
    pub(crate) fn view(&self) -> Option<Arc<View>> {
        self.view.load_full()
    }

    /// Whether the feed is polled and its last update is older than `allowed` (`None`: never
    /// stale); a feed with nothing fetched yet has nothing stale to serve.
    pub(crate) fn is_stale(&self, allowed: Option<std::time::Duration>) -> bool {
        let (Some(allowed), true) = (allowed, self.polled) else {
            return false;
        };
        match self.health.lock().last_ok {
            Some((at, _)) if self.view.load().is_some() => at.elapsed() > allowed,
            _ => false,
        }
    }

    /// What the status page shows of it.
    pub(crate) fn facts(&self, allowed: Option<std::time::Duration>) -> Facts {
        let view = self.view();
        let health = self.health();
        Facts {
            name: self.name.clone(),
            polled: self.polled,
            loaded: view.is_some(),
            toggles: view.as_ref().map_or(0, |v| v.features.len()),
            revision: view.map(|v| v.revision.clone()),
            last_success: health.last_ok.map(|(_, at)| at),
            age_seconds: health.last_ok.map(|(at, _)| at.elapsed().as_secs_f64()),
            last_error: health.last_error,
            stale: self.is_stale(allowed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    /// The feed's freshness.
    pub(crate) fn health(&self) -> Health {
        self.health.lock().clone()
    }

    /// An update taken or confirmed unchanged.
    pub(crate) fn mark_ok(&self) {
        let mut health = self.health.lock();
        health.last_ok = Some((Instant::now(), SystemTime::now()));
        health.last_error = None;
        health.failures = 0;
    }

    /// An update confirmed at `at` (a warm-start copy saved then): its age is its real one.
    pub(crate) fn mark_ok_at(&self, at: SystemTime) {
        let age = SystemTime::now().duration_since(at).unwrap_or_default();
        let mut health = self.health.lock();
        health.last_ok = Some((
            Instant::now().checked_sub(age).unwrap_or_else(Instant::now),
            at,
        ));
    }

    /// The view served confirmed by the upstream at `at`, to the fleet's replica polling this
    /// feed for all (`fleet.rs`): it counts as this replica's own update, with its real age.
    pub(crate) fn confirmed_at(&self, at: SystemTime) {
        self.mark_ok_at(at);
        let mut health = self.health.lock();
        health.last_error = None;
        health.failures = 0;
    }

    /// An attempt that failed; the last good view is kept.
    pub(crate) fn mark_failure(&self, why: String) {
        let mut health = self.health.lock();
        health.last_error = Some(why);
        health.failures = health.failures.saturating_add(1);
    }

    /// Takes new text for part `index` (on the blocking pool: compiling is CPU work no request
    /// should wait behind): `Ok(true)` when it changed the toggles, `Ok(false)` when it is the
    /// content already served; a refused text keeps the last good view.
    pub(crate) async fn publish_off_the_side(
        self: &Arc<Self>,
        index: usize,
        text: Vec<u8>,
    ) -> Result<bool, String> {
        let feed = self.clone();
        crate::background::run(move || feed.publish(index, text.into()))
            .await
            .unwrap_or_else(|e| Err(format!("building the Unleash toggles failed: {e}")))
    }

    fn publish(&self, index: usize, text: Arc<[u8]>) -> Result<bool, String> {
        // One rebuild at a time, so views are never published out of order.
        let mut texts = self.texts.lock();
        if texts[index] == text && self.view.load().is_some() {
            return Ok(false);
        }
        let refuse = |e: flagpole_unleash::FeaturesError| {
            self.refused.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(RELOADS, "feed" => self.name.clone(), "result" => "refused")
                .increment(1);
            e.to_string()
        };
        flagpole_unleash::Features::from_slice(&text).map_err(refuse)?;
        let mut next = texts.clone();
        next[index] = text;
        let view = View::build(&next).map_err(refuse)?;
        for warning in view.features.warnings() {
            tracing::warn!(feed = %self.name, toggle = %warning.toggle, reason = %warning.message, "Unleash toggle not compiled; it evaluates off");
        }
        if let Some(before) = self.view() {
            let changed = flagpole_unleash::changed_toggles(&before.features, &view.features);
            if !changed.is_empty() {
                tracing::info!(feed = %self.name, changed = ?changed, "Unleash toggles changed");
            }
        }
        *texts = next;
        metrics::gauge!(TOGGLES, "feed" => self.name.clone()).set(view.features.len() as f64);
        metrics::counter!(RELOADS, "feed" => self.name.clone(), "result" => "taken").increment(1);
        self.view.store(Some(Arc::new(view)));
        Ok(true)
    }
}
