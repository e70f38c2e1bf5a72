//! A request's traits as conditions read them: mapped once to the environment's trait slots
//! (see `crate::slots`), each coerced (and parsed as a version) at its first read, and whether
//! the request is *tame* (see `crate::order`), which lets safe rules run cheapest first.

use crate::error::EvalError;
use crate::identity::Identity;
use crate::model::Environment;
use crate::python::number::PyInt;
use crate::semver::SemVer;
use crate::slots::NO_SLOT;
use crate::value::{Scalar, TraitValue};

/// One trait of the identity, with what reading it made so far.
pub(super) struct TraitRead<'a> {
    pub(super) key: &'a str,
    value: &'a TraitValue<'a>,
    coerced: Option<Result<Scalar<'a>, EvalError>>,
    /// `semver.parse` of the coerced string (`None` inside: not a version).
    pub(super) version: Option<Option<SemVer<'a>>>,
}

impl<'a> TraitRead<'a> {
    pub(super) fn coerced(&mut self) -> &Result<Scalar<'a>, EvalError> {
        let value = self.value;
        self.coerced.get_or_insert_with(|| value.coerce())
    }
}

/// Slots kept on the stack (an environment's conditions rarely read more trait names).
const INLINE: usize = 24;

/// Per environment slot, the index of the request's trait of that name ([`NO_SLOT`]: none).
pub(super) enum SlotIndex {
    /// The environment reads no trait by name, or the request has too many traits to index:
    /// every read goes by name.
    ByName,
    Inline([u16; INLINE]),
    Heap(Vec<u16>),
}

impl SlotIndex {
    pub(super) fn get(&self, slot: u16) -> Option<u16> {
        match self {
            SlotIndex::ByName => None,
            SlotIndex::Inline(slots) => slots.get(slot as usize).copied(),
            SlotIndex::Heap(slots) => slots.get(slot as usize).copied(),
        }
    }
}

/// A request's traits, indexed by slot, and whether the request is tame.
pub(super) fn read_traits<'a>(
    env: &Environment,
    identity: Option<&'a Identity<'a>>,
) -> (Vec<TraitRead<'a>>, SlotIndex, bool) {
    let Some(identity) = identity else {
        return (Vec::new(), SlotIndex::ByName, true);
    };
    let traits: Vec<TraitRead<'a>> = identity
        .traits
        .iter()
        .map(|t| TraitRead {
            key: t.key.as_ref(),
            value: &t.value,
            coerced: None,
            version: None,
        })
        .collect();
    let tame = identity.raw.is_none()
        && identity.identifier.as_ref().is_none_or(tame_value)
        && identity.key.as_ref().is_none_or(tame_value)
        && identity.traits.iter().all(|t| tame_value(&t.value));
    let slots = env.trait_slots.len();
    if slots == 0 || traits.len() >= NO_SLOT as usize {
        return (traits, SlotIndex::ByName, tame);
    }
    let mut index = if slots <= INLINE {
        SlotIndex::Inline([NO_SLOT; INLINE])
    } else {
        SlotIndex::Heap(vec![NO_SLOT; slots])
    };
    let entries = match &mut index {
        SlotIndex::Inline(slots) => &mut slots[..],
        SlotIndex::Heap(slots) => &mut slots[..],
        SlotIndex::ByName => unreachable!("just built"),
    };
    // In order, so the last of repeated names wins.
    for (i, t) in traits.iter().enumerate() {
        if let Some(&slot) = env.trait_slots.get(t.key) {
            entries[slot as usize] = i as u16;
        }
    }
    (traits, index, tame)
}

/// Whether reading this value can never raise in a safe condition: coercion raises only for a
/// string of more than 4,300 digits, and a `MODULO` only for an int too large for a float;
/// container values are left out (a JSONPath step into one coerces what it finds there).
fn tame_value(v: &TraitValue<'_>) -> bool {
    match v {
        TraitValue::Null | TraitValue::Bool(_) | TraitValue::Float(_) => true,
        TraitValue::Int(i) => matches!(i, PyInt::Small(_)),
        // At most 300 characters: at most 300 digits, well inside a float's range.
        TraitValue::Str(s) => s.len() <= 300,
        TraitValue::Json(_) => false,
    }
}
