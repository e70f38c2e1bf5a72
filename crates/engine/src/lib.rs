//! Flagpole's evaluation engine: a pure re-implementation of the Flagsmith flag engine
//! (`flagsmith-flag-engine` 11.1.1) that agrees with it on every input.
//!
//! The engine does no I/O, starts no threads and has no global state. Its shape is
//! *compile once, evaluate many*:
//!
//! ```
//! use flagpole_engine::{Environment, Identity, Trait, TraitValue};
//! let document = include_str!("../../../examples/environment.json");
//! let env = Environment::from_document_json(document.as_bytes()).unwrap();
//! let traits = [Trait { key: "plan".into(), value: TraitValue::Str("pro".into()) }];
//! let identity = Identity::new("user-1", &traits);
//! let result = env.evaluate(Some(&identity)).unwrap();
//! assert!(!result.flags.is_empty());
//! ```
//!
//! Module map: [`value`] (Python-typed values and coercion), [`python`] (Python number, `str()`
//! and regex semantics), [`semver`], [`hashing`], `compile` (context → [`Environment`]),
//! `condition`/`property` (what a condition reads and how it matches), `evaluate` (the
//! algorithm), [`result`], [`document`] (environment document → context, as the SDKs map it),
//! [`explain`] (why an identity gets a value).

// Everything here is safe Rust; the shells' few FFI calls live in their own crates.
#![forbid(unsafe_code)]

mod compile;
mod condition;
pub mod document;
mod error;
mod evaluate;
pub mod explain;
pub mod hashing;
mod identity;
mod jsonpath;
mod model;
mod order;
mod priority;
mod property;
pub mod python;
pub mod result;
pub mod semver;
mod shared;
mod slots;
pub mod value;

pub use compile::Diagnostic;
pub use error::{EvalError, InputError, PyErrorKind};
pub use identity::{traits_from_json, Identity, Trait};
pub use model::Environment;
pub use result::{
    EvaluationResult, FlagResult, Reason, SegmentResult, SourcedValue, ValueSource, VariantChoice,
    VariedResult,
};
pub use shared::Shared;
pub use value::{Scalar, TraitValue};

impl Environment {
    /// Compiles an evaluation context (the engine's context format). Its `identity` is ignored;
    /// pass identities to [`Environment::evaluate`].
    pub fn from_context(
        context: &serde_json::Value,
    ) -> Result<(Environment, Vec<Diagnostic>), InputError> {
        compile::compile_context(context)
    }

    /// [`Environment::from_context`], sharing compiled segment rules with the other
    /// environments compiled with the same [`Shared`].
    pub fn from_context_sharing(
        context: &serde_json::Value,
        shared: &Shared,
    ) -> Result<(Environment, Vec<Diagnostic>), InputError> {
        compile::compile_context_sharing(context, Some(shared))
    }

