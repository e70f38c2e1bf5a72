//! Python number semantics: `int(str)`, `float(str)`, `repr(float)`, int to
//! float conversion and float `%`.
//!
//! Hand-rolled because the reference implementation leans on CPython's exact
//! behaviour here and Rust's standard parsing/formatting differs in many
//! small ways: Python accepts any Unicode decimal digit and `_` separators in
//! `int()`/`float()`, strips its own whitespace set, caps `int()` at 4300
//! digits, prints floats with `repr`'s switch to exponent notation at 1e16 /
//! 1e-5, and defines `%` with the sign of the divisor.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::BigInt;
use num_traits::ToPrimitive;

use super::unicode_tables::nd_digit_value;

/// A Python `int`: arbitrary precision, normalised so that `Big` is only used
/// for values outside the `i64` range (which makes the derived equality
/// numeric equality).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PyInt {
    Small(i64),
    Big(Box<BigInt>),
}

impl PyInt {
    /// Normalising constructor.
    pub fn from_bigint(b: BigInt) -> PyInt {
        match b.to_i64() {
            Some(v) => PyInt::Small(v),
            None => PyInt::Big(Box::new(b)),
        }
    }

    /// Python `float(int)`: correctly rounded (half to even). `None` is
    /// Python's `OverflowError: int too large to convert to float`.
    pub fn to_f64(&self) -> Option<f64> {
        match self {
            PyInt::Small(v) => Some(*v as f64),
            PyInt::Big(b) => b.to_f64().filter(|f| f.is_finite()),
        }
    }

    fn to_bigint(&self) -> BigInt {
        match self {
            PyInt::Small(v) => BigInt::from(*v),
            PyInt::Big(b) => (**b).clone(),
        }
    }
}

impl PartialOrd for PyInt {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PyInt {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PyInt::Small(a), PyInt::Small(b)) => a.cmp(b),
            (PyInt::Big(a), PyInt::Big(b)) => a.cmp(b),
            _ => self.to_bigint().cmp(&other.to_bigint()),
        }
    }
}

impl fmt::Display for PyInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PyInt::Small(v) => write!(f, "{v}"),
            PyInt::Big(b) => write!(f, "{b}"),
        }
    }
}

/// CPython's `int()` refuses to convert strings with more digits than this
/// (`sys.get_int_max_str_digits()` default).
const MAX_STR_DIGITS: usize = 4300;

/// Whitespace that `int()`/`float()` strip. This is `str.isspace()` minus
/// U+001C..U+001F: CPython maps non-ASCII spaces to ' ' and then strips with
/// the C-level ASCII test, which does not include those four separators.
fn is_num_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\x0b' | '\x0c' | '\r' | ' ' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

/// Exactly Python's `int(s)` for a `str` (base 10). `None` means ValueError.
pub fn parse_py_int(s: &str) -> Option<PyInt> {
    let s = s.trim_matches(is_num_space);
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut digits = String::with_capacity(body.len() + 1);
    if neg {
        digits.push('-');
    }
    let mut prev_underscore = true; // forbids a leading underscore
    let mut count = 0usize;
    for c in body.chars() {
        if c == '_' {
            if prev_underscore {
                return None;
            }
            prev_underscore = true;
        } else {
            let d = nd_digit_value(c)?;
            digits.push(char::from(b'0' + d as u8));
            count += 1;
            prev_underscore = false;
        }
    }
    if count == 0 || prev_underscore || count > MAX_STR_DIGITS {
        return None;
    }
    if count <= 18 {
        return digits.parse::<i64>().ok().map(PyInt::Small);
    }
    digits.parse::<BigInt>().ok().map(PyInt::from_bigint)
}

