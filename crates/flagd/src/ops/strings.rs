//! The text operations: `cat`, `substr` and `in` as the reference's JSONLogic has them, and
//! flagd's `starts_with`/`ends_with` (both arguments strings, else `null`).

use datalogic_rs::DataValue;

use super::compare::strict_eq;
use super::values::{string_of, to_number, to_string, Num};

pub(crate) fn cat(args: &[&DataValue<'_>]) -> String {
    let mut out = String::new();
    for a in args {
        to_string(a, &mut out);
    }
    out
}

/// Python's `int()` of a finite float: truncation toward zero.
fn int_of(n: Num) -> i64 {
    match n {
        Num::Int(i) => i,
        Num::Float(f) => f.trunc() as i64,
    }
}

/// `substr`: by code point; a negative start counts from the end, a negative length stops
/// that many before the end.
pub(crate) fn substr(args: &[&DataValue<'_>]) -> String {
    let text = args
        .first()
        .map(|a| string_of(a))
        .unwrap_or_else(|| "null".to_owned());
    let chars: Vec<char> = text.chars().collect();
    let len = chars.len() as i64;
    let index = args.get(1).map_or(Num::Int(0), |a| to_number(a));
    let start = if index.is_nan() {
        0
    } else {
        let i = int_of(index);
        let negative = match index {
            Num::Int(i) => i < 0,
            Num::Float(f) => f < 0.0,
        };
        if negative {
            let back = -i;
            if back >= len {
                0
            } else {
                len - back
            }
        } else {
            i.min(len)
        }
    };
    let end = match args.get(2) {
        None | Some(DataValue::Null) => len,
        Some(length) => {
            let length = to_number(length);
            if length.is_nan() {
                start
            } else {
                let l = int_of(length);
                if l < 0 {
                    (len + l).max(start)
                } else {
                    start.saturating_add(l)
                }
            }
        }
    };
    let end = end.clamp(0, len);
    if start >= end {
        return String::new();
    }
    chars[start as usize..end as usize].iter().collect()
}

/// `in`: membership in a list (Python equality) or a substring of a string; else false.
pub(crate) fn within(args: &[&DataValue<'_>]) -> bool {
    let needle = args.first().copied().unwrap_or(&DataValue::Null);
    match args.get(1) {
        Some(DataValue::Array(items)) => items.iter().any(|item| strict_eq(needle, item)),
        Some(DataValue::String(hay)) => hay.contains(string_of(needle).as_str()),
        _ => false,
    }
}

/// `starts_with`/`ends_with`: exactly two strings, else `None` (the reference's `null`).
pub(crate) fn affix(args: &[&DataValue<'_>], at_start: bool) -> Option<bool> {
    match args {
        [DataValue::String(text), DataValue::String(affix)] => Some(if at_start {
            text.starts_with(affix)
        } else {
            text.ends_with(affix)
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str, i: i64, l: Option<i64>) -> String {
        let a = DataValue::String(text);
        let b = DataValue::from_i64(i);
        match l {
            Some(l) => substr(&[&a, &b, &DataValue::from_i64(l)]),
            None => substr(&[&a, &b]),
        }
    }

    #[test]
    fn substr_slices_as_the_reference() {
        assert_eq!(s("jsonlogic", 4, None), "logic");
        assert_eq!(s("jsonlogic", -5, None), "logic");
        assert_eq!(s("jsonlogic", 1, Some(3)), "son");
        assert_eq!(s("jsonlogic", 4, Some(-2)), "log");
        assert_eq!(s("jsonlogic", 40, None), "");
        assert_eq!(s("jsonlogic", -40, Some(2)), "js");
    }
}
