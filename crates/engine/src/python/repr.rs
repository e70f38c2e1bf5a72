//! Python `str()` of JSON-derived values and `repr()` of strings.
//!
//! The reference engine coerces values with `str(x)` where `x` came out of
//! `json.loads` (e.g. the members of an `IN` list), so e.g. `true` becomes
//! `"True"`, `1.0` stays `"1.0"`, `1E2` becomes `"100.0"` and a nested list
//! becomes `"[1, 'a', None]"`. Hand-rolled because those are Python's
//! spellings, not JSON's or Rust's.

use num_bigint::BigInt;
use serde_json::{Number, Value};

use super::number::float_repr;
use super::unicode_tables::{in_table, NON_PRINTABLE};

/// Python `str(x)` where `x = json.loads(<v as JSON text>)`, appended to `out`.
pub fn write_str_of_json(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => out.push_str(s),
        other => write_repr_of_json(other, out),
    }
}

/// Python `repr(x)` for a JSON-derived value (what containers use for their
/// elements).
fn write_repr_of_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_py_str_repr(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr_of_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_str_repr(k, out);
                out.push_str(": ");
                write_repr_of_json(item, out);
            }
            out.push('}');
        }
    }
}

/// `json.loads` turns a number without `.`/`e`/`E` into an `int` (arbitrary
/// size) and anything else into a correctly rounded `float` (overflowing to
/// `inf`).
fn write_number(n: &Number, out: &mut String) {
    // With `arbitrary_precision`, this is the original JSON spelling.
    let text = n.to_string();
    if text.contains(['.', 'e', 'E']) {
        let f = text.parse::<f64>().unwrap_or(f64::NAN);
        float_repr(f, out);
    } else if let Ok(i) = text.parse::<i64>() {
        // Also canonicalises "-0" to "0".
        out.push_str(&i.to_string());
    } else if let Ok(b) = text.parse::<BigInt>() {
        out.push_str(&b.to_string());
    } else {
        out.push_str(&text);
    }
}

/// Python `str.isprintable()` for one character.
fn is_printable(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !in_table(&NON_PRINTABLE, c as u32)
}

/// Python `repr(s)` for a `str`, appended to `out`.
pub fn write_py_str_repr(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let cp = c as u32;
                let esc = if cp < 0x100 {
                    format!("\\x{cp:02x}")
                } else if cp < 0x10000 {
                    format!("\\u{cp:04x}")
                } else {
                    format!("\\U{cp:08x}")
                };
                out.push_str(&esc);
            }
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn str_of(json: &str) -> String {
        let v: Value = serde_json::from_str(json).unwrap();
        let mut s = String::new();
        write_str_of_json(&v, &mut s);
        s
    }

    fn repr(s: &str) -> String {
        let mut out = String::new();
        write_py_str_repr(s, &mut out);
        out
    }

    #[test]
    fn str_of_json_vectors() {
        // (JSON text, str(json.loads(text))) from CPython 3.11.
        let cases: &[(&str, &str)] = &[
            (r#""abc""#, "abc"),
            (r#""it's""#, "it's"),
            ("null", "None"),
            ("true", "True"),
            ("false", "False"),
            ("1", "1"),
            ("-0", "0"),
            ("-12", "-12"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            (
                "-123456789012345678901234567890",
                "-123456789012345678901234567890",
            ),
            ("1.0", "1.0"),
            ("-0.0", "-0.0"),
            ("1E2", "100.0"),
            ("1e16", "1e+16"),
            ("1.5e-7", "1.5e-07"),
            ("1e400", "inf"),
            ("-1e400", "-inf"),
            ("0.1", "0.1"),
            ("12345678901234567890.0", "1.2345678901234567e+19"),
            (
                r#"[1, "a", null, [2], {"k": "v"}]"#,
                "[1, 'a', None, [2], {'k': 'v'}]",
            ),
            (r#"{"a": 1, "b": [true]}"#, "{'a': 1, 'b': [True]}"),
            (r#"{"z": 1, "a": 2}"#, "{'z': 1, 'a': 2}"),
            ("[]", "[]"),
            ("{}", "{}"),
            (
                r#"["it's", "say \"hi\"", "both ' \""]"#,
                r#"["it's", 'say "hi"', 'both \' "']"#,
            ),
            (r#"["a\nb\\c\td\r"]"#, r"['a\nb\\c\td\r']"),
            (
                r#"["\u0000\u001f\u007f\u0085\u00a0\u00ad\u00e9"]"#,
                r"['\x00\x1f\x7f\x85\xa0\xadé']",
            ),
            (r#"[1.0, -0.0, 1e-5, 2.5]"#, "[1.0, -0.0, 1e-05, 2.5]"),
            (
                r#"[[[]], {"x": {"y": null}}]"#,
                "[[[]], {'x': {'y': None}}]",
            ),
        ];
        for (json, want) in cases {
            assert_eq!(str_of(json), *want, "{json}");
        }
    }

    #[test]
    fn str_repr_vectors() {
        // (string, repr(string)) from CPython 3.11.
        let cases: &[(&str, &str)] = &[
            ("", "''"),
            ("abc", "'abc'"),
            ("it's", "\"it's\""),
            ("\"", "'\"'"),
            ("'\"", "'\\'\"'"),
            ("a\\b", "'a\\\\b'"),
            ("\u{7}", "'\\x07'"),
            ("\u{2028}\u{2029}", "'\\u2028\\u2029'"),
            (
                "\u{200b}\u{200f}\u{202a}\u{2060}\u{feff}",
                "'\\u200b\\u200f\\u202a\\u2060\\ufeff'",
            ),
            ("\u{3000}\u{2000}", "'\\u3000\\u2000'"),
            ("\u{e000}", "'\\ue000'"),
            ("\u{378}", "'\\u0378'"),
            ("\u{e0001}", "'\\U000e0001'"),
            ("\u{10ffff}", "'\\U0010ffff'"),
            ("\u{1f600}", "'\u{1f600}'"),
            ("日本語", "'日本語'"),
            ("\u{301}", "'\u{301}'"),
            ("\u{61c}", "'\\u061c'"),
            ("\u{1680}", "'\\u1680'"),
        ];
        for (s, want) in cases {
            assert_eq!(repr(s), *want, "{s:?}");
        }
    }
}
