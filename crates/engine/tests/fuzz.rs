//! Property-based robustness tests: the engine must never panic, whatever it is fed. Errors are
//! fine (both `InputError` from compiling and `EvalError` from evaluating); panics are not.
//!
//! - Arbitrary JSON-ish evaluation contexts, biased towards the context schema (features with
//!   variants and priorities, segments with nested rules and conditions using every operator,
//!   JSONPath and `$.flags` properties, awkward condition values), with any node occasionally
//!   replaced by arbitrary JSON (huge ints, floats, deep nesting), compiled with
//!   `Environment::from_context` and evaluated and explained for the context's identity and for
//!   random identities.
//! - Arbitrary bytes, arbitrary JSON and randomly mutated copies of the example environment
//!   document fed to `Environment::from_document_json`.

use std::borrow::Cow;

mod common;

use flagpole_engine::{Environment, Identity, Trait, TraitValue};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const PROPERTIES: &[&str] = &[
    "t",
    "u",
    "",
    "$.identity.identifier",
    "$.identity.key",
    "$.identity.traits.t",
    "$.environment.name",
    "$.flags.f0.enabled",
    "$.flags.f1.value",
    "$.flags['f2'].variant",
    "$.flags.*.enabled",
    "$..name",
    "$..enabled",
    "$.bad[",
    "$",
    "$['flags']",
    "$.features[?@.enabled == true].name",
    "$.segments.*.rules[0].conditions[0].value",
];

const STRINGS: &[&str] = &[
    "",
    "0",
    "007",
    "-0",
    "1.50",
    "1e5",
    "+42",
    " 42 ",
    "4_2",
    "42.0",
    "nan",
    "inf",
    "-inf",
    "True",
    "false",
    "FALSE",
    "None",
    "1|0",
    "2|1",
    "0|0",
    "3|-1",
    "a|b",
    "|",
    "1.2.3:semver",
    "1.2.3-rc.1+b:semver",
    "1.2.3\n",
    ":semver",
    "(",
    "[",
    "a{2,1}",
    "^a.*$",
    "(?<=a+)b",
    "(a)\\1",
    "[1,2]",
    "[\"a\",1,true,null,[1]]",
    "[bad",
    "a, b",
    "50",
    "100",
    "99.99",
    "1e400",
    "٣",
    "ünïcödé",
    "\u{0}",
    "$.flags",
    "f0",
    "f1",
    "f2",
];

fn interesting_string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(STRINGS).prop_map(str::to_string),
        1 => "\\PC{0,12}",
        1 => "[0-9]{1,40}",
        1 => "-?[0-9]{1,4}\\.[0-9]{1,4}",
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        // Integers and floats beyond 64 bits, and spellings serde keeps as written.
        "-?[1-9][0-9]{19,60}".prop_map(|s| serde_json::from_str(&s).unwrap()),
        proptest::sample::select(&["1e400", "-1e400", "30.0", "3e1", "1e-7", "-0.0", "0.1"][..])
            .prop_map(|s| serde_json::from_str(s).unwrap()),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        interesting_string().prop_map(Value::String),
    ]
}

/// Arbitrary JSON with random nesting.
fn any_json() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((interesting_string(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Mostly `good`, sometimes arbitrary JSON in its place.
fn or_junk(good: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    prop_oneof![12 => good, 1 => any_json()]
}

fn feature_name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (0..4u8).prop_map(|i| format!("f{i}")),
        1 => interesting_string(),
    ]
}

/// Every operator, and names no operator has (two draws in seventeen).
fn operator_or_junk() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        15 => common::operator(),
        2 => proptest::sample::select(&["", "equal"][..]),
    ]
}

fn condition() -> BoxedStrategy<Value> {
    let value = prop_oneof![
        6 => interesting_string().prop_map(Value::String),
        1 => Just(Value::Null),
        1 => proptest::collection::vec(scalar(), 0..4).prop_map(Value::Array),
        1 => number(),
    ];
    // One in ten without a property, one in ten without a value.
    or_junk(common::condition(
        proptest::sample::select(PROPERTIES).prop_map(Value::from),
        operator_or_junk(),
        value,
        &["property", "value"],
        0..10usize,
    ))
    .boxed()
}

