//! The JSONPath lexer, a line-by-line port of the reference library's `lex.py`
//! (`jsonpath_rfc9535` 0.2.0).
//!
//! The lexer decides which strings are syntax errors before the parser sees them, and its quirks
//! are part of the observable behaviour: whitespace is skipped before a `.` (`$ .a` is `$.a`) but
//! not after it, shorthand names match `[\u0080-\uFFFF a-zA-Z_][\u0080-\uFFFF a-zA-Z0-9_-]*` (so
//! astral characters such as emoji are not names), trailing whitespace is an error, and number
//! literals inside filters follow the reference's regular expressions, typos included. It is hand
//! written rather than built on a JSONPath crate because a query the reference rejects makes the
//! engine fall back to a trait lookup, so acceptance decides flag values.
//!
//! Positions are counted in `char`s, like Python string indices.

use super::tokens::{Tk, Token};

/// `ESCAPES` of `lex.py`.
const ESCAPES: &[char] = &['b', 'f', 'n', 'r', 't', 'u', '/', '\\'];

#[derive(Clone, Copy)]
enum State {
    Root,
    Segment,
    Descendant,
    Shorthand,
    Bracketed,
    Filter,
}

struct Lexer {
    q: Vec<char>,
    start: usize,
    pos: usize,
    filter_depth: i64,
    func_call_stack: Vec<i64>,
    bracket_stack: Vec<(char, usize)>,
    tokens: Vec<Token>,
}

/// Scans `query`. `Err` is the reference's `JSONPathSyntaxError` (lexer errors all are).
pub(super) fn tokenize(query: &str) -> Result<Vec<Token>, String> {
    let mut lx = Lexer {
        q: query.chars().collect(),
        start: 0,
        pos: 0,
        filter_depth: 0,
        func_call_stack: Vec::new(),
        bracket_stack: Vec::new(),
        tokens: Vec::new(),
    };
    let mut state = Some(State::Root);
    while let Some(s) = state {
        state = match s {
            State::Root => lx.lex_root(),
            State::Segment => lx.lex_segment()?,
            State::Descendant => lx.lex_descendant_segment()?,
            State::Shorthand => lx.lex_shorthand_selector()?,
            State::Bracketed => lx.lex_inside_bracketed_segment()?,
            State::Filter => lx.lex_inside_filter()?,
        };
    }
    if let Some(last) = lx.tokens.last() {
        if last.kind == Tk::Error {
            return Err(last.message.clone());
        }
    }
    if let Some((ch, _)) = lx.bracket_stack.last() {
        let what = if *ch == '[' {
            "brackets"
        } else {
            "parentheses"
        };
        return Err(format!("unbalanced {what}"));
    }
    Ok(lx.tokens)
}

fn is_name_first(c: char) -> bool {
    ('\u{80}'..='\u{FFFF}').contains(&c) || c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    is_name_first(c) || c.is_ascii_digit() || c == '-'
}

impl Lexer {
    fn at(&self, i: usize) -> Option<char> {
        self.q.get(i).copied()
    }

    fn emit(&mut self, kind: Tk) {
        let value: String = self.q[self.start..self.pos].iter().collect();
        self.tokens.push(Token::new(kind, value));
        self.start = self.pos;
    }

    /// `next()`: the next char, or `None` for Python's `""`.
    fn next(&mut self) -> Option<char> {
        let c = self.at(self.pos)?;
        self.pos += 1;
        Some(c)
    }

    fn ignore(&mut self) {
        self.start = self.pos;
    }

    fn backup(&mut self) -> Result<(), String> {
        if self.pos <= self.start {
            return Err("unexpected end of expression".into());
        }
        self.pos -= 1;
        Ok(())
    }

    fn peek(&self) -> Option<char> {
        self.at(self.pos)
    }

    fn accept(&mut self, s: &str) -> bool {
        let n = s.chars().count();
        if self.pos + n <= self.q.len()
            && self.q[self.pos..self.pos + n].iter().copied().eq(s.chars())
        {
            self.pos += n;
            return true;
        }
        false
    }

    /// `accept_match`: advances past a match of `pattern` (a match length, 0 = no match).
    fn accept_with(&mut self, pattern: fn(&Lexer) -> usize) -> bool {
        let n = pattern(self);
        self.accept_len(n)
    }

