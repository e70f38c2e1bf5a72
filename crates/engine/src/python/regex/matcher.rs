//! The compiled form of a translated pattern: which regex engine answers `re.match(...) is not
//! None`, and what it keeps in memory.
//!
//! Most patterns written in segment rules (`.*@example\.com$`, `^pro`, `[0-9]+`) translate into
//! the `regex` crate's own dialect: no lookaround, no backreference, no atomic group. Those get
//! one forward NFA searched by a lazy DFA, anchored at the start and stopping at the first match
//! state, since only whether a match exists is asked. `regex`'s defaults (and `fancy_regex`, which
//! wraps them) also build a full DFA for short patterns, reverse automata, capture slots and a
//! prefilter, all to find where a match starts and ends: about 19 KB for the pattern above,
//! against under 3 KB here, for an engine that is no slower at this question (see bench/RESULTS.md).
//! The lazy DFA's scratch space is made by the first match on each thread and kept in a pool.
//!
//! Everything else (lookaround, including the one a `$` inside the pattern becomes,
//! backreferences, atomic groups, possessive repeats) is compiled by `fancy_regex`, as before.

use std::fmt;
use std::panic::{RefUnwindSafe, UnwindSafe};

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson::{self, pikevm::PikeVM, WhichCaptures};
use regex_automata::util::pool::Pool;
use regex_automata::{Anchored, Input};

use super::translator::UNSUPPORTED;

/// `meta::Regex`'s NFA size limit, kept for the patterns compiled here.
const NFA_SIZE_LIMIT: usize = 10 << 20;

type CachePool = Pool<Cache, Box<dyn Fn() -> Cache + Send + Sync + UnwindSafe + RefUnwindSafe>>;

pub(crate) enum Matcher {
    /// A pattern in the `regex` crate's dialect.
    Lazy {
        dfa: std::sync::Arc<DFA>,
        caches: CachePool,
    },
    /// A pattern that needs backtracking.
    Fancy(fancy_regex::Regex),
}

impl Matcher {
    /// Compiles a translation (`\A(?:…)`).
    pub(crate) fn new(translated: &str) -> Result<Matcher, String> {
        if let Some(dfa) = lazy_dfa(translated) {
            let dfa = std::sync::Arc::new(dfa);
            let for_caches = dfa.clone();
            let caches: CachePool = Pool::new(Box::new(move || for_caches.create_cache()));
            return Ok(Matcher::Lazy { dfa, caches });
        }
        let re = fancy_regex::Regex::new(translated)
            .map_err(|e| format!("{UNSUPPORTED}cannot compile translation: {e}"))?;
        Ok(Matcher::Fancy(re))
    }

    /// Whether `subject` has a match starting at its first character. A backtracking match that
    /// exceeds `fancy_regex`'s limit counts as none.
    pub(crate) fn matches_at_start(&self, subject: &str) -> bool {
        match self {
            Matcher::Lazy { dfa, caches } => {
                let input = Input::new(subject).anchored(Anchored::Yes).earliest(true);
                match dfa.try_search_fwd(&mut caches.get(), &input) {
                    Ok(found) => found.is_some(),
                    // The lazy DFA gives up when its cache keeps filling up (a pattern with a
                    // huge number of states): the PikeVM answers the same question over the
                    // same NFA, made for this rare case only.
                    Err(_) => pikevm_matches(dfa, input),
                }
            }
            Matcher::Fancy(re) => re.is_match(subject).unwrap_or(false),
        }
    }

    /// Whether `fancy_regex` answers (a pattern outside the `regex` crate's dialect).
    #[cfg(test)]
    pub(crate) fn backtracks(&self) -> bool {
        matches!(self, Matcher::Fancy(_))
    }
}

/// The PikeVM's answer over the lazy DFA's NFA (it builds from any NFA the lazy DFA built from).
fn pikevm_matches(dfa: &DFA, input: Input<'_>) -> bool {
    match PikeVM::new_from_nfa(dfa.get_nfa().clone()) {
        Ok(vm) => vm.is_match(&mut vm.create_cache(), input),
        Err(_) => false,
    }
}

/// The lazy DFA for `translated`, or `None` when the `regex` crate cannot compile it (lookaround
/// and backreferences are syntax errors there; a pattern too large fails here and in
/// `fancy_regex` alike, which then reports it).
fn lazy_dfa(translated: &str) -> Option<DFA> {
    DFA::builder()
        .configure(
            DFA::config()
                // As `meta::Regex` does: give up (for the PikeVM) rather than thrash the cache.
                .minimum_cache_clear_count(Some(3))
                .minimum_bytes_per_state(Some(10)),
        )
        .thompson(
            thompson::Config::new()
                .which_captures(WhichCaptures::None)
                .nfa_size_limit(Some(NFA_SIZE_LIMIT)),
        )
        .build(translated)
        .ok()
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Matcher::Lazy { .. } => f.write_str("Matcher::Lazy"),
            Matcher::Fancy(re) => f.debug_tuple("Matcher::Fancy").field(re).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pikevm_fallback_agrees_with_the_lazy_dfa() {
        for (pattern, subjects) in [
            (
                r"\A(?:[^\u{A}]*@example\.com\u{A}?\z)",
                &[
                    "a@example.com",
                    "a@example.com\n",
                    "a@example.org",
                    "\n@example.com",
                ][..],
            ),
            (
                r"\A(?:(?i:straße)|x+)",
                &["STRASSE", "Straße", "xx", ""][..],
            ),
            (r"\A(?:)", &["", "a"][..]),
        ] {
            let dfa = lazy_dfa(pattern).unwrap();
            let matcher = Matcher::new(pattern).unwrap();
            for subject in subjects {
                let input = Input::new(*subject).anchored(Anchored::Yes).earliest(true);
                assert_eq!(
                    pikevm_matches(&dfa, input),
                    matcher.matches_at_start(subject),
                    "{pattern} on {subject:?}"
                );
            }
        }
    }

    #[test]
    fn lookaround_and_backreferences_backtrack() {
        assert!(!Matcher::new(r"\A(?:a+\u{A}?\z)").unwrap().backtracks());
        assert!(Matcher::new(r"\A(?:a(?=b))").unwrap().backtracks());
        assert!(Matcher::new(r"\A(?:(a)\1)").unwrap().backtracks());
    }
}
