//! flagd flag sources on `/metrics`, read from the flag sets at scrape time: how many sources,
//! loaded and stale; the flags served; when each source last changed; loads refused.

use std::fmt::Write;

use crate::flagsets::FlagSets;

/// Appends the flag-source families (nothing when no flag source is configured).
pub(crate) fn render(text: &mut String, sets: &FlagSets) {
    if !sets.is_configured() {
        return;
    }
    let facts = sets.facts();
    let loaded = facts.iter().filter(|f| f.loaded).count();
    let stale = facts.iter().filter(|f| f.stale).count();
    let mut gauge = |name: &str, help: &str, value: usize| {
        let _ = writeln!(
            text,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
        );
    };
    gauge(
        "flagpole_flag_sources",
        "flagd flag sources configured.",
        facts.len(),
    );
    gauge(
        "flagpole_flag_sources_loaded",
        "flagd flag sources loaded at least once.",
        loaded,
    );
    gauge(
        "flagpole_flag_sources_stale",
        "flagd URL sources older than their poll interval plus the grace period.",
        stale,
    );
    gauge(
        "flagpole_flags",
        "Flags served with no selector (every flag source merged).",
        sets.flag_count(),
    );
    let _ = writeln!(
        text,
        "# HELP flagpole_flag_sources_last_update_seconds When each flag source last changed (Unix seconds).\n\
         # TYPE flagpole_flag_sources_last_update_seconds gauge"
    );
    for f in facts.iter().filter(|f| f.updated_at_ms.is_some()) {
        let at = f.updated_at_ms.unwrap_or(0) as f64 / 1000.0;
        let _ = writeln!(
            text,
            "flagpole_flag_sources_last_update_seconds{{source=\"{}\"}} {at}",
            escape(&f.uri)
        );
    }
    let _ = writeln!(
        text,
        "# HELP flagpole_flag_sources_refused_loads_total Flag files or answers refused (the last good set kept).\n\
         # TYPE flagpole_flag_sources_refused_loads_total counter"
    );
    for f in &facts {
        let _ = writeln!(
            text,
            "flagpole_flag_sources_refused_loads_total{{source=\"{}\"}} {}",
            escape(&f.uri),
            f.refused
        );
    }
}

/// A Prometheus label value.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
