//! Typed values as the reference sees them after `json.loads`: the Python kinds that decide how a
//! condition compares (`None`, `bool`, `int`, `float`, `str`) and the coercion the reference applies
//! to every value a condition reads (`map_any_value_to_context_value`).
//!
//! Numbers keep the kind their JSON spelling gives them (`30` is an int, `30.0` a float), ints keep
//! arbitrary precision, and nothing here goes through a JSON tree on the hot path.

use std::borrow::Cow;

use serde_json::{Number, Value};

use crate::error::{EvalError, PyErrorKind};
use crate::python::number::{float_repr, PyInt};
use crate::python::repr::write_str_of_json;

/// CPython refuses to convert strings of more than this many digits to `int` (`ValueError`).
const PY_INT_MAX_STR_DIGITS: usize = 4300;

/// A value a condition compares against: the reference's `ContextValue`, already coerced.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(PyInt),
    Float(f64),
    Str(Cow<'a, str>),
}

/// A trait value as supplied by a caller, before coercion. Arrays and objects are not valid trait
/// values in the schema, but the reference turns them into their Python `str()`, so they are kept.
#[derive(Clone, Debug, PartialEq)]
pub enum TraitValue<'a> {
    Null,
    Bool(bool),
    Int(PyInt),
    Float(f64),
    Str(Cow<'a, str>),
    Json(Cow<'a, Value>),
}

/// A JSON number typed by its spelling.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonNumber {
    Int(PyInt),
    Float(f64),
}

/// Types a JSON number the way Python's `json.loads` does: no `.`/exponent means `int` (of any
/// size), anything else a `float` (overflowing to infinity).
pub fn classify_number(n: &Number) -> JsonNumber {
    if let Some(i) = n.as_i64() {
        return JsonNumber::Int(PyInt::Small(i));
    }
    let text = n.as_str();
    if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        JsonNumber::Float(text.parse::<f64>().unwrap_or(f64::NAN))
    } else {
        match text.parse::<num_bigint::BigInt>() {
            Ok(big) => JsonNumber::Int(PyInt::from_bigint(big)),
            Err(_) => JsonNumber::Float(f64::NAN),
        }
    }
}

impl<'a> TraitValue<'a> {
    /// Borrows a JSON value as a trait value (strings and containers are borrowed, not copied).
    pub fn from_json(v: &'a Value) -> TraitValue<'a> {
        match v {
            Value::Null => TraitValue::Null,
            Value::Bool(b) => TraitValue::Bool(*b),
            Value::Number(n) => match classify_number(n) {
                JsonNumber::Int(i) => TraitValue::Int(i),
                JsonNumber::Float(f) => TraitValue::Float(f),
            },
            Value::String(s) => TraitValue::Str(Cow::Borrowed(s)),
            Value::Array(_) | Value::Object(_) => TraitValue::Json(Cow::Borrowed(v)),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, TraitValue::Null)
    }

    /// Python truthiness.
    pub fn is_truthy(&self) -> bool {
        match self {
            TraitValue::Null => false,
            TraitValue::Bool(b) => *b,
            TraitValue::Int(i) => !i.is_zero(),
            TraitValue::Float(f) => *f != 0.0,
            TraitValue::Str(s) => !s.is_empty(),
            TraitValue::Json(v) => json_truthy(v),
        }
    }

    /// `map_any_value_to_context_value`: numeric-looking strings become numbers, containers become
    /// their Python `str()`.
    pub fn coerce(&self) -> Result<Scalar<'_>, EvalError> {
        Ok(match self {
            TraitValue::Null => Scalar::Null,
            TraitValue::Bool(b) => Scalar::Bool(*b),
            TraitValue::Int(i) => Scalar::Int(i.clone()),
            TraitValue::Float(f) => Scalar::Float(*f),
            TraitValue::Str(s) => coerce_str(s)?,
            TraitValue::Json(v) => {
                let mut out = String::new();
                write_str_of_json(v, &mut out);
                Scalar::Str(Cow::Owned(out))
            }
        })
    }

    /// Appends Python `str()` of the raw value (used for hashing keys and the implicit identity key).
    pub fn write_pystr(&self, out: &mut String) {
        match self {
            TraitValue::Null => out.push_str("None"),
            TraitValue::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
            TraitValue::Int(i) => {
                use std::fmt::Write;
                let _ = write!(out, "{i}");
            }
            TraitValue::Float(f) => float_repr(*f, out),
            TraitValue::Str(s) => out.push_str(s),
            TraitValue::Json(v) => write_str_of_json(v, out),
        }
    }
}

/// Coerces a JSON value the way the reference coerces whatever a JSONPath query found.
pub fn coerce_json(v: &Value) -> Result<Scalar<'_>, EvalError> {
    TraitValue::from_json(v).coerce().map(|s| match s {
        // Re-borrow from `v` rather than from the temporary trait value.
        Scalar::Str(Cow::Borrowed(_)) => match v {
            Value::String(s) => Scalar::Str(Cow::Borrowed(s.as_str())),
            _ => unreachable!("borrowed strings only come from JSON strings"),
        },
        Scalar::Str(Cow::Owned(s)) => Scalar::Str(Cow::Owned(s)),
        Scalar::Null => Scalar::Null,
        Scalar::Bool(b) => Scalar::Bool(b),
        Scalar::Int(i) => Scalar::Int(i),
        Scalar::Float(f) => Scalar::Float(f),
    })
}

