//! One compiled environment document, immutable and shared by `Arc` between Python objects,
//! threads and the refresher: the engine's `Environment` (with segments, for identities), the
//! environment flags (the document's own feature states, no segments, no identity: what the
//! Flagsmith API and the SDKs' local evaluation return) computed once, and the feature names in
//! result order so that `Flags` can look a flag up by name without going back to the engine.
//!
//! Nothing in here touches Python: evaluation runs with the GIL released and produces an
//! `Evaluated`, which owns everything the engine's borrowed results may point into, so that no
//! flag is copied; values become Python objects only when the caller reads them.
//!
//! The engine's results borrow (`FlagResult<'a>`) from the environment and the identity. Both
//! structs here keep those owners in heap allocations that never move or change while the
//! results exist (`Arc`s, and a `Vec` that is never touched again), declare the results
//! first so they are dropped first, and hand results out only at the lifetime of `&self`.

use std::collections::HashMap;

use std::sync::Arc;

use flagpole_engine::document::document_to_context;
use flagpole_engine::{EvalError, FlagResult, Identity, Trait};
use serde_json::Value;

pub struct Compiled {
    /// Environment flags, evaluated once at compile time. Borrow from `env_only`.
    env_flags: Vec<FlagResult<'static>>,
    /// The document's features without segments (what environment flags are evaluated on).
    _env_only: Arc<flagpole_engine::Environment>,
    /// The whole document compiled: segments, identity overrides, multivariate splits.
    pub env: flagpole_engine::Environment,
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
        let (env, _) = flagpole_engine::Environment::from_context(&context)
            .map_err(|e| format!("invalid environment document: {e}"))?;
        let mut without_segments = context;
        if let Some(map) = without_segments.as_object_mut() {
            map.remove("segments");
        }
        let (env_only, _) = flagpole_engine::Environment::from_context(&without_segments)
            .map_err(|e| format!("invalid environment document: {e}"))?;
        let env_only = Arc::new(env_only);
        // SAFETY: `env_only` is behind an `Arc` (its address does not change when the `Arc` moves,
        // and moving an `Arc` asserts no uniqueness), is never mutated, and is stored in the same `Compiled` as the results, which are dropped first
        // and only handed out at the lifetime of `&Compiled`.
        let env_only_ref: &'static flagpole_engine::Environment =
            unsafe { &*(&*env_only as *const flagpole_engine::Environment) };
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

    /// Evaluates every flag for one identity. Pure Rust: callers run it with the GIL released.
    pub fn evaluate_identity(
        self: &Arc<Self>,
        identifier: &str,
        traits: Vec<Trait<'static>>,
    ) -> Result<Evaluated, EvalError> {
        let identifier: Arc<str> = identifier.into();
        // SAFETY (all four): the referents are heap allocations owned by the `Evaluated` built
        // below (`Arc`s, which move without asserting uniqueness, and the traits `Vec`, which is
        // never touched again); they outlive `flags`, which is dropped first and only handed out
        // at the lifetime of `&Evaluated`.
        let identifier_ref: &'static str = unsafe { &*(&*identifier as *const str) };
        let traits_ref: &'static [Trait<'static>] =
            unsafe { &*(traits.as_slice() as *const [Trait<'static>]) };
        let identity = Arc::new(Identity::new(identifier_ref, traits_ref));
        let identity_ref: &'static Identity<'static> =
            unsafe { &*(&*identity as *const Identity<'static>) };
        let env: &'static flagpole_engine::Environment =
            unsafe { &*(&self.env as *const flagpole_engine::Environment) };
        let result = env.evaluate(Some(identity_ref))?;
        Ok(Evaluated {
            flags: result.flags,
            _identity: identity,
            _traits: traits,
            _identifier: identifier,
            _compiled: self.clone(),
        })
    }

    /// The position of a feature in results, by name.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.index.get(name).map(|&i| i as usize)
    }
}

/// One identity's evaluation, owning what its results borrow.
pub struct Evaluated {
    // Declared first: dropped before what it borrows from.
    flags: Vec<FlagResult<'static>>,
    _identity: Arc<Identity<'static>>,
    _traits: Vec<Trait<'static>>,
    _identifier: Arc<str>,
    _compiled: Arc<Compiled>,
}

impl Evaluated {
    pub fn flags(&self) -> &[FlagResult<'_>] {
        &self.flags
    }
}
