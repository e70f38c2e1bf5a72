//! [`Target`]: what one OpenFeature call reads, once its front door has admitted it (a key's
//! environment, or the flag set a selector picks), and everything a front door asks of it:
//! the caller's context prepared for the engine, the answer's tag, one flag or every flag
//! resolved, the bulk answer's metadata, where its change stream is. Behind it each engine
//! answers in its own way (`flagsmith/`, `flagd.rs`, `unleash.rs`); in front of it nothing
//! names an engine.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::flagsmith::context::{self, Input};
use super::flagsmith::environment::Environment;
use super::resolution::{Refusal, Resolution, Unevaluated};
use super::unleash::{self, NotLoaded};
use super::{flagd, Encoded, Encoding};
use crate::flagsets::FlagView;
use crate::keys::KeyKind;
use crate::snapshot::Snapshot;
use crate::store::EnvSlot;
use flagpole_config::OfrepConfig;

/// What one call reads; its staleness is read once, so every part of an answer agrees on it.
pub(crate) struct Target {
    inner: Inner,
    stale: bool,
}

/// The engines side by side.
enum Inner {
    Environment(Environment),
    FlagSet(flagd::Set),
    Toggles(unleash::Toggles),
}

/// The caller's evaluation context as its engine reads it, borrowing from the request.
pub(crate) struct Caller<'c>(Reading<'c>);