fn rule() -> BoxedStrategy<Value> {
    let rule_type = prop_oneof![
        5 => proptest::sample::select(&["ALL", "ANY", "NONE"][..]).prop_map(Value::from),
        1 => scalar(),
    ];
    let leaf = (
        rule_type.clone(),
        proptest::collection::vec(condition(), 0..4),
    )
        .prop_map(|(t, cs)| json!({"type": t, "conditions": cs}));
    or_junk(leaf.prop_recursive(3, 12, 3, move |inner| {
        (
            rule_type.clone(),
            proptest::collection::vec(condition(), 0..3),
            proptest::collection::vec(inner, 0..3),
        )
            .prop_map(|(t, cs, rs)| json!({"type": t, "conditions": cs, "rules": rs}))
    }))
    .boxed()
}

fn variants() -> impl Strategy<Value = Value> {
    let variant = (scalar(), number(), or_junk(number()), any::<Option<String>>())
        .prop_map(|(value, weight, priority, key)| {
            json!({"value": value, "weight": weight, "priority": priority, "key": key})
        });
    or_junk(proptest::collection::vec(or_junk(variant), 0..4).prop_map(Value::Array))
}

fn feature_ctx(name: impl Strategy<Value = String>) -> impl Strategy<Value = Value> {
    (
        name,
        or_junk(interesting_string().prop_map(Value::String)),
        any::<bool>(),
        scalar(),
        proptest::option::of(variants()),
        proptest::option::of(or_junk(number())),
        proptest::option::of(any_json()),
    )
        .prop_map(
            |(name, key, enabled, value, variants, priority, metadata)| {
                let mut f = json!({"key": key, "name": name, "enabled": enabled, "value": value});
                let map = f.as_object_mut().unwrap();
                if let Some(v) = variants {
                    map.insert("variants".into(), v);
                }
                if let Some(p) = priority {
                    map.insert("priority".into(), p);
                }
                if let Some(m) = metadata {
                    map.insert("metadata".into(), m);
                }
                f
            },
        )
}

fn segment() -> impl Strategy<Value = Value> {
    or_junk(
        (
            interesting_string(),
            interesting_string(),
            proptest::collection::vec(rule(), 0..3),
            proptest::collection::vec(or_junk(feature_ctx(feature_name())), 0..3),
            proptest::option::of(any_json()),
        )
            .prop_map(|(key, name, rules, overrides, metadata)| {
                let mut s =
                    json!({"key": key, "name": name, "rules": rules, "overrides": overrides});
                if let Some(m) = metadata {
                    s.as_object_mut().unwrap().insert("metadata".into(), m);
                }
                s
            }),
    )
}

fn traits() -> impl Strategy<Value = Value> {
    proptest::collection::vec(
        (
            prop_oneof![3 => proptest::sample::select(PROPERTIES).prop_map(str::to_string), 1 => interesting_string()],
            scalar(),
        ),
        0..5,
    )
    .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

fn identity() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => Just(json!({})),
        8 => (or_junk(interesting_string().prop_map(Value::String)), proptest::option::of(scalar()), or_junk(traits()))
            .prop_map(|(identifier, key, traits)| {
                let mut i = json!({"identifier": identifier, "traits": traits});
                if let Some(k) = key {
                    i.as_object_mut().unwrap().insert("key".into(), k);
                }
                i
            }),
        1 => any_json(),
    ]
}

fn context() -> impl Strategy<Value = Value> {
    let features = proptest::collection::vec(feature_ctx(feature_name()), 0..5).prop_map(|fs| {
        Value::Object(
            fs.into_iter()
                .map(|f| (f["name"].as_str().unwrap_or("x").to_string(), f))
                .collect(),
        )
    });
    let segments = proptest::collection::vec((interesting_string(), segment()), 0..5)
        .prop_map(|ss| Value::Object(ss.into_iter().collect()));
    let environment =
        or_junk((scalar(), scalar()).prop_map(|(key, name)| json!({"key": key, "name": name})));
    (
        environment,
        identity(),
        or_junk(features),
        or_junk(segments),
        proptest::option::of(any_json()),
    )
        .prop_map(|(environment, identity, features, segments, flags)| {
            let mut c = json!({"environment": environment, "identity": identity,
                               "features": features, "segments": segments});
            if let Some(f) = flags {
                c.as_object_mut().unwrap().insert("flags".into(), f);
            }
            c
        })
}

