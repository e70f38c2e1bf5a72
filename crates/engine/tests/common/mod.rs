//! Shared helpers for the engine's integration tests: evaluate a context through the public API
//! exactly as `flagpole eval context` does, a one-condition context builder, and for the
//! property tests (fuzz.rs, cheap_first.rs, per_feature.rs) one list of the operators and one
//! strategy for a segment condition.
#![allow(
    dead_code,
    reason = "shared by several test files, each using a part of it"
)]

use flagpole_engine::{Environment, Identity, TraitValue};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// What evaluating a context gave.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    /// The result JSON, parsed back.
    Ok(Value),
    /// `Environment::from_context` (or the identity's shape) rejected the input.
    Input(String),
    /// `Environment::evaluate` returned `Err`: the reference raises.
    Raises(String),
    /// The engine panicked (never acceptable).
    Panicked(String),
}

/// Compiles `ctx`, builds its identity the way the CLI does and evaluates it. A panic is caught
/// and reported as [`Outcome::Panicked`].
pub(crate) fn eval(ctx: &Value) -> Outcome {
    std::panic::catch_unwind(|| eval_unguarded(ctx)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Outcome::Panicked(message)
    })
}

fn eval_unguarded(ctx: &Value) -> Outcome {
    let (env, _diagnostics) = match Environment::from_context(ctx) {
        Ok(ok) => ok,
        Err(e) => return Outcome::Input(e.to_string()),
    };
    let raw_identity = match ctx.get("identity") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) if map.is_empty() => None,
        Some(Value::Object(map)) => Some(map),
        Some(_) => return Outcome::Input("$.identity: must be an object or null".into()),
    };
    let traits = match flagpole_engine::traits_from_json(
        raw_identity.and_then(|m| m.get("traits")),
        "$.identity",
    ) {
        Ok(t) => t,
        Err(e) => return Outcome::Input(e.to_string()),
    };
    let identity = raw_identity.map(|map| Identity {
        identifier: map.get("identifier").map(TraitValue::from_json),
        key: map.get("key").map(TraitValue::from_json),
        traits: &traits,
        raw: Some(map),
    });
    match env.evaluate(identity.as_ref()) {
        Ok(result) => {
            let mut out = Vec::new();
            result.write_json(&mut out).expect("write_json");
            Outcome::Ok(serde_json::from_slice(&out).expect("write_json wrote invalid JSON"))
        }
        Err(e) => Outcome::Raises(e.to_string()),
    }
}

/// Parses JSON text (big integers and `1e400` survive: `arbitrary_precision` is on).
pub(crate) fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("bad JSON in test table {text:?}: {e}"))
}

/// Checks one table case: `expected` is the reference's result as JSON text, or `"ERR"` when the
/// reference raises. Returns a description of the mismatch, if any.
pub(crate) fn check(name: &str, ctx: &Value, expected: &str) -> Option<String> {
    let got = eval(ctx);
    let ok = match (&got, expected) {
        (Outcome::Raises(_), "ERR") => true,
        (Outcome::Ok(v), e) if e != "ERR" => *v == parse(e),
        _ => false,
    };
    (!ok).then(|| {
        format!("{name}: expected (Python) {expected}\n    got {got:?}\n    context {ctx}")
    })
}

/// Runs a table of `(name, context, expected)` and fails listing every mismatch.
pub(crate) fn run_cases(cases: &[(&str, Value, &str)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(name, ctx, expected)| check(name, ctx, expected))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree with the reference:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Expected verdict of a one-condition case (taken from the reference).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Exp {
    /// The segment matches: the override wins.
    M,
    /// The segment does not match.
    N,
    /// The reference raises.
    E,
}

/// The reference's result for [`cond_ctx`] when the segment matches.
pub(crate) const MATCHED: &str = r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=s","value":"on","variant":null}},"segments":[{"name":"s"}]}"#;
/// The reference's result for [`cond_ctx`] when the segment does not match.
pub(crate) const UNMATCHED: &str = r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"off","variant":null}},"segments":[]}"#;

/// A context with one feature `f` (off) and one segment `s` (key `"1"`) whose single condition
/// `{property, operator, value}` turns `f` on. The identity is `user` with `traits`, or absent
/// when `traits` is `None`.
pub(crate) fn cond_ctx(
    traits: Option<Value>,
    property: &str,
    operator: &str,
    value: Value,
) -> Value {
    let identity = match traits {
        Some(traits) => json!({"identifier": "user", "traits": traits}),
        None => Value::Null,
    };
    ident_ctx(identity, "1", property, operator, value)
}

/// [`cond_ctx`] with the whole `identity` object given, and the segment's hashing `key`.
pub(crate) fn ident_ctx(
    identity: Value,
    segment_key: &str,
    property: &str,
    operator: &str,
    value: Value,
) -> Value {
    json!({
        "environment": {"key": "env", "name": "Env"},
        "identity": identity,
        "features": {"f": {"key": "1", "name": "f", "enabled": false, "value": "off"}},
        "segments": {"1": {
            "key": segment_key, "name": "s",
            "rules": [{"type": "ALL", "conditions": [
                {"property": property, "operator": operator, "value": value}
            ]}],
            "overrides": [{"key": "1", "name": "f", "enabled": true, "value": "on"}]
        }}
    })
}

