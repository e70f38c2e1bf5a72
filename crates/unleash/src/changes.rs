//! Which toggles a new body changed: what change notifications (OpenFeature's
//! configuration-changed events, flag change streams) name. A toggle changed when it appeared,
//! went, or its definition differs, compared as canonical JSON so a re-ordered body changes
//! nothing; and also when a segment it references or a toggle it depends on changed, as those
//! change its answers too (a parent's own parents cannot: the engine turns off a toggle whose
//! parent has parents).

use std::collections::BTreeSet;

use crate::features::Features;
use crate::toggle::Toggle;

/// The names of the toggles whose answers `new` may give differently from `old`, sorted.
pub fn changed_toggles(old: &Features, new: &Features) -> Vec<String> {
    let names: BTreeSet<&String> = old.toggles.keys().chain(new.toggles.keys()).collect();
    names
        .into_iter()
        .filter(|name| differs(old, new, name))
        .cloned()
        .collect()
}

fn differs(old: &Features, new: &Features, name: &str) -> bool {
    let (Some(before), Some(after)) = (old.toggles.get(name), new.toggles.get(name)) else {
        return true;
    };
    own_differs(before, after)
        || after
            .segments
            .iter()
            .any(|id| canonical_segment(old, *id) != canonical_segment(new, *id))
        || after.parents.iter().any(|parent| {
            match (old.toggles.get(parent), new.toggles.get(parent)) {
                (Some(a), Some(b)) => own_differs(a, b),
                (None, None) => false,
                _ => true,
            }
        })
}

fn own_differs(before: &Toggle, after: &Toggle) -> bool {
    before.canonical != after.canonical
}

fn canonical_segment(features: &Features, id: i32) -> Option<&str> {
    features
        .segments
        .get(&id)
        .map(|(_, canonical)| canonical.as_str())
}

#[cfg(test)]
mod tests {
    use super::changed_toggles;
    use crate::Features;

    fn features(toggles: &str, segments: &str) -> Features {
        let body = format!(r#"{{"version":1,"features":[{toggles}],"segments":[{segments}]}}"#);
        Features::from_slice(body.as_bytes()).unwrap()
    }

    const SEG: &str =
        r#"{"id":1,"constraints":[{"contextName":"a","operator":"IN","values":["x"]}]}"#;

    #[test]
    fn names_what_changed() {
        let old = features(
            r#"{"name":"same","enabled":true,"project":"p"},
               {"name":"flip","enabled":true},
               {"name":"gone","enabled":true},
               {"name":"seg","enabled":true,"strategies":[{"name":"default","segments":[1]}]},
               {"name":"child","enabled":true,"dependencies":[{"feature":"flip"}]}"#,
            SEG,
        );
        let new = features(
            r#"{"project":"p","enabled":true,"name":"same"},
               {"name":"flip","enabled":false},
               {"name":"new","enabled":true},
               {"name":"seg","enabled":true,"strategies":[{"name":"default","segments":[1]}]},
               {"name":"child","enabled":true,"dependencies":[{"feature":"flip"}]}"#,
            &SEG.replace("\"x\"", "\"y\""),
        );
        assert_eq!(
            changed_toggles(&old, &new),
            ["child", "flip", "gone", "new", "seg"]
        );
        assert!(changed_toggles(&old, &old).is_empty());
    }
}