/// Python truthiness of a JSON value.
pub fn json_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => match classify_number(n) {
            JsonNumber::Int(i) => !i.is_zero(),
            JsonNumber::Float(f) => f != 0.0,
        },
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The reference's string coercion: a full match of `-?[0-9]+` becomes an `int`, of
/// `-?[0-9]+\.[0-9]+` a `float`; every other string stays a string. ASCII digits only.
pub fn coerce_str(s: &str) -> Result<Scalar<'_>, EvalError> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let bytes = digits.as_bytes();
    let int_len = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if int_len == 0 {
        return Ok(Scalar::Str(Cow::Borrowed(s)));
    }
    if int_len == bytes.len() {
        if int_len > PY_INT_MAX_STR_DIGITS {
            return Err(EvalError::new(
                PyErrorKind::ValueError,
                format!("Exceeds the limit ({PY_INT_MAX_STR_DIGITS} digits) for integer string conversion"),
            ));
        }
        return Ok(Scalar::Int(parse_ascii_int(s)));
    }
    let rest = &bytes[int_len..];
    if rest.len() >= 2 && rest[0] == b'.' && rest[1..].iter().all(u8::is_ascii_digit) {
        // Rust's float parser is correctly rounded, like Python's `float()`.
        return Ok(Scalar::Float(s.parse::<f64>().unwrap_or(f64::NAN)));
    }
    Ok(Scalar::Str(Cow::Borrowed(s)))
}

/// Parses `-?[0-9]+` (already validated) without allocating when it fits in an `i64`.
fn parse_ascii_int(s: &str) -> PyInt {
    match s.parse::<i64>() {
        Ok(i) => PyInt::Small(i),
        Err(_) => PyInt::from_bigint(s.parse::<num_bigint::BigInt>().expect("validated digits")),
    }
}

impl Scalar<'_> {
    /// Appends Python `str()` of the value.
    pub fn write_pystr(&self, out: &mut String) {
        match self {
            Scalar::Null => out.push_str("None"),
            Scalar::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
            Scalar::Int(i) => {
                use std::fmt::Write;
                let _ = write!(out, "{i}");
            }
            Scalar::Float(f) => float_repr(*f, out),
            Scalar::Str(s) => out.push_str(s),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Scalar::Null)
    }

    /// Describes the value for `--explain` output (`"abc"`, `42`, `1.5`, `True`, `None`).
    pub fn describe(&self) -> String {
        match self {
            Scalar::Str(s) => format!("{s:?}"),
            other => {
                let mut out = String::new();
                other.write_pystr(&mut out);
                out
            }
        }
    }
}

/// Integer helpers the evaluator needs on top of the Python number primitives.
impl PyInt {
    pub fn is_zero(&self) -> bool {
        match self {
            PyInt::Small(i) => *i == 0,
            PyInt::Big(b) => num_traits::Zero::is_zero(b.as_ref()),
        }
    }

    pub fn to_big(&self) -> num_bigint::BigInt {
        match self {
            PyInt::Small(i) => num_bigint::BigInt::from(*i),
            PyInt::Big(b) => b.as_ref().clone(),
        }
    }

    /// Python `int(f)` for a finite float: truncation toward zero, exact.
    pub fn from_f64_trunc(f: f64) -> PyInt {
        let t = f.trunc();
        if t.abs() < 9.0e18 {
            PyInt::Small(t as i64)
        } else {
            PyInt::from_bigint(num_traits::FromPrimitive::from_f64(t).expect("finite float"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_coercion_follows_the_reference_regexes() {
        assert_eq!(coerce_str("007").unwrap(), Scalar::Int(PyInt::Small(7)));
        assert_eq!(coerce_str("-0").unwrap(), Scalar::Int(PyInt::Small(0)));
        assert_eq!(coerce_str("1.50").unwrap(), Scalar::Float(1.5));
        assert!(
            matches!(coerce_str("-0.0").unwrap(), Scalar::Float(f) if f == 0.0 && f.is_sign_negative())
        );
        for s in ["1e5", "+1", " 1", "1.", ".5", "0x10", "", "-", "1.2.3", "٣"] {
            assert_eq!(
                coerce_str(s).unwrap(),
                Scalar::Str(Cow::Borrowed(s)),
                "{s:?}"
            );
        }
        let big = "123456789012345678901234567890";
        assert_eq!(
            coerce_str(big).unwrap(),
            Scalar::Int(PyInt::from_bigint(big.parse().unwrap()))
        );
        assert!(coerce_str(&"1".repeat(4301)).is_err());
        assert!(coerce_str(&"1".repeat(4300)).is_ok());
    }

    #[test]
    fn numbers_are_typed_by_spelling() {
        let v: Value = serde_json::from_str("[30, 30.0, 3e1, 18446744073709551616]").unwrap();
        let kinds: Vec<_> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|n| classify_number(n.as_number().unwrap()))
            .collect();
        assert_eq!(kinds[0], JsonNumber::Int(PyInt::Small(30)));
        assert_eq!(kinds[1], JsonNumber::Float(30.0));
        assert_eq!(kinds[2], JsonNumber::Float(30.0));
        assert!(matches!(kinds[3], JsonNumber::Int(PyInt::Big(_))));
    }
}
