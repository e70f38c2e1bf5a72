//! `Environment::evaluate_feature`, the per-feature (lazy) entry point.
//!
//! - On documents and document-like contexts (conditions on traits and the identity, identity
//!   overrides, priorities, multivariate splits), every feature's per-feature flag equals the
//!   whole evaluation's flag, for identities that hit identity overrides and ones that do not.
//! - On arbitrary contexts (JSONPath over `features`/`segments`, `$.flags` dependencies and
//!   cycles, missing keys, bad regexes, names that differ from keys), the per-feature result is
//!   exactly the whole evaluation of the context trimmed to that feature (`features` reduced to
//!   it, `segments` to those that override it), errors included: the definition.
//! - `Environment::own_flags`, the other scoped evaluation: exactly the evaluation, for no
//!   identity, of the context without `segments`, errors included.
//! - `Environment::evaluate_varied`, the flags that can differ from the own flags: merged with
//!   the own flags, exactly the whole evaluation, errors included, wherever it is offered.

use std::borrow::Cow;

mod common;

use flagpole_engine::{
    Environment, EvalError, EvaluationResult, FlagResult, Identity, Trait, TraitValue,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const EXAMPLE: &str = include_str!("../../../examples/environment.json");

fn flag_json(flag: &FlagResult<'_>) -> Value {
    let mut out = Vec::new();
    flag.write_json(&mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn traits_of(json: &Value) -> Vec<Trait<'_>> {
    json.as_object()
        .map(|map| {
            map.iter()
                .map(|(k, v)| Trait {
                    key: Cow::Borrowed(k.as_str()),
                    value: TraitValue::from_json(v),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Feature keys of a context, in order.
fn feature_keys(ctx: &Value) -> Vec<String> {
    ctx.get("features")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Asserts that each feature's per-feature flag is the whole evaluation's flag (when the whole
/// evaluation does not raise). Returns how many flags were compared.
fn assert_same_as_whole(
    env: &Environment,
    keys: &[String],
    identity: Option<&Identity<'_>>,
) -> usize {
    let Ok(whole) = env.evaluate(identity) else {
        return 0;
    };
    for key in keys {
        let single = env
            .evaluate_feature(key, identity)
            .unwrap_or_else(|e| panic!("{key}: the whole evaluation succeeds but this raises {e}"));
        let expected = whole.flag(key).map(flag_json);
        assert_eq!(single.as_ref().map(flag_json), expected, "feature {key:?}");
    }
    keys.len()
}

#[test]
fn example_document_every_feature_equals_the_whole_evaluation() {
    let env = Environment::from_document_json(EXAMPLE.as_bytes()).unwrap();
    let doc: Value = serde_json::from_str(EXAMPLE).unwrap();
    let keys: Vec<String> = doc["feature_states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|fs| fs["feature"]["name"].as_str().unwrap().to_owned())
        .collect();
    let trait_sets = [
        json!({}),
        json!({"plan": "enterprise", "seats": 120, "app_version": "2.3.1", "country": "US"}),
        json!({"plan": "enterprise", "seats": 5, "app_version": "1.9", "country": "DE"}),
        json!({"plan": "free", "app_version": "3.0.0", "country": "FR", "email": "a@b.c"}),
        json!({"plan": null, "seats": "120", "app_version": 2}),
    ];
    let mut compared = 0;
    for i in 0..200 {
        let identifier = match i % 4 {
            0 => "vip-customer".to_owned(),
            _ => format!("user-{i}"),
        };
        let traits_json = &trait_sets[i % trait_sets.len()];
        let traits = traits_of(traits_json);
        let identity = Identity::new(&identifier, &traits);
        compared += assert_same_as_whole(&env, &keys, Some(&identity));
    }
    compared += assert_same_as_whole(&env, &keys, None);
    assert!(compared > 1500);
    assert_eq!(env.evaluate_feature("no such feature", None), Ok(None));
}

#[test]
fn identity_override_index_is_used_per_feature() {
    // Thousands of identity-override segments: one lookup finds this identity's.
    let mut segments = Map::new();
    for s in 0..2000 {
        segments.insert(
            format!("o{s}"),
            json!({"key": format!("o{s}"), "name": "identity_overrides",
                   "metadata": {"source": "identity_overrides"},
                   "rules": [{"type": "ALL", "conditions": [
                       {"property": "$.identity.identifier", "operator": "IN",
                        "value": [format!("user-{s}"), format!("user-{}", s + 1)]}]}],
                   "overrides": [{"key": "k", "name": if s % 2 == 0 { "a" } else { "b" },
                                  "enabled": true, "value": s, "priority": f64::MIN}]}),
        );
    }
    segments.insert(
        "plan".into(),
        json!({"key": "plan", "name": "pro",
               "rules": [{"type": "ALL", "conditions": [
                   {"property": "plan", "operator": "EQUAL", "value": "pro"}]}],
               "overrides": [{"key": "k", "name": "a", "enabled": false, "value": "pro", "priority": 1}]}),
    );
    let ctx = json!({
        "environment": {"key": "env", "name": "e"},
        "features": {
            "a": {"key": "k", "name": "a", "enabled": false, "value": "default"},
            "b": {"key": "k2", "name": "b", "enabled": false, "value": "default"},
            "c": {"key": "k3", "name": "c", "enabled": true, "value": "static"},
        },
        "segments": segments,
    });
    let (env, _) = Environment::from_context(&ctx).unwrap();
    let keys = feature_keys(&ctx);
    for plan in ["pro", "free"] {
        let traits_json = json!({ "plan": plan });
        let traits = traits_of(&traits_json);
        for i in [0, 1, 2, 777, 1999, 2000, 5000] {
            let identifier = format!("user-{i}");
            let identity = Identity::new(&identifier, &traits);
            assert_same_as_whole(&env, &keys, Some(&identity));
        }
        // A trait literally named like the path shadows the identifier: no index.
        let traits_json = json!({ "plan": plan, "$.identity.identifier": "user-4" });
        let traits = traits_of(&traits_json);
        let identity = Identity::new("user-900", &traits);
        assert_same_as_whole(&env, &keys, Some(&identity));
    }
    let traits = [];
    let identity = Identity::new("user-2", &traits);
    let a = env.evaluate_feature("a", Some(&identity)).unwrap().unwrap();
    assert_eq!(a.value, &json!(2));
    assert_eq!(
        a.reason.as_str(),
        "TARGETING_MATCH; segment=identity_overrides"
    );
    let c = env.evaluate_feature("c", Some(&identity)).unwrap().unwrap();
    assert_eq!(c.reason.as_str(), "STATIC");
}

// ---- generated contexts ------------------------------------------------------------------------

const TRAITS: &[&str] = &["plan", "age", "version", "email", "$.identity.identifier"];
const NAMES: &[&str] = &["f0", "f1", "f2", "f3", "f4"];
const IDENTIFIERS: &[&str] = &["u0", "u1", "u2", "u3", "007", ""];

fn small_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..50).prop_map(Value::from),
        proptest::sample::select(&["pro", "free", "1.2.3", "007", "", "a@b.c", "u1"][..])
            .prop_map(Value::from),
        Just(json!(2.5)),
    ]
}

/// A condition on a trait or the identity (what documents carry).
fn document_condition() -> impl Strategy<Value = Value> {
    let property = prop_oneof![
        4 => proptest::sample::select(TRAITS).prop_map(Value::from),
        1 => proptest::sample::select(&["$.identity.identifier", "$.identity.key", "$.environment.name", ""][..]).prop_map(Value::from),
    ];
    let value = prop_oneof![
        small_scalar(),
        proptest::sample::select(
            &[
                "pro,free",
                "u1,u2",
                "30",
                "2|0",
                "1.0.0:semver",
                "[a-z]+",
                "("
            ][..]
        )
        .prop_map(Value::from),
    ];
    common::condition(property, common::operator(), value, &[], Just(0))
}

/// A condition of any kind, including ones that read the context's features, segments and flags.
fn any_condition() -> impl Strategy<Value = Value> {
    let property = proptest::sample::select(
        &[
            "plan",
            "$.identity.identifier",
            "$.flags.f0.enabled",
            "$.flags.f1.value",
            "$.flags['f2'].reason",
            "$.flags.*.enabled",
            "$.features.f0.value",
            "$.features.f1.enabled",
            "$.segments.s1.name",
            "$.segments.s0.key",
            "$..name",
            "$.features[?@.enabled == true].name",
            "$.segments.*.overrides[0].name",
            "$",
            "$.bad[",
        ][..],
    )
    .prop_map(Value::from);
    let value = prop_oneof![
        small_scalar(),
        Just(json!("f")),
        Just(json!("(")),
        Just(json!(true))
    ];
    prop_oneof![
        1 => document_condition(),
        2 => common::condition(property, common::operator(), value, &[], Just(0)),
    ]
}

fn rule(condition: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    let quantifier = proptest::sample::select(&["ALL", "ANY", "NONE"][..]);
    let leaf = (
        quantifier.clone(),
        proptest::collection::vec(condition.clone(), 0..3),
    )
        .prop_map(|(t, cs)| json!({"type": t, "conditions": cs}));
    leaf.prop_recursive(2, 6, 2, move |inner| {
        (
            quantifier.clone(),
            proptest::collection::vec(condition.clone(), 0..3),
            proptest::collection::vec(inner, 0..2),
        )
            .prop_map(|(t, cs, rs)| json!({"type": t, "conditions": cs, "rules": rs}))
    })
}

fn variants() -> impl Strategy<Value = Value> {
    proptest::collection::vec((small_scalar(), 0u32..60, -2i64..4), 0..3).prop_map(|vs| {
        Value::Array(
            vs.into_iter()
                .enumerate()
                .map(|(i, (value, weight, priority))| {
                    json!({"value": value, "weight": weight, "priority": priority, "key": format!("v{i}")})
                })
                .collect(),
        )
    })
}

fn feature(name: String) -> impl Strategy<Value = Value> {
    (
        any::<bool>(),
        small_scalar(),
        proptest::option::of(variants()),
        proptest::option::of(0i64..4),
        0u8..6,
    )
        .prop_map(move |(enabled, value, variants, priority, kind)| {
            let mut f = json!({"key": format!("k-{name}"), "name": name, "enabled": enabled,
                               "value": value, "metadata": {"id": 1}});
            let map = f.as_object_mut().unwrap();
            if let Some(v) = variants {
                map.insert("variants".into(), v);
            }
            if let Some(p) = priority {
                map.insert("priority".into(), p.into());
            }
            match kind {
                0 => map.insert("priority".into(), json!(null)),
                1 => map.remove("key"),
                _ => None,
            };
            f
        })
}

fn segment(condition: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    let overrides = proptest::collection::vec(
        proptest::sample::select(NAMES).prop_flat_map(|n| feature(n.to_owned())),
        0..3,
    );
    let identity_override = proptest::collection::vec(proptest::sample::select(IDENTIFIERS), 1..3)
        .prop_map(|ids| {
            json!([{"type": "ALL", "conditions": [
                {"property": "$.identity.identifier", "operator": "IN", "value": ids}]}])
        });
    let rules = prop_oneof![
        3 => proptest::collection::vec(rule(condition), 0..3).prop_map(Value::Array),
        2 => identity_override,
    ];
    (rules, overrides, 0u8..12).prop_map(|(rules, overrides, kind)| {
        let mut s = json!({"key": "k", "name": "seg", "rules": rules, "overrides": overrides});
        let map = s.as_object_mut().unwrap();
        match kind {
            0 => map.remove("name"),
            1 => map.remove("rules"),
            2 => map
                .get_mut("overrides")
                .and_then(Value::as_array_mut)
                .and_then(|o| o.first_mut())
                .and_then(Value::as_object_mut)
                .and_then(|o| o.remove("name")),
            3 => map.insert("metadata".into(), json!({"source": "identity_overrides"})),
            _ => None,
        };
        s
    })
}

/// A context. `document_like`: keys equal names, conditions read traits and the identity only.
fn context(document_like: bool) -> impl Strategy<Value = Value> {
    let condition = if document_like {
        document_condition().boxed()
    } else {
        any_condition().boxed()
    };
    let features = proptest::collection::vec((0usize..NAMES.len(), any::<bool>()), 0..5)
        .prop_flat_map(move |picks| {
            picks
                .into_iter()
                .map(|(i, renamed)| {
                    let key = NAMES[i].to_owned();
                    let name = if renamed && !document_like {
                        NAMES[(i + 1) % NAMES.len()].to_owned()
                    } else {
                        key.clone()
                    };
                    feature(name).prop_map(move |f| (key.clone(), f))
                })
                .collect::<Vec<_>>()
        })
        .prop_map(|fs| Value::Object(fs.into_iter().collect()));
    let segments = proptest::collection::vec(segment(condition), 0..6).prop_map(|ss| {
        Value::Object(
            ss.into_iter()
                .enumerate()
                .map(|(i, mut s)| {
                    s["key"] = json!(format!("{i}"));
                    if s.get("name").is_some() {
                        s["name"] = json!(format!("seg{i}"));
                    }
                    (format!("s{i}"), s)
                })
                .collect(),
        )
    });
    (features, segments, any::<bool>()).prop_map(move |(features, segments, keyed)| {
        let environment = if keyed || document_like {
            json!({"key": "env-key", "name": "env"})
        } else {
            json!({"name": "env"})
        };
        json!({"environment": environment, "features": features, "segments": segments})
    })
}

fn identity_parts() -> impl Strategy<Value = (String, Value)> {
    let traits =
        proptest::collection::vec((proptest::sample::select(TRAITS), small_scalar()), 0..4)
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
    (
        proptest::sample::select(IDENTIFIERS).prop_map(str::to_owned),
        traits,
    )
}

/// The context trimmed to one feature: `features` reduced to it, `segments` to the ones with an
/// override of that name, everything else as it is.
fn trimmed(ctx: &Value, key: &str) -> Value {
    let mut out = ctx.clone();
    let features = &ctx["features"];
    out["features"] = json!({ key: features[key] });
    if let Some(segments) = ctx.get("segments").and_then(Value::as_object) {
        let kept: Map<String, Value> = segments
            .iter()
            .filter(|(_, s)| {
                s.get("overrides")
                    .and_then(Value::as_array)
                    .is_some_and(|o| o.iter().any(|o| o.get("name") == Some(&json!(key))))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out["segments"] = Value::Object(kept);
    }
    out
}

type Single = Result<Option<Value>, EvalError>;
type Whole = Result<Vec<Value>, EvalError>;

fn own_flags(env: &Environment) -> Whole {
    env.own_flags().map(|r| {
        assert!(r.segments.is_empty());
        r.flags.iter().map(flag_json).collect()
    })
}

/// The context without `segments`, compiled and evaluated for no identity.
fn whole_without_segments(ctx: &Value) -> Whole {
    let mut unsegmented = ctx.clone();
    unsegmented.as_object_mut().unwrap().remove("segments");
    let (env, _) =
        Environment::from_context(&unsegmented).expect("a context without segments compiles");
    env.evaluate(None)
        .map(|r| r.flags.iter().map(flag_json).collect())
}

#[test]
fn example_document_own_flags_are_its_unsegmented_evaluation() {
    let doc: Value = serde_json::from_str(EXAMPLE).unwrap();
    let ctx = flagpole_engine::document::document_to_context(&doc).unwrap();
    let (env, _) = Environment::from_context(&ctx).unwrap();
    let own = own_flags(&env).unwrap();
    assert_eq!(Ok(own.clone()), whole_without_segments(&ctx));
    assert_eq!(own.len(), doc["feature_states"].as_array().unwrap().len());
    assert!(own.iter().all(|f| f["reason"] == "STATIC"));
    // The whole evaluation for no identity differs: targeted features are `DEFAULT` there.
    let whole = env.evaluate(None).unwrap();
    assert!(whole.flags.iter().any(|f| f.reason.as_str() == "DEFAULT"));
}

/// The varied flags merged with the own flags, or `None` when the environment offers none.
fn merged_varied<'a>(
    env: &'a Environment,
    identity: Option<&'a Identity<'a>>,
) -> Option<Result<EvaluationResult<'a>, EvalError>> {
    env.evaluate_varied(identity)
        .map(|varied| varied.and_then(|v| env.merge_varied(v)))
}

#[test]
fn example_document_varied_flags_stand_for_the_whole_evaluation() {
    let env = Environment::from_document_json(EXAMPLE.as_bytes()).unwrap();
    let trait_sets = [
        json!({}),
        json!({"plan": "enterprise", "seats": 120, "app_version": "2.3.1", "country": "US"}),
        json!({"plan": "free", "app_version": "3.0.0", "country": "FR", "email": "a@b.c"}),
        json!({"plan": null, "seats": "120", "app_version": 2}),
    ];
    let mut fewer = 0;
    for i in 0..200 {
        let identifier = match i % 4 {
            0 => "vip-customer".to_owned(),
            _ => format!("user-{i}"),
        };
        let traits = traits_of(&trait_sets[i % trait_sets.len()]);
        let identity = Identity::new(&identifier, &traits);
        let varied = env.evaluate_varied(Some(&identity)).unwrap().unwrap();
        let whole = env.evaluate(Some(&identity)).unwrap();
        fewer += usize::from(varied.flags.len() < whole.flags.len());
        assert_eq!(env.merge_varied(varied), Ok(whole), "{identifier}");
    }
    assert!(
        fewer > 100,
        "most identities leave most flags at the own flags"
    );
    assert_eq!(merged_varied(&env, None).unwrap(), env.evaluate(None));
}

fn single(env: &Environment, key: &str, identity: Option<&Identity<'_>>) -> Single {
    env.evaluate_feature(key, identity)
        .map(|f| f.as_ref().map(flag_json))
}

fn whole_of_trimmed(ctx: &Value, key: &str, identity: Option<&Identity<'_>>) -> Single {
    let (env, _) =
        Environment::from_context(&trimmed(ctx, key)).expect("a trimmed context compiles");
    env.evaluate(identity).map(|r| r.flag(key).map(flag_json))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn document_like_per_feature_equals_the_whole_evaluation(
        ctx in context(true),
        ids in proptest::collection::vec(identity_parts(), 1..4),
    ) {
        let (env, _) = Environment::from_context(&ctx).unwrap();
        let keys = feature_keys(&ctx);
        for (identifier, traits_json) in &ids {
            let traits = traits_of(traits_json);
            let identity = Identity::new(identifier, &traits);
            assert_same_as_whole(&env, &keys, Some(&identity));
        }
        assert_same_as_whole(&env, &keys, None);
    }

    #[test]
    fn per_feature_is_the_whole_evaluation_of_the_trimmed_context(
        ctx in context(false),
        ids in proptest::collection::vec(identity_parts(), 1..3),
    ) {
        let (env, _) = Environment::from_context(&ctx).unwrap();
        for key in feature_keys(&ctx) {
            for (identifier, traits_json) in &ids {
                let traits = traits_of(traits_json);
                let identity = Identity::new(identifier, &traits);
                prop_assert_eq!(
                    single(&env, &key, Some(&identity)),
                    whole_of_trimmed(&ctx, &key, Some(&identity)),
                    "feature {:?}, identity {:?} {}", key, identifier, traits_json
                );
            }
            prop_assert_eq!(single(&env, &key, None), whole_of_trimmed(&ctx, &key, None));
        }
    }

    #[test]
    fn varied_flags_stand_for_the_whole_evaluation(
        ctx in prop_oneof![context(true), context(false)],
        ids in proptest::collection::vec(identity_parts(), 1..4),
    ) {
        let (env, _) = Environment::from_context(&ctx).unwrap();
        for (identifier, traits_json) in &ids {
            let traits = traits_of(traits_json);
            let identity = Identity::new(identifier, &traits);
            if let Some(merged) = merged_varied(&env, Some(&identity)) {
                prop_assert_eq!(merged, env.evaluate(Some(&identity)), "identity {:?} {}", identifier, traits_json);
            }
        }
        if let Some(merged) = merged_varied(&env, None) {
            prop_assert_eq!(merged, env.evaluate(None));
        }
    }

    #[test]
    fn own_flags_are_the_evaluation_of_the_context_without_segments(
        ctx in prop_oneof![context(true), context(false)],
    ) {
        let (env, _) = Environment::from_context(&ctx).unwrap();
        prop_assert_eq!(own_flags(&env), whole_without_segments(&ctx));
    }
}
