//! One identity's flags (`IdentityFlags`), evaluated lazily like the Flagsmith SDK's: a flag that
//! is read is evaluated on its own (the engine's per-feature entry point: the identity-override
//! lookup and the segments that override that feature) and memoised; `all_flags` runs the whole
//! evaluation once. Nothing in here touches Python, so callers may run any of it with the GIL
//! released; values become Python objects only when the caller reads them.
//!
//! The engine's results borrow (`FlagResult<'a>`) from the environment and the identity. Both
//! owners and the memo of results live in `self_cell`s (the identity's identifier and traits own
//! the engine `Identity` that borrows them; the compiled document and that identity own the
//! memo), so no borrow is stretched. The memo has interior mutability, which makes it invariant
//! over its lifetime: its results are reached inside `with_dependent` closures only, and
//! callers name a memoised flag by a [`Pick`] (where it is in the memo), which is plain data.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use flagpole_engine::{EvalError, FlagResult, Identity, Trait};
use self_cell::self_cell;

use crate::compiled::Compiled;

/// What an identity is made of, owned: converted from Python once.
pub struct SubjectParts {
    identifier: Box<str>,
    traits: Vec<Trait<'static>>,
}

self_cell!(
    /// One identity as evaluation reads it: the engine's `Identity`, borrowing its parts.
    pub struct Subject {
        owner: SubjectParts,
        #[covariant]
        dependent: Identity,
    }
);

impl Subject {
    pub fn of(identifier: &str, traits: Vec<Trait<'static>>) -> Subject {
        let parts = SubjectParts {
            identifier: identifier.into(),
            traits,
        };
        Subject::new(parts, |p| Identity::new(&p.identifier, &p.traits))
    }
}

/// Where one memoised flag of an identity is: its position among the flags read one at a time,
/// or in the whole evaluation. Valid for the `IdentityFlags` that gave it (the memo only grows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    Read(usize),
    All(usize),
}

/// What the memo borrows from.
struct Owners {
    compiled: Arc<Compiled>,
    subject: Subject,
}

/// The memo: results borrow from `Owners`.
struct Memo<'a> {
    /// Flags evaluated one at a time: (slot, flag), in read order.
    read: Mutex<Vec<(u32, FlagResult<'a>)>>,
    /// The whole evaluation, once run (an error is kept too: asking again raises it again).
    all: OnceLock<Result<Vec<FlagResult<'a>>, EvalError>>,
}

impl<'a> Memo<'a> {
    fn read(&self) -> MutexGuard<'_, Vec<(u32, FlagResult<'a>)>> {
        self.read.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The flag of `slot` if it is already known: read before, or part of a whole evaluation.
    fn known(&self, compiled: &Compiled, slot: u32) -> Option<Pick> {
        if let Some(i) = self.read().iter().position(|(s, _)| *s == slot) {
            return Some(Pick::Read(i));
        }
        match self.all.get() {
            Some(Ok(flags)) => compiled.position(flags, slot).map(Pick::All),
            _ => None,
        }
    }
}

self_cell!(
    /// One identity's flags, evaluated lazily and memoised, as the Flagsmith SDK's `Flags` does:
    /// flags read one at a time are kept in read order; the whole evaluation is run once, when
    /// `all_flags` asks for it. No method waits on a lock held across an evaluation.
    pub struct IdentityFlags {
        owner: Owners,
        #[not_covariant]
        dependent: Memo,
    }
);

impl IdentityFlags {
    pub fn of(compiled: Arc<Compiled>, subject: Subject) -> IdentityFlags {
        IdentityFlags::new(Owners { compiled, subject }, |_| Memo {
            read: Mutex::new(Vec::new()),
            all: OnceLock::new(),
        })
    }

    /// The flag in `slot` if it is already known: read before, or part of a whole evaluation.
    pub fn known(&self, slot: u32) -> Option<Pick> {
        self.with_dependent(|owners, memo| memo.known(&owners.compiled, slot))
    }

    /// Evaluates the feature in `slot` on its own and remembers it (if another thread got there
    /// first, its flag is the one kept and returned).
    pub fn evaluate_one(&self, slot: u32) -> Result<Option<Pick>, EvalError> {
        self.with_dependent(|owners, memo| {
            let name = &owners.compiled.names[slot as usize];
            let identity = owners.subject.borrow_dependent();
            let Some(flag) = owners
                .compiled
                .env()
                .evaluate_feature(name, Some(identity))?
            else {
                return Ok(None);
            };
            let mut read = memo.read();
            if let Some(i) = read.iter().position(|(s, _)| *s == slot) {
                return Ok(Some(Pick::Read(i)));
            }
            read.push((slot, flag));
            Ok(Some(Pick::Read(read.len() - 1)))
        })
    }

    /// Runs the whole evaluation unless it has run.
    pub fn evaluate_all(&self) {
        self.with_dependent(|owners, memo| {
            if memo.all.get().is_none() {
                let identity = owners.subject.borrow_dependent();
                let result = owners.compiled.env().evaluate(Some(identity));
                // Two threads may both evaluate; the first result is kept (they are equal).
                let _ = memo.all.set(result.map(|r| r.flags));
            }
        })
    }

