//! Literal decoding of the reference library's parser (`parse.py` of `jsonpath_rfc9535` 0.2.0):
//! string literals with their escapes (surrogate pairs, the ban on control characters, the
//! single-quote rewriting), integer literals through `int(float(text))` and float literals with
//! their leading-zero checks. Each quirk decides whether a query compiles, so this is a port
//! rather than a JSON string decoder.

use super::ast::{Expr, Literal};
use super::tokens::{Tk, Token};
use super::{raises, ParseError};
use crate::error::PyErrorKind;
use crate::python::number::PyInt;

fn syntax(msg: impl Into<String>) -> ParseError {
    ParseError::Syntax(msg.into())
}

pub(super) fn parse_integer_literal(value: &str) -> Result<Expr, ParseError> {
    if value.starts_with('0') && value.chars().count() > 1 {
        return Err(syntax("invalid integer literal"));
    }
    // `int(float(value))`.
    let f: f64 = value
        .parse()
        .map_err(|_| syntax("invalid integer literal"))?;
    if !f.is_finite() {
        return Err(raises(
            PyErrorKind::OverflowError,
            "OverflowError",
            "cannot convert float infinity to integer",
        ));
    }
    Ok(Expr::Lit(Literal::Int(PyInt::from_f64_trunc(f))))
}

pub(super) fn parse_float_literal(value: &str) -> Result<Expr, ParseError> {
    if value.starts_with('0') && value.split('.').next().unwrap_or("").chars().count() > 1 {
        return Err(syntax("invalid float literal"));
    }
    if value.starts_with(':') {
        return Err(syntax("invalid float literal"));
    }
    let f: f64 = value.parse().map_err(|_| syntax("invalid float literal"))?;
    Ok(Expr::Lit(Literal::Float(f)))
}

/// `_decode_string_literal` + `_unescape_string`.
pub(super) fn decode_string_literal(tok: &Token) -> Result<String, ParseError> {
    let value = if tok.kind == Tk::SingleQuoteString {
        tok.value.replace('"', "\\\"").replace("\\'", "'")
    } else {
        tok.value.clone()
    };
    let v: Vec<char> = value.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let ch = v[i];
        if ch == '\\' {
            i += 1;
            let (c, ni) = decode_escape(&v, i)?;
            out.push(c);
            i = ni;
        } else {
            from_codepoint(ch as u32)?;
            out.push(ch);
        }
        i += 1;
    }
    Ok(out)
}

fn decode_escape(v: &[char], i: usize) -> Result<(char, usize), ParseError> {
    // The lexer guarantees a character after a backslash.
    let ch = *v.get(i).ok_or_else(|| syntax("unknown escape sequence"))?;
    let c = match ch {
        '"' => '"',
        '\\' => '\\',
        '/' => '/',
        'b' => '\u{8}',
        'f' => '\u{c}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'u' => {
            let (cp, ni) = decode_hex_char(v, i)?;
            return Ok((from_codepoint(cp)?, ni));
        }
        _ => return Err(syntax("unknown escape sequence")),
    };
    Ok((c, i))
}

fn decode_hex_char(v: &[char], index: usize) -> Result<(u32, usize), ParseError> {
    let length = v.len();
    if index + 4 >= length {
        return Err(syntax("incomplete escape sequence"));
    }
    let index = index + 1;
    let cp = parse_hex_digits(&v[index..index + 4])?;
    if (0xDC00..=0xDFFF).contains(&cp) {
        return Err(syntax("unexpected low surrogate"));
    }
    if (0xD800..=0xDBFF).contains(&cp) {
        if !(index + 9 < length && v[index + 4] == '\\' && v[index + 5] == 'u') {
            return Err(syntax("incomplete escape sequence"));
        }
        let low = parse_hex_digits(&v[index + 6..index + 10])?;
        if !(0xDC00..=0xDFFF).contains(&low) {
            return Err(syntax("unexpected codepoint"));
        }
        return Ok((
            0x10000 + (((cp & 0x03FF) << 10) | (low & 0x03FF)),
            index + 9,
        ));
    }
    Ok((cp, index + 3))
}

/// `_parse_hex_digits`: over the UTF-8 bytes of the digits, like the reference.
fn parse_hex_digits(digits: &[char]) -> Result<u32, ParseError> {
    let s: String = digits.iter().collect();
    let mut cp: u32 = 0;
    for b in s.bytes() {
        cp = cp.wrapping_shl(4);
        cp |= match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'A'..=b'F' => u32::from(b - b'A' + 10),
            b'a'..=b'f' => u32::from(b - b'a' + 10),
            _ => return Err(syntax("invalid \\uXXXX escape sequence")),
        };
    }
    Ok(cp)
}

fn from_codepoint(cp: u32) -> Result<char, ParseError> {
    if cp <= 0x1F {
        return Err(syntax("invalid character"));
    }
    char::from_u32(cp).ok_or_else(|| syntax("invalid character"))
}
