//! The `Translator` and the vocabulary its files share: the pattern as tokens with a cursor over
//! them, the active flags, translated items and class members, the error helpers, and the
//! emitters for literals, character categories and word boundaries.
//!
//! It sits below `parser.rs` and `flags.rs` (inline flags), which both extend
//! `Translator`: each imports what it needs from here, and neither reaches back into the module
//! root.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::python::unicode_tables::{ND_BLOCK_STARTS, RE_SPACE, RE_WORD};

/// Prefix of the error message for valid Python patterns this module cannot
/// reproduce exactly (as opposed to patterns CPython itself rejects).
pub const UNSUPPORTED: &str = "unsupported Python regex feature: ";

/// CPython's `_sre.MAXREPEAT`: repeat counts must be below it.
pub(super) const MAXREPEAT: u64 = 4_294_967_295;
/// Unbounded width / repeat.
pub(super) const INF: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    C(char),
    E(char),
}

#[derive(Clone, Copy, Default)]
pub(super) struct Flags {
    pub(super) i: bool,
    pub(super) m: bool,
    pub(super) s: bool,
    pub(super) x: bool,
    pub(super) a: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    At,
    Assert,
    Repeat,
    Other,
}

pub(super) struct Item {
    pub(super) text: String,
    pub(super) kind: Kind,
    pub(super) lo: u64,
    pub(super) hi: u64,
}

impl Item {
    pub(super) fn new(text: String, kind: Kind, lo: u64, hi: u64) -> Item {
        Item { text, kind, lo, hi }
    }
    pub(super) fn one(text: String) -> Item {
        Item::new(text, Kind::Other, 1, 1)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Cat {
    Digit,
    Space,
    Word,
}

pub(super) enum ClassItem {
    Range(u32, u32),
    Cat(Cat, bool),
}

pub(super) struct Translator {
    toks: Vec<Tok>,
    pub(super) pos: usize,
    /// Width of each group once closed (`None` while open); index 0 unused.
    pub(super) groups: Vec<Option<(u64, u64)>>,
    pub(super) names: HashMap<String, usize>,
    /// Group numbers referenced by conditionals, checked against the final group count.
    pub(super) forward_refs: Vec<usize>,
    pub(super) lookbehind: usize,
    pub(super) saw_a: bool,
    pub(super) saw_u: bool,
}

impl Translator {
    pub(super) fn new(pattern: &str) -> Result<Translator, String> {
        let mut toks = Vec::with_capacity(pattern.len());
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some(e) => toks.push(Tok::E(e)),
                    None => return err("bad escape (end of pattern)"),
                }
            } else {
                toks.push(Tok::C(c));
            }
        }
        Ok(Translator {
            toks,
            pos: 0,
            groups: vec![Some((0, 0))],
            names: HashMap::new(),
            forward_refs: Vec::new(),
            lookbehind: 0,
            saw_a: false,
            saw_u: false,
        })
    }

    pub(super) fn peek(&self) -> Option<Tok> {
        self.toks.get(self.pos).copied()
    }

    pub(super) fn get(&mut self) -> Option<Tok> {
        let t = self.peek();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    pub(super) fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(Tok::C(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Up to `n` following plain tokens whose char satisfies `pred`.
    pub(super) fn get_while(&mut self, n: usize, pred: impl Fn(char) -> bool) -> String {
        let mut s = String::new();
        while s.len() < n {
            match self.peek() {
                Some(Tok::C(c)) if pred(c) => {
                    s.push(c);
                    self.pos += 1;
                }
                _ => break,
            }
        }
        s
    }

    pub(super) fn get_until(&mut self, term: char, what: &str) -> Result<String, String> {
        let mut s = String::new();
        loop {
            match self.get() {
                None if s.is_empty() => return err(format!("missing {what}")),
                None => return err(format!("missing {term}, unterminated name")),
                Some(Tok::C(c)) if c == term => {
                    if s.is_empty() {
                        return err(format!("missing {what}"));
                    }
                    return Ok(s);
                }
                Some(Tok::C(c)) => s.push(c),
                Some(Tok::E(c)) => {
                    s.push('\\');
                    s.push(c);
                }
            }
        }
    }
}

pub(super) fn err<T>(msg: impl Into<String>) -> Result<T, String> {
    Err(msg.into())
}

pub(super) fn unsupported<T>(what: &str) -> Result<T, String> {
    Err(format!("{UNSUPPORTED}{what}"))
}

pub(super) fn lit(c: u32, out: &mut String) {
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

pub(super) fn cat_class(cat: Cat, negate: bool, ascii: bool) -> String {
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

pub(super) fn boundary(negate: bool, ascii: bool) -> String {
    let w = cat_class(Cat::Word, false, ascii);
    if negate {
        // CPython's \B never matches inside an empty string.
        format!("(?:(?!\\A\\z)(?:(?<={w})(?={w})|(?<!{w})(?!{w})))")
    } else {
        format!("(?:(?<={w})(?!{w})|(?<!{w})(?={w}))")
    }
}

pub(super) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}
