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

mod flags;
mod translate;
mod translator;

use translator::Translator;
pub use translator::UNSUPPORTED;

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
