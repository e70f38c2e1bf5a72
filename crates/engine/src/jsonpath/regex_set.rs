//! Character classes as the third-party `regex` module parses them (`parse_set` and friends in
//! its `_regex_core.py`), for the classes that pass `iregexp_check`, translated to `fancy_regex`
//! syntax with explicit nesting.
//!
//! `match()` compiles with `VERSION0`, where a class is an implicit union, and `search()` with
//! `VERSION1`, where `||`, `~~`, `&&` and `--` are set operations with their own precedence and
//! a leading operator is a literal member (`[&&a]` is `{&, a}`, `[\--a]` is `{-}` minus `{a}`
//! rather than the range `-`..`a`). The module's quirks decide which strings match, so the
//! grammar is ported rather than approximated by the Rust engine's own set operations.

enum Item {
    Char(char),
    /// `\p{..}` (positive) or `\P{..}`.
    Prop(bool, String),
    Range(char, char),
    Union(Vec<Item>),
    Op(&'static str, Vec<Item>),
    Negated(Box<Item>),
}

const SET_OPS: [&str; 4] = ["||", "~~", "&&", "--"];

struct Src<'s> {
    s: &'s [char],
    pos: usize,
    v1: bool,
}

/// Translates a whole class (`[` … `]`); `None` is the module's `error` (`bad character range`,
/// `unterminated character set`, ...).
pub(super) fn translate(class: &[char], v1: bool) -> Option<String> {
    let mut src = Src {
        s: class,
        pos: 0,
        v1,
    };
    if !src.eat("[") {
        return None;
    }
    let negate = src.eat("^");
    let mut item = if v1 { src.union()? } else { src.imp_union()? };
    if !src.eat("]") || src.pos != class.len() {
        return None;
    }
    if negate {
        item = Item::Negated(Box::new(item));
    }
    let mut out = String::from("[");
    emit(&item, &mut out);
    out.push(']');
    Some(out)
}

fn emit(item: &Item, out: &mut String) {
    match item {
        Item::Char(c) => out.push_str(&format!("\\x{{{:X}}}", *c as u32)),
        Item::Prop(positive, name) => {
            out.push_str(if *positive { "\\p{" } else { "\\P{" });
            out.push_str(name);
            out.push('}');
        }
        Item::Range(a, b) => {
            emit(&Item::Char(*a), out);
            out.push('-');
            emit(&Item::Char(*b), out);
        }
        Item::Union(items) => {
            out.push('[');
            for i in items {
                emit(i, out);
            }
            out.push(']');
        }
        Item::Op(op, items) => {
            out.push('[');
            for (n, i) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(op);
                }
                out.push('[');
                emit(i, out);
                out.push(']');
            }
            out.push(']');
        }
        Item::Negated(i) => {
            out.push_str("[^");
            emit(i, out);
            out.push(']');
        }
    }
}

impl Src<'_> {
    fn eat(&mut self, lit: &str) -> bool {
        let n = lit.chars().count();
        if self.pos + n <= self.s.len()
            && self.s[self.pos..self.pos + n]
                .iter()
                .copied()
                .eq(lit.chars())
        {
            self.pos += n;
            true
        } else {
            false
        }
    }

    /// `parse_set_union` → `parse_set_symm_diff` → `parse_set_inter` → `parse_set_diff`.
    fn union(&mut self) -> Option<Item> {
        self.op_level(0)
    }

    fn op_level(&mut self, level: usize) -> Option<Item> {
        const OPS: [&str; 4] = ["||", "~~", "&&", "--"];
        let sub = |s: &mut Self| {
            if level == 3 {
                s.imp_union()
            } else {
                s.op_level(level + 1)
            }
        };
        let mut items = vec![sub(self)?];
        while self.eat(OPS[level]) {
            items.push(sub(self)?);
        }
        Some(if items.len() == 1 {
            items.pop().expect("one item")
        } else if level == 0 {
            Item::Union(items)
        } else {
            Item::Op(OPS[level], items)
        })
    }

    /// `parse_set_imp_union`.
    fn imp_union(&mut self) -> Option<Item> {
        let mut items = vec![self.member()?];
        loop {
            let saved = self.pos;
            if self.eat("]") {
                self.pos = saved;
                break;
            }
            if self.v1 && SET_OPS.iter().any(|op| self.eat(op)) {
                self.pos = saved;
                break;
            }
            items.push(self.member()?);
        }
        Some(if items.len() == 1 {
            items.pop().expect("one item")
        } else {
            Item::Union(items)
        })
    }

    /// `parse_set_member`: an item, or a range.
    fn member(&mut self) -> Option<Item> {
        let start = self.item()?;
        let saved1 = self.pos;
        let Item::Char(a) = start else {
            return Some(start);
        };
        if !self.eat("-") {
            return Some(start);
        }
        let saved2 = self.pos;
        if self.v1 && self.eat("-") {
            self.pos = saved1;
            return Some(start);
        }
        if self.eat("]") {
            self.pos = saved2;
            return Some(Item::Union(vec![start, Item::Char('-')]));
        }
        let end = self.item()?;
        let Item::Char(b) = end else {
            return Some(Item::Union(vec![start, Item::Char('-'), end]));
        };
        if a > b {
            return None;
        }
        Some(if a == b { start } else { Item::Range(a, b) })
    }

    /// `parse_set_item` (nested sets and POSIX classes need a `[`, which the check rejects).
    fn item(&mut self) -> Option<Item> {
        let c = *self.s.get(self.pos)?;
        self.pos += 1;
        if c != '\\' {
            return Some(Item::Char(c));
        }
        let e = *self.s.get(self.pos)?;
        self.pos += 1;
        Some(match e {
            'n' => Item::Char('\n'),
            'r' => Item::Char('\r'),
            't' => Item::Char('\t'),
            'p' | 'P' => {
                // `{Name}`, already checked.
                let close = self.s[self.pos..].iter().position(|c| *c == '}')?;
                let name: String = self.s[self.pos + 1..self.pos + close].iter().collect();
                self.pos += close + 1;
                Item::Prop(e == 'p', name)
            }
            other => Item::Char(other),
        })
    }
}
