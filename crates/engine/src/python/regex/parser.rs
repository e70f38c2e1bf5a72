//! The parser: Python `re` syntax in (a port of `re._parser`), an equivalent `fancy-regex`
//! pattern out as it goes, with Python's own error messages for patterns Python rejects.

use super::flags::{apply_flags, simple_escape, F_A, F_T, F_U};
use super::translator::{
    boundary, cat_class, err, is_identifier, lit, unsupported, Cat, ClassItem, Flags, Item, Kind,
    Tok, Translator, INF, MAXREPEAT,
};

/// `$`: at the end, or before a final newline (with `re.M`, before any newline).
const DOLLAR: &str = "(?=\\u{A}?\\z)";
const DOLLAR_M: &str = "(?=\\u{A}|\\z)";

/// A `$` that ends a top-level alternative is followed by nothing, so whether a match exists is
/// the same when it consumes the newline it allows: `\n?\z` rather than the lookahead keeps the
/// most common patterns (`.*@example\.com$`) in the `regex` crate's dialect, for the lean engine
/// (`matcher.rs`).
fn consume_final_dollar(items: &mut [Item]) {
    if let Some(last) = items.last_mut() {
        if last.kind == Kind::At {
            if last.text == DOLLAR {
                last.text = "\\u{A}?\\z".into();
            } else if last.text == DOLLAR_M {
                last.text = "(?:\\u{A}|\\z)".into();
            }
        }
    }
}

impl Translator {
    pub(super) fn translate(mut self) -> Result<String, String> {
        let mut flags = Flags::default();
        let (text, _, _) = self.parse_sub(&mut flags, true)?;
        if self.saw_a && self.saw_u {
            return err("ASCII and UNICODE flags are incompatible");
        }
        if self.peek().is_some() {
            return err("unbalanced parenthesis");
        }
        if let Some(g) = self.forward_refs.iter().find(|&&g| g >= self.groups.len()) {
            return err(format!("invalid group reference {g}"));
        }
        Ok(text)
    }

    /// `_parse_sub`: alternation. Returns (pattern, min width, max width).
    pub(super) fn parse_sub(
        &mut self,
        flags: &mut Flags,
        top: bool,
    ) -> Result<(String, u64, u64), String> {
        let mut alts: Vec<String> = Vec::new();
        let (mut lo, mut hi) = (INF, 0u64);
        loop {
            let mut items = self.parse_seq(flags, top && alts.is_empty())?;
            if top {
                consume_final_dollar(&mut items);
            }
            let (l, h) = items.iter().fold((0u64, 0u64), |(l, h), it| {
                (l.saturating_add(it.lo), h.saturating_add(it.hi))
            });
            lo = lo.min(l);
            hi = hi.max(h);
            alts.push(items.into_iter().map(|it| it.text).collect());
            if !self.eat('|') {
                break;
            }
        }
        let text = if alts.len() == 1 {
            alts.pop().unwrap_or_default()
        } else {
            alts.join("|")
        };
        Ok((text, lo, hi))
    }

