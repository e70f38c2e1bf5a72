//! Compiled segment rules, regexes and metadata objects shared between environments.
//!
//! In Flagsmith, segments and features belong to the project: every environment of a project
//! carries the same segment rules and the same feature and segment metadata (`{"id": …}`), and
//! an organisation-wide proxy serves many environments of each project. Compiling a rule set is
//! the dearest part of a small environment (compiling a regex takes ~100 µs and keeps ~3 KB), and
//! the metadata objects are its most numerous small blocks (one map per feature state and
//! segment), so a caller that compiles many environments can pass one [`Shared`] to all of
//! them: rules and metadata whose JSON text is equal are built once and held by every
//! environment that has them, for as long as one does.
//!
//! Regexes are shared one level further down: rule sets that differ (the environments of
//! different projects) often hold the same pattern, and every `REGEX` condition compiled with a
//! [`Shared`] takes the one compiled regex kept for its translated pattern (inline flags
//! included), whatever rule set it is in.
//!
//! Only rule sets whose compiled form depends on nothing but their own text are shared: no
//! property is a JSONPath (`$.…` may be answered from the rest of the context at compile time),
//! and every operator is known (an unknown one is reported per environment, with its path).
//! Everything else is compiled per environment, as without the cache. The engine keeps no
//! global state: the cache is the caller's, and it holds only weak references.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

use crate::condition::parse_operator;
use crate::model::Rule;
use crate::python::regex::{PyRegex, WeakPyRegex};

/// Rule sets and metadata built for some environment, by their JSON text (see the module
/// documentation).
#[derive(Debug, Default)]
pub struct Shared {
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    by_text: HashMap<String, Weak<[Rule]>>,
    metadata: HashMap<String, Weak<Value>>,
    /// Compiled regexes by translated pattern.
    regexes: HashMap<String, WeakPyRegex>,
    /// Entries after the last sweep of dead ones: the next sweep is at twice as many.
    swept_at: usize,
}

impl Shared {
    pub fn new() -> Shared {
        Shared::default()
    }