/// Exactly Python's `float(s)` for a `str`. `None` means ValueError.
pub fn parse_py_float(s: &str) -> Option<f64> {
    let s = s.trim_matches(is_num_space);
    // Normalise to ASCII, applying CPython's underscore rule: an underscore
    // must sit between two (ASCII-normalised) digits.
    let mut ascii = String::with_capacity(s.len());
    let mut prev: u8 = 0;
    for c in s.chars() {
        let b = if c.is_ascii() {
            c as u8
        } else {
            b'0' + nd_digit_value(c)? as u8
        };
        if b == b'_' {
            if !prev.is_ascii_digit() {
                return None;
            }
        } else {
            if prev == b'_' && !b.is_ascii_digit() {
                return None;
            }
            ascii.push(b as char);
        }
        prev = b;
    }
    if prev == b'_' {
        return None;
    }
    let (neg, body) = match ascii.as_bytes().first() {
        Some(b'-') => (true, &ascii[1..]),
        Some(b'+') => (false, &ascii[1..]),
        _ => (false, &ascii[..]),
    };
    let special = if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        Some(f64::INFINITY)
    } else if body.eq_ignore_ascii_case("nan") {
        Some(f64::NAN)
    } else {
        None
    };
    if let Some(v) = special {
        return Some(if neg { -v } else { v });
    }
    if !is_decimal_float_syntax(body.as_bytes()) {
        return None;
    }
    // Rust's float parsing is correctly rounded, as is CPython's dtoa.
    ascii.parse::<f64>().ok()
}

/// `digits [. digits?] | . digits`, then optional `[eE] [sign] digits`.
fn is_decimal_float_syntax(b: &[u8]) -> bool {
    let mut i = 0;
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut mantissa_digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        mantissa_digits += i - frac_start;
    }
    if mantissa_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

