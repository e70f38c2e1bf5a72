//! Which flags changed between two revisions of what a caller reads, whatever the engine: the
//! change notices of the OpenFeature streams (flagd's `configuration_change`) name them, and the
//! providers drop their cached answers for those.
//!
//! An environment (Flagsmith): each flag's environment-level state is compared between
//! snapshots ([`Fingerprints`], computed once per snapshot however many streams follow it:
//! [`Memo`]); a flag that can vary by context is always named, since its segments or overrides
//! may have changed without that state changing; a client key is told only of the flags it may
//! see. A flag set (flagd): the keys whose definitions differ (`FlagView::changed_keys`).
//! When the source turns stale, or fresh again, every flag is named: each answer's reason
//! changes (`STALE`), and a provider must not keep serving the `STATIC` answer it cached.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::flagsets::{FlagSets, FlagView};
use crate::keys::KeyKind;
use crate::snapshot::Snapshot;

/// What happened to a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// New to the caller.
    Write,
    Update,
    Delete,
}

impl Change {
    /// flagd's name for it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Change::Write => "write",
            Change::Update => "update",
            Change::Delete => "delete",
        }
    }
}

/// Per flag of an environment: its environment-level state (hashed), whether it can vary,
/// whether client keys see it.
#[derive(Debug, Default)]
pub(crate) struct Fingerprints(HashMap<String, (u64, bool, bool)>);

impl Fingerprints {
    fn of(snapshot: &Snapshot) -> Fingerprints {
        let Ok(result) = snapshot.env.own_flags() else {
            return Fingerprints::default();
        };
        let prints = result.flags.iter().map(|f| {
            let mut text = crate::json::to_vec(f.enabled);
            text.push(b' ');
            text.extend_from_slice(&crate::json::to_vec(f.value));
            let hash = xxhash_rust::xxh3::xxh3_64(&text);
            let client_sees = snapshot.is_visible(KeyKind::Client, f.key, f.enabled);
            (
                f.key.to_owned(),
                (hash, snapshot.env.can_vary(f.key), client_sees),
            )
        });
        Fingerprints(prints.collect())
    }

    /// The flags a key of `kind` sees before (`self`) or `after` that changed (`every`: each
    /// one it sees, changed or not).
    pub(crate) fn changed(
        &self,
        after: &Fingerprints,
        kind: KeyKind,
        every: bool,
    ) -> Vec<(String, Change)> {
        let (before, after) = (&self.0, &after.0);
        let sees = |f: &&(u64, bool, bool)| kind == KeyKind::Server || f.2;
        let keys: HashSet<&String> = before.keys().chain(after.keys()).collect();
        let mut flags = Vec::new();
        for key in keys {
            let change = match (before.get(key).filter(sees), after.get(key).filter(sees)) {
                (None, Some(_)) => Change::Write,
                (Some(_), None) => Change::Delete,
                (Some(a), Some(b)) if every || a != b || a.1 || b.1 => Change::Update,
                _ => continue,
            };
            flags.push((key.clone(), change));
        }
        flags
    }
}

/// Each snapshot's fingerprints, computed once however many streams follow its environment.
#[derive(Default)]
pub(crate) struct Memo {
    /// By snapshot address; the weak pointer keeps the address from being reused meanwhile.
    known: Mutex<HashMap<usize, Known>>,
}

/// A snapshot (weakly) and its fingerprints.
type Known = (Weak<Snapshot>, Arc<Fingerprints>);

impl Memo {
    pub(crate) fn fingerprints(&self, snapshot: &Arc<Snapshot>) -> Arc<Fingerprints> {
        let key = Arc::as_ptr(snapshot) as usize;
        if let Some((_, known)) = self.known.lock().get(&key) {
            return known.clone();
        }
        let computed = Arc::new(Fingerprints::of(snapshot));
        let mut all = self.known.lock();
        all.retain(|_, (snapshot, _)| snapshot.strong_count() > 0);
        all.insert(key, (Arc::downgrade(snapshot), computed.clone()));
        computed
    }
}

/// A flag set followed by a stream, and what it last told of it.
pub(crate) struct FlagSetFollower {
    sets: Arc<FlagSets>,
    selector: Option<String>,
    changes: watch::Receiver<u64>,
    told: Option<(Arc<FlagView>, bool)>,
}

impl FlagSetFollower {
    /// Follows the set `selector` picks (`None`: every source merged).
    pub(crate) fn new(sets: &Arc<FlagSets>, selector: Option<String>) -> FlagSetFollower {
        FlagSetFollower {
            sets: sets.clone(),
            selector,
            changes: sets.subscribe(),
            told: None,
        }
    }

    /// Completes when the sets change (new views or a staleness switch); `false` once they
    /// are no longer served.
    pub(crate) async fn changed(&mut self) -> bool {
        self.changes.changed().await.is_ok()
    }

    /// The changes since the last call (the first: every flag is new).
    pub(crate) fn tell(&mut self) -> Vec<(String, Change)> {
        self.changes.borrow_and_update();
        let now = self.sets.view(self.selector.as_deref());
        let stale = now.as_ref().is_some_and(|v| v.stale());
        let told = self.told.take();
        self.told = now.clone().map(|v| (v, stale));
        between_views(
            told.as_ref().map(|(v, s)| (&**v, *s)),
            now.as_deref(),
            stale,
        )
    }
}

/// What changed from `told` (the view last told and whether it was stale) to `now`.
fn between_views(
    told: Option<(&FlagView, bool)>,
    now: Option<&FlagView>,
    stale: bool,
) -> Vec<(String, Change)> {
    let keys =
        |view: &FlagView| -> Vec<String> { view.set.flags().map(|f| f.key().to_owned()).collect() };
    match (told, now) {
        (None, None) => Vec::new(),
        (None, Some(now)) => keys(now).into_iter().map(|k| (k, Change::Write)).collect(),
        (Some((told, _)), None) => keys(told)
            .into_iter()
            .map(|k| (k, Change::Delete))
            .collect(),
        (Some((told, told_stale)), Some(now)) if told_stale != stale => {
            let mut named: Vec<(String, Change)> =
                keys(now).into_iter().map(|k| (k, Change::Update)).collect();
            let gone = keys(told).into_iter().filter(|k| now.set.get(k).is_none());
            named.extend(gone.map(|k| (k, Change::Delete)));
            named
        }
        (Some((told, _)), Some(now)) => now
            .changed_keys(told)
            .into_iter()
            .map(|key| {
                let change = match (told.set.get(key).is_some(), now.set.get(key).is_some()) {
                    (false, _) => Change::Write,
                    (true, false) => Change::Delete,
                    (true, true) => Change::Update,
                };
                (key.to_owned(), change)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