    /// Rule sets currently held by some environment (dead entries are swept as it grows).
    pub fn len(&self) -> usize {
        self.lock()
            .by_text
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key `rules` would be shared under, or `None` when they cannot be shared.
    pub(crate) fn key(rules: &Value) -> Option<String> {
        shareable_rules(rules).then(|| rules.to_string())
    }

    pub(crate) fn get(&self, key: &str) -> Option<Arc<[Rule]>> {
        self.lock().by_text.get(key).and_then(Weak::upgrade)
    }

    /// Keeps `rules` for the next environment with the same text (a racing compile of the same
    /// text may have got there first: then that one is returned and shared).
    pub(crate) fn insert(&self, key: String, rules: Arc<[Rule]>) -> Arc<[Rule]> {
        let mut entries = self.lock();
        if let Some(existing) = entries.by_text.get(&key).and_then(Weak::upgrade) {
            return existing;
        }
        entries.by_text.insert(key, Arc::downgrade(&rules));
        entries.sweep();
        rules
    }

    /// The metadata object held under `value`'s text, or the one `build` makes (then kept for
    /// the next environment with the same text).
    pub(crate) fn metadata(&self, value: &Value, build: impl FnOnce() -> Value) -> Arc<Value> {
        let key = value.to_string();
        let mut entries = self.lock();
        if let Some(existing) = entries.metadata.get(&key).and_then(Weak::upgrade) {
            return existing;
        }
        let built = Arc::new(build());
        entries.metadata.insert(key, Arc::downgrade(&built));
        entries.sweep();
        built
    }

    /// `PyRegex::compile(pattern)`, or the regex compiled for an equal translation that some
    /// environment still holds (then shared). Compiled outside the lock.
    pub(crate) fn regex(&self, pattern: &str) -> Result<PyRegex, String> {
        let translated = PyRegex::translate(pattern)?;
        if let Some(existing) = self
            .lock()
            .regexes
            .get(&translated)
            .and_then(WeakPyRegex::upgrade)
        {
            return Ok(existing);
        }
        let compiled = PyRegex::from_translation(&translated)?;
        let mut entries = self.lock();
        if let Some(existing) = entries
            .regexes
            .get(&translated)
            .and_then(WeakPyRegex::upgrade)
        {
            return Ok(existing);
        }
        entries.regexes.insert(translated, compiled.downgrade());
        entries.sweep();
        Ok(compiled)
    }

    /// Compiled regexes currently held by some environment.
    #[cfg(test)]
    fn regexes(&self) -> usize {
        self.lock()
            .regexes
            .values()
            .filter(|w| w.is_alive())
            .count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves the map consistent (every step is one call).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Entries {
    /// Drops dead entries once the maps have doubled since the last sweep.
    fn sweep(&mut self) {
        if self.len() >= 2 * self.swept_at.max(64) {
            self.by_text.retain(|_, w| w.strong_count() > 0);
            self.metadata.retain(|_, w| w.strong_count() > 0);
            self.regexes.retain(|_, w| w.is_alive());
            self.swept_at = self.len();
        }
    }

    fn len(&self) -> usize {
        self.by_text.len() + self.metadata.len() + self.regexes.len()
    }
}

/// Whether a segment's `rules` compile from their text alone: an array of rule objects whose
/// conditions read traits (never a `$.` path) with known operators, all the way down. Anything
/// else (including every malformed shape, which the compiler reports) is compiled on its own.
fn shareable_rules(rules: &Value) -> bool {
    let Value::Array(rules) = rules else {
        return false;
    };
    rules.iter().all(|rule| {
        let Value::Object(rule) = rule else {
            return false;
        };
        let conditions_ok = match rule.get("conditions") {
            None | Some(Value::Null) => true,
            Some(Value::Array(conditions)) => conditions.iter().all(shareable_condition),
            Some(_) => false,
        };
        let rules_ok = match rule.get("rules") {
            None | Some(Value::Null) => true,
            Some(nested @ Value::Array(_)) => shareable_rules(nested),
            Some(_) => false,
        };
        conditions_ok && rules_ok
    })
}

fn shareable_condition(condition: &Value) -> bool {
    let Value::Object(condition) = condition else {
        return false;
    };
    let property_ok = match condition.get("property") {
        Some(Value::String(p)) => !p.starts_with("$."),
        _ => true,
    };
    let operator_ok = match condition.get("operator") {
        Some(Value::String(op)) => parse_operator(op).is_some(),
        None => true,
        Some(_) => false,
    };
    property_ok && operator_ok
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{json, Value};

    use super::Shared;
    use crate::compile::compile_context_sharing;
    use crate::model::Environment;

    fn context(property: &str, operator: &str) -> Value {
        json!({
            "environment": {"key": "k", "name": "n"},
            "features": {"f": {"key": "1", "name": "f", "enabled": false, "value": 1}},
            "segments": {"1": {
                "key": "1", "name": "s",
                "rules": [{"type": "ALL", "conditions": [
                    {"property": property, "operator": operator, "value": ".*@example\\.com$"}
                ]}],
                "overrides": [{"key": "", "name": "f", "enabled": true, "value": 2}]
            }}
        })
    }

    fn compile(context: &Value, shared: &Shared) -> Environment {
        compile_context_sharing(context, Some(shared)).unwrap().0
    }

    fn same_rules(a: &Environment, b: &Environment) -> bool {
        Arc::ptr_eq(
            a.segments[0].rules.as_ref().unwrap(),
            b.segments[0].rules.as_ref().unwrap(),
        )
    }

    #[test]
    fn equal_trait_rules_are_compiled_once_and_live_while_held() {
        let shared = Shared::new();
        let ctx = context("email", "REGEX");
        let (a, b) = (compile(&ctx, &shared), compile(&ctx, &shared));
        assert!(same_rules(&a, &b));
        assert_eq!(shared.len(), 1);
        let other = compile(&context("mail", "REGEX"), &shared);
        assert!(!same_rules(&a, &other));
        drop((a, b, other));
        assert!(
            shared.is_empty(),
            "the cache holds no environment's rules alive"
        );
    }

    #[test]
    fn paths_and_unknown_operators_are_compiled_per_environment() {
        let shared = Shared::new();
        for ctx in [
            context("$.environment.name", "REGEX"),
            context("email", "NEW_OP"),
        ] {
            let (a, b) = (compile(&ctx, &shared), compile(&ctx, &shared));
            assert!(!same_rules(&a, &b));
        }
        assert!(shared.is_empty());
        // The unknown operator is still reported for every environment.
        let ctx = context("email", "NEW_OP");
        assert_eq!(
            compile_context_sharing(&ctx, Some(&shared))
                .unwrap()
                .1
                .len(),
            1
        );
    }

    #[test]
    fn equal_metadata_is_held_once() {
        let with_metadata = |id: u32| {
            let mut c = context("age", "EQUAL");
            c["features"]["f"]["metadata"] = json!({"id": id});
            c["segments"]["1"]["metadata"] = json!({"source": "api", "id": 1});
            c
        };
        let shared = Shared::new();
        let (a, b) = (
            compile(&with_metadata(7), &shared),
            compile(&with_metadata(7), &shared),
        );
        let other = compile(&with_metadata(8), &shared);
        let feature = |e: &Environment| e.feature_ctxs[0].metadata.clone().unwrap();
        assert!(Arc::ptr_eq(&feature(&a), &feature(&b)));
        assert!(!Arc::ptr_eq(&feature(&a), &feature(&other)));
        assert_eq!(*feature(&other), json!({"id": 8}));
        let segment = |e: &Environment| e.segments[0].metadata.clone().unwrap();
        assert!(Arc::ptr_eq(&segment(&a), &segment(&other)));
    }

    #[test]
    fn equal_patterns_in_different_rules_share_one_regex_while_held() {
        let shared = Shared::new();
        let regex = |e: &Environment| match &e.segments[0].rules.as_ref().unwrap()[0].conditions[0]
            .operator
        {
            Ok(crate::condition::Operator::Regex(Ok(re))) => re.clone(),
            other => panic!("not a compiled regex: {other:?}"),
        };
        let (email, mail) = (
            compile(&context("email", "REGEX"), &shared),
            compile(&context("mail", "REGEX"), &shared),
        );
        assert!(!same_rules(&email, &mail));
        assert!(regex(&email).same_as(&regex(&mail)));
        assert_eq!(shared.regexes(), 1);
        // A rule set compiled alone still compiles its own.
        let alone = compile_context_sharing(&context("email", "REGEX"), None)
            .unwrap()
            .0;
        assert!(!regex(&email).same_as(&regex(&alone)));
        drop((email, mail));
        assert_eq!(shared.regexes(), 0, "the cache holds no regex alive");
    }

    #[test]
    fn shared_rules_evaluate_as_unshared_ones() {
        let shared = Shared::new();
        let ctx = context("email", "REGEX");
        let alone = compile_context_sharing(&ctx, None).unwrap().0;
        let (_first, second) = (compile(&ctx, &shared), compile(&ctx, &shared));
        for email in ["a@example.com", "a@example.org"] {
            let traits = [crate::Trait {
                key: "email".into(),
                value: crate::TraitValue::Str(email.into()),
            }];
            let identity = crate::Identity::new("u", &traits);
            let want = alone.evaluate(Some(&identity)).unwrap().flags[0]
                .value
                .clone();
            let got = second.evaluate(Some(&identity)).unwrap().flags[0]
                .value
                .clone();
            assert_eq!(want, got, "{email}");
        }
    }
}
