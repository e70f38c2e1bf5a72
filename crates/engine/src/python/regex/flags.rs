//! Inline flags (`(?i)`, `(?-s:…)`, …) and escapes shared by the translator.

use super::translator::{err, Flags, Tok, Translator};

pub(super) const F_I: u8 = 1;
pub(super) const F_M: u8 = 2;
pub(super) const F_S: u8 = 4;
pub(super) const F_X: u8 = 8;
pub(super) const F_A: u8 = 16;
pub(super) const F_U: u8 = 32;
pub(super) const F_T: u8 = 64;
pub(super) const F_L: u8 = 128;
pub(super) const TYPE_FLAGS: u8 = F_A | F_U | F_L;

pub(super) fn flag_bit(c: char) -> Option<u8> {
    Some(match c {
        'i' => F_I,
        'm' => F_M,
        's' => F_S,
        'x' => F_X,
        'a' => F_A,
        'u' => F_U,
        't' => F_T,
        'L' => F_L,
        _ => return None,
    })
}

/// `_combine_flags`: a type flag replaces the current one.
pub(super) fn apply_flags(f: &mut Flags, add: u8, del: u8) {
    if add & F_A != 0 {
        f.a = true;
    }
    if add & F_U != 0 {
        f.a = false;
    }
    let set = |cur: bool, bit: u8| (cur || add & bit != 0) && del & bit == 0;
    f.i = set(f.i, F_I);
    f.m = set(f.m, F_M);
    f.s = set(f.s, F_S);
    f.x = set(f.x, F_X);
}

impl Translator {
    /// `_parse_flags`, after `(?` and its first flag char (or `-`).
    /// Returns (added, None) for global flags `(?aiLmsux)`, else
    /// (added, Some(removed)) for a scoped `(?flags-flags:...)` group.
    pub(super) fn inline_flags(&mut self, first: char) -> Result<(u8, Option<u8>), String> {
        let mut add = 0u8;
        let mut del = 0u8;
        let mut c = Some(Tok::C(first));
        if first != '-' {
            loop {
                let Some(Tok::C(ch)) = c else { unreachable!() };
                let bit = flag_bit(ch).unwrap_or(0);
                if bit == F_L {
                    return err("bad inline flags: cannot use 'L' flag with a str pattern");
                }
                add |= bit;
                if bit & TYPE_FLAGS != 0 && add & TYPE_FLAGS != bit {
                    return err("bad inline flags: flags 'a', 'u' and 'L' are incompatible");
                }
                c = self.get();
                match c {
                    None => return err("missing -, : or )"),
                    Some(Tok::C(')' | '-' | ':')) => break,
                    Some(Tok::C(ch)) if flag_bit(ch).is_some() => {}
                    Some(Tok::C(ch)) if ch.is_alphabetic() => return err("unknown flag"),
                    Some(_) => return err("missing -, : or )"),
                }
            }
        }
        if c == Some(Tok::C(')')) {
            return Ok((add, None));
        }
        if add & F_T != 0 {
            return err("bad inline flags: cannot turn on global flag");
        }
        if c == Some(Tok::C('-')) {
            c = self.get();
            match c {
                None => return err("missing flag"),
                Some(Tok::C(ch)) if flag_bit(ch).is_some() => {}
                Some(Tok::C(ch)) if ch.is_alphabetic() => return err("unknown flag"),
                Some(_) => return err("missing flag"),
            }
            loop {
                let Some(Tok::C(ch)) = c else { unreachable!() };
                let bit = flag_bit(ch).unwrap_or(0);
                if bit & TYPE_FLAGS != 0 {
                    return err("bad inline flags: cannot turn off flags 'a', 'u' and 'L'");
                }
                del |= bit;
                c = self.get();
                match c {
                    None => return err("missing :"),
                    Some(Tok::C(':')) => break,
                    Some(Tok::C(ch)) if flag_bit(ch).is_some() => {}
                    Some(Tok::C(ch)) if ch.is_alphabetic() => return err("unknown flag"),
                    Some(_) => return err("missing :"),
                }
            }
        }
        if del & F_T != 0 {
            return err("bad inline flags: cannot turn off global flag");
        }
        if add & del != 0 {
            return err("bad inline flags: flag turned on and off");
        }
        Ok((add, Some(del)))
    }
}

pub(super) fn simple_escape(e: char) -> Option<u32> {
    Some(match e {
        'a' => 7,
        'b' => 8,
        'f' => 12,
        'n' => 10,
        'r' => 13,
        't' => 9,
        'v' => 11,
        '\\' => 92,
        _ => return None,
    })
}
