//! flagd flag sets: the flagd-format definitions Flagpole serves beside (or instead of)
//! Flagsmith environments, from files (`--flags`, watched) and http(s) URLs (polled with
//! `If-None-Match`: `poll.rs`; in a fleet, by one replica for all: `fleet.rs`), merged as flagd
//! merges its sources. Every OpenFeature door (OFREP, flagd
//! gRPC/Connect, EventStream, flagd's sync service) reads them through this one interface:
//!
//! - [`FlagSets::view`]`(selector)`: the current [`FlagView`] for a flagd selector (`None` or
//!   empty: every source merged; `source=<name>`, a bare name, or `flagSetId=<id>`), or `None`
//!   while nothing is loaded or when the selector names no source and no flag set. Every view
//!   is built when a source changes (`view.rs`), never per request.
//! - [`FlagSets::admit`]`(selector, bearer)`: flag sets are keyless, as in flagd, unless the
//!   configuration gives a source `tokens`; then a view reading that source wants one of them.
//! - [`FlagSets::subscribe`]: a counter bumped on every new set of views and on every staleness
//!   switch (change streams compare [`FlagView::revision`] and [`FlagView::stale`]).
//! - [`FlagSets::selectors`]: the selectors worth listing.
//!
//! A view carries its compiled `flagpole_flagd::FlagSet`, its content revision (equal on
//! every replica), flagd's sync `flag_configuration` bytes and per-flag fingerprints
//! ([`FlagView::changed_keys`]).

mod facts;
mod fleet;
mod poll;
mod selector;
pub(crate) mod sources;
mod view;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::store::Revision;
pub(crate) use facts::SourceFacts;
use flagpole_config::flags::FlagSource;
pub(crate) use selector::Selector;
pub(crate) use view::FlagView;
use view::{SourceContent, Views};

/// Why a caller may not read a flag set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The selector names no configured source and no flag set (or nothing is loaded yet).
    UnknownSelector,
    /// The set wants a bearer token and none was presented.
    MissingToken,
    /// The set wants a bearer token and this one is not among its tokens.
    WrongToken,
}

/// One configured source and what was last loaded from it.
#[derive(Debug)]
pub(crate) struct Source {
    pub config: FlagSource,
    /// What `source=` selectors match: the configured name, else the `uri`.
    names: Vec<String>,
    content: Mutex<Option<Arc<SourceContent>>>,
    pub(crate) stale: Arc<AtomicBool>,
    /// Loads refused (a file or answer that did not compile), since start.
    pub(crate) refused: AtomicU64,
    /// Why the last load was refused, while it is the latest outcome.
    pub(crate) last_error: Mutex<Option<String>>,
}

impl Source {
    pub(crate) fn name(&self) -> &str {
        &self.names[0]
    }

    pub(crate) fn loaded(&self) -> bool {
        self.content.lock().is_some()
    }

    pub(crate) fn is_stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    pub(crate) fn updated_at_ms(&self) -> Option<u64> {
        self.content.lock().as_ref().map(|c| c.updated_at_ms)
    }
}

/// Every flag source of the process and the views built from them (one per process, in the
/// front doors' state as `flag_sets`).
#[derive(Debug)]
pub(crate) struct FlagSets {
    pub(crate) sources: Vec<Arc<Source>>,
    views: ArcSwap<Views>,
    version: tokio::sync::watch::Sender<u64>,
    /// One rebuild at a time, so views are never published out of order.
    rebuild: Mutex<()>,
    /// Per selector some change stream follows: its current revision.
    announced: Mutex<HashMap<String, tokio::sync::watch::Sender<Option<Arc<Revision>>>>>,
    stop: CancellationToken,
}

