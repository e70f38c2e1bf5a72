//! One compiled environment document, immutable and shared by `Arc` between Python objects,
//! threads and the refresher: the engine's `Environment` (with segments, for identities), the
//! environment flags (the document's own feature states, no segments, no identity: what the
//! Flagsmith API and the SDKs' local evaluation return) computed once, and the feature names in
//! result order so that `Flags` can look a flag up by name without going back to the engine.
//!
//! And one identity's flags (`IdentityFlags`), evaluated lazily like the Flagsmith SDK's: a flag
//! that is read is evaluated on its own (the engine's per-feature entry point: the identity
//! override lookup and the segments that override that feature) and memoised; `all_flags` runs
//! the whole evaluation once. Nothing in here touches Python, so callers may run any of it with
//! the GIL released; values become Python objects only when the caller reads them.
//!
//! The engine's results borrow (`FlagResult<'a>`) from the environment and the identity. The
//! structs here keep those owners in heap allocations that never move or change while the
//! results exist (`Arc`s, a `Box`, and a `Vec` and a `Box<str>` that are never touched again),
//! declare the results first so they are dropped first, and hand results out only at the
//! lifetime of `&self`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use flagpole_engine::document::document_to_context;
use flagpole_engine::{Environment, EvalError, FlagResult, Identity, Trait};
use serde_json::Value;

pub struct Compiled {
    /// Environment flags, evaluated once at compile time. Borrow from `env_only`.
    env_flags: Vec<FlagResult<'static>>,
    /// The document's features without segments (what environment flags are evaluated on).
    _env_only: Arc<Environment>,
    /// The whole document compiled: segments, identity overrides, multivariate splits.
    pub env: Environment,
    /// Feature names in result order, and the reverse index.
    pub names: Vec<Box<str>>,
    pub index: HashMap<Box<str>, u32>,
    /// `api_key`, `name` and `updated_at` of the document, for display.
    pub api_key: String,
    pub name: String,
    pub updated_at: Option<String>,
}

impl Compiled {
    /// Compiles a parsed environment document. The error is a sentence for `DocumentError`.
    pub fn from_document(doc: &Value) -> Result<Compiled, String> {
        let context =
            document_to_context(doc).map_err(|e| format!("invalid environment document: {e}"))?;
        let (env, _) = Environment::from_context(&context)
            .map_err(|e| format!("invalid environment document: {e}"))?;
        let mut without_segments = context;
        if let Some(map) = without_segments.as_object_mut() {
            map.remove("segments");
        }
        let (env_only, _) = Environment::from_context(&without_segments)
            .map_err(|e| format!("invalid environment document: {e}"))?;
        let env_only = Arc::new(env_only);
        // SAFETY: `env_only` is behind an `Arc` (its address does not change when the `Arc` moves,
        // and moving an `Arc` asserts no uniqueness), is never mutated, and is stored in the same `Compiled` as the results, which are dropped first
        // and only handed out at the lifetime of `&Compiled`.
        let env_only_ref: &'static Environment = unsafe { &*(&*env_only as *const Environment) };
        let result = env_only_ref.evaluate(None).map_err(|e| {
            format!("invalid environment document: its flags cannot be evaluated: {e}")
        })?;
        let names: Vec<Box<str>> = result.flags.iter().map(|f| f.key.into()).collect();
        let index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u32))
            .collect();
        Ok(Compiled {
            env_flags: result.flags,
            _env_only: env_only,
            env,
            names,
            index,
            api_key: doc
                .get("api_key")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            name: doc
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            updated_at: doc
                .get("updated_at")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// Parses and compiles document bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Compiled, String> {
        let doc: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("invalid environment document: not JSON: {e}"))?;
        Self::from_document(&doc)
    }

    /// The environment flags (no identity, no segments).
    pub fn env_flags(&self) -> &[FlagResult<'_>] {
        &self.env_flags
    }

    /// The position of a feature in results, by name.
    pub fn slot(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }

    /// The flag of `slot` in a whole result (results are in feature order; the scan is only a
    /// fallback).
    pub fn find<'r>(&self, flags: &'r [FlagResult<'r>], slot: u32) -> Option<&'r FlagResult<'r>> {
        let name = &*self.names[slot as usize];
        match flags.get(slot as usize) {
            Some(f) if f.key == name => Some(f),
            _ => flags.iter().find(|f| f.key == name),
        }
    }
}

/// One identity as evaluation reads it, converted from Python once: the identifier and traits
/// are owned here and borrowed by the engine's `Identity`.
pub struct Subject {
    // Declared first: borrows from the two below.
    identity: Identity<'static>,
    _traits: Vec<Trait<'static>>,
    _identifier: Box<str>,
}