/// Evaluates (and explains) `ctx` for the context's own identity, built as the CLI builds it.
fn evaluate_context_identity(env: &Environment, ctx: &Value) {
    let raw = match ctx.get("identity") {
        Some(Value::Object(map)) if !map.is_empty() => Some(map),
        _ => None,
    };
    let Ok(traits) =
        flagpole_engine::traits_from_json(raw.and_then(|m| m.get("traits")), "$.identity")
    else {
        return;
    };
    let identity = raw.map(|map| Identity {
        identifier: map.get("identifier").map(TraitValue::from_json),
        key: map.get("key").map(TraitValue::from_json),
        traits: &traits,
        raw: Some(map),
    });
    if let Ok(result) = env.evaluate(identity.as_ref()) {
        let mut out = Vec::new();
        result.write_json(&mut out).unwrap();
        serde_json::from_slice::<Value>(&out).expect("result JSON must be valid");
    }
    let _ = flagpole_engine::explain::explain(env, identity.as_ref());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn contexts_never_panic(ctx in context(), ids in proptest::collection::vec((interesting_string(), traits(), proptest::option::of(interesting_string())), 0..3)) {
        if let Ok((env, _diagnostics)) = Environment::from_context(&ctx) {
            evaluate_context_identity(&env, &ctx);
            let _ = env.evaluate(None);
            let _ = env.own_flags();
            for (identifier, traits_json, key) in &ids {
                let traits: Vec<Trait<'_>> = traits_json
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| Trait { key: Cow::Borrowed(k.as_str()), value: TraitValue::from_json(v) })
                    .collect();
                let mut identity = Identity::new(identifier, &traits);
                identity.key = key.as_deref().map(|k| TraitValue::Str(Cow::Borrowed(k)));
                let _ = env.evaluate(Some(&identity));
                let _ = flagpole_engine::explain::explain(&env, Some(&identity));
            }
        }
    }

    #[test]
    fn arbitrary_json_contexts_never_panic(ctx in any_json()) {
        if let Ok((env, _)) = Environment::from_context(&ctx) {
            let _ = env.evaluate(None);
            let _ = env.own_flags();
        }
    }
}

const EXAMPLE: &str = include_str!("../../../examples/environment.json");

/// Replaces the `n`-th node (in pre-order, wrapping) of `doc` with `replacement`.
fn replace_nth(doc: &mut Value, n: &mut usize, replacement: &Value) -> bool {
    if *n == 0 {
        *doc = replacement.clone();
        return true;
    }
    *n -= 1;
    match doc {
        Value::Array(items) => items.iter_mut().any(|v| replace_nth(v, n, replacement)),
        Value::Object(map) => map.values_mut().any(|v| replace_nth(v, n, replacement)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn document_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = Environment::from_document_json(&bytes);
    }

    #[test]
    fn document_json_never_panics(doc in any_json()) {
        let text = serde_json::to_vec(&doc).unwrap();
        if let Ok(env) = Environment::from_document_json(&text) {
            let _ = env.evaluate(None);
        }
    }

    #[test]
    fn mutated_example_document_never_panics(
        mutations in proptest::collection::vec((0usize..2000, any_json()), 1..4),
        identifier in interesting_string(),
        traits_json in traits(),
    ) {
        let mut doc: Value = serde_json::from_str(EXAMPLE).unwrap();
        for (index, replacement) in &mutations {
            let mut n = *index;
            replace_nth(&mut doc, &mut n, replacement);
        }
        let bytes = serde_json::to_vec(&doc).unwrap();
        if let Ok(env) = Environment::from_document_json(&bytes) {
            let traits: Vec<Trait<'_>> = traits_json
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| Trait { key: Cow::Borrowed(k.as_str()), value: TraitValue::from_json(v) })
                .collect();
            let identity = Identity::new(&identifier, &traits);
            let _ = env.evaluate(Some(&identity));
            let _ = env.evaluate(None);
        }
    }
}
