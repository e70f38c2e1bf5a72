//! `match()`/`search()` patterns as the reference library treats them: first
//! `iregexp_check.check(pattern)` (a PEG grammar for RFC 9485 I-Regexp, ported here rule by
//! rule, quirks included: range quantifiers take single digits only, so `a{10}` is rejected),
//! then the library's `map_re` (`.` becomes "any character but `\r`/`\n`") and the third-party
//! `regex` module: `fullmatch` (`VERSION0`) for `match`, `search` with `VERSION1` for `search`.
//!
//! Checked patterns are translated straight to `fancy_regex` syntax. Differences between the
//! dialects that survive the check are handled here: `^`/`$` are normal characters in I-Regexp
//! but anchors in Python (`$` also matches before a final newline); in `VERSION1` `&&`/`~~`
//! inside a class are set operations (left to the Rust engine's own set operations, which agree
//! on simple forms such as `[a&&b]`). An invalid regex (`[z-a]`, `a{2,1}`) makes the function
//! return false, like the library's `except re.error`. Hand-written because no crate implements
//! this combination.

/// `iregexp_check.check` + translation. `None`: the function returns false for any subject.
pub(super) fn compile(pattern: &str, full: bool) -> Option<fancy_regex::Regex> {
    let mut p = Peg {
        s: pattern.chars().collect(),
        pos: 0,
        out: String::new(),
        v1: !full,
        bad: false,
    };
    if !(p.iregexp() && p.pos == p.s.len()) || p.bad {
        return None;
    }
    let body = p.out;
    let re = if full {
        format!("\\A(?:{body})\\z")
    } else {
        body
    };
    fancy_regex::Regex::new(&re).ok()
}

/// Whether `iregexp_check.check(pattern)` is true.
#[cfg(test)]
pub(super) fn check(pattern: &str) -> bool {
    let mut p = Peg {
        s: pattern.chars().collect(),
        pos: 0,
        out: String::new(),
        v1: false,
        bad: false,
    };
    p.iregexp() && p.pos == p.s.len()
}

struct Peg {
    s: Vec<char>,
    pos: usize,
    out: String,
    /// `search` compiles with `VERSION1` (set operations in classes).
    v1: bool,
    /// The pattern passes the check but the `regex` module rejects it.
    bad: bool,
}

fn hex(c: char) -> String {
    format!("\\x{{{:X}}}", c as u32)
}

impl Peg {
    fn peek(&self) -> Option<char> {
        self.s.get(self.pos).copied()
    }

