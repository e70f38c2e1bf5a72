//! Cheap conditions first and traits by slot: a whole evaluation may test a segment's rules and
//! conditions in another order than written, and finds traits by slot; neither may change any
//! answer or which error is raised.
//!
//! The oracle is the per-feature evaluation, which tests conditions in the written order and
//! finds traits by name: in a context with one feature that every segment overrides, it covers
//! exactly what the whole evaluation does, so the two must agree, errors included. The contexts
//! are made of conditions that raise (a `MODULO` whose value is not a string or divides by
//! zero, a compare with an infinite value, a bad regex, a missing key) next to cheap and dear
//! ones that do not, and the identities carry values that raise when read (a string of 5,000
//! digits, an int too large for a float) and repeated trait names.

use std::borrow::Cow;

mod common;

use flagpole_engine::{Environment, Identity, Shared, Trait, TraitValue};
use proptest::prelude::*;
use serde_json::{json, Value};

const TRAITS: &[&str] = &["plan", "age", "big", "v", "email"];

fn condition() -> impl Strategy<Value = Value> {
    let property = prop_oneof![
        6 => proptest::sample::select(TRAITS).prop_map(Value::from),
        1 => proptest::sample::select(&["$.identity.identifier", "$.identity.traits.age", "$.environment.key", ""][..]).prop_map(Value::from),
    ];
    let value = prop_oneof![
        proptest::sample::select(
            &[
                "pro",
                "pro,free",
                "30",
                "2|0",
                "0|0",
                "1.0.0:semver",
                "^p",
                "(",
                "50",
                ""
            ][..]
        )
        .prop_map(Value::from),
        Just(json!(3)),
        Just(json!(true)),
        Just(Value::Null),
        Just(serde_json::from_str::<Value>("1e400").unwrap()),
    ];
    // One in eight without a property, one in eight without an operator.
    common::condition(
        property,
        common::operator(),
        value,
        &["property", "operator"],
        0..8usize,
    )
}

fn rule(depth: u32) -> BoxedStrategy<Value> {
    let kind = proptest::sample::select(&["ALL", "ANY", "NONE", "ALL", "BAD"][..]);
    let conditions = proptest::collection::vec(condition(), 0..4);
    if depth == 0 {
        return (kind, conditions)
            .prop_map(|(kind, conditions)| json!({"type": kind, "conditions": conditions}))
            .boxed();
    }
    let rules = proptest::collection::vec(rule(depth - 1), 0..3);
    (kind, conditions, rules)
        .prop_map(|(kind, conditions, rules)| {
            json!({"type": kind, "conditions": conditions, "rules": rules})
        })
        .boxed()
}

/// One feature, `f`, which every segment overrides.
fn context() -> impl Strategy<Value = Value> {
    let segment = (
        proptest::collection::vec(rule(1), 0..4),
        any::<bool>(),
        0..4i64,
    );
    proptest::collection::vec(segment, 1..5).prop_map(|segments| {
        let segments: serde_json::Map<String, Value> = segments
            .into_iter()
            .enumerate()
            .map(|(i, (rules, keyed, value))| {
                let mut segment = json!({
                    "name": format!("s{i}"),
                    "rules": rules,
                    "overrides": [{"key": "o", "name": "f", "enabled": true, "value": value,
                                   "priority": i}]
                });
                if keyed {
                    segment["key"] = json!(format!("{i}"));
                }
                (format!("{i}"), segment)
            })
            .collect();
        json!({
            "environment": {"key": "env", "name": "Env"},
            "features": {"f": {"key": "1", "name": "f", "enabled": false, "value": "own"}},
            "segments": segments
        })
    })
}

fn trait_value() -> impl Strategy<Value = TraitValue<'static>> {
    prop_oneof![
        Just(TraitValue::Str(Cow::Borrowed("pro"))),
        Just(TraitValue::Str(Cow::Borrowed("30"))),
        Just(TraitValue::Str(Cow::Borrowed("1.2.0"))),
        Just(TraitValue::Str(Cow::Owned("7".repeat(5000)))),
        Just(TraitValue::Str(Cow::Owned("9".repeat(400)))),
        (0i64..60).prop_map(|i| int_trait(&i.to_string())),
        Just(int_trait(&format!("1{}", "0".repeat(400)))),
        Just(TraitValue::Float(2.5)),
        Just(TraitValue::Bool(true)),
        Just(TraitValue::Null),
    ]
}

/// An int trait value, of any size.
fn int_trait(digits: &str) -> TraitValue<'static> {
    let json: Value = serde_json::from_str(digits).unwrap();
    match TraitValue::from_json(&json) {
        TraitValue::Int(i) => TraitValue::Int(i),
        _ => unreachable!("an int"),
    }
}

fn traits() -> impl Strategy<Value = Vec<Trait<'static>>> {
    proptest::collection::vec((proptest::sample::select(TRAITS), trait_value()), 0..5).prop_map(
        |kv| {
            kv.into_iter()
                .map(|(k, value)| Trait {
                    key: Cow::Borrowed(k),
                    value,
                })
                .collect()
        },
    )
}

type Outcome = Result<Option<Value>, String>;

fn written_order(env: &Environment, identity: &Identity<'_>) -> Outcome {
    match env.evaluate_feature("f", Some(identity)) {
        Ok(flag) => Ok(flag.map(|f| json!([f.enabled, f.value, format!("{:?}", f.reason)]))),
        Err(e) => Err(format!("{:?}: {}", e.kind, e)),
    }
}

