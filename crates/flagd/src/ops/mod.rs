//! The operators a flagd targeting rule may use beyond what datalogic-rs answers as the
//! reference does, registered as datalogic custom operators.
//!
//! datalogic's built-ins are JavaScript's JSONLogic; the reference (flagd's Python evaluator,
//! `openfeature-flagd-core` on panzi-json-logic) coerces as Python does. Built-in names cannot
//! be overridden, so [`rewrite`] renames, at compile time, every operation whose semantics
//! differ to one of ours (`==` → `flagd ==`); the control flow (`if`, `and`, `or`), `var`,
//! `missing`, `merge` and the array operations stay datalogic's. Every custom operation
//! receives evaluated arguments, as the reference's do.

mod arith;
mod compare;
mod fractional;
mod semver;
mod strings;
pub(crate) mod values;

use datalogic_rs::bumpalo::Bump;
use datalogic_rs::datavalue::NumberValue;
use datalogic_rs::operator::EvalContext;
use datalogic_rs::{CustomOperator, DataValue, Engine, Error, Result};
use serde_json::{Map, Value};

pub use fractional::bucket;

use compare::Order;
use values::Num;

/// Operations of ours, by the name they have in a rule and in the engine.
#[derive(Debug, Clone, Copy)]
enum Op {
    Eq,
    Ne,
    StrictEq,
    StrictNe,
    Cmp(Order),
    Not,
    Truthy,
    Plus,
    Minus,
    Times,
    Divide,
    Modulo,
    Min,
    Max,
    In,
    Cat,
    Substr,
    Fractional,
    SemVer,
    StartsWith,
    EndsWith,
}

/// `(name in a rule, name registered, operation)`; flagd's own operations keep their names.
const OPS: &[(&str, &str, Op)] = &[
    ("==", "flagd ==", Op::Eq),
    ("!=", "flagd !=", Op::Ne),
    ("===", "flagd ===", Op::StrictEq),
    ("!==", "flagd !==", Op::StrictNe),
    ("<", "flagd <", Op::Cmp(Order::Lt)),
    (">", "flagd >", Op::Cmp(Order::Gt)),
    ("<=", "flagd <=", Op::Cmp(Order::Le)),
    (">=", "flagd >=", Op::Cmp(Order::Ge)),
    ("!", "flagd !", Op::Not),
    ("!!", "flagd !!", Op::Truthy),
    ("+", "flagd +", Op::Plus),
    ("-", "flagd -", Op::Minus),
    ("*", "flagd *", Op::Times),
    ("/", "flagd /", Op::Divide),
    ("%", "flagd %", Op::Modulo),
    ("min", "flagd min", Op::Min),
    ("max", "flagd max", Op::Max),
    ("in", "flagd in", Op::In),
    ("cat", "flagd cat", Op::Cat),
    ("substr", "flagd substr", Op::Substr),
    ("fractional", "fractional", Op::Fractional),
    ("sem_ver", "sem_ver", Op::SemVer),
    ("starts_with", "starts_with", Op::StartsWith),
    ("ends_with", "ends_with", Op::EndsWith),
];

/// The engine every rule of a flag file is compiled with and evaluated by.
pub(crate) fn engine() -> Engine {
    OPS.iter()
        .fold(Engine::builder(), |b, &(_, name, op)| {
            b.add_operator(name, Custom(op))
        })
        .build()
}