impl Subject {
    pub fn new(identifier: &str, traits: Vec<Trait<'static>>) -> Subject {
        let identifier: Box<str> = identifier.into();
        // SAFETY (both): the referents are the heap buffers of `identifier` and `traits`, which
        // are stored in the same `Subject`, never mutated, and not moved by moving the
        // `Subject`; `identity` is declared first, so it is dropped before them, and it is only
        // handed out at the lifetime of `&self`.
        let identifier_ref: &'static str = unsafe { &*(&*identifier as *const str) };
        let traits_ref: &'static [Trait<'static>] =
            unsafe { &*(traits.as_slice() as *const [Trait<'static>]) };
        Subject {
            identity: Identity::new(identifier_ref, traits_ref),
            _traits: traits,
            _identifier: identifier,
        }
    }

    pub fn identity(&self) -> &Identity<'_> {
        &self.identity
    }
}

/// One identity's flags, evaluated lazily and memoised, as the Flagsmith SDK's `Flags` does:
/// flags read one at a time are kept in read order; the whole evaluation is run once, when
/// `all_flags` asks for it. Every method is pure Rust (no Python, never waits on a lock held
/// across an evaluation), so callers may release the GIL around any of them.
pub struct IdentityFlags {
    // Results first: dropped before what they borrow from.
    /// Flags evaluated one at a time, by slot, in read order.
    read: Mutex<Vec<(u32, FlagResult<'static>)>>,
    /// The whole evaluation, once run (an error is kept too: asking again raises it again).
    all: OnceLock<Result<Vec<FlagResult<'static>>, EvalError>>,
    subject: Box<Subject>,
    compiled: Arc<Compiled>,
}

impl IdentityFlags {
    pub fn new(compiled: Arc<Compiled>, subject: Subject) -> IdentityFlags {
        IdentityFlags {
            read: Mutex::new(Vec::new()),
            all: OnceLock::new(),
            subject: Box::new(subject),
            compiled,
        }
    }

    /// The environment and identity at the lifetime results are stored with.
    fn owners(&self) -> (&'static Environment, &'static Identity<'static>) {
        let env: *const Environment = &self.compiled.env;
        let identity: *const Identity<'static> = &self.subject.identity;
        // SAFETY: both live in heap allocations owned by `self` (`compiled` behind an `Arc`,
        // `subject` in a `Box`) that never move or change while `self` exists; the results
        // that borrow from them are stored in `read` and `all`, which are dropped first, and are
        // only handed out at the lifetime of `&self`.
        unsafe { (&*env, &*identity) }
    }

    fn read(&self) -> std::sync::MutexGuard<'_, Vec<(u32, FlagResult<'static>)>> {
        self.read.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The flag in `slot` if it is already known: read before, or part of a whole evaluation.
    pub fn known(&self, slot: u32) -> Option<FlagResult<'_>> {
        if let Some((_, flag)) = self.read().iter().find(|(s, _)| *s == slot) {
            return Some(flag.clone());
        }
        match self.all.get() {
            Some(Ok(flags)) => self.compiled.find(flags, slot).cloned(),
            _ => None,
        }
    }

    /// Evaluates the feature in `slot` on its own and remembers it (if another thread got there
    /// first, its flag is the one kept and returned).
    pub fn evaluate_one(&self, slot: u32) -> Result<Option<FlagResult<'_>>, EvalError> {
        let (env, identity) = self.owners();
        let name = &self.compiled.names[slot as usize];
        let Some(flag) = env.evaluate_feature(name, Some(identity))? else {
            return Ok(None);
        };
        let mut read = self.read();
        if let Some((_, kept)) = read.iter().find(|(s, _)| *s == slot) {
            return Ok(Some(kept.clone()));
        }
        read.push((slot, flag.clone()));
        Ok(Some(flag))
    }

    /// Runs the whole evaluation unless it has run.
    pub fn evaluate_all(&self) -> &Result<Vec<FlagResult<'_>>, EvalError> {
        if let Some(all) = self.all.get() {
            return all;
        }
        let (env, identity) = self.owners();
        // Two threads may both evaluate; the first result is kept (they are equal).
        let _ = self.all.set(env.evaluate(Some(identity)).map(|r| r.flags));
        self.all.get().expect("set above")
    }

    pub fn is_evaluated(&self) -> bool {
        self.all.get().is_some()
    }

    /// Every flag, as the SDK lists them after a whole evaluation: the flags read one at a time
    /// before it (in read order, as they were read), then the others in document order.
    pub fn listed(&self) -> Result<Cow<'_, [FlagResult<'_>]>, EvalError> {
        let all = self.evaluate_all().as_ref().map_err(Clone::clone)?;
        let read = self.read();
        if read.is_empty() {
            return Ok(Cow::Borrowed(all));
        }
        let mut listed: Vec<FlagResult<'_>> = read.iter().map(|(_, f)| f.clone()).collect();
        listed.extend(
            all.iter()
                .filter(|f| !read.iter().any(|(_, r)| r.key == f.key))
                .cloned(),
        );
        Ok(Cow::Owned(listed))
    }
}
