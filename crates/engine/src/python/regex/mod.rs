//! Python `re` dialect on top of `fancy_regex`: `re.compile(p).match(s)`.
//!
//! The reference engine's `REGEX` operator is `re.compile(value).match(str)`,
//! i.e. Python's regex dialect, anchored at the start only, with Unicode
//! `str` semantics. `fancy_regex` (Rust `regex` syntax) differs in syntax
//! (`{,n}`, `(?P=name)`, `\Z`, literal `{`, which escapes are errors) and in
//! semantics (`$` also matches before a final `\n`, `\w`/`\d`/`\s`/`\b`
//! follow CPython's Unicode 14 tables, `\B` never matches in an empty
//! string), so this module re-parses the pattern with a port of CPython
//! 3.11's `re._parser` (same errors) and emits an explicit, flag-free
//! `fancy_regex` pattern.
//!
//! Things that cannot be translated faithfully are rejected with an error
//! starting with [`UNSUPPORTED`] instead of silently behaving differently:
//! `\N{...}`, conditionals `(?(1)...)`, the `t` flag, surrogate code points,
//! ASCII-mode case-insensitive backreferences and backreferences inside
//! lookbehinds. Known remaining gaps: Unicode case-insensitive matching uses
//! Rust's simple case folding (CPython also equates e.g. `i` and U+0130),
//! and group names are checked with an approximation of `str.isidentifier`.
//!
//! A match that exceeds `fancy_regex`'s backtrack limit (1,000,000 steps),
//! where CPython would keep going, is reported as no match.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::unicode_tables::{ND_BLOCK_STARTS, RE_SPACE, RE_WORD};

/// Prefix of the error message for valid Python patterns this module cannot
/// reproduce exactly (as opposed to patterns CPython itself rejects).
pub const UNSUPPORTED: &str = "unsupported Python regex feature: ";

/// CPython's `_sre.MAXREPEAT`: repeat counts must be below it.
const MAXREPEAT: u64 = 4_294_967_295;
/// Unbounded width / repeat.
const INF: u64 = u64::MAX;

/// A compiled Python-dialect regular expression.
#[derive(Clone, Debug)]
pub struct PyRegex {
    re: fancy_regex::Regex,
}

impl PyRegex {
    /// `re.compile(pattern)` for a `str` pattern without flags. Errors are
    /// CPython's (`re.error`, `OverflowError`, `ValueError`) or
    /// [`UNSUPPORTED`] features.
    pub fn compile(pattern: &str) -> Result<PyRegex, String> {
        let body = Translator::new(pattern)?.translate()?;
        let re = fancy_regex::Regex::new(&format!("\\A(?:{body})"))
            .map_err(|e| format!("{UNSUPPORTED}cannot compile translation: {e}"))?;
        Ok(PyRegex { re })
    }

