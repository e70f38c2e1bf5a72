//! The canonical (RFC 8785) form of a document written straight from its JSON text, for the
//! content revision: byte for byte what [`canonical::write`](crate::canonical::write) writes for
//! the parsed tree, without building that tree (for an 11 MB document, building and freeing it
//! cost more than everything else a snapshot needs).
//!
//! Members are written in the order they come; an object whose members were not already in
//! canonical order (UTF-16 code units of the decoded names) is reordered when it ends, by
//! copying its bytes once more. Nothing is allocated per value. Strings without escapes are
//! copied as spelled: JSON text cannot hold an unescaped quote, backslash or control character,
//! so serde_json writes such a string back exactly so. Strings with escapes are decoded and
//! written as the tree writer writes them. Numbers are spelled as the parser keeps them and
//! then written as `canonical::write_number_text` writes them.
//!
//! The text should be JSON the parser has accepted. What this writer does not expect (invalid
//! text, a name repeated in an object, whose tree keeps only the last value) yields `None`, and
//! the caller hashes the parsed tree instead.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::Range;

use sha2::{Digest, Sha256};

/// The parser's nesting limit: deeper text is not JSON the tree could hold.
const MAX_DEPTH: usize = 128;

/// SHA-256 of the canonical form of the JSON `text`, or `None` (see the module docs).
pub(crate) fn sha256(text: &str) -> Option<[u8; 32]> {
    let mut out = Vec::with_capacity(text.len());
    write(&mut out, text)?;
    Some(Sha256::digest(&out).into())
}

/// Appends the canonical form of the JSON `text`, or returns `None` (leaving `out` partly
/// written).
pub(crate) fn write(out: &mut Vec<u8>, text: &str) -> Option<()> {
    let mut writer = Writer {
        text,
        pos: 0,
        out,
        members: Vec::new(),
        scratch: Vec::new(),
        depth: 0,
    };
    writer.value()?;
    writer.skip_whitespace();
    (writer.pos == text.len()).then_some(())
}

/// One member of an object being written: its decoded name, and where its `"name":value` bytes
/// are in the output.
struct Member<'t> {
    name: Cow<'t, str>,
    bytes: Range<usize>,
}

struct Writer<'t, 'o> {
    text: &'t str,
    pos: usize,
    out: &'o mut Vec<u8>,
    /// The members of every object being written, innermost last.
    members: Vec<Member<'t>>,
    /// Where an object's bytes wait while they are reordered.
    scratch: Vec<u8>,
    depth: usize,
}