fn cheapest_first(env: &Environment, identity: &Identity<'_>) -> Outcome {
    match env.evaluate(Some(identity)) {
        Ok(result) => Ok(result
            .flag("f")
            .map(|f| json!([f.enabled, f.value, format!("{:?}", f.reason)]))),
        Err(e) => Err(format!("{:?}: {}", e.kind, e)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn reordered_evaluation_agrees_with_the_written_order(
        ctx in context(),
        people in proptest::collection::vec(traits(), 1..4),
    ) {
        let (env, _) = Environment::from_context(&ctx).unwrap();
        // The same rules compiled after another environment's, sharing them: other slots.
        let shared = Shared::new();
        let mut other = ctx.clone();
        other["segments"]["9"] = json!({"key": "9", "name": "first", "rules": [{"type": "ALL",
            "conditions": [{"property": "email", "operator": "IS_SET"},
                           {"property": "v", "operator": "IS_SET"}]}]});
        Environment::from_context_sharing(&other, &shared).unwrap();
        let (env_shared, _) = Environment::from_context_sharing(&ctx, &shared).unwrap();
        for traits in &people {
            let identity = Identity::new("user-1", traits);
            let want = written_order(&env, &identity);
            prop_assert_eq!(&cheapest_first(&env, &identity), &want, "{} {:?}", ctx, traits);
            prop_assert_eq!(&cheapest_first(&env_shared, &identity), &want, "{} {:?}", ctx, traits);
        }
    }
}

fn one_segment(rules: Value) -> Environment {
    let ctx = json!({
        "environment": {"key": "env", "name": "Env"},
        "features": {"f": {"key": "1", "name": "f", "enabled": false, "value": "own"}},
        "segments": {"1": {"key": "1", "name": "s", "rules": rules,
            "overrides": [{"key": "o", "name": "f", "enabled": true, "value": "seg"}]}}
    });
    Environment::from_context(&ctx).unwrap().0
}

fn value_for(env: &Environment, traits: &[Trait<'_>]) -> Result<Value, String> {
    let identity = Identity::new("u", traits);
    env.evaluate(Some(&identity))
        .map(|r| r.flag("f").unwrap().value.clone())
        .map_err(|e| format!("{:?}", e.kind))
}

fn str_trait(key: &'static str, value: String) -> Trait<'static> {
    Trait {
        key: Cow::Borrowed(key),
        value: TraitValue::Str(Cow::Owned(value)),
    }
}

#[test]
fn a_condition_that_can_raise_keeps_the_written_order() {
    // MODULO with a number for its value raises for a numeric trait, once reached.
    let raising = json!({"property": "age", "operator": "MODULO", "value": 5});
    let false_one = json!({"property": "plan", "operator": "EQUAL", "value": "none"});
    let age = Trait {
        key: "age".into(),
        value: int_trait("30"),
    };
    let after = one_segment(json!([{"type": "ALL", "conditions": [false_one, raising]}]));
    assert_eq!(
        value_for(&after, std::slice::from_ref(&age)),
        Ok(json!("own"))
    );
    let before = one_segment(json!([{"type": "ALL", "conditions": [raising, false_one]}]));
    assert_eq!(
        value_for(&before, std::slice::from_ref(&age)),
        Err("AttributeError".into())
    );
    // Sub-rules are tested even after the conditions failed.
    let nested = one_segment(json!([{"type": "ALL", "conditions": [false_one],
        "rules": [{"type": "ALL", "conditions": [raising]}]}]));
    assert_eq!(value_for(&nested, &[age]), Err("AttributeError".into()));
}

#[test]
fn a_trait_that_raises_when_read_keeps_the_written_order() {
    // The regex (dear) is written first and reads a 5,000-digit string: the reference raises
    // before it reaches the cheap false compare.
    let env = one_segment(json!([{"type": "ALL", "conditions": [
        {"property": "big", "operator": "REGEX", "value": "^7"},
        {"property": "plan", "operator": "EQUAL", "value": "none"}
    ]}]));
    let traits = [
        str_trait("big", "7".repeat(5000)),
        str_trait("plan", "pro".into()),
    ];
    assert_eq!(value_for(&env, &traits), Err("ValueError".into()));
    let tame = [
        str_trait("big", "7".repeat(50)),
        str_trait("plan", "none".into()),
    ];
    assert_eq!(value_for(&env, &tame), Ok(json!("seg")));
}

#[test]
fn repeated_trait_names_read_the_last_by_slot_too() {
    let env = one_segment(json!([{"type": "ALL", "conditions": [
        {"property": "plan", "operator": "EQUAL", "value": "b"},
        {"property": "$.identity.traits.plan", "operator": "EQUAL", "value": "b"}
    ]}]));
    let traits = [str_trait("plan", "a".into()), str_trait("plan", "b".into())];
    assert_eq!(value_for(&env, &traits), Ok(json!("seg")));
    let traits = [str_trait("plan", "b".into()), str_trait("plan", "a".into())];
    assert_eq!(value_for(&env, &traits), Ok(json!("own")));
    // Names are exact: case matters.
    let traits = [str_trait("Plan", "b".into())];
    assert_eq!(value_for(&env, &traits), Ok(json!("own")));
}

#[test]
fn an_empty_rule_never_reads_its_type() {
    // The reference reads a rule's type only to quantify conditions or sub-rules.
    let env = one_segment(json!([{"type": "ALL", "conditions": [],
        "rules": [{"type": "BAD", "conditions": []}]}]));
    assert_eq!(value_for(&env, &[]), Ok(json!("seg")));
    let env = one_segment(json!([{"type": "ALL", "conditions": [],
        "rules": [{"type": "BAD", "conditions": [
            {"property": "plan", "operator": "IS_NOT_SET"}]}]}]));
    assert_eq!(value_for(&env, &[]), Err("KeyError".into()));
}
