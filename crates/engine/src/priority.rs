//! Priorities compared the way Python compares them. Segment overrides win with a strictly lower
//! `priority` (missing = +infinity) and multivariate variants are sorted by theirs; both may be
//! ints of any size (variant priorities can be 128-bit UUID integers) or floats, and comparing
//! incompatible kinds raises `TypeError` in the reference, so it does here.

use std::cmp::Ordering;

use num_bigint::BigInt;
use num_traits::FromPrimitive;
use serde_json::Value;

use crate::error::EvalError;
use crate::python::number::PyInt;
use crate::value::{classify_number, JsonNumber};

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PriorityKey {
    /// No `priority` key: weaker than any number.
    Missing,
    Int(PyInt),
    Float(f64),
    Str(String),
    /// `null` or any other JSON kind: comparable with nothing.
    Incomparable(&'static str),
}

impl PriorityKey {
    pub(crate) fn from_json(v: Option<&Value>) -> PriorityKey {
        match v {
            None => PriorityKey::Missing,
            Some(Value::Bool(b)) => PriorityKey::Int(PyInt::Small(*b as i64)),
            Some(Value::Number(n)) => match classify_number(n) {
                JsonNumber::Int(i) => PriorityKey::Int(i),
                JsonNumber::Float(f) => PriorityKey::Float(f),
            },
            Some(Value::String(s)) => PriorityKey::Str(s.clone()),
            Some(Value::Null) => PriorityKey::Incomparable("NoneType"),
            Some(Value::Array(_)) => PriorityKey::Incomparable("list"),
            Some(Value::Object(_)) => PriorityKey::Incomparable("dict"),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            PriorityKey::Missing | PriorityKey::Float(_) => "float",
            PriorityKey::Int(_) => "int",
            PriorityKey::Str(_) => "str",
            PriorityKey::Incomparable(t) => t,
        }
    }

    /// Python `self < other`.
    pub(crate) fn py_lt(&self, other: &PriorityKey) -> Result<bool, EvalError> {
        Ok(self.py_cmp(other)? == Some(Ordering::Less))
    }

    /// Python ordering: `None` for unordered (NaN), an error for incomparable kinds.
    pub(crate) fn py_cmp(&self, other: &PriorityKey) -> Result<Option<Ordering>, EvalError> {
        use PriorityKey::*;
        let inf = Float(f64::INFINITY);
        let a = if matches!(self, Missing) { &inf } else { self };
        let b = if matches!(other, Missing) {
            &inf
        } else {
            other
        };
        match (a, b) {
            (Int(x), Int(y)) => Ok(Some(x.cmp(y))),
            (Float(x), Float(y)) => Ok(x.partial_cmp(y)),
            (Int(x), Float(y)) => Ok(cmp_int_float(x, *y)),
            (Float(x), Int(y)) => Ok(cmp_int_float(y, *x).map(Ordering::reverse)),
            (Str(x), Str(y)) => Ok(Some(x.cmp(y))),
            _ => Err(EvalError::type_error(format!(
                "'<' not supported between instances of '{}' and '{}'",
                a.type_name(),
                b.type_name()
            ))),
        }
    }
}

/// Exact comparison of an int with a float, as Python does it (no rounding of big ints).
pub(crate) fn cmp_int_float(i: &PyInt, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        });
    }
    if f.fract() == 0.0 {
        let fi = BigInt::from_f64(f).expect("finite integral float");
        return Some(i.to_big().cmp(&fi));
    }
    // A non-integral float is below 2^53 in magnitude, so rounding the int cannot cross it.
    let approx = match i {
        PyInt::Small(s) => *s as f64,
        PyInt::Big(b) => num_traits::ToPrimitive::to_f64(b.as_ref()).unwrap_or(f64::INFINITY),
    };
    approx.partial_cmp(&f)
}

/// Python's stable `sorted(items, key=priority)`: errors if two keys cannot be compared.
pub(crate) fn stable_sort_by_priority<T>(items: &mut [(PriorityKey, T)]) -> Result<(), EvalError> {
    if let Some((PriorityKey::Missing, _)) = items
        .iter()
        .find(|(k, _)| matches!(k, PriorityKey::Missing))
    {
        return Err(EvalError::key("'priority'"));
    }
    if items.len() < 2 {
        return Ok(());
    }
    // Check pairwise comparability up front so the sort itself cannot fail.
    for w in items.windows(2) {
        w[0].0.py_cmp(&w[1].0)?;
    }
    for (k, _) in items.iter() {
        if let PriorityKey::Incomparable(_) = k {
            return Err(items[0]
                .0
                .py_cmp(k)
                .err()
                .unwrap_or_else(|| EvalError::type_error("incomparable priority")));
        }
    }
    items.sort_by(|a, b| a.0.py_cmp(&b.0).ok().flatten().unwrap_or(Ordering::Equal));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_is_weakest_and_ties_are_not_less() {
        let one = PriorityKey::Int(PyInt::Small(1));
        assert!(one.py_lt(&PriorityKey::Missing).unwrap());
        assert!(!PriorityKey::Missing.py_lt(&PriorityKey::Missing).unwrap());
        assert!(!one.py_lt(&one).unwrap());
        assert!(PriorityKey::Float(f64::NEG_INFINITY).py_lt(&one).unwrap());
        assert!(PriorityKey::Incomparable("NoneType").py_lt(&one).is_err());
    }

    #[test]
    fn int_float_comparison_is_exact() {
        let big = PyInt::from_bigint(BigInt::from(2u64).pow(64) + 1);
        assert_eq!(
            cmp_int_float(&big, 18446744073709551616.0),
            Some(Ordering::Greater)
        );
        assert_eq!(
            cmp_int_float(&PyInt::Small(3), 2.5),
            Some(Ordering::Greater)
        );
    }
}