impl<'t> Writer<'t, '_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Consumes `byte` (after whitespace) or fails.
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.skip_whitespace();
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    fn value(&mut self) -> Option<()> {
        self.skip_whitespace();
        match self.peek()? {
            b'{' => self.nested(Self::object),
            b'[' => self.nested(Self::array),
            b'"' => {
                let (spelled, decoded) = self.string()?;
                self.write_string(spelled, &decoded);
                Some(())
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn nested(&mut self, write: fn(&mut Self) -> Option<()>) -> Option<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        write(self)?;
        self.depth -= 1;
        Some(())
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.text[self.pos..].starts_with(word).then(|| {
            self.out.extend_from_slice(word.as_bytes());
            self.pos += word.len();
        })
    }

    /// A string at `pos`: its spelling (quotes included) and its decoded text.
    fn string(&mut self) -> Option<(&'t str, Cow<'t, str>)> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        let mut at = start + 1;
        let mut escaped = false;
        loop {
            at += memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
            if bytes[at] == b'"' {
                break;
            }
            escaped = true;
            at += 2; // the backslash and the character it escapes (`\uXXXX` continues as text)
        }
        self.pos = at + 1;
        let spelled = &self.text[start..self.pos];
        let decoded = if escaped {
            Cow::Owned(serde_json::from_str::<String>(spelled).ok()?)
        } else {
            Cow::Borrowed(&spelled[1..spelled.len() - 1])
        };
        Some((spelled, decoded))
    }

    /// Writes a string spelled `spelled` that decodes to `decoded`.
    fn write_string(&mut self, spelled: &str, decoded: &str) {
        // Every escape is longer than what it stands for, so equal lengths mean no escapes.
        if spelled.len() == decoded.len() + 2 {
            // Written back exactly as spelled.
            self.out.extend_from_slice(spelled.as_bytes());
        } else {
            crate::json::write(self.out, decoded);
        }
    }

    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = bytes.get(self.pos) {
            self.pos += 1;
        }
        let spelled = &self.text[start..self.pos];
        let digits = spelled.strip_prefix('-').unwrap_or(spelled);
        let plain_integer = !digits.is_empty()
            && digits.len() <= 15
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (!digits.starts_with('0') || spelled == "0");
        if plain_integer {
            // Exact as a double and printed the ECMAScript way as it is spelled.
            self.out.extend_from_slice(spelled.as_bytes());
        } else {
            crate::canonical::write_number_text(self.out, &kept_spelling(spelled));
        }
        Some(())
    }

    fn array(&mut self) -> Option<()> {
        self.pos += 1;
        self.out.push(b'[');
        self.skip_whitespace();
        if self.peek()? == b']' {
            self.pos += 1;
        } else {
            loop {
                self.value()?;
                self.skip_whitespace();
                match self.peek()? {
                    b',' => self.out.push(b','),
                    b']' => break,
                    _ => return None,
                }
                self.pos += 1;
            }
            self.pos += 1;
        }
        self.out.push(b']');
        Some(())
    }

    fn object(&mut self) -> Option<()> {
        self.pos += 1;
        self.out.push(b'{');
        let first = self.members.len();
        let body = self.out.len();
        self.skip_whitespace();
        if self.peek()? == b'}' {
            self.pos += 1;
        } else {
            loop {
                self.skip_whitespace();
                if self.peek()? != b'"' {
                    return None;
                }
                let start = self.out.len();
                let (spelled, name) = self.string()?;
                self.write_string(spelled, &name);
                self.expect(b':')?;
                self.out.push(b':');
                self.value()?;
                self.members.push(Member {
                    name,
                    bytes: start..self.out.len(),
                });
                self.skip_whitespace();
                match self.peek()? {
                    b',' => self.out.push(b','),
                    b'}' => break,
                    _ => return None,
                }
                self.pos += 1;
            }
            self.pos += 1;
            self.reorder(first, body)?;
            self.members.truncate(first);
        }
        self.out.push(b'}');
        Some(())
    }

    /// Puts the members from `first` on (written from `body` on) in canonical order.
    fn reorder(&mut self, first: usize, body: usize) -> Option<()> {
        let members = &mut self.members[first..];
        let ordered = members
            .windows(2)
            .all(|w| name_order(&w[0].name, &w[1].name) == Ordering::Less);
        if ordered {
            return Some(());
        }
        members.sort_by(|a, b| name_order(&a.name, &b.name));
        if members
            .windows(2)
            .any(|w| name_order(&w[0].name, &w[1].name) == Ordering::Equal)
        {
            return None;
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.out[body..]);
        self.out.truncate(body);
        for (i, member) in members.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            let range = member.bytes.start - body..member.bytes.end - body;
            self.out.extend_from_slice(&self.scratch[range]);
        }
        Some(())
    }
}

/// RFC 8785's order of member names: by UTF-16 code units. UTF-8 bytes sort the same way except
/// where the first characters that differ are one from U+E000 to U+FFFF and one from U+10000 on
/// (UTF-16 puts the surrogate pair first): both then start with a byte from 0xEE on.
fn name_order(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    match x.iter().zip(y).position(|(p, q)| p != q) {
        Some(i) if x[i] >= 0xEE && y[i] >= 0xEE => a.encode_utf16().cmp(b.encode_utf16()),
        Some(i) => x[i].cmp(&y[i]),
        None => x.len().cmp(&y.len()),
    }
}

/// A number as the parser keeps it (with arbitrary precision): as spelled, but for the
/// exponent, written `e` and always signed (`1E5` → `1e+5`).
fn kept_spelling(spelled: &str) -> Cow<'_, str> {
    let Some(e) = spelled.find(['e', 'E']) else {
        return Cow::Borrowed(spelled);
    };
    let exponent = &spelled[e + 1..];
    let signed = exponent.starts_with(['+', '-']);
    if signed && spelled.as_bytes()[e] == b'e' {
        return Cow::Borrowed(spelled);
    }
    let sign = if signed { "" } else { "+" };
    Cow::Owned(format!("{}e{sign}{exponent}", &spelled[..e]))
}

#[cfg(test)]
mod tests;