impl FlagSets {
    pub(crate) fn new(config: &[FlagSource]) -> FlagSets {
        let sources = config
            .iter()
            .map(|c| {
                let mut names = Vec::new();
                if let Some(name) = c.name.as_ref().filter(|n| !n.is_empty()) {
                    names.push(name.clone());
                }
                names.push(c.uri.clone());
                Arc::new(Source {
                    config: c.clone(),
                    names,
                    content: Mutex::new(None),
                    stale: Arc::new(AtomicBool::new(false)),
                    refused: AtomicU64::new(0),
                    last_error: Mutex::new(None),
                })
            })
            .collect();
        FlagSets {
            sources,
            views: ArcSwap::from_pointee(Views::default()),
            version: tokio::sync::watch::channel(0).0,
            rebuild: Mutex::new(()),
            announced: Mutex::new(HashMap::new()),
            stop: CancellationToken::new(),
        }
    }

    /// Any flag source configured.
    pub(crate) fn is_configured(&self) -> bool {
        !self.sources.is_empty()
    }

    /// The current view for a selector; `None` when nothing is loaded yet or the selector
    /// names no source and no flag set.
    pub(crate) fn view(&self, selector: Option<&str>) -> Option<Arc<FlagView>> {
        let key = Selector::parse(selector).key();
        self.views.load().by_key.get(&key).cloned()
    }

    /// `Ok(())` when `bearer` may read the set `selector` picks.
    pub(crate) fn admit(
        &self,
        selector: Option<&str>,
        bearer: Option<&str>,
    ) -> Result<(), Refused> {
        self.admit_by(selector, bearer.is_some(), |token| {
            bearer.is_some_and(|b| constant_time_eq(token.as_bytes(), b.as_bytes()))
        })
        .map(drop)
    }

    /// The view `selector` picks when the credential presented (`presented`: one was) is
    /// accepted, for every guarded source it reads, by `accepts(one of its tokens)`. Change
    /// streams use it with the URL token derived from a set token.
    pub(crate) fn admit_by(
        &self,
        selector: Option<&str>,
        presented: bool,
        accepts: impl Fn(&str) -> bool,
    ) -> Result<Arc<FlagView>, Refused> {
        let view = self.view(selector).ok_or(Refused::UnknownSelector)?;
        for &index in &view.sources {
            let tokens = &self.sources[index].config.tokens;
            if tokens.is_empty() {
                continue;
            }
            if !presented {
                return Err(Refused::MissingToken);
            }
            if !tokens.iter().any(|t| accepts(t)) {
                return Err(Refused::WrongToken);
            }
        }
        Ok(view)
    }

    /// Whether the set `selector` picks wants a token (some source it reads has `tokens`); the
    /// first such token, for deriving a change stream's URL token.
    pub(crate) fn guard(&self, selector: Option<&str>) -> Option<&str> {
        let view = self.view(selector)?;
        view.sources
            .iter()
            .find_map(|&i| self.sources[i].config.tokens.first().map(String::as_str))
    }

    /// The content revisions of the set `selector` picks, as change streams follow them (the
    /// same cell shape as an environment's: a new revision or a staleness switch is a change).
    pub(crate) fn revisions(
        &self,
        selector: Option<&str>,
    ) -> tokio::sync::watch::Receiver<Option<Arc<Revision>>> {
        let key = Selector::parse(selector).key();
        let mut cells = self.announced.lock();
        cells
            .entry(key)
            .or_insert_with_key(|key| tokio::sync::watch::channel(self.revision_of(key)).0)
            .subscribe()
    }

    /// Cancelled at shutdown: change streams on flag sets end with it.
    pub(crate) fn stopping(&self) -> CancellationToken {
        self.stop.clone()
    }

    fn revision_of(&self, key: &str) -> Option<Arc<Revision>> {
        let view = self.views.load().by_key.get(key).cloned()?;
        Some(Arc::new(Revision {
            updated_at_ms: view.updated_at_ms,
            content_revision: view.revision.clone(),
            stale: view.stale(),
        }))
    }

