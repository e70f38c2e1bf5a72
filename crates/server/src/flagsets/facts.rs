//! What `/metrics` and the status page show of each flag source, read once per request from
//! the sources and the current views.

use std::sync::atomic::Ordering;

use super::FlagSets;

/// One flag source as the operators' endpoints show it.
#[derive(Debug, Clone)]
pub(crate) struct SourceFacts {
    /// Its `uri` (a path or a URL; fetch credentials are headers, never in it).
    pub uri: String,
    /// `file` or `url`.
    pub kind: &'static str,
    pub loaded: bool,
    /// Flags in its own view.
    pub flags: usize,
    /// When its content last changed (Unix milliseconds).
    pub updated_at_ms: Option<u64>,
    pub stale: bool,
    /// Files or answers refused since start.
    pub refused: u64,
    /// Why the last attempt failed, while it is the latest outcome.
    pub last_error: Option<String>,
}

impl FlagSets {
    /// Every source, in configuration order.
    pub(crate) fn facts(&self) -> Vec<SourceFacts> {
        self.sources
            .iter()
            .map(|s| SourceFacts {
                uri: s.config.uri.clone(),
                kind: if s.config.is_url() { "url" } else { "file" },
                loaded: s.loaded(),
                flags: self
                    .view(Some(&format!("source={}", s.name())))
                    .map_or(0, |v| v.set.len()),
                updated_at_ms: s.updated_at_ms(),
                stale: s.is_stale(),
                refused: s.refused.load(Ordering::Relaxed),
                last_error: s.last_error.lock().clone(),
            })
            .collect()
    }

    /// Flags in the merged view (every source), what clients without a selector see.
    pub(crate) fn flag_count(&self) -> usize {
        self.view(None).map_or(0, |v| v.set.len())
    }
}
