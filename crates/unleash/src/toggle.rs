//! What the crate keeps about each toggle beside the engine's compiled form: the facts that
//! scope filtering, change detection and the OpenFeature layer need, worked out once when the
//! body is read so that no request re-reads a toggle's JSON.

use serde_json::Value;
use unleash_types::client_features::{ClientFeature, Strategy, Variant};

use crate::canonical::to_canonical;

/// The project the engine files a toggle under when the body names none.
pub(crate) const DEFAULT_PROJECT: &str = "default";

/// One toggle of a body, with what was worked out from it.
#[derive(Debug)]
pub(crate) struct Toggle {
    pub(crate) name: String,
    pub(crate) project: String,
    /// The toggle's JSON as received (members in their order, numbers as written): what a
    /// filtered client-features body serves.
    pub(crate) raw: String,
    /// The toggle's JSON canonically written: two bodies define it the same when these are equal.
    pub(crate) canonical: String,
    /// The segments its strategies reference, sorted, each once.
    pub(crate) segments: Vec<i32>,
    /// The toggles it depends on (`dependencies[].feature`).
    pub(crate) parents: Vec<String>,
    /// Its answer (enabled and variant) is the same for every context.
    pub(crate) is_static: bool,
    /// The toggle's own `enabled`: off, it is off for everyone (OpenFeature's `DISABLED`).
    pub(crate) switched_on: bool,
    /// Whether SDKs emit impression events for it (`impressionData`).
    pub(crate) impression_data: bool,
}

impl Toggle {
    pub(crate) fn new(value: &Value, feature: &ClientFeature) -> Self {
        let mut segments: Vec<i32> = strategies(feature)
            .iter()
            .flat_map(|strategy| strategy.segments.iter().flatten().copied())
            .collect();
        segments.sort_unstable();
        segments.dedup();
        Self {
            name: feature.name.clone(),
            project: feature
                .project
                .clone()
                .unwrap_or_else(|| DEFAULT_PROJECT.to_owned()),
            raw: value.to_string(),
            canonical: to_canonical(value),
            segments,
            parents: feature
                .dependencies
                .iter()
                .flatten()
                .map(|dependency| dependency.feature.clone())
                .collect(),
            is_static: is_static(feature),
            switched_on: feature.enabled,
            impression_data: feature.impression_data.unwrap_or(false),
        }
    }
}

fn strategies(feature: &ClientFeature) -> &[Strategy] {
    feature.strategies.as_deref().unwrap_or_default()
}

/// Whether no context can change the toggle's answer. Conservative: `true` only where the
/// engine's rules make it plain (a disabled toggle; or one without dependencies whose first
/// strategy, if any, is an unconstrained `default` and whose candidate variants cannot differ
/// by context); a rollout at 100% or a constraint every real context passes still counts as
/// varying.
fn is_static(feature: &ClientFeature) -> bool {
    if !feature.enabled {
        return true;
    }
    if feature.dependencies.as_ref().is_some_and(|d| !d.is_empty()) {
        return false;
    }
    let toggle_variants = feature.variants.as_deref().unwrap_or_default();
    match strategies(feature).first() {
        // No strategy: on for everyone; the variant comes from the toggle's own list.
        None => fixed_variant(toggle_variants.iter().map(|v| (v.weight, has_overrides(v)))),
        // The engine takes the first strategy that matches: one matching everyone always
        // decides, with its own variants when it has any.
        Some(first) if matches_everyone(first) => match first.variants.as_deref() {
            Some(own) if !own.is_empty() => fixed_variant(own.iter().map(|v| (v.weight, false))),
            _ => fixed_variant(toggle_variants.iter().map(|v| (v.weight, has_overrides(v)))),
        },
        Some(_) => false,
    }
}

fn matches_everyone(strategy: &Strategy) -> bool {
    strategy.name == "default"
        && strategy.constraints.as_ref().is_none_or(Vec::is_empty)
        && strategy.segments.as_ref().is_none_or(Vec::is_empty)
}

fn has_overrides(variant: &Variant) -> bool {
    variant.overrides.as_ref().is_some_and(|o| !o.is_empty())
}

/// At most one candidate and no override: the variant cannot depend on the context (several
/// are split by a hash of the context, or at random without one).
fn fixed_variant(candidates: impl Iterator<Item = (i32, bool)>) -> bool {
    let mut count = 0;
    for (_weight, overridden) in candidates {
        count += 1;
        if overridden || count > 1 {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::Toggle;

    fn toggle(json: &str) -> Toggle {
        let value: serde_json::Value = serde_json::from_str(json).unwrap();
        let feature = serde_json::from_value(value.clone()).unwrap();
        Toggle::new(&value, &feature)
    }

    #[test]
    fn static_toggles() {
        assert!(
            toggle(r#"{"name":"a","enabled":false,"strategies":[{"name":"flexibleRollout"}]}"#)
                .is_static
        );
        assert!(toggle(r#"{"name":"a","enabled":true}"#).is_static);
        assert!(
            toggle(
                r#"{"name":"a","enabled":true,"strategies":[{"name":"default","constraints":[]}]}"#
            )
            .is_static
        );
        assert!(toggle(
            r#"{"name":"a","enabled":true,"strategies":[{"name":"default","variants":[{"name":"v","weight":1000}]},
               {"name":"userWithId","parameters":{"userIds":"1"},"variants":[{"name":"w","weight":1000}]}]}"#
        )
        .is_static);
    }

    #[test]
    fn varying_toggles() {
        let cases = [
            r#"{"name":"a","enabled":true,"strategies":[{"name":"flexibleRollout","parameters":{"rollout":"100"}}]}"#,
            r#"{"name":"a","enabled":true,"strategies":[{"name":"default","segments":[1]}]}"#,
            r#"{"name":"a","enabled":true,"strategies":[{"name":"default","constraints":[{"contextName":"userId","operator":"IN","values":["1"]}]}]}"#,
            r#"{"name":"a","enabled":true,"variants":[{"name":"x","weight":500},{"name":"y","weight":500}]}"#,
            r#"{"name":"a","enabled":true,"variants":[{"name":"x","weight":1000,"overrides":[{"contextName":"userId","values":["1"]}]}]}"#,
            r#"{"name":"a","enabled":true,"dependencies":[{"feature":"b"}]}"#,
        ];
        for json in cases {
            assert!(!toggle(json).is_static, "{json}");
        }
    }

    #[test]
    fn facts() {
        let t = toggle(
            r#"{"name":"a","enabled":true,"strategies":[{"name":"default","segments":[3,1]},{"name":"default","segments":[1]}],
                "dependencies":[{"feature":"p"}]}"#,
        );
        assert_eq!(t.project, "default");
        assert_eq!(t.segments, [1, 3]);
        assert_eq!(t.parents, ["p"]);
    }
}
