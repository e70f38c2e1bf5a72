//! The reference's coercions (`to_number`, `to_string`, truthiness) on datalogic values. The
//! reference evaluates JSONLogic with panzi-json-logic, whose coercions are Python's: `float()`
//! parsing of strings, `'%.15g'` for floats in text, `bool()` truthiness except that NaN is
//! false and every object is true.

use datalogic_rs::datavalue::NumberValue;
use datalogic_rs::DataValue;
use flagpole_engine::python::number::parse_py_float;

/// A number as the reference holds it: Python keeps `int` and `float` apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub(crate) fn f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    pub(crate) fn is_nan(self) -> bool {
        matches!(self, Num::Float(f) if f.is_nan())
    }
}

pub(crate) fn number_of(n: &NumberValue) -> Num {
    match *n {
        NumberValue::Integer(i) => Num::Int(i),
        NumberValue::Float(f) => Num::Float(f),
    }
}

/// Whether the value is a Python `int` or `float` (booleans are not, here: the reference
/// checks `isinstance(x, (int, float))` only after ruling booleans out where it matters).
pub(crate) fn as_num(v: &DataValue<'_>) -> Option<Num> {
    match v {
        DataValue::Number(n) => Some(number_of(n)),
        _ => None,
    }
}

/// `to_number`: `None` → 0, a bool → 0/1, a list of one → its element, a string through
/// `float()` (NaN when it does not parse, and for the infinities, as JavaScript would).
pub(crate) fn to_number(v: &DataValue<'_>) -> Num {
    match v {
        DataValue::Number(n) => number_of(n),
        DataValue::Null => Num::Int(0),
        DataValue::Bool(b) => Num::Int(i64::from(*b)),
        DataValue::Array(items) => match items.len() {
            0 => Num::Int(0),
            1 => to_number(&items[0]),
            _ => Num::Float(f64::NAN),
        },
        DataValue::String(s) => {
            let t = s.trim().to_ascii_lowercase();
            if matches!(t.as_str(), "inf" | "-inf" | "+inf") {
                return Num::Float(f64::NAN);
            }
            Num::Float(parse_py_float(s).unwrap_or(f64::NAN))
        }
        _ => Num::Float(f64::NAN),
    }
}

/// `to_string`: floats as `'%.15g'`, `null`, booleans as Python writes them (`True`), lists
/// joined by commas, objects as `[object Object]`.
pub(crate) fn to_string(v: &DataValue<'_>, out: &mut String) {
    match v {
        DataValue::String(s) => out.push_str(s),
        DataValue::Number(NumberValue::Integer(i)) => out.push_str(&i.to_string()),
        DataValue::Number(NumberValue::Float(f)) => out.push_str(&format_g15(*f)),
        DataValue::Null => out.push_str("null"),
        // Python's `str()`: the reference tests `isinstance(value, int)` before `value is True`,
        // and a bool is an int.
        DataValue::Bool(true) => out.push_str("True"),
        DataValue::Bool(false) => out.push_str("False"),
        DataValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                to_string(item, out);
            }
        }
        _ => out.push_str("[object Object]"),
    }
}

pub(crate) fn string_of(v: &DataValue<'_>) -> String {
    let mut out = String::new();
    to_string(v, &mut out);
    out
}

/// Python's `bool(x)` as the reference's `to_bool` takes it.
pub(crate) fn truthy(v: &DataValue<'_>) -> bool {
    match v {
        DataValue::Null => false,
        DataValue::Bool(b) => *b,
        DataValue::Number(n) => match number_of(n) {
            Num::Int(i) => i != 0,
            Num::Float(f) => !f.is_nan() && f != 0.0,
        },
        DataValue::String(s) => !s.is_empty(),
        DataValue::Array(items) => !items.is_empty(),
        _ => true,
    }
}

/// C's `%.15g`, which Python's `'%.15g' % x` is.
pub(crate) fn format_g15(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    const P: i32 = 15;
    // The exponent after rounding to 15 significant digits decides the notation.
    let sci = format!("{:.*e}", (P - 1) as usize, f);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..P).contains(&exp) {
        let mantissa = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (P - 1 - exp).max(0) as usize;
        trim_zeros(&format!("{f:.decimals$}")).to_owned()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g15_matches_c() {
        for (f, want) in [
            (1.0, "1"),
            (0.1, "0.1"),
            (1.5e-7, "1.5e-07"),
            (123456789012345678.0, "1.23456789012346e+17"),
            (0.0001, "0.0001"),
            (1e15, "1e+15"),
            (1e14, "100000000000000"),
            (-2.5, "-2.5"),
            (1.0 / 3.0, "0.333333333333333"),
        ] {
            assert_eq!(format_g15(f), want, "{f}");
        }
    }

    #[test]
    fn numbers_from_strings_follow_python_float() {
        assert_eq!(to_number(&DataValue::String(" 1_0 ")), Num::Float(10.0));
        assert!(to_number(&DataValue::String("inf")).is_nan());
        assert!(to_number(&DataValue::String("abc")).is_nan());
        assert_eq!(to_number(&DataValue::Null), Num::Int(0));
    }
}
