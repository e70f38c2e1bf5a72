//! Health: liveness (the process serves HTTP) and two readinesses, judged when asked (while
//! documents load, both say how many have):
//!
//! - strict, the Flagsmith Edge Proxy's (`/proxy/health/readiness`, `/proxy/health`, `/health`):
//!   every environment has a document and none is stale. Kept as the Edge Proxy answers it, for
//!   the probes and monitors written for it.
//! - serving (`/proxy/health/serving`): every environment has a document, stale or not. What a
//!   load balancer's readiness probe wants: a replica holding its last good documents can answer,
//!   and during an upstream outage those (and OpenFeature's `STALE`) are what clients need; the
//!   strict rule would take every replica out of the Service at once. Staleness stays visible
//!   in the body, the metrics and the status page.
//!
//! flagd flag sources count as environments do: each loaded at least once (both), none stale
//! (strict). A proxy serving flag sets alone is ready with no environment.

use std::time::SystemTime;

use http::{header, HeaderValue, StatusCode};
use serde_json::json;

use crate::api::{full, AppState, Response};
use crate::store::StaleRule;

pub(crate) fn liveness() -> Response {
    json_response(StatusCode::OK, &json!({"status": "ok"}))
}

/// Which readiness is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Stale documents make it 503 (the Edge Proxy's rule).
    Strict,
    /// Stale documents still serve.
    Serving,
}

pub(crate) fn readiness(
    state: &AppState,
    kind: Readiness,
    unleash: Option<&crate::unleash::Unleash>,
) -> Response {
    let envs = state.store.environments();
    let envs_empty = envs.is_empty();
    let total = envs.len();
    let mut loaded = 0usize;
    let now = SystemTime::now();
    let mut reason = None;
    let mut oldest: Option<SystemTime> = None;
    let mut stale = 0usize;
    // The one staleness rule: the OpenFeature front doors' `STALE` follows it too.
    let allowed = StaleRule::of(&state.config).allowed(envs.len());
    for env in envs {
        match (env.snapshot(), env.last_success()) {
            (Some(_), Some(at)) => {
                loaded += 1;
                oldest = Some(oldest.map_or(at, |o| o.min(at)));
                if StaleRule::is_stale(&env, now, allowed) {
                    stale += 1;
                    if kind == Readiness::Strict {
                        reason.get_or_insert("environment document(s) stale.");
                    }
                }
            }
            _ => reason = Some("environment document(s) not updated."),
        }
    }
    let flags = &state.flag_sets;
    let other_sources = flags.is_configured() || unleash.is_some();
    if envs_empty && !(other_sources && state.config.environments.proxy_key.is_none()) {
        // With `proxy_key`, until discovery has listed an environment.
        reason = Some("no environments.");
    }
    let flag_sources = flags.sources.len();
    let flags_loaded = flags.sources.iter().filter(|s| s.loaded()).count();
    let flags_stale = flags.sources.iter().filter(|s| s.is_stale()).count();
    if flags_loaded < flag_sources {
        reason = Some("flag source(s) not loaded.");
    } else if flags_stale > 0 && kind == Readiness::Strict {
        reason.get_or_insert("flag source(s) stale.");
    }
    let mut unleash_line = None;
    if let Some(unleash) = unleash {
        let allowed = unleash.stale_after(state.config.health.stale_grace);
        let feeds = unleash.feeds();
        let loaded = feeds.iter().filter(|f| f.view().is_some()).count();
        let stale = feeds.iter().filter(|f| f.is_stale(allowed)).count();
        if loaded < feeds.len() {
            reason = Some("Unleash feed(s) not fetched.");
        } else if stale > 0 && kind == Readiness::Strict {
            reason.get_or_insert("Unleash feed(s) stale.");
        }
        unleash_line = Some(format!(
            "{loaded}/{} Unleash feeds loaded, {stale} stale",
            feeds.len()
        ));
    }
    if state.store.is_shutting_down() {
        reason = Some("shutting down.");
    }
    let last = oldest.map(|t| {
        chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    });
    let status = if reason.is_some() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let mut body = json!({"status": if reason.is_some() { "error" } else { "ok" }, "reason": reason, "last_successful_update": last,
        "progress": format!("{loaded}/{total} environments loaded"),
        "stale": format!("{stale}/{total} environments stale")});
    if flags.is_configured() {
        body["flag_sources"] = json!(format!(
            "{flags_loaded}/{flag_sources} flag sources loaded, {flags_stale} stale"
        ));
    }
    if let Some(line) = unleash_line {
        body["unleash_feeds"] = json!(line);
    }
    json_response(status, &body)
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = full(status, crate::json::to_vec(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
