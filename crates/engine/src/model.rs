//! The compiled form of an evaluation context: everything the reference would look up, parse or
//! sort on every call is done once here, when an environment changes. An [`Environment`] is
//! immutable and `Send + Sync`, so many threads evaluate against one shared copy.
//!
//! Where the reference would raise lazily (only when evaluation reaches a field), the compiled
//! field holds a `Result` and the evaluator returns its error only when it gets there.

use std::collections::HashMap;

use serde_json::Value;

use crate::condition::Condition;
use crate::error::EvalError;
use crate::jsonpath::JsonPathQuery;
use crate::priority::PriorityKey;

/// Index of a distinct feature name (interned at compile time).
pub(crate) type NameId = u32;

/// A compiled evaluation context (without the identity, which varies per call).
#[derive(Debug)]
pub struct Environment {
    /// `environment.key` as given (Python `str()` of it builds the implicit identity key).
    pub(crate) env_key: Result<String, EvalError>,
    /// The context document itself, for JSONPath queries that cannot be answered statically.
    pub(crate) root: serde_json::Map<String, Value>,
    /// Root keys in order, with where the identity and the `flags` map sit among them.
    pub(crate) root_order: Vec<RootEntry>,
    /// Every feature context: the `features` entries first (same order), then segment overrides.
    pub(crate) feature_ctxs: Vec<FeatureCtx>,
    /// One per entry of `context.features`, in order.
    pub(crate) features: Vec<FeatureEntry>,
    /// `context["features"][name]`: the feature context stored under that map key.
    pub(crate) feature_by_key: HashMap<String, usize>,
    /// Interned names of features and overrides.
    pub(crate) names: Vec<String>,
    pub(crate) name_ids: HashMap<String, NameId>,
    /// Per name id: some segment (matched or not) overrides a feature of this name.
    pub(crate) targeted: Vec<bool>,
    /// An override without a `name` makes the reference raise when it lists targeted features.
    pub(crate) override_name_error: Option<EvalError>,
    pub(crate) segments: Vec<Segment>,
    /// Per name id: the segments that override it, in context order (for `$.flags` dependency
    /// resolution and per-feature evaluation).
    pub(crate) segments_by_name: Vec<Vec<usize>>,
    /// Per name id: a segment that overrides it also has an override without a `name`, so the
    /// context trimmed to this feature raises `override_name_error` too.
    pub(crate) beside_unnamed_override: Vec<bool>,
    /// JSONPath properties answered at compile time from `features` or `segments` whose answer
    /// is different in a context trimmed to one feature (by property text): a per-feature
    /// evaluation asks them of its trimmed context instead.
    pub(crate) trim_sensitive: HashMap<String, Box<JsonPathQuery>>,
    /// Identity-override segments, found by one lookup instead of one test per segment.
    pub(crate) identifier_index: IdentifierIndex,
    /// Whether any condition reads `$.flags` (only then is dependency state kept).
    pub(crate) reads_flags: bool,
    /// The trait names the conditions read, by slot (see `slots`).
    pub(crate) trait_slots: SlotMap,
    /// Number of output slots (distinct feature names in `features`, first position wins).
    pub(crate) flag_slots: usize,
    /// How an identity's result is told as what differs from the own flags, or `None` when this
    /// environment's results cannot be told that way (see `evaluate/varied.rs`).
    pub(crate) varied: Option<VariedPlan>,
}