    /// Advances past a regex match of length `len` (0 = no match).
    fn accept_len(&mut self, len: usize) -> bool {
        self.pos += len;
        len > 0
    }

    fn error(&mut self, msg: impl Into<String>) {
        let value: String = self.q[self.start..self.pos.min(self.q.len())]
            .iter()
            .collect();
        self.tokens.push(Token {
            kind: Tk::Error,
            value,
            message: msg.into(),
        });
    }

    // Regular expressions of `lex.py`, as match lengths at `pos`.

    fn match_whitespace(&self) -> usize {
        self.q[self.pos..]
            .iter()
            .take_while(|c| matches!(c, ' ' | '\n' | '\r' | '\t'))
            .count()
    }

    fn match_property(&self) -> usize {
        match self.at(self.pos) {
            Some(c) if is_name_first(c) => {
                1 + self.q[self.pos + 1..]
                    .iter()
                    .take_while(|c| is_name_char(**c))
                    .count()
            }
            _ => 0,
        }
    }

    fn digits_from(&self, i: usize) -> usize {
        self.q[i.min(self.q.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    }

    /// `-?[0-9]+`
    fn match_index(&self) -> usize {
        let sign = usize::from(self.at(self.pos) == Some('-'));
        let d = self.digits_from(self.pos + sign);
        if d == 0 {
            0
        } else {
            sign + d
        }
    }

    /// `-?[0-9]+(?:[eE]\+?[0-9]+)?`
    fn match_int(&self) -> usize {
        let base = self.match_index();
        if base == 0 {
            return 0;
        }
        let mut i = self.pos + base;
        if matches!(self.at(i), Some('e' | 'E')) {
            i += 1;
            if self.at(i) == Some('+') {
                i += 1;
            }
            let d = self.digits_from(i);
            if d > 0 {
                return i + d - self.pos;
            }
        }
        base
    }

    /// `(:?-?[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?)|(-?[0-9]+[eE]-[0-9]+)` (the `:?` is the
    /// reference's typo: an optional colon).
    fn match_float(&self) -> usize {
        // First alternative.
        let mut i = self.pos;
        if self.at(i) == Some(':') {
            i += 1;
        }
        if self.at(i) == Some('-') {
            i += 1;
        }
        let d = self.digits_from(i);
        if d > 0 && self.at(i + d) == Some('.') {
            let f = self.digits_from(i + d + 1);
            if f > 0 {
                let mut end = i + d + 1 + f;
                if matches!(self.at(end), Some('e' | 'E')) {
                    let mut j = end + 1;
                    if matches!(self.at(j), Some('+' | '-')) {
                        j += 1;
                    }
                    let e = self.digits_from(j);
                    if e > 0 {
                        end = j + e;
                    }
                }
                return end - self.pos;
            }
        }
        // Second alternative.
        let mut i = self.pos;
        if self.at(i) == Some('-') {
            i += 1;
        }
        let d = self.digits_from(i);
        if d > 0 && matches!(self.at(i + d), Some('e' | 'E')) && self.at(i + d + 1) == Some('-') {
            let e = self.digits_from(i + d + 2);
            if e > 0 {
                return i + d + 2 + e - self.pos;
            }
        }
        0
    }

    /// `[a-z][a-z_0-9]*`
    fn match_function_name(&self) -> usize {
        match self.at(self.pos) {
            Some(c) if c.is_ascii_lowercase() => {
                1 + self.q[self.pos + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_lowercase() || **c == '_' || c.is_ascii_digit())
                    .count()
            }
            _ => 0,
        }
    }

    fn accept_string_literal(&mut self, quote: char, kind: Tk) -> Result<bool, String> {
        self.ignore();
        loop {
            let c = self.next();
            if c == Some('\\') {
                match self.peek() {
                    Some(p) if ESCAPES.contains(&p) || p == quote => {
                        self.next();
                    }
                    _ => {
                        self.error("invalid escape");
                        return Ok(false);
                    }
                }
            }
            let Some(c) = c else {
                self.error(format!("unclosed string starting at index {}", self.start));
                return Ok(false);
            };
            if c == quote {
                self.backup()?;
                self.emit(kind);
                self.next();
                self.ignore();
                return Ok(true);
            }
        }
    }

    fn ignore_whitespace(&mut self) -> Result<bool, String> {
        if self.pos != self.start {
            // The reference raises JSONPathLexerError here; it is unreachable in practice.
            return Err("must emit or ignore before consuming whitespace".into());
        }
        let n = self.match_whitespace();
        if self.accept_len(n) {
            self.ignore();
            return Ok(true);
        }
        Ok(false)
    }

    fn lex_root(&mut self) -> Option<State> {
        let c = self.next();
        if c != Some('$') {
            self.error(format!("expected '$', found {c:?}"));
            return None;
        }
        self.emit(Tk::Root);
        Some(State::Segment)
    }

    fn lex_segment(&mut self) -> Result<Option<State>, String> {
        if self.ignore_whitespace()? && self.peek().is_none() {
            self.error("unexpected trailing whitespace");
            return Ok(None);
        }
        let c = self.next();
        match c {
            None => {
                self.emit(Tk::Eof);
                Ok(None)
            }
            Some('.') => {
                if self.peek() == Some('.') {
                    self.next();
                    self.emit(Tk::DoubleDot);
                    return Ok(Some(State::Descendant));
                }
                Ok(Some(State::Shorthand))
            }
            Some('[') => {
                self.emit(Tk::LBracket);
                self.bracket_stack.push(('[', self.pos - 1));
                Ok(Some(State::Bracketed))
            }
            Some(c) => {
                if self.filter_depth != 0 {
                    self.backup()?;
                    return Ok(Some(State::Filter));
                }
                self.error(format!(
                    "expected '.', '..' or a bracketed selection, found {c:?}"
                ));
                Ok(None)
            }
        }
    }

    fn lex_descendant_segment(&mut self) -> Result<Option<State>, String> {
        let c = self.next();
        match c {
            None => {
                self.error("bald descendant segment");
                Ok(None)
            }
            Some('*') => {
                self.emit(Tk::Wild);
                Ok(Some(State::Segment))
            }
            Some('[') => {
                self.emit(Tk::LBracket);
                self.bracket_stack.push(('[', self.pos - 1));
                Ok(Some(State::Bracketed))
            }
            Some(c) => {
                self.backup()?;
                let n = self.match_property();
                if self.accept_len(n) {
                    self.emit(Tk::Property);
                    return Ok(Some(State::Segment));
                }
                self.next();
                self.error(format!("unexpected descendant selection token {c:?}"));
                Ok(None)
            }
        }
    }

    fn lex_shorthand_selector(&mut self) -> Result<Option<State>, String> {
        self.ignore();
        let n = self.match_whitespace();
        if self.accept_len(n) {
            self.error("unexpected whitespace after dot");
            return Ok(None);
        }
        let c = self.next();
        if c == Some('*') {
            self.emit(Tk::Wild);
            return Ok(Some(State::Segment));
        }
        self.backup()?;
        let n = self.match_property();
        if self.accept_len(n) {
            self.emit(Tk::Property);
            return Ok(Some(State::Segment));
        }
        self.error(format!("unexpected shorthand selector {c:?}"));
        Ok(None)
    }

    fn lex_inside_bracketed_segment(&mut self) -> Result<Option<State>, String> {
        loop {
            self.ignore_whitespace()?;
            let c = self.next();
            match c {
                Some(']') => {
                    if self.bracket_stack.last().map(|b| b.0) != Some('[') {
                        self.backup()?;
                        self.error("unbalanced brackets");
                        return Ok(None);
                    }
                    self.bracket_stack.pop();
                    self.emit(Tk::RBracket);
                    return Ok(Some(State::Segment));
                }
                None => {
                    self.error("unbalanced brackets");
                    return Ok(None);
                }
                Some('*') => self.emit(Tk::Wild),
                Some('?') => {
                    self.emit(Tk::Filter);
                    self.filter_depth += 1;
                    return Ok(Some(State::Filter));
                }
                Some(',') => self.emit(Tk::Comma),
                Some(':') => self.emit(Tk::Colon),
                Some(q @ ('\'' | '"')) => {
                    let kind = if q == '\'' {
                        Tk::SingleQuoteString
                    } else {
                        Tk::DoubleQuoteString
                    };
                    if !self.accept_string_literal(q, kind)? {
                        return Ok(None);
                    }
                }
                Some(c) => {
                    self.backup()?;
                    let n = self.match_index();
                    if self.accept_len(n) {
                        self.emit(Tk::Index);
                        continue;
                    }
                    self.error(format!("unexpected token {c:?} in bracketed selection"));
                    return Ok(None);
                }
            }
        }
    }

    fn lex_inside_filter(&mut self) -> Result<Option<State>, String> {
        loop {
            self.ignore_whitespace()?;
            let c = self.next();
            match c {
                None => {
                    self.error("unclosed bracketed selection");
                    return Ok(None);
                }
                Some(']') => {
                    self.filter_depth -= 1;
                    self.backup()?;
                    return Ok(Some(State::Bracketed));
                }
                Some(',') => {
                    self.emit(Tk::Comma);
                    if !self.func_call_stack.is_empty() {
                        continue;
                    }
                    self.filter_depth -= 1;
                    return Ok(Some(State::Bracketed));
                }
                Some(q @ ('\'' | '"')) => {
                    let kind = if q == '\'' {
                        Tk::SingleQuoteString
                    } else {
                        Tk::DoubleQuoteString
                    };
                    if !self.accept_string_literal(q, kind)? {
                        return Ok(None);
                    }
                }
                Some('(') => {
                    self.emit(Tk::LParen);
                    self.bracket_stack.push(('(', self.pos - 1));
                    if let Some(top) = self.func_call_stack.last_mut() {
                        *top += 1;
                    }
                }
                Some(')') => {
                    if self.bracket_stack.last().map(|b| b.0) != Some('(') {
                        self.backup()?;
                        self.error("unbalanced parentheses");
                        return Ok(None);
                    }
                    self.bracket_stack.pop();
                    self.emit(Tk::RParen);
                    if let Some(top) = self.func_call_stack.last_mut() {
                        if *top == 1 {
                            self.func_call_stack.pop();
                        } else {
                            *top -= 1;
                        }
                    }
                }
                Some('$') => {
                    self.emit(Tk::Root);
                    return Ok(Some(State::Segment));
                }
                Some('@') => {
                    self.emit(Tk::Current);
                    return Ok(Some(State::Segment));
                }
                Some('.') => {
                    self.backup()?;
                    return Ok(Some(State::Segment));
                }
                Some('!') => {
                    if self.peek() == Some('=') {
                        self.next();
                        self.emit(Tk::Ne);
                    } else {
                        self.emit(Tk::Not);
                    }
                }
                Some('=') => {
                    if self.peek() == Some('=') {
                        self.next();
                        self.emit(Tk::Eq);
                        continue;
                    }
                    self.backup()?;
                    self.error("unexpected filter selector token '='");
                    return Ok(None);
                }
                Some('<') => {
                    if self.peek() == Some('=') {
                        self.next();
                        self.emit(Tk::Le);
                    } else {
                        self.emit(Tk::Lt);
                    }
                }
                Some('>') => {
                    if self.peek() == Some('=') {
                        self.next();
                        self.emit(Tk::Ge);
                    } else {
                        self.emit(Tk::Gt);
                    }
                }
                Some(c) => {
                    self.backup()?;
                    if self.accept("&&") {
                        self.emit(Tk::And);
                    } else if self.accept("||") {
                        self.emit(Tk::Or);
                    } else if self.accept("true") {
                        self.emit(Tk::True);
                    } else if self.accept("false") {
                        self.emit(Tk::False);
                    } else if self.accept("null") {
                        self.emit(Tk::Null);
                    } else if self.accept_with(Lexer::match_float) {
                        self.emit(Tk::Float);
                    } else if self.accept_with(Lexer::match_int) {
                        self.emit(Tk::Int);
                    } else if self.accept_with(Lexer::match_function_name)
                        && self.peek() == Some('(')
                    {
                        self.func_call_stack.push(1);
                        self.emit(Tk::Function);
                        self.bracket_stack.push(('(', self.pos));
                        self.next();
                        self.ignore();
                    } else {
                        self.error(format!("unexpected filter selector token {c:?}"));
                        return Ok(None);
                    }
                }
            }
        }
    }
}
