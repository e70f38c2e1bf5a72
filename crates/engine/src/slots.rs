//! Traits by slot: the trait names an environment's conditions read, interned at compile time, so
//! that a condition finds its trait by index instead of comparing names.
//!
//! A condition reads a trait by name when its property is a trait name, and a JSONPath property
//! first reads the trait literally named like the path. Compiled rule sets may be shared between
//! environments (`shared`), so a condition holds the slot of its name *within its rule set*; each
//! segment maps those to the environment's slots ([`Segment::trait_slots`]), and a request's
//! traits are mapped to the environment's slots once, when its evaluation starts (by exact name,
//! the last of repeated names winning, as a by-name lookup does: `evaluate/slots.rs`).
//!
//! [`Segment::trait_slots`]: crate::model::Segment::trait_slots

use crate::condition::Condition;
use crate::model::Rule;
pub(crate) use crate::model::{SlotMap, NO_SLOT};
use crate::property::Property;

/// The name a property finds its trait by, if any.
pub(crate) fn trait_name(property: &Property) -> Option<&str> {
    match property {
        Property::Trait(name) => Some(name),
        Property::Path { literal, .. } => Some(literal),
        Property::IdentityKey | Property::Invalid(_) => None,
    }
}

/// The slot of `name` in `slots`, given it the next one if new ([`NO_SLOT`] when full).
pub(crate) fn intern(slots: &mut SlotMap, name: &str) -> u16 {
    if let Some(&slot) = slots.get(name) {
        return slot;
    }
    let Ok(slot) = u16::try_from(slots.len()) else {
        return NO_SLOT;
    };
    if slot == NO_SLOT {
        return NO_SLOT;
    }
    slots.insert(name.into(), slot);
    slot
}

/// A segment's map from its rule set's slots to the environment's (interning the names there).
pub(crate) fn segment_slots(rules: &[Rule], env_slots: &mut SlotMap) -> Box<[u16]> {
    let mut map = Vec::new();
    for_each_condition(rules, &mut |c| {
        let (Ok(property), slot) = (&c.property, c.trait_slot) else {
            return;
        };
        let Some(name) = trait_name(property).filter(|_| slot != NO_SLOT) else {
            return;
        };
        let slot = slot as usize;
        if map.len() <= slot {
            map.resize(slot + 1, NO_SLOT);
        }
        if map[slot] == NO_SLOT {
            map[slot] = intern(env_slots, name);
        }
    });
    map.into_boxed_slice()
}

fn for_each_condition(rules: &[Rule], f: &mut impl FnMut(&Condition)) {
    for rule in rules {
        rule.conditions.iter().for_each(&mut *f);
        for_each_condition(&rule.rules, f);
    }
}