    /// Tells every followed selector its current revision (only a change wakes its streams).
    fn announce(&self) {
        for (key, cell) in self.announced.lock().iter() {
            let now = self.revision_of(key);
            cell.send_if_modified(|current| {
                let changed = *current != now;
                *current = now;
                changed
            });
        }
        self.version.send_modify(|v| *v += 1);
    }

    /// Bumped on each new set of views and on each staleness switch.
    #[allow(dead_code, reason = "the flagd doors' change streams follow it")]
    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// The selectors worth listing: "" (all), `source=…` and `flagSetId=…`.
    pub(crate) fn selectors(&self) -> Vec<String> {
        self.views.load().selectors.clone()
    }

    /// Takes new text for source `index`: `Ok(true)` when it changed the views, `Ok(false)` when
    /// it is the content already served; a file that does not compile is refused (counted,
    /// logged by the caller) and the last good content kept.
    pub(crate) fn publish(
        &self,
        index: usize,
        text: &str,
    ) -> Result<bool, flagpole_flagd::DefinitionError> {
        let source = &self.sources[index];
        let file = match view::check(text) {
            Ok(file) => file,
            Err(e) => {
                source.refused.fetch_add(1, Ordering::Relaxed);
                *source.last_error.lock() = Some(format!("{}: {}", e.path, e.message));
                return Err(e);
            }
        };
        *source.last_error.lock() = None;
        {
            let mut content = source.content.lock();
            if content.as_ref().is_some_and(|c| c.file == file) {
                return Ok(false);
            }
            *content = Some(Arc::new(SourceContent {
                file,
                updated_at_ms: now_ms(),
            }));
        }
        self.rebuild();
        Ok(true)
    }

    /// Marks a polled source stale or fresh; a switch is announced without rebuilding.
    pub(crate) fn set_stale(&self, index: usize, stale: bool) {
        if self.sources[index].stale.swap(stale, Ordering::Relaxed) != stale {
            self.announce();
        }
    }

    fn rebuild(&self) {
        let _one = self.rebuild.lock();
        let contents: Vec<Option<Arc<SourceContent>>> = self
            .sources
            .iter()
            .map(|s| s.content.lock().clone())
            .collect();
        let inputs: Vec<view::Input<'_>> = self
            .sources
            .iter()
            .zip(&contents)
            .map(|(s, c)| view::Input {
                names: &s.names,
                content: c.as_deref(),
                stale: &s.stale,
            })
            .collect();
        self.views.store(Arc::new(view::build(&inputs)));
        self.announce();
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Token comparison that does not stop at the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What a source's task does with new text (files and URLs alike).
impl FlagSets {
    /// How many flags source `index` holds now.
    pub(super) fn source_flag_count(&self, index: usize) -> usize {
        let name = self.sources[index].name().to_owned();
        self.view(Some(&format!("source={name}")))
            .map_or(0, |v| v.set.len())
    }

    /// Publishes new text of source `index`, compiled and the views built on the blocking pool
    /// (every view is compiled again: CPU work no request should wait behind).
    pub(super) async fn publish_off_the_side(
        self: &Arc<FlagSets>,
        index: usize,
        text: String,
    ) -> Result<bool, flagpole_flagd::DefinitionError> {
        let sets = self.clone();
        crate::background::run(move || {
            let key = format!("source={}", sets.sources[index].name());
            let before = sets.view(Some(&key));
            let published = sets.publish(index, &text)?;
            if let (Some(before), Some(after)) = (before, sets.view(Some(&key))) {
                let changed = after.changed_keys(&before);
                if !changed.is_empty() {
                    tracing::info!(source = %sets.sources[index].config.uri, changed = ?changed, "flags changed");
                }
            }
            Ok(published)
        })
        .await
            .unwrap_or_else(|e| {
                Err(flagpole_flagd::DefinitionError {
                    path: "$".into(),
                    message: format!("building the flag sets failed: {e}"),
                })
            })
    }
}

#[cfg(test)]
mod tests;