/// A context with one multivariate feature `mv` (hashing key `feature_key`, control value
/// `"control"`) and no segments; the identity has the explicit hashing key `identity_key`, or
/// there is no identity.
pub(crate) fn mv_ctx(feature_key: &str, identity_key: Option<&str>, variants: Value) -> Value {
    let identity = match identity_key {
        Some(key) => json!({"identifier": "user", "key": key}),
        None => Value::Null,
    };
    json!({
        "environment": {"key": "env", "name": "Env"},
        "identity": identity,
        "features": {"mv": {
            "key": feature_key, "name": "mv", "enabled": true, "value": "control",
            "variants": variants
        }},
        "segments": {}
    })
}

/// One row of a multivariate table: feature key, identity key (`None`: no identity), variants
/// (JSON text), the reference's result (JSON text).
pub(crate) type MvRow = (
    &'static str,
    Option<&'static str>,
    &'static str,
    &'static str,
);

/// Runs a multivariate table, failing with every mismatch.
pub(crate) fn run_mv_rows(rows: &[MvRow]) {
    let cases: Vec<(String, Value, &str)> = rows
        .iter()
        .map(|&(feature_key, identity_key, variants, expected)| {
            let name = format!("mv key={feature_key:?} identity={identity_key:?} {variants}");
            (
                name,
                mv_ctx(feature_key, identity_key, parse(variants)),
                expected,
            )
        })
        .collect();
    let cases: Vec<(&str, Value, &str)> = cases
        .iter()
        .map(|(n, c, e)| (n.as_str(), c.clone(), *e))
        .collect();
    run_cases(&cases);
}

/// One row of a condition table: traits (JSON text), property, operator, value (JSON text),
/// expected verdict.
pub(crate) type Row = (&'static str, &'static str, &'static str, &'static str, Exp);

/// Runs a condition table (with an identity when `with_identity`), failing with every mismatch.
pub(crate) fn run_rows(rows: &[Row], with_identity: bool) {
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|&(traits, property, operator, value, exp)| {
            let ctx = cond_ctx(
                with_identity.then(|| parse(traits)),
                property,
                operator,
                parse(value),
            );
            let expected = match exp {
                Exp::M => MATCHED,
                Exp::N => UNMATCHED,
                Exp::E => "ERR",
            };
            let name = format!("{operator} {property:?} {value} with traits {traits}");
            check(&name, &ctx, expected)
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows disagree with the reference:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// One row of an identity table: the identity object (JSON text), segment key, property,
/// operator, value (JSON text), expected verdict.
pub(crate) type IdRow = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Exp,
);

/// Runs an identity table through [`ident_ctx`], failing with every mismatch.
pub(crate) fn run_id_rows(rows: &[IdRow]) {
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|&(identity, segment_key, property, operator, value, exp)| {
            let ctx = ident_ctx(
                parse(identity),
                segment_key,
                property,
                operator,
                parse(value),
            );
            let expected = match exp {
                Exp::M => MATCHED,
                Exp::N => UNMATCHED,
                Exp::E => "ERR",
            };
            let name = format!(
                "{operator} {property:?} {value} (segment key {segment_key:?}) for {identity}"
            );
            check(&name, &ctx, expected)
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows disagree with the reference:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// Every operator a segment condition may name.
pub(crate) const OPERATORS: &[&str] = &[
    "EQUAL",
    "NOT_EQUAL",
    "GREATER_THAN",
    "GREATER_THAN_INCLUSIVE",
    "LESS_THAN",
    "LESS_THAN_INCLUSIVE",
    "CONTAINS",
    "NOT_CONTAINS",
    "REGEX",
    "PERCENTAGE_SPLIT",
    "MODULO",
    "IS_SET",
    "IS_NOT_SET",
    "IN",
    "NOT_IN",
];

/// Any of [`OPERATORS`].
pub(crate) fn operator() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(OPERATORS)
}

/// A segment condition `{"property", "operator", "value"}` of the three strategies, the key
/// `missing[i]` left out when `pick` draws `i` (a larger draw leaves every key in).
pub(crate) fn condition(
    property: impl Strategy<Value = Value>,
    operator: impl Strategy<Value = &'static str>,
    value: impl Strategy<Value = Value>,
    missing: &'static [&'static str],
    pick: impl Strategy<Value = usize>,
) -> impl Strategy<Value = Value> {
    (property, operator, value, pick).prop_map(move |(property, operator, value, pick)| {
        let left_out = missing.get(pick).copied();
        let keys = [
            ("property", property),
            ("operator", Value::from(operator)),
            ("value", value),
        ];
        Value::Object(
            keys.into_iter()
                .filter(|(key, _)| Some(*key) != left_out)
                .map(|(key, v)| (key.to_string(), v))
                .collect::<Map<_, _>>(),
        )
    })
}
