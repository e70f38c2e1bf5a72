//! A flag's targeting rule: compiled once with the set's datalogic engine (our operators
//! registered, `ops`), run per evaluation over the caller's context plus `$flagd`
//! (`flagKey`, `timestamp`) and `targetingKey`: the context converted once per call (`Input`),
//! each rule's input and temporaries in an arena of its own.

use std::borrow::Cow;
use std::cell::OnceCell;

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

    pub(crate) fn run(&self, targeting: &Targeting, flag_key: &str, input: &Input<'_>) -> Outcome {
        let rule = match targeting {
            Targeting::Rule(rule) => rule,
            Targeting::Invalid(why) => return Outcome::Invalid(why.clone()),
        };
        let arena = Bump::new();
        let data = input.prepared().data(&arena, flag_key);
        match self.0.evaluate(rule, data, &arena) {
            Ok(result) => variant_of(result),
            // An operation nobody knows is found when reached, as the reference finds it
            // (its `ReferenceError`, a `PARSE_ERROR`).
            Err(e) if e.tag() == "InvalidOperator" => Outcome::Invalid(e.to_string()),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }
}

/// What a call's rules read: the caller's context, converted for the rule engine the first time
/// a rule runs and then shared by every flag the call evaluates (only `$flagd.flagKey` differs
/// between flags), so a bulk evaluation converts the context once, not once per flag.
pub(crate) struct Input<'c> {
    arena: &'c Bump,
    context: &'c Context<'c>,
    prepared: OnceCell<Prepared<'c>>,
}

impl<'c> Input<'c> {
    /// `arena` holds the converted context for as long as the call lasts.
    pub(crate) fn new(arena: &'c Bump, context: &'c Context<'c>) -> Input<'c> {
        Input {
            arena,
            context,
            prepared: OnceCell::new(),
        }
    }

    fn prepared(&self) -> &Prepared<'c> {
        self.prepared
            .get_or_init(|| Prepared::new(self.arena, self.context))
    }
}

/// The caller's context in the rule engine's values: its attributes but `$flagd` and
/// `targetingKey` (both set by us), the targeting key, the time.
struct Prepared<'c> {
    attributes: Vec<(&'c str, DataValue<'c>)>,
    targeting_key: DataValue<'c>,
    timestamp: DataValue<'c>,
}

impl<'c> Prepared<'c> {
    fn new(arena: &'c Bump, context: &Context<'_>) -> Prepared<'c> {
        let attributes = context
            .attributes
            .iter()
            .filter(|(key, _)| *key != "$flagd" && *key != "targetingKey")
            .map(|(key, value)| (&*arena.alloc_str(key), convert(arena, value)))
            .collect();
        let targeting_key = match context.attributes.get("targetingKey") {
            Some(value) => convert(arena, value),
            None => DataValue::Null,
        };
        let timestamp =
            DataValue::from_i64(i64::try_from(context.now_unix_secs).unwrap_or(i64::MAX));
        Prepared {
            attributes,
            targeting_key,
            timestamp,
        }
    }

    /// One flag's rule input: the shared values (copied shallowly) with `$flagd` for `flag_key`.
    fn data<'a>(&self, arena: &'a Bump, flag_key: &str) -> &'a DataValue<'a>
    where
        'c: 'a,
    {
        let flagd = arena.alloc_slice_fill_iter([
            ("flagKey", DataValue::String(arena.alloc_str(flag_key))),
            ("timestamp", self.timestamp),
        ]);
        let n = self.attributes.len();
        let members = arena.alloc_slice_fill_with(n + 2, |i| match i.cmp(&n) {
            std::cmp::Ordering::Less => self.attributes[i],
            std::cmp::Ordering::Equal => ("$flagd", DataValue::Object(flagd)),
            std::cmp::Ordering::Greater => ("targetingKey", self.targeting_key),
        });
        arena.alloc(DataValue::Object(members))
    }
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
        // An empty list or object gets an address of its own (an empty slice of a one-item
        // allocation): empty slices otherwise share one dangling address, and the reference
        // compares lists and objects by identity (`ops::compare::loose_eq`).
        Value::Array(items) if items.is_empty() => {
            DataValue::Array(&arena.alloc_slice_fill_iter([DataValue::Null])[..0])
        }
        Value::Array(items) => {
            DataValue::Array(arena.alloc_slice_fill_iter(items.iter().map(|v| convert(arena, v))))
        }
        Value::Object(map) if map.is_empty() => {
            DataValue::Object(&arena.alloc_slice_fill_iter([("", DataValue::Null)])[..0])
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
