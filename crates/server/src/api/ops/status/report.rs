//! What the status page shows, read once from the store and the process: the one value both
//! renderings (HTML and JSON) are made from.

use std::time::SystemTime;

use crate::api::AppState;
use crate::telemetry::{self, environments::EnvFacts};

/// Everything the page shows, read once.
pub struct Report {
    pub version: &'static str,
    pub now: SystemTime,
    pub started_at: SystemTime,
    pub uptime_seconds: f64,
    pub open_streams: usize,
    /// Requests refused because their key (or its absence) reached no environment.
    pub unrecognised_keys: u64,
    pub environments: Vec<EnvFacts>,
    /// Flag analytics of the environments that have reported any.
    pub analytics: Vec<crate::analytics::counts::Facts>,
}

impl Report {
    pub fn read(state: &AppState) -> Report {
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
        Report {
            version: env!("CARGO_PKG_VERSION"),
            now,
            started_at,
            uptime_seconds: uptime.as_secs_f64(),
            open_streams: state.streams.open_count(),
            unrecognised_keys: state.store.unrecognised.total(),
            environments,
            analytics: state.analytics.facts(),
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
