//! Equality and ordering as the reference's JSONLogic (panzi-json-logic) has them: Python
//! comparisons after its coercions, booleans counting as the integers 0 and 1, strings
//! compared by code point.

use datalogic_rs::DataValue;

use super::values::{as_num, string_of, to_number, Num};

/// A number in the numeric branch of a comparison: Python's `isinstance(x, (int, float))`,
/// which booleans pass.
fn numeric(v: &DataValue<'_>) -> Option<Num> {
    match v {
        DataValue::Bool(b) => Some(Num::Int(i64::from(*b))),
        _ => as_num(v),
    }
}

fn same_kind(a: &DataValue<'_>, b: &DataValue<'_>) -> bool {
    use DataValue as D;
    matches!(
        (a, b),
        (D::Null, D::Null)
            | (D::Bool(_), D::Bool(_))
            | (D::String(_), D::String(_))
            | (D::Array(_), D::Array(_))
            | (D::Object(_), D::Object(_))
    ) || matches!((a, b), (D::Number(x), D::Number(y))
        if matches!((super::values::number_of(x), super::values::number_of(y)),
            (Num::Int(_), Num::Int(_)) | (Num::Float(_), Num::Float(_))))
}

pub(crate) fn num_eq(a: Num, b: Num) -> bool {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x == y,
        _ => a.f64() == b.f64(),
    }
}

pub(crate) fn num_lt(a: Num, b: Num) -> bool {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x < y,
        _ => a.f64() < b.f64(),
    }
}

/// `==`: loose equality. Lists and objects of the same kind are equal only when they are the
/// same object (Python's `is`): a value read twice from the context, never two literals.
pub(crate) fn loose_eq(a: &DataValue<'_>, b: &DataValue<'_>) -> bool {
    use DataValue as D;
    if same_kind(a, b) {
        return match (a, b) {
            (D::Array(x), D::Array(y)) => same_object(x, y),
            (D::Object(x), D::Object(y)) => same_object(x, y),
            _ => strict_eq(a, b),
        };
    }
    if let Some(x) = numeric(a) {
        return match numeric(b) {
            Some(y) => num_eq(x, y),
            None => num_eq(x, to_number(b)),
        };
    }
    if let Some(y) = numeric(b) {
        return num_eq(to_number(a), y);
    }
    match (a, b) {
        (D::Null, _) | (_, D::Null) => false,
        (D::String(s), D::Array(_) | D::Object(_)) => *s == string_of(b),
        (D::Array(_) | D::Object(_), D::String(s)) => string_of(a) == *s,
        _ => false,
    }
}

/// One list or object, not two: the same address. Empty literals all sit at one dangling
/// address and are never the same object; an empty value of the context has an address of its
/// own (`targeting::convert`).
fn same_object<T>(x: &[T], y: &[T]) -> bool {
    std::ptr::eq(x, y) && x.as_ptr() != std::ptr::NonNull::<T>::dangling().as_ptr()
}

/// `===`: Python's `==` on the values (deep; `1 == 1.0 == True`).
pub(crate) fn strict_eq(a: &DataValue<'_>, b: &DataValue<'_>) -> bool {
    use DataValue as D;
    if let (Some(x), Some(y)) = (numeric(a), numeric(b)) {
        return num_eq(x, y);
    }
    match (a, b) {
        (D::Null, D::Null) => true,
        (D::String(x), D::String(y)) => x == y,
        (D::Array(x), D::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| strict_eq(p, q))
        }
        (D::Object(x), D::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.iter()
                        .rev()
                        .find(|(k2, _)| k2 == k)
                        .is_some_and(|(_, w)| strict_eq(v, w))
                })
        }
        _ => false,
    }
}

/// The four orderings.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Order {
    Lt,
    Gt,
    Le,
    Ge,
}

impl Order {
    fn nums(self, a: Num, b: Num) -> bool {
        match self {
            Order::Lt => num_lt(a, b),
            Order::Gt => num_lt(b, a),
            Order::Le => num_lt(a, b) || num_eq(a, b),
            Order::Ge => num_lt(b, a) || num_eq(a, b),
        }
    }

    fn strs(self, a: &str, b: &str) -> bool {
        match self {
            Order::Lt => a < b,
            Order::Gt => a > b,
            Order::Le => a <= b,
            Order::Ge => a >= b,
        }
    }

    /// One comparison, coerced as the reference coerces: a number on either side makes it
    /// numeric, else a string on either side makes it textual, else both become numbers.
    pub(crate) fn holds(self, a: &DataValue<'_>, b: &DataValue<'_>) -> bool {
        if let Some(x) = numeric(a) {
            return self.nums(x, to_number(b));
        }
        if let Some(y) = numeric(b) {
            return self.nums(to_number(a), y);
        }
        match (a, b) {
            (DataValue::String(x), _) => self.strs(x, &string_of(b)),
            (_, DataValue::String(y)) => self.strs(&string_of(a), y),
            _ => self.nums(to_number(a), to_number(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_equality_coerces_like_the_reference() {
        assert!(loose_eq(&DataValue::from_i64(1), &DataValue::String("1")));
        assert!(loose_eq(&DataValue::Bool(true), &DataValue::from_i64(1)));
        // `to_number(None) == 0`: panzi-json-logic coerces the null.
        assert!(loose_eq(&DataValue::Null, &DataValue::from_i64(0)));
        assert!(!loose_eq(&DataValue::Null, &DataValue::String("")));
        assert!(loose_eq(&DataValue::Null, &DataValue::Null));
        assert!(loose_eq(&DataValue::from_f64(1.0), &DataValue::from_i64(1)));
    }

    #[test]
    fn orderings_pick_numbers_then_strings() {
        assert!(!Order::Lt.holds(&DataValue::String("10"), &DataValue::from_i64(9)));
        assert!(Order::Lt.holds(&DataValue::String("10"), &DataValue::String("9")));
        assert!(Order::Le.holds(&DataValue::Null, &DataValue::from_i64(0)));
    }
}
