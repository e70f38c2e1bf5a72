//! A flag's targeting rule: compiled once with the set's datalogic engine (our operators
//! registered, `ops`), run per evaluation over the caller's context plus `$flagd`
//! (`flagKey`, `timestamp`) and `targetingKey`, built in a per-call arena.

use std::borrow::Cow;

use datalogic_rs::bumpalo::Bump;
use datalogic_rs::datavalue::NumberValue;
use datalogic_rs::{DataValue, Logic};
use flagpole_engine::python::{float_repr, write_str_of_json};
use serde_json::Value;

use crate::context::Context;
use crate::ops;

/// The datalogic engine of a flag set.
pub(crate) struct Engine(datalogic_rs::Engine);

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Engine")
    }
}

impl Default for Engine {
    fn default() -> Engine {
        Engine::new()
    }
}

/// A compiled rule, or why it cannot run (the reference raises `PARSE_ERROR` on evaluation:
/// an unknown operation, a rule that is not an object).
pub(crate) enum Targeting {
    Rule(Logic),
    Invalid(String),
}

impl std::fmt::Debug for Targeting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Targeting::Rule(_) => f.write_str("Rule"),
            Targeting::Invalid(why) => write!(f, "Invalid({why})"),
        }
    }
}

/// What a rule said.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// `null`: the default variant applies.
    NoVariant,
    /// A variant name (a boolean result names "true"/"false"; any other value its Python
    /// `str()`, as the reference names it).
    Variant(String),
    /// The rule could not run: `PARSE_ERROR`.
    Invalid(String),
    /// The rule raised: `GENERAL`.
    Failed(String),
}

impl Engine {
    pub(crate) fn new() -> Engine {
        Engine(ops::engine())
    }

    pub(crate) fn compile(&self, rule: &Value) -> Targeting {
        if !rule.is_object() {
            return Targeting::Invalid(format!("Invalid 'targeting' value in flag: {rule}"));
        }
        let rewritten = ops::rewrite(rule);
        match self.0.compile(rewritten.to_string().as_str()) {
            Ok(logic) => Targeting::Rule(logic),
            Err(e) => Targeting::Invalid(format!("Invalid targeting {rule}: {e}")),
        }
    }

    pub(crate) fn run(
        &self,
        targeting: &Targeting,
        flag_key: &str,
        context: &Context<'_>,
    ) -> Outcome {
        let rule = match targeting {
            Targeting::Rule(rule) => rule,
            Targeting::Invalid(why) => return Outcome::Invalid(why.clone()),
        };
        let arena = Bump::new();
        let data = data(&arena, flag_key, context);
        match self.0.evaluate(rule, data, &arena) {
            Ok(result) => variant_of(result),
            // An operation nobody knows is found when reached, as the reference finds it
            // (its `ReferenceError`, a `PARSE_ERROR`).
            Err(e) if e.tag() == "InvalidOperator" => Outcome::Invalid(e.to_string()),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }
}

/// The rule's input: the caller's context with `$flagd` and `targetingKey` set by us.
fn data<'a>(arena: &'a Bump, flag_key: &str, context: &Context<'_>) -> &'a DataValue<'a> {
    let attributes = context.attributes;
    let mut members: Vec<(&'a str, DataValue<'a>)> = Vec::with_capacity(attributes.len() + 2);
    for (key, value) in attributes {
        if key != "$flagd" && key != "targetingKey" {
            members.push((arena.alloc_str(key), convert(arena, value)));
        }
    }
    let flagd = arena.alloc_slice_fill_iter([
        ("flagKey", DataValue::String(arena.alloc_str(flag_key))),
        (
            "timestamp",
            DataValue::from_i64(i64::try_from(context.now_unix_secs).unwrap_or(i64::MAX)),
        ),
    ]);
    members.push(("$flagd", DataValue::Object(flagd)));
    let targeting_key = match attributes.get("targetingKey") {
        Some(value) => convert(arena, value),
        None => DataValue::Null,
    };
    members.push(("targetingKey", targeting_key));
    arena.alloc(DataValue::Object(arena.alloc_slice_fill_iter(members)))
}

fn convert<'a>(arena: &'a Bump, value: &Value) -> DataValue<'a> {
    match value {
        Value::Null => DataValue::Null,
        Value::Bool(b) => DataValue::Bool(*b),
        // A number written with a fraction or exponent is a Python float, whole or not.
        Value::Number(n) if is_float_text(n) => {
            DataValue::Number(NumberValue::Float(n.as_f64().unwrap_or(f64::NAN)))
        }
        Value::Number(n) => match n.as_i64() {
            Some(i) => DataValue::from_i64(i),
            None => DataValue::Number(NumberValue::Float(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => DataValue::String(arena.alloc_str(s)),
        Value::Array(items) => {
            DataValue::Array(arena.alloc_slice_fill_iter(items.iter().map(|v| convert(arena, v))))
        }
        Value::Object(map) => DataValue::Object(
            arena.alloc_slice_fill_iter(
                map.iter()
                    .map(|(k, v)| (&*arena.alloc_str(k), convert(arena, v))),
            ),
        ),
    }
}

/// Whether JSON spelt the number as a float (`1.0`, `1e3`): how Python's `json` types it.
fn is_float_text(n: &serde_json::Number) -> bool {
    n.to_string().contains(['.', 'e', 'E'])
}

fn back(value: &DataValue<'_>) -> Value {
    match value {
        DataValue::Null => Value::Null,
        DataValue::Bool(b) => Value::Bool(*b),
        DataValue::Number(NumberValue::Integer(i)) => Value::from(*i),
        DataValue::Number(NumberValue::Float(f)) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        DataValue::String(s) => Value::String((*s).to_owned()),
        DataValue::Array(items) => Value::Array(items.iter().map(back).collect()),
        DataValue::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| ((*k).to_owned(), back(v)))
                .collect(),
        ),
        #[allow(
            unreachable_patterns,
            reason = "variants of datalogic's optional features"
        )]
        _ => Value::Null,
    }
}

fn variant_of(result: &DataValue<'_>) -> Outcome {
    let name: Cow<'_, str> = match result {
        DataValue::Null => return Outcome::NoVariant,
        DataValue::Bool(true) => Cow::Borrowed("true"),
        DataValue::Bool(false) => Cow::Borrowed("false"),
        DataValue::String(s) => Cow::Borrowed(s),
        DataValue::Number(NumberValue::Integer(i)) => Cow::Owned(i.to_string()),
        DataValue::Number(NumberValue::Float(f)) => {
            let mut out = String::new();
            float_repr(*f, &mut out);
            Cow::Owned(out)
        }
        other => {
            let mut out = String::new();
            write_str_of_json(&back(other), &mut out);
            Cow::Owned(out)
        }
    };
    Outcome::Variant(name.into_owned())
}
