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
//! Patterns in the `regex` crate's own dialect after translation (most of
//! them) are matched by a lean lazy DFA instead (`matcher.rs`). A match that
//! exceeds `fancy_regex`'s backtrack limit (1,000,000 steps), where CPython
//! would keep going, is reported as no match.
//!
//! A compiled pattern is shared by its clones: a caller compiling many
//! environments keeps one per distinct translation (the engine's `Shared`).

mod flags;
mod matcher;
mod parser;
mod translator;

use std::sync::{Arc, Weak};

use matcher::Matcher;
use translator::Translator;
pub use translator::UNSUPPORTED;

/// A compiled Python-dialect regular expression (clones share it).
#[derive(Clone, Debug)]
pub struct PyRegex {
    re: Arc<Matcher>,
}

/// A [`PyRegex`] held without keeping it alive.
#[derive(Debug)]
pub(crate) struct WeakPyRegex(Weak<Matcher>);

impl PyRegex {
    /// `re.compile(pattern)` for a `str` pattern without flags. Errors are
    /// CPython's (`re.error`, `OverflowError`, `ValueError`) or
    /// [`UNSUPPORTED`] features.
    pub fn compile(pattern: &str) -> Result<PyRegex, String> {
        PyRegex::from_translation(&PyRegex::translate(pattern)?)
    }

    /// The pattern in the dialect it is compiled in (inline flags included): two patterns
    /// with equal translations match the same strings.
    pub(crate) fn translate(pattern: &str) -> Result<String, String> {
        let body = Translator::new(pattern)?.translate()?;
        Ok(format!("\\A(?:{body})"))
    }

    /// Compiles what [`PyRegex::translate`] returned.
    pub(crate) fn from_translation(translated: &str) -> Result<PyRegex, String> {
        Ok(PyRegex {
            re: Arc::new(Matcher::new(translated)?),
        })
    }

    /// Whether `other` is this very compiled regex.
    #[cfg(test)]
    pub(crate) fn same_as(&self, other: &PyRegex) -> bool {
        Arc::ptr_eq(&self.re, &other.re)
    }

    pub(crate) fn downgrade(&self) -> WeakPyRegex {
        WeakPyRegex(Arc::downgrade(&self.re))
    }

    /// `re.compile(pattern).match(subject) is not None`. Exceeding the
    /// backtrack limit counts as no match.
    pub fn matches_at_start(&self, subject: &str) -> bool {
        self.re.matches_at_start(subject)
    }
}

impl WeakPyRegex {
    pub(crate) fn upgrade(&self) -> Option<PyRegex> {
        self.0.upgrade().map(|re| PyRegex { re })
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

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

    /// A `$` that ends the pattern is translated to consume the final newline it allows
    /// (answers from CPython 3.11 `re`).
    #[test]
    fn a_final_dollar_matches_as_in_python() {
        let cases = [
            ("a$", "a", true),
            ("a$", "a\n", true),
            ("a$", "a\n\n", false),
            ("a$", "ab", false),
            ("(?m)a$", "a\nb", true),
            ("(?m)a$", "a\n", true),
            ("(?m)a$", "ab", false),
            ("a$|b", "b", true),
            ("a$|b$", "b\n", true),
            ("(a$)", "a\n", true),
            ("a$$", "a\n", true),
            ("$", "\n", true),
            ("$", "x", false),
            (".*@example\\.com$", "x@example.com\n", true),
            (".*@example\\.com$", "x@example.com\nx", false),
            ("(?x) a $ ", "a\n", true),
            ("a$\n", "a\n", true),
            ("a(?=$)", "a\n", true),
        ];
        for (pattern, subject, want) in cases {
            let re = PyRegex::compile(pattern).unwrap();
            assert_eq!(
                re.matches_at_start(subject),
                want,
                "{pattern:?} on {subject:?}"
            );
        }
        // Without a lookahead left, the common pattern needs no backtracking engine.
        assert!(!PyRegex::compile(".*@example\\.com$")
            .unwrap()
            .re
            .backtracks());
        assert!(PyRegex::compile("a$\n").unwrap().re.backtracks());
    }

    #[test]
    fn backtrack_limit_is_no_match() {
        // Catastrophic in a backtracking engine; CPython eventually says no.
        let re = PyRegex::compile(r"(?:(a+)+\1)+$").unwrap();
        let subject = format!("{}b", "a".repeat(40));
        let Matcher::Fancy(fancy) = &*re.re else {
            panic!("a backreference needs backtracking")
        };
        assert!(
            fancy.is_match(&subject).is_err(),
            "expected the limit to trip"
        );
        assert!(!re.matches_at_start(&subject));
    }
}