    /// `re.compile(pattern).match(subject) is not None`. Exceeding the
    /// backtrack limit counts as no match.
    pub fn matches_at_start(&self, subject: &str) -> bool {
        self.re.is_match(subject).unwrap_or(false)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    C(char),
    E(char),
}

#[derive(Clone, Copy, Default)]
struct Flags {
    i: bool,
    m: bool,
    s: bool,
    x: bool,
    a: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    At,
    Assert,
    Repeat,
    Other,
}

struct Item {
    text: String,
    kind: Kind,
    lo: u64,
    hi: u64,
}

impl Item {
    fn new(text: String, kind: Kind, lo: u64, hi: u64) -> Item {
        Item { text, kind, lo, hi }
    }
    fn one(text: String) -> Item {
        Item::new(text, Kind::Other, 1, 1)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cat {
    Digit,
    Space,
    Word,
}

enum ClassItem {
    Range(u32, u32),
    Cat(Cat, bool),
}

struct Translator {
    toks: Vec<Tok>,
    pos: usize,
    /// Width of each group once closed (`None` while open); index 0 unused.
    groups: Vec<Option<(u64, u64)>>,
    names: HashMap<String, usize>,
    /// Group numbers referenced by conditionals, checked against the final group count.
    forward_refs: Vec<usize>,
    lookbehind: usize,
    saw_a: bool,
    saw_u: bool,
}

fn err<T>(msg: impl Into<String>) -> Result<T, String> {
    Err(msg.into())
}

fn unsupported<T>(what: &str) -> Result<T, String> {
    Err(format!("{UNSUPPORTED}{what}"))
}

fn lit(c: u32, out: &mut String) {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_alphanumeric() => out.push(ch),
        _ => {
            let _ = write!(out, "\\u{{{c:X}}}");
        }
    }
}

fn table_class(pairs: impl Iterator<Item = (u32, u32)>, negate: bool) -> String {
    let mut s = String::from(if negate { "[^" } else { "[" });
    for (lo, hi) in pairs {
        lit(lo, &mut s);
        if hi != lo {
            s.push('-');
            lit(hi, &mut s);
        }
    }
    s.push(']');
    s
}

fn cat_class(cat: Cat, negate: bool, ascii: bool) -> String {
    let flat = |t: &'static [u32]| t.chunks(2).map(|p| (p[0], p[1]));
    match (cat, ascii) {
        (Cat::Digit, true) => table_class([(0x30, 0x39)].into_iter(), negate),
        (Cat::Space, true) => table_class([(9, 13), (32, 32)].into_iter(), negate),
        (Cat::Word, true) => table_class(
            [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)].into_iter(),
            negate,
        ),
        (Cat::Digit, false) => table_class(ND_BLOCK_STARTS.iter().map(|&s| (s, s + 9)), negate),
        (Cat::Space, false) => table_class(flat(&RE_SPACE), negate),
        (Cat::Word, false) => table_class(flat(&RE_WORD), negate),
    }
}

fn boundary(negate: bool, ascii: bool) -> String {
    let w = cat_class(Cat::Word, false, ascii);
    if negate {
        // CPython's \B never matches inside an empty string.
        format!("(?:(?!\\A\\z)(?:(?<={w})(?={w})|(?<!{w})(?!{w})))")
    } else {
        format!("(?:(?<={w})(?!{w})|(?<!{w})(?={w}))")
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

mod flags;
mod translate;

use flags::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::regex_vectors::REGEX_VECTORS;

    /// Valid Python patterns this module deliberately refuses.
    const EXPECTED_UNSUPPORTED: &[&str] = &[
        r"\N{EM DASH}",
        r"[\N{EM DASH}]",
        r"(?P<n>a)(?(n)b|c)",
        r"\ud800",
        r"(a)(?<=\1)",
        // Exceeds the `regex` crate's compiled size limit.
        r"x{4294967294}",
    ];

    #[test]
    fn python_vectors() {
        let mut failures = Vec::new();
        for (pattern, subject, want) in REGEX_VECTORS {
            let got = PyRegex::compile(pattern);
            let ok = match (&got, want) {
                (Err(_), None) => true,
                (Err(e), Some(_)) => {
                    e.starts_with(UNSUPPORTED) && EXPECTED_UNSUPPORTED.contains(pattern)
                }
                (Ok(re), Some(want)) => re.matches_at_start(subject) == *want,
                (Ok(_), None) => false,
            };
            if !ok {
                let got = got.map(|re| re.matches_at_start(subject));
                failures.push(format!(
                    "{pattern:?} on {subject:?}: want {want:?}, got {got:?}"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn backtrack_limit_is_no_match() {
        // Catastrophic in a backtracking engine; CPython eventually says no.
        let re = PyRegex::compile(r"(?:(a+)+\1)+$").unwrap();
        let subject = format!("{}b", "a".repeat(40));
        assert!(
            re.re.is_match(&subject).is_err(),
            "expected the limit to trip"
        );
        assert!(!re.matches_at_start(&subject));
    }
}