/// What [`Environment::evaluate_varied`] needs, listed at compile time: the features whose flag
/// can depend on the identity other than through a segment override.
#[derive(Debug)]
pub(crate) struct VariedPlan {
    /// Positions (in `features`) of the features whose own context is multivariate: split per
    /// identity.
    pub multivariate: Vec<usize>,
    /// Per name id: the position in `features` of the feature of that name (`u32::MAX`: none).
    pub position_by_name: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RootEntry {
    Static(String),
    Identity,
    Flags,
}

/// One entry of `context.features`.
#[derive(Debug)]
pub(crate) struct FeatureEntry {
    /// Index of this entry's feature context.
    pub ctx: usize,
    /// Output slot: the position of the first entry with the same name.
    pub slot: usize,
    /// `context["features"][name]`: the context used when no override wins (or the KeyError).
    pub fallback: Result<usize, EvalError>,
    /// Whether any segment overrides this name (`DEFAULT` rather than `STATIC`).
    pub targeted: bool,
}

/// A feature context (environment default or segment override), ready to evaluate.
#[derive(Debug)]
pub(crate) struct FeatureCtx {
    pub name: Result<String, EvalError>,
    pub name_id: Option<NameId>,
    pub enabled: Result<Value, EvalError>,
    pub value: Result<Value, EvalError>,
    /// Python `str()` of `key`, the multivariate hashing key.
    pub key: Result<String, EvalError>,
    /// `None` when there are no variants (absent or empty); sorted by priority otherwise.
    pub variants: Option<Result<Vec<Variant>, EvalError>>,
    pub priority: PriorityKey,
    /// Echoed into the result only when truthy (possibly shared with other environments).
    pub metadata: Option<std::sync::Arc<Value>>,
}

impl FeatureCtx {
    /// Whether evaluating this context for an identity cannot fail, whatever bucket the
    /// identity falls in: it is multivariate and every field a split reads is well formed.
    pub(crate) fn split_cannot_fail(&self) -> bool {
        self.name.is_ok()
            && self.enabled.is_ok()
            && self.value.is_ok()
            && self.key.is_ok()
            && matches!(&self.variants, Some(Ok(variants))
                if variants.iter().all(|v| v.weight.is_ok() && v.value.is_ok()))
    }
}

#[derive(Debug)]
pub(crate) struct Variant {
    pub value: Result<Value, EvalError>,
    /// `weight` as the float the reference adds up.
    pub weight: Result<f64, EvalError>,
    /// `SPLIT; weight=<str(weight)>`.
    pub reason: String,
    /// `key`, echoed as the result's `variant` (null when absent).
    pub key: Value,
}

#[derive(Debug)]
pub(crate) struct Segment {
    /// Python `str()` of `key`: the percentage-split hashing id.
    pub key: Result<String, EvalError>,
    pub name: Result<Value, EvalError>,
    /// `TARGETING_MATCH; segment=<str(name)>`.
    pub reason: String,
    /// Possibly shared with other environments (see `shared`).
    pub metadata: Option<std::sync::Arc<Value>>,
    /// Possibly shared with other environments (see `shared`).
    pub rules: Result<std::sync::Arc<[Rule]>, EvalError>,
    /// Feature-context indices of the overrides, in order.
    pub overrides: Vec<usize>,
    /// The environment's trait slot of each trait slot of `rules` (see `slots`).
    pub trait_slots: Box<[u16]>,
    /// The rules cheapest first, when they may be reordered (see `order`).
    pub rule_order: Option<Box<[u32]>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quantifier {
    All,
    Any,
    None,
}

#[derive(Debug)]
pub(crate) struct Rule {
    pub quantifier: Result<Quantifier, EvalError>,
    pub conditions: Vec<Condition>,
    pub rules: Vec<Rule>,
    /// Whether and how its parts may be reordered (see `order`).
    pub plan: RulePlan,
}

/// Segments whose only rule is `ALL [$.identity.identifier IN <list>]`, the shape identity
/// overrides map to (a medium document has thousands). Matching one is a set lookup of the
/// identifier, so all of them are matched by a single lookup in this index.
#[derive(Debug, Default)]
pub(crate) struct IdentifierIndex {
    /// Identifier (as the IN list spells it) → indexed segments containing it, in order
    /// (a fixed-seed fast hasher: filled from the document only, asked once per evaluation).
    pub by_identifier: HashMap<String, Vec<usize>, foldhash::fast::FixedState>,
    /// Segments not in the index, in context order.
    pub others: Vec<usize>,
    /// Per name id: the segments not in the index that override it, in context order (empty
    /// when the index is not active).
    pub others_by_name: Vec<Vec<usize>>,
    /// Whether any segment is indexed.
    pub active: bool,
}

/// What compile time decided about a rule (`order.rs` decides it).
#[derive(Debug, Default)]
pub(crate) struct RulePlan {
    /// No condition of the rule or of its sub-rules can raise for a tame request.
    pub safe: bool,
    /// The estimated cost of testing every part (see the module documentation).
    pub cost: u32,
    /// Conditions cheapest first (indices), when safe and different from the written order.
    pub conditions: Option<Box<[u32]>>,
    /// Sub-rules cheapest first, likewise.
    pub rules: Option<Box<[u32]>>,
}

/// No slot (`slots.rs`): the condition reads no trait by name, or its rule set has too many names (then the
/// trait is found by name).
pub(crate) const NO_SLOT: u16 = u16::MAX;

/// Trait names → slots (in first-seen order).
pub(crate) type SlotMap = HashMap<Box<str>, u16, foldhash::fast::FixedState>;
