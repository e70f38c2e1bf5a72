//! Shared helpers for the engine's integration tests: evaluate a context through the public API
//! exactly as `flagpole eval context` does, and a one-condition context builder.
#![allow(dead_code)]

use flagpole_engine::{Environment, Identity, TraitValue};
use serde_json::{json, Value};

/// What evaluating a context gave.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The result JSON, parsed back.
    Ok(Value),
    /// `Environment::from_context` (or the identity's shape) rejected the input.
    Input(String),
    /// `Environment::evaluate` returned `Err`: the reference raises.
    Raises(String),
}

/// Compiles `ctx`, builds its identity the way the CLI does and evaluates it.
pub fn eval(ctx: &Value) -> Outcome {
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
pub fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("bad JSON in test table {text:?}: {e}"))
}

/// Checks one table case: `expected` is the reference's result as JSON text, or `"ERR"` when the
/// reference raises. Returns a description of the mismatch, if any.
pub fn check(name: &str, ctx: &Value, expected: &str) -> Option<String> {
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
pub fn run_cases(cases: &[(&str, Value, &str)]) {
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
pub enum Exp {
    /// The segment matches: the override wins.
    M,
    /// The segment does not match.
    N,
    /// The reference raises.
    E,
}

/// The reference's result for [`cond_ctx`] when the segment matches.
pub const MATCHED: &str = r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=s","value":"on","variant":null}},"segments":[{"name":"s"}]}"#;
/// The reference's result for [`cond_ctx`] when the segment does not match.
pub const UNMATCHED: &str = r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"off","variant":null}},"segments":[]}"#;

/// A context with one feature `f` (off) and one segment `s` (key `"1"`) whose single condition
/// `{property, operator, value}` turns `f` on. The identity is `user` with `traits`, or absent
/// when `traits` is `None`.
pub fn cond_ctx(traits: Option<Value>, property: &str, operator: &str, value: Value) -> Value {
    let identity = match traits {
        Some(traits) => json!({"identifier": "user", "traits": traits}),
        None => Value::Null,
    };
    json!({
        "environment": {"key": "env", "name": "Env"},
        "identity": identity,
        "features": {"f": {"key": "1", "name": "f", "enabled": false, "value": "off"}},
        "segments": {"1": {
            "key": "1", "name": "s",
            "rules": [{"type": "ALL", "conditions": [
                {"property": property, "operator": operator, "value": value}
            ]}],
            "overrides": [{"key": "1", "name": "f", "enabled": true, "value": "on"}]
        }}
    })
}

/// One row of a condition table: traits (JSON text), property, operator, value (JSON text),
/// expected verdict.
pub type Row = (&'static str, &'static str, &'static str, &'static str, Exp);

/// Runs a condition table (with an identity when `with_identity`), failing with every mismatch.
pub fn run_rows(rows: &[Row], with_identity: bool) {
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
