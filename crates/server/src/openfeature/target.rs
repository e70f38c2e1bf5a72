//! [`Target`]: what one OpenFeature call reads, once its front door has admitted it (a key's
//! environment, or the flag set a selector picks), and everything a front door asks of it:
//! the caller's context prepared for the engine, the answer's tag, one flag or every flag
//! resolved, the bulk answer's metadata, where its change stream is. Behind it each engine
//! answers in its own way (`flagsmith/`, `flagd.rs`); in front of it nothing names an engine.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use flagpole_engine::{FlagResult, Identity};
use serde_json::{Map, Value};

use super::flagsmith::{self, bulk, context::Input};
use super::resolution::{Declared, Fractions, Metadata, Resolution, Typing};
use super::{encode, flagd, tag, Encoded, Encoding};
use crate::config::OfrepConfig;
use crate::flagsets::{FlagView, Selector};
use crate::keys::KeyKind;
use crate::snapshot::Snapshot;
use crate::store::EnvSlot;
use crate::usage::Resource;

/// What one call reads; its staleness is read once, so every part of an answer agrees on it.
pub(crate) struct Target {
    inner: Inner,
    stale: bool,
}

enum Inner {
    Environment {
        kind: KeyKind,
        env: Arc<EnvSlot>,
        snapshot: Arc<Snapshot>,
        parse_json_strings: bool,
    },
    FlagSet {
        view: Arc<FlagView>,
        selector: Option<String>,
        /// The selector as flagd answers it in metadata.
        selected: Map<String, Value>,
    },
}

/// The caller's evaluation context as its engine reads it, borrowing from the request.
pub(crate) struct Caller<'c>(Reading<'c>);

enum Reading<'c> {
    /// The identity and traits a Flagsmith evaluation reads.
    Flagsmith(Input<'c>),
    /// The whole context (flagd rules may read any member) and the time, `$flagd.timestamp`.
    Flagd {
        attributes: Cow<'c, Map<String, Value>>,
        now: u64,
    },
}

