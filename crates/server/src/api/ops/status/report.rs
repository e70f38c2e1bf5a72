//! What the status page shows, read once from the store and the process: the one value both
//! renderings (HTML and JSON) are made from.

use std::time::SystemTime;

use crate::api::AppState;
use crate::telemetry::{self, environments::EnvFacts, summary::Summary};

/// Environments per page: past this, the page summarises and paginates (a proxy serving
/// thousands would otherwise render a page of megabytes every 30 s).
pub(super) const PAGE_SIZE: usize = 100;

/// Everything the page shows, read once.
pub(super) struct Report {
    pub version: &'static str,
    pub now: SystemTime,
    pub started_at: SystemTime,
    pub uptime_seconds: f64,
    pub open_streams: usize,
    /// Requests refused because their key (or its absence) reached no environment.
    pub unrecognised_keys: u64,
    /// This page's environments (by fingerprint; all of them when there are at most
    /// [`PAGE_SIZE`]).
    pub environments: Vec<EnvFacts>,
    /// Flag analytics of the environments that have reported any.
    pub analytics: Vec<crate::analytics::counts::Facts>,
    /// Totals over every environment, not just this page's.
    pub summary: Summary,
    /// This page (from 1) and how many there are.
    pub page: usize,
    pub pages: usize,
    /// The fleet's shared store, when this replica is in one.
    pub fleet: Option<crate::sources::fleet::Facts>,
    /// flagd flag sources, in configuration order.
    pub flag_sources: Vec<crate::flagsets::SourceFacts>,
    /// The selectors flag sets answer to ("" for all merged).
    pub flag_sets: Vec<String>,
    /// Unleash feeds, in configuration order.
    pub unleash: Vec<crate::unleash::feed::Facts>,
}

impl Report {
    /// The report with page `page` (from 1; clamped to the pages there are) of environments.
    pub(super) fn read(
        state: &AppState,
        page: usize,
        unleash: Option<&crate::unleash::Unleash>,
    ) -> Report {
        let now = SystemTime::now();
        let (started_at, uptime) = telemetry::uptime();
        let mut environments: Vec<EnvFacts> = state
            .store
            .environments()
            .iter()
            .map(|env| {
                let mut facts = EnvFacts::of(env, now);
                facts.last_error = facts.last_error.map(|e| redact(state, env, e));
                facts
            })
            .collect();
        environments.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        let summary = Summary::of(&environments);
        let pages = environments.len().div_ceil(PAGE_SIZE).max(1);
        let page = page.clamp(1, pages);
        let environments: Vec<EnvFacts> = environments
            .into_iter()
            .skip((page - 1) * PAGE_SIZE)
            .take(PAGE_SIZE)
            .collect();
        Report {
            version: env!("CARGO_PKG_VERSION"),
            now,
            started_at,
            uptime_seconds: uptime.as_secs_f64(),
            open_streams: state.streams.open_count(),
            unrecognised_keys: state.store.unrecognised.total(),
            environments,
            analytics: state.analytics.facts(),
            summary,
            page,
            pages,
            fleet: state.fleet.as_ref().map(|f| f.facts()),
            flag_sources: state.flag_sets.facts(),
            flag_sets: state.flag_sets.selectors(),
            unleash: unleash.map_or_else(Vec::new, |u| {
                let allowed = u.stale_after(state.config.health.stale_grace);
                u.feeds().iter().map(|f| f.facts(allowed)).collect()
            }),
        }
    }
}

/// Replaces every key this proxy knows of that is found in `text` (configured, discovered, the
/// proxy key) with its fingerprint.
fn redact(state: &AppState, env: &crate::store::EnvSlot, mut text: String) -> String {
    let config = &state.config;
    let own = [Some(env.client_key.clone()), env.fetch_key()];
    let keys = config
        .environments
        .key_pairs
        .iter()
        .flat_map(|p| [p.server_side_key.as_str(), p.client_side_key.as_str()])
        .chain(config.environments.proxy_key.as_deref())
        .chain(own.iter().flatten().map(String::as_str));
    for key in keys {
        // Very short keys would match ordinary words; real keys are long.
        if key.len() >= 6 && text.contains(key) {
            text = text.replace(key, &crate::keys::fingerprint(key));
        }
    }
    text
}