    pub fn is_evaluated(&self) -> bool {
        self.with_dependent(|_, memo| memo.all.get().is_some())
    }

    /// Every flag (running the whole evaluation unless it has run), as the SDK lists them after
    /// a whole evaluation: the flags read one at a time before it (in read order, as they were
    /// read), then the others in document order.
    pub fn listed(&self) -> Result<Vec<Pick>, EvalError> {
        self.evaluate_all();
        self.with_dependent(|_, memo| {
            let all = memo.all.get().expect("evaluated above");
            let all = all.as_ref().map_err(Clone::clone)?;
            let read = memo.read();
            let mut listed: Vec<Pick> = (0..read.len()).map(Pick::Read).collect();
            listed.extend(
                all.iter()
                    .enumerate()
                    .filter(|(_, f)| !read.iter().any(|(_, r)| r.key == f.key))
                    .map(|(i, _)| Pick::All(i)),
            );
            Ok(listed)
        })
    }

    /// Calls `f` with the flag `pick` names (a copy, made under the memo's lock and read after
    /// it is released, so `f` may take as long as it likes, or call back into this object).
    pub fn with_flag<R>(&self, pick: Pick, f: impl FnOnce(&FlagResult<'_>) -> R) -> R {
        self.with_dependent(|_, memo| {
            let flag = match pick {
                Pick::Read(i) => memo.read()[i].1.clone(),
                Pick::All(i) => match memo.all.get() {
                    Some(Ok(flags)) => flags[i].clone(),
                    _ => unreachable!("a Pick::All comes from a whole evaluation that succeeded"),
                },
            };
            f(&flag)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use flagpole_engine::TraitValue;

    use super::*;

    const EXAMPLE: &str = include_str!("../../../examples/environment.json");

    fn compiled() -> Arc<Compiled> {
        Arc::new(Compiled::from_bytes(EXAMPLE.as_bytes()).unwrap())
    }

    fn subject(identifier: &str) -> Subject {
        let traits = vec![Trait {
            key: Cow::Borrowed("plan"),
            value: TraitValue::Str(Cow::Owned("enterprise".into())),
        }];
        Subject::of(identifier, traits)
    }

    /// (key, enabled, value, reason) of a flag, owned, to compare across objects.
    fn seen(lazy: &IdentityFlags, pick: Pick) -> (String, String, String, String) {
        lazy.with_flag(pick, |f| {
            (
                f.key.to_owned(),
                f.enabled.to_string(),
                f.value.to_string(),
                f.reason.as_str().to_owned(),
            )
        })
    }

    #[test]
    fn flags_read_one_at_a_time_are_the_whole_evaluations_and_listed_first() {
        let compiled = compiled();
        let whole = IdentityFlags::of(compiled.clone(), subject("user-1"));
        let lazy = IdentityFlags::of(compiled.clone(), subject("user-1"));
        let n = compiled.names.len() as u32;
        assert!(n >= 3);
        assert_eq!(lazy.known(2), None);
        let second = lazy.evaluate_one(2).unwrap().unwrap();
        let first = lazy.evaluate_one(0).unwrap().unwrap();
        assert_eq!((second, first), (Pick::Read(0), Pick::Read(1)));
        assert_eq!(lazy.evaluate_one(2).unwrap(), Some(Pick::Read(0)));
        assert_eq!(lazy.known(0), Some(Pick::Read(1)));
        assert!(!lazy.is_evaluated());

        let listed = lazy.listed().unwrap();
        assert!(lazy.is_evaluated());
        assert_eq!(listed.len(), n as usize);
        assert_eq!(&listed[..2], &[Pick::Read(0), Pick::Read(1)]);
        assert_eq!(lazy.known(1), Some(Pick::All(1)));

        let mut expected: Vec<_> = whole.listed().unwrap();
        assert!(expected.iter().all(|p| matches!(p, Pick::All(_))));
        expected.swap(0, 2);
        expected.swap(1, 2);
        let expected: Vec<_> = expected.into_iter().map(|p| seen(&whole, p)).collect();
        let got: Vec<_> = listed.into_iter().map(|p| seen(&lazy, p)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn flags_outlive_a_moved_owner() {
        // The memo and what it borrows move together; results stay readable after the move and
        // after the document's other handles are gone.
        let lazy = IdentityFlags::of(compiled(), subject("user-2"));
        let pick = lazy.evaluate_one(0).unwrap().unwrap();
        let before = seen(&lazy, pick);
        let moved = Box::new(lazy);
        let moved = *moved;
        assert_eq!(seen(&moved, pick), before);
        let listed = moved.listed().unwrap();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let lazy = Arc::new(IdentityFlags::of(compiled(), subject("user-3")));
                std::thread::spawn(move || lazy.listed().map(|l| l.len()))
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap().unwrap(), listed.len());
        }
    }
}