enum Reading<'c> {
    /// The identity and traits a Flagsmith evaluation reads.
    Flagsmith(Input<'c>),
    Flagd(flagd::Reading<'c>),
    Unleash(unleash::Reading<'c>),
}

/// A target and a caller it prepared, matched.
enum Pair<'t, 'c> {
    Flagsmith(&'t Environment, &'t Input<'c>),
    Flagd(&'t flagd::Set, &'t flagd::Reading<'c>),
    Unleash(&'t unleash::Toggles, &'t unleash::Reading<'c>),
}

/// Where the change stream of what a call reads is.
pub(crate) enum StreamOf<'a> {
    /// The environment of this client key.
    Environment { client_key: &'a str },
    /// The flag set of this selector (`None`: every source merged).
    FlagSet { selector: Option<&'a str> },
    /// None: what the call reads has no change stream of these doors (Unleash toggles).
    Nowhere,
}

impl<'c> Caller<'c> {
    /// The caller's `targetingKey`, if it sent one.
    pub(crate) fn targeting_key(&self) -> Option<&'c str> {
        match &self.0 {
            Reading::Flagsmith(input) => input.identifier,
            Reading::Flagd(reading) => reading.targeting_key(),
            Reading::Unleash(reading) => reading.targeting_key(),
        }
    }
}

impl Target {
    /// An environment's current snapshot, read with a key of `kind`.
    pub(crate) fn environment(
        kind: KeyKind,
        env: Arc<EnvSlot>,
        snapshot: Arc<Snapshot>,
        parse_json_strings: bool,
    ) -> Target {
        Target {
            stale: env.is_stale(),
            inner: Inner::Environment(Environment {
                kind,
                env,
                snapshot,
                parse_json_strings,
            }),
        }
    }

    /// A flag set's view, picked by `selector`.
    pub(crate) fn flag_set(view: Arc<FlagView>, selector: Option<&str>) -> Target {
        Target {
            stale: view.stale(),
            inner: Inner::FlagSet(flagd::Set::new(view, selector)),
        }
    }

    /// The toggles an Unleash token opens, when a door's key is one of the Unleash tokens
    /// (client or frontend: the token's projects scope the toggles, its feed gives them);
    /// `None` when it is not. `grace`: `health.stale_grace`, past a polled feed's interval.
    pub(crate) fn unleash_token(
        tokens: &crate::unleash::Unleash,
        presented: &str,
        grace: Option<std::time::Duration>,
    ) -> Option<Result<Target, NotLoaded>> {
        Some(
            unleash::admit(tokens, presented, grace)?.map(|(toggles, stale)| Target {
                stale,
                inner: Inner::Toggles(toggles),
            }),
        )
    }

    pub(crate) fn stale(&self) -> bool {
        self.stale
    }

    /// The same target read as stale (or fresh), for tests of what staleness changes.
    #[cfg(test)]
    pub(crate) fn read_as_stale(mut self, stale: bool) -> Target {
        self.stale = stale;
        self
    }

    /// The caller's context (absent or `null`: an empty one) prepared for the engine.
    pub(crate) fn caller<'c>(
        &self,
        context: Option<&'c Value>,
        max_trait_value_chars: usize,
    ) -> Result<Caller<'c>, Refusal> {
        let reading = match &self.inner {
            Inner::Environment(_) => {
                Reading::Flagsmith(context::of_context(context, max_trait_value_chars)?)
            }
            Inner::FlagSet(_) => Reading::Flagd(flagd::Reading::of(context)?),
            Inner::Toggles(_) => Reading::Unleash(unleash::Reading::of(context)?),
        };
        Ok(Caller(reading))
    }

    fn pair<'t, 'c>(&'t self, caller: &'t Caller<'c>) -> Pair<'t, 'c> {
        match (&self.inner, &caller.0) {
            (Inner::Environment(e), Reading::Flagsmith(input)) => Pair::Flagsmith(e, input),
            (Inner::FlagSet(s), Reading::Flagd(reading)) => Pair::Flagd(s, reading),
            (Inner::Toggles(t), Reading::Unleash(reading)) => Pair::Unleash(t, reading),
            _ => unreachable!("a caller is prepared by its own target"),
        }
    }

    /// Counts a call in the environment's usage (with an identity as `/identities`, else as
    /// `/flags`); flag sets keep no usage.
    pub(crate) fn count(&self, identified: bool) {
        if let Inner::Environment(e) = &self.inner {
            e.count(identified);
        }
    }

    /// Counts a refused call (a 4xx once the environment is known).
    pub(crate) fn reject(&self) {
        if let Inner::Environment(e) = &self.inner {
            e.reject();
        }
    }

    /// The answer's tag for `flag` (or all) and this caller, before anything is evaluated;
    /// `settings`: the front door's settings that shape the body.
    pub(crate) fn tag(&self, flag: Option<&str>, caller: &Caller<'_>, settings: &str) -> String {
        match self.pair(caller) {
            Pair::Flagsmith(e, input) => e.tag(flag, input, self.stale, settings),
            Pair::Flagd(s, reading) => s.tag(flag, reading, self.stale, settings),
            Pair::Unleash(t, reading) => t.tag(flag, reading, self.stale, settings),
        }
    }

    /// The key under which a tag answered for this request body is remembered (environments
    /// keep recent ones per snapshot, so a revalidation is answered without parsing).
    pub(crate) fn memo_key(&self, flag: Option<&str>, body: &[u8]) -> Option<u128> {
        match &self.inner {
            Inner::Environment(e) => Some(e.memo_key(flag, self.stale, body)),
            Inner::FlagSet(_) | Inner::Toggles(_) => None,
        }
    }

    /// A remembered tag and whether its caller had an identity.
    pub(crate) fn recall(&self, key: Option<u128>) -> Option<(String, bool)> {
        match (&self.inner, key) {
            (Inner::Environment(e), Some(key)) => e.recall(key),
            _ => None,
        }
    }

    pub(crate) fn remember(&self, key: Option<u128>, tag: &str, identified: bool) {
        if let (Inner::Environment(e), Some(key)) = (&self.inner, key) {
            e.remember(key, tag, identified);
        }
    }

    /// Waits (bounded) for a revision an OFREP client says it has seen elsewhere
    /// (`flagFreshness` hints in `query`), and reads that one.
    pub(crate) async fn freshen(&mut self, query: Option<&str>, config: &OfrepConfig) {
        if let Inner::Environment(e) = &mut self.inner {
            e.freshen(query, config).await;
        }
    }

    /// One flag resolved for the caller, handed to `f`. A flag the caller cannot see is
    /// `FLAG_NOT_FOUND` (as an answer, with the metadata its engine gives one).
    pub(crate) fn one<R>(
        &self,
        key: &str,
        caller: &Caller<'_>,
        f: impl FnOnce(Resolution<'_>) -> R,
    ) -> Result<R, Unevaluated> {
        match self.pair(caller) {
            Pair::Flagsmith(e, input) => e.one(key, input, f),
            Pair::Flagd(s, reading) => s.one(key, reading, f),
            Pair::Unleash(t, reading) => t.one(key, reading, f),
        }
    }

    /// Every flag the caller can see, resolved, in key order.
    pub(crate) fn each(
        &self,
        caller: &Caller<'_>,
        f: impl FnMut(Resolution<'_>),
    ) -> Result<(), Unevaluated> {
        match self.pair(caller) {
            Pair::Flagsmith(e, input) => e.each(input, f),
            Pair::Flagd(s, reading) => s.each(reading, f),
            Pair::Unleash(t, reading) => t.each(reading, f),
        }
    }

    /// Every flag a bulk answer lists, encoded by `E` in key order (staleness applied), handed
    /// to `f` at once: a flag whose type no bulk answer carries is left out, a failed one is
    /// listed with its type's empty value, as flagd's `ResolveAll` does.
    pub(crate) fn encoded<E: Encoding, R>(
        &self,
        caller: &Caller<'_>,
        f: impl FnOnce(&[Encoded<'_>]) -> R,
    ) -> Result<R, Unevaluated> {
        match self.pair(caller) {
            Pair::Flagsmith(e, input) => e.encoded::<E, R>(input, self.stale, f),
            Pair::Flagd(s, reading) => s.encoded::<E, R>(reading, self.stale, f),
            Pair::Unleash(t, reading) => t.encoded::<E, R>(reading, self.stale, f),
        }
    }

    /// The bulk answer's own metadata: an environment's revision (`version`) and when it was
    /// published (`lastModified`, Unix seconds); a flag set's selector, as flagd answers it;
    /// Unleash toggles' revision (`version`).
    pub(crate) fn metadata(&self) -> Cow<'_, Map<String, Value>> {
        match &self.inner {
            Inner::Environment(e) => e.metadata(),
            Inner::FlagSet(s) => Cow::Borrowed(&s.selected),
            Inner::Toggles(t) => t.metadata(),
        }
    }

    /// How many flags there are, for a buffer's first size.
    pub(crate) fn len(&self) -> usize {
        match &self.inner {
            Inner::Environment(e) => e.snapshot.feature_count(),
            Inner::FlagSet(s) => s.view.set.len(),
            Inner::Toggles(t) => t.len(),
        }
    }

    /// The change stream's event id of what this call read: a client connecting with it as
    /// `Last-Event-ID` misses nothing since.
    pub(crate) fn event_id(&self) -> String {
        let (updated_at_ms, revision) = match &self.inner {
            Inner::Environment(e) => (e.snapshot.updated_at_ms, &e.snapshot.content_revision),
            Inner::FlagSet(s) => (s.view.updated_at_ms, &s.view.revision),
            // No change stream follows them; the id still names what was read.
            Inner::Toggles(t) => (0, &t.view.revision),
        };
        crate::streams::event_id(updated_at_ms, revision, self.stale)
    }

    /// Where the change stream of what this call reads is.
    pub(crate) fn stream(&self) -> StreamOf<'_> {
        match &self.inner {
            Inner::Environment(e) => StreamOf::Environment {
                client_key: &e.env.client_key,
            },
            Inner::FlagSet(s) => StreamOf::FlagSet {
                selector: s.selector.as_deref(),
            },
            Inner::Toggles(_) => StreamOf::Nowhere,
        }
    }
}