/// A rule with each operation of ours renamed to its registered name. Only single-key objects
/// are operations (the reference takes any other object as data).
pub(crate) fn rewrite(rule: &Value) -> Value {
    match rule {
        Value::Array(items) => Value::Array(items.iter().map(rewrite).collect()),
        Value::Object(map) if map.len() == 1 => {
            let (op, args) = map.iter().next().expect("one member");
            if let Some(rule) = var_with_default(op, args) {
                return rule;
            }
            let name = OPS
                .iter()
                .find(|(rule_name, _, _)| rule_name == op)
                .map_or(op.as_str(), |(_, name, _)| name);
            let mut out = Map::with_capacity(1);
            out.insert(name.to_owned(), rewrite(args));
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// `{"var": [path, default]}`: the reference answers the default for a `null` as for a
/// missing value, datalogic only for a missing one; so the rule becomes "the default when the
/// value is `null`" (both sides are pure, so reading the path twice changes nothing).
fn var_with_default(op: &str, args: &Value) -> Option<Value> {
    let Value::Array(items) = args else {
        return None;
    };
    if op != "var" || items.len() < 2 {
        return None;
    }
    let read = serde_json::json!({"var": [rewrite(&items[0])]});
    Some(serde_json::json!({"if": [
        {"flagd ===": [read.clone(), null]},
        rewrite(&items[1]),
        read,
    ]}))
}

struct Custom(Op);

fn number<'a>(n: Num, arena: &'a Bump) -> &'a DataValue<'a> {
    arena.alloc(match n {
        Num::Int(i) => DataValue::from_i64(i),
        // Kept a float even when whole: Python's `str()` of it differs (`2.0`).
        Num::Float(f) => DataValue::Number(NumberValue::Float(f)),
    })
}

fn boolean<'a>(b: bool, arena: &'a Bump) -> &'a DataValue<'a> {
    arena.alloc(DataValue::Bool(b))
}

fn text<'a>(s: &str, arena: &'a Bump) -> &'a DataValue<'a> {
    arena.alloc(DataValue::String(arena.alloc_str(s)))
}

fn raised(message: &'static str) -> Error {
    Error::custom_message(message)
}

impl CustomOperator for Custom {
    fn evaluate<'a>(
        &self,
        args: &[&'a DataValue<'a>],
        ctx: &mut EvalContext<'_, 'a>,
        arena: &'a Bump,
    ) -> Result<&'a DataValue<'a>> {
        let a = args.first().copied().unwrap_or(&DataValue::Null);
        let b = args.get(1).copied().unwrap_or(&DataValue::Null);
        let optional = |v: Option<bool>| -> &'a DataValue<'a> {
            match v {
                Some(b) => boolean(b, arena),
                None => arena.alloc(DataValue::Null),
            }
        };
        Ok(match self.0 {
            Op::Eq => boolean(compare::loose_eq(a, b), arena),
            Op::Ne => boolean(!compare::loose_eq(a, b), arena),
            Op::StrictEq => boolean(compare::strict_eq(a, b), arena),
            Op::StrictNe => boolean(!compare::strict_eq(a, b), arena),
            Op::Cmp(order) => {
                let holds = match args.get(2) {
                    None | Some(DataValue::Null) => order.holds(a, b),
                    Some(c) => order.holds(a, b) && order.holds(b, c),
                };
                boolean(holds, arena)
            }
            Op::Not => boolean(!values::truthy(a), arena),
            Op::Truthy => boolean(values::truthy(a), arena),
            Op::Plus => number(arith::plus(args), arena),
            Op::Minus => number(arith::minus(args), arena),
            Op::Times => number(arith::times(args), arena),
            Op::Divide => number(arith::divide(args).map_err(|e| raised(e.0))?, arena),
            Op::Modulo => number(arith::modulo(args).map_err(|e| raised(e.0))?, arena),
            Op::Min => number(arith::extreme(args, true), arena),
            Op::Max => number(arith::extreme(args, false), arena),
            Op::In => boolean(strings::within(args), arena),
            Op::Cat => text(&strings::cat(args), arena),
            Op::Substr => text(&strings::substr(args), arena),
            Op::Fractional => {
                match fractional::fractional(args, ctx.root_input()).map_err(raised)? {
                    Some(v) => v,
                    None => arena.alloc(DataValue::Null),
                }
            }
            Op::SemVer => optional(semver::sem_ver(args)),
            Op::StartsWith => optional(strings::affix(args, true)),
            Op::EndsWith => optional(strings::affix(args, false)),
        })
    }
}