/// Why a context was refused: `(errorCode, errorDetails)`.
pub(crate) type Refusal = (&'static str, String);

/// An evaluation that could not be made at all (an engine error, logged where it happened).
#[derive(Debug)]
pub(crate) struct Unevaluated;

/// Where the change stream of what a call reads is.
pub(crate) enum StreamOf<'a> {
    /// The environment of this client key.
    Environment { client_key: &'a str },
    /// The flag set of this selector (`None`: every source merged).
    FlagSet { selector: Option<&'a str> },
}

impl<'c> Caller<'c> {
    /// The caller's `targetingKey`, if it sent one.
    pub(crate) fn targeting_key(&self) -> Option<&'c str> {
        match &self.0 {
            Reading::Flagsmith(input) => input.identifier,
            Reading::Flagd { attributes, .. } => match attributes {
                Cow::Borrowed(map) => map.get("targetingKey").and_then(Value::as_str),
                Cow::Owned(_) => None,
            },
        }
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn failed(e: impl std::fmt::Display) -> Unevaluated {
    tracing::error!(error = %e, "an OpenFeature evaluation failed");
    Unevaluated
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
            inner: Inner::Environment {
                kind,
                env,
                snapshot,
                parse_json_strings,
            },
        }
    }

    /// A flag set's view, picked by `selector`.
    pub(crate) fn flag_set(view: Arc<FlagView>, selector: Option<&str>) -> Target {
        Target {
            stale: view.stale(),
            inner: Inner::FlagSet {
                view,
                selector: selector.map(str::to_owned),
                selected: Selector::parse(selector).metadata(),
            },
        }
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
        match &self.inner {
            Inner::Environment { .. } => {
                flagsmith::context::of_context(context, max_trait_value_chars)
                    .map(|input| Caller(Reading::Flagsmith(input)))
            }
            Inner::FlagSet { .. } => {
                let attributes = match context {
                    None | Some(Value::Null) => Cow::Owned(Map::new()),
                    Some(Value::Object(map)) => Cow::Borrowed(map),
                    Some(_) => {
                        return Err((
                            "INVALID_CONTEXT",
                            "the context must be a JSON object".to_owned(),
                        ))
                    }
                };
                Ok(Caller(Reading::Flagd {
                    attributes,
                    now: now(),
                }))
            }
        }
    }

    /// Counts a call in the environment's usage (with an identity as `/identities`, else as
    /// `/flags`); flag sets keep no usage.
    pub(crate) fn count(&self, identified: bool) {
        if let Inner::Environment { env, .. } = &self.inner {
            env.usage.count(if identified {
                Resource::Identities
            } else {
                Resource::Flags
            });
        }
    }

    /// Counts a refused call (a 4xx once the environment is known).
    pub(crate) fn reject(&self) {
        if let Inner::Environment { env, .. } = &self.inner {
            env.usage.reject();
        }
    }

    /// The answer's tag for `flag` (or all) and this caller, before anything is evaluated;
    /// `settings`: the front door's settings that shape the body.
    pub(crate) fn tag(&self, flag: Option<&str>, caller: &Caller<'_>, settings: &str) -> String {
        match (&self.inner, &caller.0) {
            (Inner::Environment { kind, snapshot, .. }, Reading::Flagsmith(input)) => {
                tag::environment(
                    &snapshot.content_revision,
                    *kind,
                    flag,
                    self.stale,
                    &input.normalised(),
                    settings,
                )
            }
            (Inner::FlagSet { view, selector, .. }, Reading::Flagd { attributes, .. }) => {
                tag::flag_set(
                    &view.revision,
                    &Selector::parse(selector.as_deref()).key(),
                    flag,
                    self.stale,
                    attributes,
                    settings,
                )
            }
            _ => unreachable!("a caller is prepared by its own target"),
        }
    }

    /// The key under which a tag answered for this request body is remembered (environments
    /// keep recent ones per snapshot, so a revalidation is answered without parsing).
    pub(crate) fn memo_key(&self, flag: Option<&str>, body: &[u8]) -> Option<u128> {
        match &self.inner {
            Inner::Environment { kind, .. } => Some(crate::snapshot::etag_memo::EtagMemo::key(
                *kind, flag, self.stale, body,
            )),
            Inner::FlagSet { .. } => None,
        }
    }

    /// A remembered tag and whether its caller had an identity.
    pub(crate) fn recall(&self, key: Option<u128>) -> Option<(String, bool)> {
        match (&self.inner, key) {
            (Inner::Environment { snapshot, .. }, Some(key)) => snapshot.ofrep_etags.get(key),
            _ => None,
        }
    }

    pub(crate) fn remember(&self, key: Option<u128>, tag: &str, identified: bool) {
        if let (Inner::Environment { snapshot, .. }, Some(key)) = (&self.inner, key) {
            snapshot.ofrep_etags.put(key, tag, identified);
        }
    }

    /// Waits (bounded) for a revision an OFREP client says it has seen elsewhere
    /// (`flagFreshness` hints in `query`), and reads that one.
    pub(crate) async fn freshen(&mut self, query: Option<&str>, config: &OfrepConfig) {
        if let Inner::Environment { env, snapshot, .. } = &mut self.inner {
            if let Some(fresher) = flagsmith::freshness::freshen(env, snapshot, query, config).await
            {
                *snapshot = fresher;
            }
        }
    }

    /// One flag resolved for the caller, handed to `f`. A flag the caller cannot see is
    /// `FLAG_NOT_FOUND` (as an answer, with the metadata flagd gives one).
    pub(crate) fn one<R>(
        &self,
        key: &str,
        caller: &Caller<'_>,
        f: impl FnOnce(Resolution<'_>) -> R,
    ) -> Result<R, Unevaluated> {
        match (&self.inner, &caller.0) {
            (
                Inner::Environment {
                    kind,
                    snapshot,
                    parse_json_strings,
                    ..
                },
                Reading::Flagsmith(input),
            ) => {
                let traits = input.engine_traits();
                let identity = input.identifier.map(|id| Identity::new(id, &traits));
                let single;
                let all;
                let flag: Option<&FlagResult<'_>> = match &identity {
                    // The feature alone, as the Flagsmith SDKs evaluate one flag read.
                    Some(identity) => {
                        single = snapshot
                            .env
                            .evaluate_feature(key, Some(identity))
                            .map_err(failed)?;
                        single.as_ref()
                    }
                    None => {
                        all = snapshot.env.own_flags().map_err(failed)?;
                        all.flags.iter().find(|f| f.key == key)
                    }
                };
                let flag = flag.filter(|f| snapshot.is_visible(*kind, f.key, f.enabled));
                Ok(match flag {
                    Some(flag) => {
                        let can_vary = snapshot.env.can_vary(flag.key);
                        f(flagsmith::resolve(
                            flag,
                            *kind,
                            *parse_json_strings,
                            can_vary,
                        ))
                    }
                    None => f(not_found(
                        key,
                        format!("no flag named '{key}' in this environment"),
                        Metadata::absent(),
                    )),
                })
            }
            (Inner::FlagSet { view, selected, .. }, Reading::Flagd { attributes, now }) => {
                let context = flagpole_flagd::Context::new(attributes, *now);
                let evaluation = view.set.evaluate(key, &context);
                let mut r = flagd::resolve(key, &evaluation, flagd::declared(view.set.get(key)));
                if matches!(r.error, Some(("FLAG_NOT_FOUND", _))) {
                    r.metadata = Metadata::map(selected);
                }
                Ok(f(r))
            }
            _ => unreachable!("a caller is prepared by its own target"),
        }
    }

    /// Every flag the caller can see, resolved, in key order.
    pub(crate) fn each(
        &self,
        caller: &Caller<'_>,
        mut f: impl FnMut(Resolution<'_>),
    ) -> Result<(), Unevaluated> {
        match (&self.inner, &caller.0) {
            (
                Inner::Environment {
                    kind,
                    snapshot,
                    parse_json_strings,
                    ..
                },
                Reading::Flagsmith(input),
            ) => {
                with_flags(snapshot, input, |flags| {
                    let mut flags: Vec<_> = flags
                        .iter()
                        .filter(|f| snapshot.is_visible(*kind, f.key, f.enabled))
                        .collect();
                    // Sorted by key so that equal inputs give byte-equal bodies.
                    flags.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
                    flags.dedup_by(|a, b| a.key == b.key);
                    for flag in flags {
                        let can_vary = snapshot.env.can_vary(flag.key);
                        f(flagsmith::resolve(
                            flag,
                            *kind,
                            *parse_json_strings,
                            can_vary,
                        ));
                    }
                })
            }
            (Inner::FlagSet { view, .. }, Reading::Flagd { attributes, now }) => {
                let context = flagpole_flagd::Context::new(attributes, *now);
                view.set.evaluate_each(&context, |flag, evaluation| {
                    f(flagd::resolve(
                        flag.key(),
                        &evaluation,
                        flagd::declared(Some(flag)),
                    ));
                });
                Ok(())
            }
            _ => unreachable!("a caller is prepared by its own target"),
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
        match (&self.inner, &caller.0) {
            (
                Inner::Environment {
                    kind,
                    snapshot,
                    parse_json_strings,
                    ..
                },
                Reading::Flagsmith(input),
            ) => {
                let options = bulk::Options {
                    kind: *kind,
                    parse_json_strings: *parse_json_strings,
                    stale: self.stale,
                };
                with_flags(snapshot, input, |flags| {
                    f(&bulk::pieces::<E>(snapshot, flags, options))
                })
            }
            (Inner::FlagSet { view, .. }, Reading::Flagd { attributes, now }) => {
                let context = flagpole_flagd::Context::new(attributes, *now);
                let mut evaluations = Vec::with_capacity(view.set.len());
                view.set.evaluate_each(&context, |flag, evaluation| {
                    let declared = flagd::declared(Some(flag));
                    if declared != Declared::Unlisted {
                        evaluations.push((flag.key(), evaluation, declared));
                    }
                });
                let pieces: Vec<Encoded<'_>> = evaluations
                    .iter()
                    .map(|(key, evaluation, declared)| {
                        encode::<E>(flagd::resolve(key, evaluation, *declared), self.stale)
                    })
                    .collect();
                Ok(f(&pieces))
            }
            _ => unreachable!("a caller is prepared by its own target"),
        }
    }

    /// The bulk answer's own metadata: an environment's revision (`version`) and when it was
    /// published (`lastModified`, Unix seconds); a flag set's selector, as flagd answers it.
    pub(crate) fn metadata(&self) -> Cow<'_, Map<String, Value>> {
        match &self.inner {
            Inner::Environment { snapshot, .. } => {
                let mut map = Map::new();
                map.insert(
                    "version".into(),
                    Value::String(snapshot.content_revision.clone()),
                );
                if snapshot.updated_at_ms > 0 {
                    map.insert(
                        "lastModified".into(),
                        (snapshot.updated_at_ms / 1000).into(),
                    );
                }
                Cow::Owned(map)
            }
            Inner::FlagSet { selected, .. } => Cow::Borrowed(selected),
        }
    }

    /// How many flags there are, for a buffer's first size.
    pub(crate) fn len(&self) -> usize {
        match &self.inner {
            Inner::Environment { snapshot, .. } => snapshot.feature_count(),
            Inner::FlagSet { view, .. } => view.set.len(),
        }
    }

    /// The change stream's event id of what this call read: a client connecting with it as
    /// `Last-Event-ID` misses nothing since.
    pub(crate) fn event_id(&self) -> String {
        match &self.inner {
            Inner::Environment { snapshot, .. } => crate::streams::event_id(
                snapshot.updated_at_ms,
                &snapshot.content_revision,
                self.stale,
            ),
            Inner::FlagSet { view, .. } => {
                crate::streams::event_id(view.updated_at_ms, &view.revision, self.stale)
            }
        }
    }

    /// Where the change stream of what this call reads is.
    pub(crate) fn stream(&self) -> StreamOf<'_> {
        match &self.inner {
            Inner::Environment { env, .. } => StreamOf::Environment {
                client_key: &env.client_key,
            },
            Inner::FlagSet { selector, .. } => StreamOf::FlagSet {
                selector: selector.as_deref(),
            },
        }
    }
}

/// Every flag of an environment evaluated for the caller (no identity: the environment's own
/// flags), handed to `f`.
fn with_flags<R>(
    snapshot: &Snapshot,
    input: &Input<'_>,
    f: impl FnOnce(&[FlagResult<'_>]) -> R,
) -> Result<R, Unevaluated> {
    let traits = input.engine_traits();
    let identity = input.identifier.map(|id| Identity::new(id, &traits));
    let result = match &identity {
        Some(identity) => snapshot.env.evaluate(Some(identity)),
        None => snapshot.env.own_flags(),
    }
    .map_err(failed)?;
    Ok(f(&result.flags))
}

/// `FLAG_NOT_FOUND` as an answer.
fn not_found<'a>(key: &'a str, message: String, metadata: Metadata<'a>) -> Resolution<'a> {
    Resolution {
        key,
        value: None,
        reason: "ERROR",
        variant: None,
        error: Some(("FLAG_NOT_FOUND", Cow::Owned(message))),
        metadata,
        typing: Typing {
            lenient: false,
            fractions: Fractions::Refused,
            declared: Declared::Unlisted,
        },
        enabled: false,
    }
}