    /// Parses and compiles an environment document (`/api/v1/environment-document/`), mapped to
    /// a context exactly as the Flagsmith SDKs map it for local evaluation.
    ///
    /// The document is read without a JSON tree of it ([`document::DocumentView`]); one the view
    /// does not map exactly, and every invalid one, is parsed as a tree instead, for the same
    /// result or the same error.
    pub fn from_document_json(bytes: &[u8]) -> Result<Environment, InputError> {
        if let Some((env, _)) = document::DocumentView::parse(bytes).and_then(|v| v.compile()) {
            return Ok(env);
        }
        let doc: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| InputError::new("$", format!("invalid JSON: {e}")))?;
        Self::from_document(&doc)
    }

    /// Compiles an already parsed environment document.
    pub fn from_document(doc: &serde_json::Value) -> Result<Environment, InputError> {
        let context = document::document_to_context(doc)?;
        compile::compile_context(&context).map(|(env, _)| env)
    }

    /// Evaluates every flag for an identity, or for no identity (`None`).
    pub fn evaluate<'a>(
        &'a self,
        identity: Option<&'a Identity<'a>>,
    ) -> Result<EvaluationResult<'a>, EvalError> {
        evaluate::evaluate(self, identity)
    }

    /// The flags of an identity (or none) that can differ from [`Environment::own_flags`]: those
    /// of the features a matching segment overrides and, for an identity, those split per
    /// identity, each with its position in the own flags; every other flag is the own flag at
    /// that position (with the reason `DEFAULT` when some segment overrides the feature). The
    /// segments are evaluated as [`Environment::evaluate`] evaluates them, errors included.
    ///
    /// `None` when this environment's results cannot be told that way (a condition reads
    /// `$.flags`, feature names repeat or differ from their keys, or a feature context is
    /// malformed): call [`Environment::evaluate`] instead. Decided once, at compile time.
    pub fn evaluate_varied<'a>(
        &'a self,
        identity: Option<&'a Identity<'a>>,
    ) -> Option<Result<VariedResult<'a>, EvalError>> {
        evaluate::evaluate_varied(self, identity)
    }

    /// The whole result a [`VariedResult`] of this environment stands for: equal to what
    /// [`Environment::evaluate`] returns for the same identity.
    pub fn merge_varied<'a>(
        &'a self,
        varied: VariedResult<'a>,
    ) -> Result<EvaluationResult<'a>, EvalError> {
        evaluate::merge_varied(self, varied)
    }

    /// The environment's own flags: no identity, no segments, every feature at its environment
    /// state with the reason `STATIC`. This is what the Flagsmith API's `/flags` serves and what
    /// the SDKs' `get_environment_flags()` returns; it equals [`Environment::evaluate`] with no
    /// identity of the context without its `segments`, which therefore need not be compiled
    /// separately. The result has no segments.
    pub fn own_flags(&self) -> Result<EvaluationResult<'_>, EvalError> {
        evaluate::own_flags(self)
    }

    /// One flag for an identity (or none), by feature name, evaluating only what that feature
    /// needs: the identity-override lookup and the segments that override it. This is the
    /// reference's result for the context trimmed to the feature (`features` reduced to it,
    /// `segments` to those that override it), which is what the Flagsmith SDKs evaluate when one
    /// flag is read; it equals [`Environment::evaluate`]'s flag unless a condition reads
    /// `$.flags`, `$.features` or `$.segments` (those see the trimmed context) or a segment that
    /// does not override the feature raises. `Ok(None)` when there is no such feature.
    pub fn evaluate_feature<'a>(
        &'a self,
        name: &str,
        identity: Option<&'a Identity<'a>>,
    ) -> Result<Option<FlagResult<'a>>, EvalError> {
        evaluate::evaluate_feature(self, name, identity)
    }

    /// Whether the environment has a feature of this name (a key of the context's `features`).
    pub fn has_feature(&self, name: &str) -> bool {
        self.feature_by_key.contains_key(name)
    }

    /// Whether the feature of this name can answer differently for different callers: it has
    /// multivariate options, or some segment overrides it (identity overrides are segments
    /// here). Only a feature that can vary by nothing is static to a caching client.
    pub fn can_vary(&self, name: &str) -> bool {
        let targeted = self
            .name_ids
            .get(name)
            .is_some_and(|&id| self.targeted.get(id as usize).copied().unwrap_or(false));
        let multivariate = self
            .feature_by_key
            .get(name)
            .and_then(|&ctx| self.feature_ctxs.get(ctx))
            .is_some_and(|ctx| match &ctx.variants {
                Some(Ok(variants)) => !variants.is_empty(),
                Some(Err(_)) => true,
                None => false,
            });
        targeted || multivariate
    }

    /// Every [`ValueSource`] a flag can have, in order (contexts in environment order, each
    /// followed by its variants), with the name, `enabled` and `value` a flag decided by it
    /// holds. Sources whose fields are malformed (they raise when evaluated) are left out.
    pub fn value_sources(&self) -> impl Iterator<Item = SourcedValue<'_>> {
        self.feature_ctxs
            .iter()
            .enumerate()
            .flat_map(|(context, ctx)| {
                let (Ok(name), Ok(enabled), Ok(value)) = (&ctx.name, &ctx.enabled, &ctx.value)
                else {
                    return Vec::new();
                };
                let own = SourcedValue {
                    source: ValueSource {
                        context,
                        variant: None,
                    },
                    name,
                    enabled,
                    value,
                    variant_key: None,
                };
                let variants = match &ctx.variants {
                    Some(Ok(variants)) => variants.as_slice(),
                    _ => &[],
                };
                std::iter::once(own)
                    .chain(variants.iter().enumerate().filter_map(|(i, v)| {
                        Some(SourcedValue {
                            source: ValueSource {
                                context,
                                variant: Some(i),
                            },
                            name,
                            enabled,
                            value: v.value.as_ref().ok()?,
                            variant_key: Some(&v.key),
                        })
                    }))
                    .collect()
            })
    }

    /// The number of feature contexts ([`ValueSource::context`] is below it).
    pub fn context_count(&self) -> usize {
        self.feature_ctxs.len()
    }

    /// The environment key (`environment.key`) as text, if the context has one.
    pub fn key(&self) -> Option<&str> {
        self.env_key.as_deref().ok()
    }
}