    fn lit(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Runs a rule; on failure restores the position and the output.
    fn attempt(&mut self, f: impl FnOnce(&mut Peg) -> bool) -> bool {
        let (pos, len) = (self.pos, self.out.len());
        if f(self) {
            true
        } else {
            self.pos = pos;
            self.out.truncate(len);
            false
        }
    }

    fn iregexp(&mut self) -> bool {
        self.branch();
        loop {
            let ok = self.attempt(|p| {
                if !p.lit('|') {
                    return false;
                }
                p.out.push('|');
                p.branch();
                true
            });
            if !ok {
                return true;
            }
        }
    }

    fn branch(&mut self) {
        while self.attempt(Peg::piece) {}
    }

    fn piece(&mut self) -> bool {
        let start = self.out.len();
        let assertion = matches!(self.peek(), Some('^' | '$'));
        if !self.atom() {
            return false;
        }
        let atom = self.out.split_off(start);
        // The quantifier and its minimum count.
        let mut quant = None;
        match self.peek() {
            Some(c @ ('*' | '+' | '?')) => {
                self.pos += 1;
                quant = Some((c.to_string(), u8::from(c == '+')));
            }
            Some('{') => {
                let save = self.pos;
                match self.range_quantifier() {
                    Some(q) => quant = Some(q),
                    None => self.pos = save,
                }
            }
            _ => {}
        }
        match quant {
            None => self.out.push_str(&atom),
            // A repeated anchor matches like the anchor once, or always when it may repeat
            // zero times (the Rust engine rejects repeating a lookahead).
            Some((_, min)) if assertion => {
                if min > 0 {
                    self.out.push_str(&atom);
                }
            }
            Some((q, _)) => {
                self.out.push_str("(?:");
                self.out.push_str(&atom);
                self.out.push(')');
                self.out.push_str(&q);
            }
        }
        true
    }

    /// `"{" ~ ASCII_DIGIT ~ ("," ~ ASCII_DIGIT?)? ~ "}"`: the quantifier and its minimum.
    /// A maximum below the minimum is a regex error: the function returns false.
    fn range_quantifier(&mut self) -> Option<(String, u8)> {
        if !self.lit('{') {
            return None;
        }
        let min = self.peek().filter(char::is_ascii_digit)?;
        self.pos += 1;
        let mut q = format!("{{{min}");
        if self.lit(',') {
            q.push(',');
            if let Some(max) = self.peek().filter(char::is_ascii_digit) {
                self.pos += 1;
                q.push(max);
                if max < min {
                    self.bad = true;
                }
            }
        }
        if !self.lit('}') {
            return None;
        }
        q.push('}');
        Some((q, min as u8 - b'0'))
    }

    fn atom(&mut self) -> bool {
        let Some(c) = self.peek() else {
            return false;
        };
        if is_normal_char(c) {
            self.pos += 1;
            match c {
                '^' => self.out.push('^'),
                '$' => self.out.push_str("(?=\\n?\\z)"),
                _ => self.out.push_str(&hex(c)),
            }
            return true;
        }
        if self.char_class() {
            return true;
        }
        self.attempt(|p| {
            if !p.lit('(') {
                return false;
            }
            p.out.push_str("(?:");
            if !p.iregexp() || !p.lit(')') {
                return false;
            }
            p.out.push(')');
            true
        })
    }

    fn char_class(&mut self) -> bool {
        if self.lit('.') {
            self.out.push_str("[^\\n\\r]");
            return true;
        }
        if let Some(c) = self.single_char_esc() {
            self.out.push_str(&hex(c));
            return true;
        }
        if self.char_class_esc() {
            return true;
        }
        self.attempt(Peg::char_class_expr)
    }

    /// `"\\" ~ (...)`: the escaped character's value.
    fn single_char_esc(&mut self) -> Option<char> {
        if self.peek() != Some('\\') {
            return None;
        }
        let c = *self.s.get(self.pos + 1)?;
        let v = match c {
            '('..='+' | '-' | '.' | '?' | '['..='^' | '{'..='}' => c,
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            _ => return None,
        };
        self.pos += 2;
        Some(v)
    }

    /// `cat_esc | compl_esc`: `\p{..}` / `\P{..}` with a general category.
    fn char_class_esc(&mut self) -> bool {
        self.attempt(|p| {
            if !p.lit('\\') {
                return false;
            }
            let upper = match p.peek() {
                Some('p') => false,
                Some('P') => true,
                _ => return false,
            };
            p.pos += 1;
            if !p.lit('{') {
                return false;
            }
            let Some(major) = p.peek() else {
                return false;
            };
            let minors: &[char] = match major {
                'L' => &['l', 'm', 'o', 't', 'u'],
                'M' => &['c', 'e', 'n'],
                'N' => &['d', 'l', 'o'],
                'P' => &['c', 'd', 'e', 'f', 'i', 'o', 's'],
                'Z' => &['l', 'p', 's'],
                'S' => &['c', 'k', 'm', 'o'],
                'C' => &['c', 'f', 'n', 'o'],
                _ => return false,
            };
            p.pos += 1;
            let mut cat = major.to_string();
            if let Some(m) = p.peek().filter(|m| minors.contains(m)) {
                p.pos += 1;
                cat.push(m);
            }
            if !p.lit('}') {
                return false;
            }
            p.out
                .push_str(&format!("\\{}{{{cat}}}", if upper { 'P' } else { 'p' }));
            true
        })
    }

    /// `c_char`: a class character, literal or escaped.
    fn c_char(&mut self) -> Option<char> {
        let c = self.peek()?;
        if matches!(c, '\u{0}'..='\u{2C}' | '\u{2E}'..='\u{5A}' | '\u{5E}'..='\u{D7FF}' | '\u{E000}'..)
        {
            self.pos += 1;
            return Some(c);
        }
        self.single_char_esc()
    }

    /// `cce1 = (c_char ~ ("-" ~ c_char)?) | char_class_esc`
    fn cce1(&mut self) -> bool {
        let save = self.pos;
        if self.c_char().is_some() {
            let after = self.pos;
            if self.lit('-') && self.c_char().is_some() {
                return true;
            }
            self.pos = after;
            return true;
        }
        self.pos = save;
        self.char_class_esc()
    }

    fn char_class_expr(&mut self) -> bool {
        let start = self.pos;
        let out_len = self.out.len();
        if !self.lit('[') {
            return false;
        }
        self.lit('^');
        if !self.lit('-') && !self.cce1() {
            return false;
        }
        while self.attempt(Peg::cce1) {}
        self.lit('-');
        if !self.lit(']') {
            return false;
        }
        // `cce1` wrote escapes to the output while checking; translate the raw text instead.
        self.out.truncate(out_len);
        match super::regex_set::translate(&self.s[start..self.pos], self.v1) {
            Some(class) => self.out.push_str(&class),
            None => self.bad = true,
        }
        true
    }
}

/// `normal_char` of the grammar.
fn is_normal_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{27}' | ',' | '-' | '\u{2F}'..='\u{3E}' | '\u{40}'..='\u{5A}'
        | '\u{5E}'..='\u{7A}' | '\u{7E}'..='\u{D7FF}' | '\u{E000}'..)
}