    /// `_parse`: a sequence up to `|`, `)` or the end.
    pub(super) fn parse_seq(
        &mut self,
        flags: &mut Flags,
        first: bool,
    ) -> Result<Vec<Item>, String> {
        let mut items: Vec<Item> = Vec::new();
        loop {
            let tok = match self.peek() {
                None | Some(Tok::C('|')) | Some(Tok::C(')')) => break,
                Some(t) => t,
            };
            self.pos += 1;
            let c = match tok {
                Tok::E(e) => {
                    let item = self.escape(e, *flags)?;
                    items.push(item);
                    continue;
                }
                Tok::C(c) => c,
            };
            if flags.x && matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c') {
                continue;
            }
            if flags.x && c == '#' {
                while !matches!(self.get(), None | Some(Tok::C('\n'))) {}
                continue;
            }
            match c {
                '[' => items.push(self.class(*flags)?),
                '*' | '+' | '?' | '{' => self.repeat(c, &mut items)?,
                '.' => items.push(Item::one(if flags.s {
                    "(?s:.)".into()
                } else {
                    "[^\\u{A}]".into()
                })),
                '^' => {
                    let t = if flags.m {
                        "(?:\\A|(?<=\\u{A}))"
                    } else {
                        "\\A"
                    };
                    items.push(Item::new(t.into(), Kind::At, 0, 0));
                }
                '$' => {
                    let t = if flags.m { DOLLAR_M } else { DOLLAR };
                    items.push(Item::new(t.into(), Kind::At, 0, 0));
                }
                '(' => {
                    if let Some(item) = self.group(flags, first && items.is_empty())? {
                        items.push(item);
                    }
                }
                c => items.push(self.literal(c as u32, *flags)),
            }
        }
        Ok(items)
    }

    pub(super) fn literal(&self, c: u32, flags: Flags) -> Item {
        let mut s = String::new();
        match char::from_u32(c) {
            Some(ch) if flags.i && flags.a && ch.is_ascii_alphabetic() => {
                s.push('[');
                s.push(ch.to_ascii_lowercase());
                s.push(ch.to_ascii_uppercase());
                s.push(']');
            }
            Some(ch) if flags.i && !flags.a && (ch.is_alphabetic() || !ch.is_ascii()) => {
                s.push_str("(?i:");
                lit(c, &mut s);
                s.push(')');
            }
            _ => lit(c, &mut s),
        }
        Item::one(s)
    }

    /// Read exactly `n` hex digits after `\x`, `\u` or `\U`.
    pub(super) fn hex(&mut self, esc: char, n: usize) -> Result<u32, String> {
        let digits = self.get_while(n, |c| c.is_ascii_hexdigit());
        if digits.len() != n {
            return err(format!("incomplete escape \\{esc}{digits}"));
        }
        let v = u32::from_str_radix(&digits, 16).unwrap_or(u32::MAX);
        if v > 0x10FFFF {
            return err(format!("bad escape \\{esc}{digits}"));
        }
        if (0xD800..0xE000).contains(&v) {
            return unsupported("surrogate code point escape");
        }
        Ok(v)
    }

    pub(super) fn octal_rest(&mut self, first: char, max_more: usize) -> Result<u32, String> {
        let rest = self.get_while(max_more, |c| ('0'..='7').contains(&c));
        let v = u32::from_str_radix(&format!("{first}{rest}"), 8).unwrap_or(u32::MAX);
        if v > 0o377 {
            return err(format!(
                "octal escape value \\{first}{rest} outside of range 0-0o377"
            ));
        }
        Ok(v)
    }

    /// `_escape`: an escape outside a character class.
    pub(super) fn escape(&mut self, e: char, flags: Flags) -> Result<Item, String> {
        let code = match e {
            'A' => return Ok(Item::new("\\A".into(), Kind::At, 0, 0)),
            'Z' => return Ok(Item::new("\\z".into(), Kind::At, 0, 0)),
            'b' | 'B' => return Ok(Item::new(boundary(e == 'B', flags.a), Kind::At, 0, 0)),
            'd' | 'D' => return Ok(Item::one(cat_class(Cat::Digit, e == 'D', flags.a))),
            's' | 'S' => return Ok(Item::one(cat_class(Cat::Space, e == 'S', flags.a))),
            'w' | 'W' => return Ok(Item::one(cat_class(Cat::Word, e == 'W', flags.a))),
            'x' => self.hex('x', 2)?,
            'u' => self.hex('u', 4)?,
            'U' => self.hex('U', 8)?,
            'N' => self.named_char()?,
            '0' => self.octal_rest('0', 2)?,
            '1'..='9' => return self.backref_or_octal(e, flags),
            e => match simple_escape(e) {
                Some(v) => v,
                None if e.is_ascii_alphabetic() => return err(format!("bad escape \\{e}")),
                None => e as u32,
            },
        };
        Ok(self.literal(code, flags))
    }

    pub(super) fn backref_or_octal(&mut self, e: char, flags: Flags) -> Result<Item, String> {
        let mut digits = e.to_string();
        if let Some(Tok::C(d)) = self.peek() {
            if d.is_ascii_digit() {
                self.pos += 1;
                digits.push(d);
                let is_oct = |c: char| ('0'..='7').contains(&c);
                if let (true, true, Some(Tok::C(d3))) = (is_oct(e), is_oct(d), self.peek()) {
                    if is_oct(d3) {
                        self.pos += 1;
                        let v = u32::from_str_radix(&format!("{e}{d}{d3}"), 8).unwrap_or(0);
                        if v > 0o377 {
                            return err(format!(
                                "octal escape value \\{e}{d}{d3} outside of range 0-0o377"
                            ));
                        }
                        return Ok(self.literal(v, flags));
                    }
                }
            }
        }
        let gid: usize = digits.parse().unwrap_or(usize::MAX);
        if gid >= self.groups.len() {
            return err(format!("invalid group reference {gid}"));
        }
        self.backref(gid, flags)
    }

    pub(super) fn backref(&mut self, gid: usize, flags: Flags) -> Result<Item, String> {
        let Some((lo, hi)) = self.groups[gid] else {
            return err("cannot refer to an open group");
        };
        if self.lookbehind > 0 {
            return unsupported("backreference inside a lookbehind");
        }
        let text = match (flags.i, flags.a) {
            (false, _) => format!("(?:\\{gid})"),
            (true, false) => format!("(?i:\\{gid})"),
            (true, true) => return unsupported("ASCII case-insensitive backreference"),
        };
        Ok(Item::new(text, Kind::Other, lo, hi))
    }

    /// `_class_escape`: an escape inside a character class.
    pub(super) fn class_escape(&mut self, e: char) -> Result<ClassItem, String> {
        let v = match e {
            'd' | 'D' => return Ok(ClassItem::Cat(Cat::Digit, e == 'D')),
            's' | 'S' => return Ok(ClassItem::Cat(Cat::Space, e == 'S')),
            'w' | 'W' => return Ok(ClassItem::Cat(Cat::Word, e == 'W')),
            'x' => self.hex('x', 2)?,
            'u' => self.hex('u', 4)?,
            'U' => self.hex('U', 8)?,
            'N' => self.named_char()?,
            '0'..='7' => self.octal_rest(e, 2)?,
            e => match simple_escape(e) {
                Some(v) => v,
                None if e.is_ascii_alphanumeric() => return err(format!("bad escape \\{e}")),
                None => e as u32,
            },
        };
        Ok(ClassItem::Range(v, v))
    }

    pub(super) fn class(&mut self, flags: Flags) -> Result<Item, String> {
        let negate = self.eat('^');
        let mut set: Vec<ClassItem> = Vec::new();
        loop {
            let this = match self.get() {
                None => return err("unterminated character set"),
                Some(Tok::C(']')) if !set.is_empty() => break,
                Some(t) => t,
            };
            let code1 = match this {
                Tok::E(e) => self.class_escape(e)?,
                Tok::C(c) => ClassItem::Range(c as u32, c as u32),
            };
            if !self.eat('-') {
                set.push(code1);
                continue;
            }
            let code2 = match self.get() {
                None => return err("unterminated character set"),
                Some(Tok::C(']')) => {
                    set.push(code1);
                    set.push(ClassItem::Range('-' as u32, '-' as u32));
                    break;
                }
                Some(Tok::E(e)) => self.class_escape(e)?,
                Some(Tok::C(c)) => ClassItem::Range(c as u32, c as u32),
            };
            match (code1, code2) {
                (ClassItem::Range(lo, _), ClassItem::Range(hi, _)) if lo <= hi => {
                    set.push(ClassItem::Range(lo, hi));
                }
                _ => return err("bad character range"),
            }
        }
        let ascii_fold = flags.i && flags.a;
        let mut s = String::from(if negate { "[^" } else { "[" });
        let push_range = |s: &mut String, lo: u32, hi: u32| {
            lit(lo, s);
            if hi != lo {
                s.push('-');
                lit(hi, s);
            }
        };
        for item in &set {
            match *item {
                ClassItem::Range(lo, hi) => {
                    push_range(&mut s, lo, hi);
                    if ascii_fold {
                        for (a, z, delta) in [(0x61u32, 0x7Au32, -32i64), (0x41, 0x5A, 32)] {
                            let (l, h) = (lo.max(a), hi.min(z));
                            if l <= h {
                                let shift = |v: u32| (v as i64 + delta) as u32;
                                push_range(&mut s, shift(l), shift(h));
                            }
                        }
                    }
                }
                ClassItem::Cat(cat, neg) => s.push_str(&cat_class(cat, neg, flags.a)),
            }
        }
        s.push(']');
        if flags.i && !flags.a {
            s = format!("(?i:{s})");
        }
        Ok(Item::one(s))
    }

    pub(super) fn repeat(&mut self, c: char, items: &mut Vec<Item>) -> Result<(), String> {
        let here = self.pos;
        let (min, max) = match c {
            '?' => (0, 1),
            '*' => (0, INF),
            '+' => (1, INF),
            _ => {
                if self.peek() == Some(Tok::C('}')) {
                    items.push(self.literal('{' as u32, Flags::default()));
                    return Ok(());
                }
                let lo = self.get_while(usize::MAX, |c| c.is_ascii_digit());
                let hi = if self.eat(',') {
                    Some(self.get_while(usize::MAX, |c| c.is_ascii_digit()))
                } else {
                    None
                };
                if !self.eat('}') {
                    self.pos = here;
                    items.push(self.literal('{' as u32, Flags::default()));
                    return Ok(());
                }
                let num = |s: &str| -> Result<u64, String> {
                    match s.parse::<u64>() {
                        Ok(v) if v < MAXREPEAT => Ok(v),
                        _ => err("the repetition number is too large"),
                    }
                };
                let min = if lo.is_empty() { 0 } else { num(&lo)? };
                let max = match hi.as_deref() {
                    None => min,
                    Some("") => INF,
                    Some(h) => num(h)?,
                };
                if max < min {
                    return err("min repeat greater than max repeat");
                }
                (min, max)
            }
        };
        let item = match items.pop() {
            None => return err("nothing to repeat"),
            Some(it) if it.kind == Kind::At => return err("nothing to repeat"),
            Some(it) if it.kind == Kind::Repeat => return err("multiple repeat"),
            Some(it) => it,
        };
        let lazy = self.eat('?');
        let possessive = !lazy && self.eat('+');
        let lo = item.lo.saturating_mul(min);
        let hi = if item.hi == 0 {
            0
        } else if max == INF {
            INF
        } else {
            item.hi.saturating_mul(max)
        };
        let text = if item.kind == Kind::Assert || item.text.is_empty() {
            // Zero-width lookaround: repeating it is the same as matching
            // it once (min >= 1) or not at all (min == 0).
            if min == 0 {
                String::new()
            } else {
                item.text
            }
        } else {
            let q = match (min, max) {
                (0, 1) => "?".to_string(),
                (0, INF) => "*".to_string(),
                (1, INF) => "+".to_string(),
                (m, INF) => format!("{{{m},}}"),
                (m, n) if m == n => format!("{{{m}}}"),
                (m, n) => format!("{{{m},{n}}}"),
            };
            let lazy = if lazy { "?" } else { "" };
            if possessive {
                format!("(?>(?:{}){q})", item.text)
            } else {
                format!("(?:{}){q}{lazy}", item.text)
            }
        };
        items.push(Item::new(text, Kind::Repeat, lo, hi));
        Ok(())
    }

    /// `\N{NAME}`: a character by its Unicode name (case-insensitive, as Python allows).
    pub(super) fn named_char(&mut self) -> Result<u32, String> {
        if !self.eat('{') {
            return err("missing {");
        }
        let name = self.get_until('}', "character name")?;
        match unicode_names2::character(&name.to_uppercase()) {
            Some(c) => Ok(c as u32),
            None => err(format!("undefined character name '{name}'")),
        }
    }

    /// After `(?(`: a conditional on a group, `(?(id)yes|no)`. Python allows a forward
    /// reference by number (checked once the whole pattern is parsed), but not by name.
    pub(super) fn conditional(&mut self, flags: &mut Flags) -> Result<Item, String> {
        let id = self.get_until(')', "group name")?;
        let gid = if !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()) {
            let gid: usize = id
                .parse()
                .map_err(|_| format!("invalid group reference {id}"))?;
            if gid == 0 {
                return err("bad group number");
            }
            self.forward_refs.push(gid);
            gid
        } else {
            if !is_identifier(&id) {
                return err(format!("bad character in group name '{id}'"));
            }
            match self.names.get(&id) {
                Some(&gid) => gid,
                None => return err(format!("unknown group name '{id}'")),
            }
        };
        let mut sub_flags = *flags;
        let (inner, _lo, hi) = self.parse_sub(&mut sub_flags, false)?;
        if !self.eat(')') {
            return err("missing ), unterminated subpattern");
        }
        Ok(Item::new(format!("(?({gid}){inner})"), Kind::Other, 0, hi))
    }

    /// After `(`: groups, lookarounds, comments and inline flags.
    pub(super) fn group(
        &mut self,
        flags: &mut Flags,
        at_start: bool,
    ) -> Result<Option<Item>, String> {
        let mut name = None;
        let mut open = "(";
        let mut capture = true;
        let mut sub_flags = *flags;
        let mut lookbehind = false;
        if self.eat('?') {
            let c = match self.get() {
                None => return err("unexpected end of pattern"),
                Some(Tok::E(e)) => return err(format!("unknown extension ?\\{e}")),
                Some(Tok::C(c)) => c,
            };
            capture = false;
            match c {
                'P' if self.eat('<') => {
                    let n = self.get_until('>', "group name")?;
                    if !is_identifier(&n) {
                        return err(format!("bad character in group name '{n}'"));
                    }
                    name = Some(n);
                    capture = true;
                }
                'P' if self.eat('=') => {
                    let n = self.get_until(')', "group name")?;
                    if !is_identifier(&n) {
                        return err(format!("bad character in group name '{n}'"));
                    }
                    let Some(&gid) = self.names.get(&n) else {
                        return err(format!("unknown group name '{n}'"));
                    };
                    return self.backref(gid, *flags).map(Some);
                }
                'P' => return err("unknown extension ?P"),
                ':' => open = "(?:",
                '#' => loop {
                    match self.get() {
                        None => return err("missing ), unterminated comment"),
                        Some(Tok::C(')')) => return Ok(None),
                        Some(_) => {}
                    }
                },
                '=' => open = "(?=",
                '!' => open = "(?!",
                '<' => {
                    open = match self.get() {
                        Some(Tok::C('=')) => "(?<=",
                        Some(Tok::C('!')) => "(?<!",
                        None => return err("unexpected end of pattern"),
                        Some(_) => return err("unknown extension ?<"),
                    };
                    lookbehind = true;
                }
                '(' => return self.conditional(flags).map(Some),
                '>' => open = "(?>",
                c if c == '-' || "iLmsxatu".contains(c) => match self.inline_flags(c)? {
                    (add, None) => {
                        if !at_start {
                            return err("global flags not at the start of the expression");
                        }
                        if add & F_T != 0 {
                            return unsupported("the TEMPLATE (t) flag");
                        }
                        self.saw_a |= add & F_A != 0;
                        self.saw_u |= add & F_U != 0;
                        apply_flags(flags, add, 0);
                        return Ok(None);
                    }
                    (add, Some(del)) => {
                        apply_flags(&mut sub_flags, add, del);
                        open = "(?:";
                    }
                },
                c => return err(format!("unknown extension ?{c}")),
            }
        }
        let gid = if capture {
            self.groups.push(None);
            let gid = self.groups.len() - 1;
            if let Some(n) = name {
                if self.names.insert(n.clone(), gid).is_some() {
                    return err(format!("redefinition of group name '{n}'"));
                }
            }
            Some(gid)
        } else {
            None
        };
        if lookbehind {
            self.lookbehind += 1;
        }
        let (inner, lo, hi) = self.parse_sub(&mut sub_flags, false)?;
        if lookbehind {
            self.lookbehind -= 1;
        }
        if !self.eat(')') {
            return err("missing ), unterminated subpattern");
        }
        if let Some(gid) = gid {
            self.groups[gid] = Some((lo, hi));
        }
        if lookbehind && lo != hi {
            return err("look-behind requires fixed-width pattern");
        }
        if open == "(?:" && inner.is_empty() {
            return Ok(Some(Item::new(String::new(), Kind::Other, 0, 0)));
        }
        let text = format!("{open}{inner})");
        Ok(Some(match open {
            "(?=" | "(?!" | "(?<=" | "(?<!" => Item::new(text, Kind::Assert, 0, 0),
            _ => Item::new(text, Kind::Other, lo, hi),
        }))
    }
}