/// Python `repr(float)` (also `str(float)`), appended to `out`.
pub fn float_repr(f: f64, out: &mut String) {
    if f.is_nan() {
        out.push_str("nan");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "inf" } else { "-inf" });
        return;
    }
    if f.is_sign_negative() {
        out.push('-');
    }
    if f == 0.0 {
        out.push_str("0.0");
        return;
    }
    // Shortest round-trip digits from ryu, whatever layout it chose.
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(f.abs());
    let (mantissa, exp) = match text.find(['e', 'E']) {
        Some(p) => (&text[..p], text[p + 1..].parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let point = mantissa.find('.').unwrap_or(mantissa.len());
    let all: String = mantissa.chars().filter(|c| *c != '.').collect();
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_start_matches('0').trim_end_matches('0');
    // value = 0.<digits> * 10^decpt
    let decpt = point as i32 - lead as i32 + exp;
    let n = digits.len() as i32;
    if decpt <= -4 || decpt > 16 {
        let e = decpt - 1;
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        let ea = e.unsigned_abs();
        if ea < 10 {
            out.push('0');
        }
        out.push_str(&ea.to_string());
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..-decpt {
            out.push('0');
        }
        out.push_str(digits);
    } else if decpt >= n {
        out.push_str(digits);
        for _ in 0..decpt - n {
            out.push('0');
        }
        out.push_str(".0");
    } else {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    }
}

/// Python float `%` (`float_rem`); the caller rejects `y == 0`.
pub fn py_float_mod(x: f64, y: f64) -> f64 {
    let m = x % y; // C fmod
    if m != 0.0 {
        if (y < 0.0) != (m < 0.0) {
            m + y
        } else {
            m
        }
    } else {
        0.0f64.copysign(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::float_repr_vectors::FLOAT_REPR_VECTORS;

    fn repr(f: f64) -> String {
        let mut s = String::new();
        float_repr(f, &mut s);
        s
    }

    #[test]
    fn float_repr_vectors() {
        // Expected strings produced by CPython 3.11 `repr(float)`.
        let cases: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (0.1 + 0.2, "0.30000000000000004"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (123456789.123, "123456789.123"),
            (1.5e300, "1.5e+300"),
            (2.5e-7, "2.5e-07"),
            (-1.5, "-1.5"),
            (100.0, "100.0"),
            (0.5, "0.5"),
            (1e22, "1e+22"),
            (1.2345678901234567e-5, "1.2345678901234568e-05"),
            (123e-20, "1.23e-18"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (9007199254740993.0, "9007199254740992.0"),
            (-9.223372036854776e18, "-9.223372036854776e+18"),
        ];
        for (f, want) in cases {
            assert_eq!(repr(*f), *want, "repr({f:e})");
        }
    }

    #[test]
    fn float_repr_python_vectors() {
        // Includes exact decimal ties (e.g. 1658206780088562.25) where Python
        // and ryu pick the even digit but std's `{:e}` does not.
        for (bits, want) in FLOAT_REPR_VECTORS {
            let f = f64::from_bits(*bits);
            assert_eq!(repr(f), *want, "{bits:#x}");
        }
    }

    #[test]
    fn float_repr_round_trips() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if f.is_finite() {
                let s = repr(f);
                assert_eq!(s.parse::<f64>().unwrap().to_bits(), x, "{s}");
            }
        }
    }

    #[test]
    fn parse_int_vectors() {
        let ok: &[(&str, i64)] = &[
            ("007", 7),
            ("1_000", 1000),
            ("+5", 5),
            ("-0", 0),
            ("\u{663}", 3),
            ("\u{ff13}", 3),
            ("1\u{663}_\u{ff13}", 133),
            (" 12 ", 12),
            ("\u{967}\u{968}\u{969}", 123),
            ("0_0", 0),
            ("00_00", 0),
            ("\u{a0}1\u{2028}", 1),
            ("\u{85}12\u{85}", 12),
            ("\u{3000}12\u{3000}", 12),
            ("\x0b12\x0c", 12),
            ("-9223372036854775808", i64::MIN),
            ("9223372036854775807", i64::MAX),
        ];
        for (s, v) in ok {
            assert_eq!(parse_py_int(s), Some(PyInt::Small(*v)), "{s:?}");
        }
        let bad = [
            "1__0",
            "_1",
            "1_",
            "- 5",
            "+-5",
            "0x10",
            "0b1",
            "",
            "  ",
            "1.0",
            "+_1",
            "1 2",
            "\x1c12\x1c",
            "\x1f12",
            "١.٥",
            "1e5",
            "inf",
        ];
        for s in bad {
            assert_eq!(parse_py_int(s), None, "{s:?}");
        }
    }

    #[test]
    fn parse_int_big_and_limit() {
        let big = parse_py_int("9223372036854775808").unwrap();
        assert!(matches!(big, PyInt::Big(_)));
        assert_eq!(big.to_string(), "9223372036854775808");
        assert!(big > PyInt::Small(i64::MAX));
        let neg = parse_py_int("-9223372036854775809").unwrap();
        assert!(neg < PyInt::Small(i64::MIN));
        assert!(neg < big);
        assert!(parse_py_int(&"1".repeat(4300)).is_some());
        assert!(parse_py_int(&"1".repeat(4301)).is_none());
        assert!(parse_py_int(&"0".repeat(4301)).is_none());
        assert!(parse_py_int(&format!("-{}", "1".repeat(4300))).is_some());
        let underscored = vec!["1"; 4300].join("_");
        assert!(parse_py_int(&underscored).is_some());
        assert!(parse_py_int(&format!("{underscored}_1")).is_none());
        assert_eq!(
            parse_py_int("0000000000000000000000042"),
            Some(PyInt::Small(42))
        );
    }

    #[test]
    fn int_to_float() {
        let two = BigInt::from(2);
        let p1024 = two.pow(1024u32);
        let p970 = BigInt::from(2).pow(970u32);
        // float(2**1024 - 2**970) overflows (rounds up to 2**1024).
        assert_eq!(PyInt::from_bigint(&p1024 - &p970).to_f64(), None);
        assert_eq!(
            PyInt::from_bigint(&p1024 - &p970 - 1).to_f64(),
            Some(1.7976931348623157e308)
        );
        let p53 = BigInt::from(2).pow(53u32);
        assert_eq!(
            PyInt::from_bigint(&p53 + 1).to_f64(),
            Some(9007199254740992.0)
        );
        assert_eq!(
            PyInt::from_bigint(&p53 + 3).to_f64(),
            Some(9007199254740996.0)
        );
        assert_eq!(PyInt::Small(i64::MIN).to_f64(), Some(-9.223372036854776e18));
        let p = BigInt::from(10).pow(400u32);
        assert_eq!(PyInt::from_bigint(p).to_f64(), None);
        let huge = BigInt::from(2).pow(64u32) * 3 + 1;
        assert_eq!(
            PyInt::from_bigint(huge).to_f64(),
            Some(5.5340232221128655e19)
        );
    }

    #[test]
    fn parse_float_vectors() {
        let ok: &[(&str, f64)] = &[
            ("1_0.5", 10.5),
            ("1e1_0", 1e10),
            (".5", 0.5),
            ("5.", 5.0),
            ("1e5", 1e5),
            (" 1 ", 1.0),
            ("inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("+.5", 0.5),
            ("1_000.000_1", 1000.0001),
            ("\u{661}.\u{665}", 1.5),
            ("\u{ff13}.\u{ff15}e\u{ff12}", 350.0),
            ("1e400", f64::INFINITY),
            ("-1e400", f64::NEG_INFINITY),
            ("1e-400", 0.0),
            ("1e99999999999999999999", f64::INFINITY),
            ("1e-99999999999999999999", 0.0),
            ("0.1e-99999999999999999999999", 0.0),
            ("\u{2000}1.5\u{3000}", 1.5),
            ("1E5", 1e5),
            ("1.e5", 1e5),
            ("0_0.0_0e0_0", 0.0),
            ("0.1", 0.1),
            ("2.2250738585072011e-308", 2.225073858507201e-308),
        ];
        for (s, v) in ok {
            assert_eq!(
                parse_py_float(s).map(f64::to_bits),
                Some(v.to_bits()),
                "{s:?}"
            );
        }
        let long = format!("{}e-400", "1".repeat(400));
        assert_eq!(parse_py_float(&long), Some(0.1111111111111111));
        for s in ["nAn", "+nan", "-nan", "NAN"] {
            assert!(parse_py_float(s).unwrap().is_nan(), "{s:?}");
        }
        let bad = [
            "1__0",
            "_1",
            "1_",
            "1._5",
            "0x10",
            "",
            "in f",
            "infinit",
            "1e",
            "1e+",
            ".",
            "-.e1",
            "1_e5",
            "1e_5",
            "1.5_",
            "1.5\x1c",
            "+-1",
            "--1",
            "1e+-1",
            "infinity_",
            "i_nf",
            "NaN1",
            "1.0.0",
            "1e5.0",
            " ",
            "1 0",
            "\u{b2}",
        ];
        for s in bad {
            assert_eq!(parse_py_float(s), None, "{s:?}");
        }
    }

    #[test]
    fn float_mod_vectors() {
        // (x, y, repr(x % y)) from CPython 3.11.
        let inf = f64::INFINITY;
        let cases: &[(f64, f64, &str)] = &[
            (5.0, 3.0, "2.0"),
            (-5.0, 3.0, "1.0"),
            (5.0, -3.0, "-1.0"),
            (-5.0, -3.0, "-2.0"),
            (-5.0, inf, "inf"),
            (5.0, -inf, "-inf"),
            (5.0, inf, "5.0"),
            (-5.0, -inf, "-5.0"),
            (inf, 3.0, "nan"),
            (f64::NAN, 3.0, "nan"),
            (6.0, 3.0, "0.0"),
            (6.0, -3.0, "-0.0"),
            (-6.0, 3.0, "0.0"),
            (-0.0, 3.0, "0.0"),
            (5.5, 2.0, "1.5"),
            (0.3, 0.1, "0.09999999999999998"),
            (1e300, 7.0, "1.0"),
        ];
        for (x, y, want) in cases {
            assert_eq!(repr(py_float_mod(*x, *y)), *want, "{x} % {y}");
        }
    }
}
