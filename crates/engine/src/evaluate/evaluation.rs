//! `Evaluation`: the state one evaluation carries (the environment, the scope, the identity and its
//! enriched key, the `$.flags` dependency state) and how it is set up.
//!
//! It lives apart from the module root because every file of the evaluator adds methods to it
//! (`mod.rs` the steps and the matching, `dependencies.rs` the `$.flags` mapping, `query.rs` the
//! JSONPath properties): each imports it from here, so none depends on the module root.

use std::borrow::Cow;

use crate::condition::Condition;
use crate::error::EvalError;
use crate::identity::Identity;
use crate::model::Environment;
use crate::result::FlagResult;
use crate::semver::{self, SemVer};
use crate::value::{Scalar, TraitValue};

use super::scope::Scope;
use super::slots::{read_traits, SlotIndex, TraitRead};

/// The identity key after enrichment: the caller's key when truthy, else `<env key>_<identifier>`.
pub(super) enum IdentityKey<'a> {
    Given(&'a TraitValue<'a>),
    /// Derived; the text is in `key_text`.
    Derived,
}

pub(crate) struct Evaluation<'a> {
    pub(crate) env: &'a Environment,
    pub(super) scope: Scope<'a>,
    pub(super) identity: Option<&'a Identity<'a>>,
    pub(super) key: Option<IdentityKey<'a>>,
    /// `str(identity key)`, the multivariate and percentage-split hashing id.
    pub(super) key_text: Option<Cow<'a, str>>,
    pub(super) deps: Option<Dependencies<'a>>,
    /// The identity's traits as conditions read them, each coerced (and parsed as a version)
    /// at its first read: a trait is read by many conditions of many segments.
    pub(super) traits: Vec<TraitRead<'a>>,
    /// Per environment trait slot, the index in `traits` of the trait of that name.
    pub(super) by_slot: SlotIndex,
    /// While a segment is tested: its map from rule-set slots to environment slots.
    pub(super) segment_slots: &'a [u16],
    /// Safe rules may run cheapest first (see `crate::order`): a whole evaluation of a tame
    /// request.
    pub(super) tame: bool,
}

/// State of the `$.flags` mapping (the reference's `_LazyFlags` and `_DependencyResolver`).
#[derive(Default)]
pub(super) struct Dependencies<'a> {
    pub(super) used: bool,
    pub(super) resolved: Vec<(&'a str, FlagResult<'a>)>,
    pub(super) cyclic: Vec<&'a str>,
    pub(super) cycle_hits: u64,
    pub(super) resolving: Vec<&'a str>,
    pub(super) segment_matches: Vec<Option<bool>>,
}

impl<'a> Evaluation<'a> {
    pub(crate) fn new(
        env: &'a Environment,
        identity: Option<&'a Identity<'a>>,
    ) -> Result<Self, EvalError> {
        Self::with_scope(env, identity, Scope::All)
    }

    pub(crate) fn with_scope(
        env: &'a Environment,
        identity: Option<&'a Identity<'a>>,
        scope: Scope<'a>,
    ) -> Result<Self, EvalError> {
        let (key, key_text) = match identity {
            None => (None, None),
            Some(id) => match &id.key {
                Some(k) if k.is_truthy() => {
                    let text = match k {
                        TraitValue::Str(s) => Cow::Borrowed(s.as_ref()),
                        other => {
                            let mut text = String::new();
                            other.write_pystr(&mut text);
                            Cow::Owned(text)
                        }
                    };
                    (Some(IdentityKey::Given(k)), Some(text))
                }
                _ => {
                    let env_key = env.env_key.as_ref().map_err(Clone::clone)?;
                    let identifier = id
                        .identifier
                        .as_ref()
                        .ok_or_else(|| EvalError::key("'identifier'"))?;
                    let mut text = String::with_capacity(env_key.len() + 1 + 36);
                    text.push_str(env_key);
                    text.push('_');
                    identifier.write_pystr(&mut text);
                    (Some(IdentityKey::Derived), Some(Cow::Owned(text)))
                }
            },
        };
        let deps = env.reads_flags.then(|| Dependencies {
            segment_matches: vec![None; env.segments.len()],
            ..Default::default()
        });
        let (traits, by_slot, tame) = read_traits(env, identity);
        Ok(Evaluation {
            env,
            scope,
            identity,
            key,
            key_text,
            deps,
            traits,
            by_slot,
            segment_slots: &[],
            tame: tame && matches!(scope, Scope::All),
        })
    }

    pub(super) fn cycle_hits(&self) -> u64 {
        self.deps.as_ref().map_or(0, |d| d.cycle_hits)
    }
}

impl<'a> Evaluation<'a> {
    /// The coerced value of the trait condition `c` reads by `name` (null when the identity
    /// has none; the last of repeated names wins, as in a JSON object).
    pub(super) fn trait_scalar(
        &mut self,
        c: &Condition,
        name: &str,
    ) -> Result<Scalar<'a>, EvalError> {
        match self.trait_read(c, name) {
            Some(read) => read.coerced().clone(),
            None => Ok(Scalar::Null),
        }
    }

    /// [`trait_scalar`](Self::trait_scalar) and, when the value is a string borrowed from the
    /// identity, its parse as a version (`Some(None)`: not one; `None`: not kept, parse it).
    pub(super) fn trait_version(
        &mut self,
        c: &Condition,
        name: &str,
    ) -> Result<(Scalar<'a>, Option<Option<&SemVer<'a>>>), EvalError> {
        let Some(read) = self.trait_read(c, name) else {
            return Ok((Scalar::Null, None));
        };
        let value = read.coerced().clone()?;
        let Scalar::Str(Cow::Borrowed(text)) = value else {
            return Ok((value, None));
        };
        let version = read.version.get_or_insert_with(|| semver::parse(text));
        Ok((value, Some(version.as_ref())))
    }

    /// The trait `c` reads: by slot inside a segment whose slots are known, else by name.
    fn trait_read(&mut self, c: &Condition, name: &str) -> Option<&mut TraitRead<'a>> {
        let env_slot = self.segment_slots.get(c.trait_slot as usize).copied();
        if let Some(found) = env_slot.and_then(|s| self.by_slot.get(s)) {
            return self.traits.get_mut(found as usize);
        }
        self.traits.iter_mut().rev().find(|t| t.key == name)
    }
}
