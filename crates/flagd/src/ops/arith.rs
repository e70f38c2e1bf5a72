//! Arithmetic as the reference's JSONLogic has it: Python `int`/`float` arithmetic on coerced
//! numbers; division or modulo by zero raises (an evaluation error: `GENERAL`).

use datalogic_rs::DataValue;
use flagpole_engine::python::number::py_float_mod;

use super::compare::num_lt;
use super::values::{to_number, Num};

/// Why an operation raised (Python's `ZeroDivisionError`).
#[derive(Debug)]
pub(crate) struct Raised(pub(crate) &'static str);

fn add(a: Num, b: Num) -> Num {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x
            .checked_add(y)
            .map_or(Num::Float(x as f64 + y as f64), Num::Int),
        _ => Num::Float(a.f64() + b.f64()),
    }
}

fn sub(a: Num, b: Num) -> Num {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x
            .checked_sub(y)
            .map_or(Num::Float(x as f64 - y as f64), Num::Int),
        _ => Num::Float(a.f64() - b.f64()),
    }
}

fn mul(a: Num, b: Num) -> Num {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x
            .checked_mul(y)
            .map_or(Num::Float(x as f64 * y as f64), Num::Int),
        _ => Num::Float(a.f64() * b.f64()),
    }
}

pub(crate) fn plus(args: &[&DataValue<'_>]) -> Num {
    args.iter()
        .fold(Num::Int(0), |acc, a| add(acc, to_number(a)))
}

pub(crate) fn times(args: &[&DataValue<'_>]) -> Num {
    args.iter()
        .fold(Num::Int(1), |acc, a| mul(acc, to_number(a)))
}

/// `-`: negation with one argument (or a `null` second), else a difference.
pub(crate) fn minus(args: &[&DataValue<'_>]) -> Num {
    let a = args.first().map_or(Num::Int(0), |a| to_number(a));
    match args.get(1) {
        None | Some(DataValue::Null) => sub(Num::Int(0), a),
        Some(b) => sub(a, to_number(b)),
    }
}

fn arg(args: &[&DataValue<'_>], i: usize) -> Num {
    args.get(i).map_or(Num::Int(0), |a| to_number(a))
}

fn is_zero(n: Num) -> bool {
    match n {
        Num::Int(i) => i == 0,
        Num::Float(f) => f == 0.0,
    }
}

/// `/`: true division, always a float.
pub(crate) fn divide(args: &[&DataValue<'_>]) -> Result<Num, Raised> {
    let (a, b) = (arg(args, 0), arg(args, 1));
    if is_zero(b) {
        return Err(Raised("division by zero"));
    }
    Ok(Num::Float(a.f64() / b.f64()))
}

/// `%`: Python's modulo (the sign of the divisor).
pub(crate) fn modulo(args: &[&DataValue<'_>]) -> Result<Num, Raised> {
    let (a, b) = (arg(args, 0), arg(args, 1));
    if is_zero(b) {
        return Err(Raised("modulo by zero"));
    }
    Ok(match (a, b) {
        (Num::Int(x), Num::Int(y)) => Num::Int(
            x.wrapping_rem_euclid(y)
                + if y < 0 && x.wrapping_rem_euclid(y) != 0 {
                    y
                } else {
                    0
                },
        ),
        _ => Num::Float(py_float_mod(a.f64(), b.f64())),
    })
}

/// `min`/`max`: Python's `min()`/`max()` over the coerced numbers (the first kept unless a
/// later one is strictly smaller/larger, so NaN's place matters); NaN with no arguments.
pub(crate) fn extreme(args: &[&DataValue<'_>], smallest: bool) -> Num {
    let mut numbers = args.iter().map(|a| to_number(a));
    let Some(mut best) = numbers.next() else {
        return Num::Float(f64::NAN);
    };
    for n in numbers {
        let better = if smallest {
            num_lt(n, best)
        } else {
            num_lt(best, n)
        };
        if better {
            best = n;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modulo_takes_the_sign_of_the_divisor() {
        let m =
            |a: i64, b: i64| modulo(&[&DataValue::from_i64(a), &DataValue::from_i64(b)]).unwrap();
        assert_eq!(m(7, 3), Num::Int(1));
        assert_eq!(m(-7, 3), Num::Int(2));
        assert_eq!(m(7, -3), Num::Int(-2));
        assert_eq!(m(-7, -3), Num::Int(-1));
        assert!(modulo(&[&DataValue::from_i64(1), &DataValue::from_i64(0)]).is_err());
    }
}
