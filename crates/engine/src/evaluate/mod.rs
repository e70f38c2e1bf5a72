//! Evaluation: the reference's `get_evaluation_result`, step for step, over a compiled
//! [`Environment`]. The order of every step (segments in context order, conditions left to right
//! with short-circuit, sub-rules evaluated even after conditions failed) matches the reference,
//! because it decides which error is raised and how `$.flags` dependency cycles are cut.
//!
//! Per call this allocates the segment list, the override table and the flag list; strings are
//! only built for a derived identity key and for non-string values that must be hashed.
//!
//! [`evaluate_feature`] runs the same steps over the context trimmed to one feature (see
//! `scope.rs`): only the segments that override it are tested.

use crate::error::EvalError;
use crate::hashing::{hashed_percentage, hashed_percentages, LANES};
use crate::identity::Identity;
use crate::model::{Environment, FeatureCtx, FeatureEntry, Variant};
use crate::result::{EvaluationResult, FlagResult, Reason, SegmentResult, VariantChoice};
use crate::value::{Scalar, TraitValue};

mod dependencies;
mod evaluation;
mod query;
mod rules;
mod scope;
mod slots;
mod varied;

pub(crate) use evaluation::Evaluation;
use scope::{FeatureScope, Overrides, Scope, SegmentOrder};
pub(crate) use varied::{evaluate_varied, merge_varied, varied_plan};

/// Where an identity falls in a feature's multivariate split.
pub(crate) struct VariantSplit<'a> {
    /// In [0, 100): `hashed_percentage(feature key, identity key)`.
    pub bucket: f64,
    /// The variant whose range `[start, limit)` holds the bucket; none: the control value.
    pub chosen: Option<ChosenVariant<'a>>,
}

pub(crate) struct ChosenVariant<'a> {
    pub variant: &'a Variant,
    /// Its position in the context's variants.
    pub index: usize,
    pub start: f64,
    pub limit: f64,
}

/// Evaluates the environment for an identity (`None` = no identity, as for an absent, null or
/// empty `identity` in a context).
pub(crate) fn evaluate<'a>(
    env: &'a Environment,
    identity: Option<&'a Identity<'a>>,
) -> Result<EvaluationResult<'a>, EvalError> {
    evaluate_scope(env, identity, Scope::All)
}

/// The environment's own flags: the evaluation, for no identity, of the context without its
/// `segments` (every feature at its environment state, `STATIC`). This is what the Flagsmith API's
/// `/flags` and the SDKs' environment flags are, without compiling that context separately.
pub(crate) fn own_flags(env: &Environment) -> Result<EvaluationResult<'_>, EvalError> {
    evaluate_scope(env, None, Scope::Unsegmented)
}

fn evaluate_scope<'a>(
    env: &'a Environment,
    identity: Option<&'a Identity<'a>>,
    scope: Scope<'a>,
) -> Result<EvaluationResult<'a>, EvalError> {
    let mut ev = Evaluation::with_scope(env, identity, scope)?;
    let (segments, overrides) = ev.evaluate_segments()?;
    let flags = ev.evaluate_features(&overrides)?;
    let flags = ev.with_dependencies(flags);
    Ok(EvaluationResult { flags, segments })
}

/// Evaluates one feature (by its `features` key) as the reference evaluates the context trimmed
/// to it: `features` reduced to that feature, `segments` to those that override it. `None` when
/// the context has no such feature (or, in a context whose feature is named differently from its
/// key, when the trimmed result holds no flag under `key`).
pub(crate) fn evaluate_feature<'a>(
    env: &'a Environment,
    key: &str,
    identity: Option<&'a Identity<'a>>,
) -> Result<Option<FlagResult<'a>>, EvalError> {
    let Some((key, &ctx)) = env.feature_by_key.get_key_value(key) else {
        return Ok(None);
    };
    let scope = Scope::Feature(FeatureScope::new(env, key, ctx));
    let mut ev = Evaluation::with_scope(env, identity, scope)?;
    let (_, overrides) = ev.evaluate_segments()?;
    let flags = ev.evaluate_features(&overrides)?;
    let flags = ev.with_dependencies(flags);
    Ok(flags.into_iter().find(|f| f.key == key.as_str()))
}

impl<'a> Evaluation<'a> {
    /// The flags with what the `$.flags` mapping resolved on the way: those results win, and
    /// the flags of a dependency cycle get its reason.
    fn with_dependencies(&self, mut flags: Vec<FlagResult<'a>>) -> Vec<FlagResult<'a>> {
        if let Some(deps) = self.deps.as_ref().filter(|d| d.used) {
            for (key, resolved) in &deps.resolved {
                match flags.iter_mut().find(|f| f.key == *key) {
                    Some(slot) => *slot = resolved.clone(),
                    None => flags.push(resolved.clone()),
                }
            }
            for name in &deps.cyclic {
                if let Some(flag) = flags.iter_mut().find(|f| f.key == *name) {
                    flag.reason = Reason::CircularDependency;
                }
            }
        }
        flags
    }

    /// The error of an override without a `name` in the segments in scope (the reference
    /// raises it when it lists the targeted features, and when it builds its `$.flags` index).
    fn override_name_error(&self) -> Option<&'a EvalError> {
        let error = self.env.override_name_error.as_ref()?;
        match self.scope {
            Scope::All => Some(error),
            Scope::Unsegmented => None,
            Scope::Feature(scope) => scope
                .name_id
                .filter(|&id| self.env.beside_unnamed_override[id as usize])
                .map(|_| error),
        }
    }

    fn evaluate_segments(&mut self) -> Result<(Vec<SegmentResult<'a>>, Overrides), EvalError> {
        let env = self.env;
        let mut overrides = Overrides::new(env, self.scope);
        let mut results = Vec::new();
        let mut hits = self.cycle_hits();
        let indexed_hits = if env.identifier_index.active {
            self.indexed_identifier_hits()?
        } else {
            None
        };
        let scoped_hits: Vec<usize>;
        let order = match (self.scope, indexed_hits) {
            (Scope::All, Some(hits)) => SegmentOrder::Merged {
                others: &env.identifier_index.others,
                hits,
            },
            (Scope::All, None) => SegmentOrder::Every(0..env.segments.len()),
            (Scope::Feature(scope), Some(hits)) => {
                scoped_hits = hits
                    .iter()
                    .copied()
                    .filter(|&s| scope.has_segment(s))
                    .collect();
                SegmentOrder::Merged {
                    others: scope.unindexed(env),
                    hits: &scoped_hits,
                }
            }
            (Scope::Feature(scope), None) => SegmentOrder::Listed(scope.segments.iter()),
            // The context without segments.
            (Scope::Unsegmented, _) => SegmentOrder::Listed([].iter()),
        };
        for (i, known_match) in order {
            let segment = &env.segments[i];
            let matches = known_match || self.is_in_segment(i)?;
            let now = self.cycle_hits();
            if now != hits {
                // The verdict rests on a dependency that could not be resolved: neither counts.
                hits = now;
                continue;
            }
            if !matches {
                continue;
            }
            let name = segment.name.as_ref().map_err(Clone::clone)?;
            results.push(SegmentResult {
                name,
                metadata: segment.metadata.as_deref(),
                index: i,
            });
            for &o in &segment.overrides {
                let ctx = &env.feature_ctxs[o];
                ctx.name.as_ref().map_err(Clone::clone)?;
                let id = ctx.name_id.expect("named override has an id");
                let wins = match overrides.get(id) {
                    None => true,
                    Some((incumbent, _)) => {
                        ctx.priority.py_lt(&env.feature_ctxs[incumbent].priority)?
                    }
                };
                if wins {
                    overrides.set(id, (o, i));
                }
            }
        }
        Ok((results, overrides))
    }

    /// The indexed identity-override segments this identity is in, or `None` when the index
    /// cannot be used (a trait literally named `$.identity.identifier` shadows the identifier).
    fn indexed_identifier_hits(&self) -> Result<Option<&'a [usize]>, EvalError> {
        const EMPTY: &[usize] = &[];
        let Some(identity) = self.identity else {
            return Ok(Some(EMPTY));
        };
        if identity
            .trait_value("$.identity.identifier")
            .is_some_and(|v| !v.is_null())
        {
            return Ok(None);
        }
        let by_identifier = &self.env.identifier_index.by_identifier;
        let hits = match identity
            .identifier
            .as_ref()
            .map(TraitValue::coerce)
            .transpose()?
        {
            Some(Scalar::Str(s)) => by_identifier.get(s.as_ref()),
            Some(Scalar::Int(i)) => by_identifier.get(&i.to_string()),
            _ => None,
        };
        Ok(Some(hits.map_or(EMPTY, Vec::as_slice)))
    }

    fn evaluate_features(
        &mut self,
        overrides: &Overrides,
    ) -> Result<Vec<FlagResult<'a>>, EvalError> {
        let env = self.env;
        let entries = match self.scope {
            Scope::All | Scope::Unsegmented => env.features.as_slice(),
            Scope::Feature(scope) => std::slice::from_ref(&env.features[scope.ctx]),
        };
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(e) = self.override_name_error() {
            return Err(e.clone());
        }
        // Distinct names (the normal case): one flag per entry, pushed in order.
        let distinct = entries.len() == 1 || env.flag_slots == env.features.len();
        self.flags_of(overrides, entries.iter(), entries.len(), distinct)
    }

    /// The flags of `entries` (`len` of them), in order: one per entry when their names are
    /// `distinct`, else one per output slot.
    fn flags_of(
        &mut self,
        overrides: &Overrides,
        entries: impl Iterator<Item = &'a FeatureEntry>,
        len: usize,
        distinct: bool,
    ) -> Result<Vec<FlagResult<'a>>, EvalError> {
        let env = self.env;
        let mut flags = Vec::with_capacity(if distinct { len } else { 0 });
        let mut slots: Vec<Option<FlagResult<'a>>> = if distinct {
            Vec::new()
        } else {
            vec![None; env.flag_slots]
        };
        // Multivariate splits whose hashing waits to be done together (see `hashing`).
        let mut splits = PendingSplits::default();
        for entry in entries {
            let ctx = &env.feature_ctxs[entry.ctx];
            let name = ctx.name.as_ref().map_err(Clone::clone)?;
            let id = ctx.name_id.expect("named feature has an id");
            let (decided_by, reason, segment) = match overrides.get(id) {
                Some((o, s)) => (o, Reason::TargetingMatch(&env.segments[s].reason), Some(s)),
                None => {
                    let (fallback, targeted) = self.fallback(entry, name)?;
                    let reason = if targeted {
                        Reason::Default
                    } else {
                        Reason::Static
                    };
                    (fallback, reason, None)
                }
            };
            let decider = &env.feature_ctxs[decided_by];
            // Deferring a split keeps errors in flag order only if it cannot fail.
            if distinct && self.key_text.is_some() && decider.split_cannot_fail() {
                flags.push(self.unsplit_result(name, decided_by, reason, segment)?);
                if splits.push(flags.len() - 1, decided_by) {
                    self.settle_splits(&mut flags, &mut splits);
                }
                continue;
            }
            let result = self.flag_result(name, decided_by, reason, segment)?;
            if distinct {
                flags.push(result);
            } else {
                slots[entry.slot] = Some(result);
            }
        }
        self.settle_splits(&mut flags, &mut splits);
        if !distinct {
            flags.extend(slots.into_iter().flatten());
        }
        Ok(flags)
    }

    /// Hashes the pending splits together and puts each flag in its variant.
    fn settle_splits(&self, flags: &mut [FlagResult<'a>], splits: &mut PendingSplits) {
        let n = splits.len;
        if n == 0 {
            return;
        }
        let identity_key = self.key_text.as_deref().unwrap_or_default();
        let mut pairs = [("", ""); LANES];
        for (pair, &(_, ctx)) in pairs.iter_mut().zip(&splits.items[..n]) {
            let key = self.env.feature_ctxs[ctx].key.as_deref();
            *pair = (key.unwrap_or_default(), identity_key);
        }
        let mut buckets = [0.0; LANES];
        hashed_percentages(&pairs[..n], &mut buckets);
        for (&(index, ctx), bucket) in splits.items[..n].iter().zip(buckets) {
            if let Some(Ok(variants)) = &self.env.feature_ctxs[ctx].variants {
                if let Ok(split) = choose_variant(variants, bucket) {
                    apply_split(&mut flags[index], &split);
                }
            }
        }
        splits.len = 0;
    }

    /// `features[name]` (the context used when no override wins) and whether any segment in
    /// scope overrides `name`.
    fn fallback(&self, entry: &FeatureEntry, name: &str) -> Result<(usize, bool), EvalError> {
        match self.scope {
            Scope::All => Ok((
                *entry.fallback.as_ref().map_err(Clone::clone)?,
                entry.targeted,
            )),
            Scope::Unsegmented => Ok((*entry.fallback.as_ref().map_err(Clone::clone)?, false)),
            // The trimmed `features` holds `key` only.
            Scope::Feature(scope) if name == scope.key => {
                Ok((scope.ctx, !scope.segments.is_empty()))
            }
            Scope::Feature(_) => Err(EvalError::key(format!("'{name}'"))),
        }
    }

    /// `get_flag_result_from_context`: value, multivariate split, reason.
    pub(crate) fn flag_result(
        &self,
        key: &'a str,
        ctx_index: usize,
        reason: Reason<'a>,
        segment: Option<usize>,
    ) -> Result<FlagResult<'a>, EvalError> {
        let ctx = &self.env.feature_ctxs[ctx_index];
        // The reference reads the value before the split, so its error comes first.
        ctx.value.as_ref().map_err(Clone::clone)?;
        let split = self.variant_split(ctx)?;
        if let Some(VariantSplit {
            chosen: Some(chosen),
            ..
        }) = &split
        {
            chosen.variant.value.as_ref().map_err(Clone::clone)?;
        }
        let mut result = self.unsplit_result(key, ctx_index, reason, segment)?;
        if let Some(split) = &split {
            apply_split(&mut result, split);
        }
        Ok(result)
    }

    /// The flag as its context gives it, before any multivariate split.
    fn unsplit_result(
        &self,
        key: &'a str,
        ctx_index: usize,
        reason: Reason<'a>,
        segment: Option<usize>,
    ) -> Result<FlagResult<'a>, EvalError> {
        let ctx = &self.env.feature_ctxs[ctx_index];
        Ok(FlagResult {
            key,
            name: ctx.name.as_ref().map_err(Clone::clone)?,
            enabled: ctx.enabled.as_ref().map_err(Clone::clone)?,
            value: ctx.value.as_ref().map_err(Clone::clone)?,
            reason,
            variant: VariantChoice::None,
            metadata: ctx.metadata.as_deref(),
            decided_by: ctx_index,
            segment,
            variant_index: None,
        })
    }

    /// The multivariate split of a feature context for this identity: its bucket and the variant
    /// whose range holds it (none: the control value). `None` without an identity or variants.
    pub(crate) fn variant_split(
        &self,
        ctx: &'a FeatureCtx,
    ) -> Result<Option<VariantSplit<'a>>, EvalError> {
        let (Some(identity_key), Some(variants)) = (&self.key_text, &ctx.variants) else {
            return Ok(None);
        };
        let variants = variants.as_ref().map_err(Clone::clone)?;
        let feature_key = ctx.key.as_ref().map_err(Clone::clone)?;
        let bucket = hashed_percentage(feature_key, identity_key);
        choose_variant(variants, bucket).map(Some)
    }

    /// `str(identity key)`: what percentage splits and multivariate splits hash.
    pub(crate) fn identity_key_text(&self) -> Option<&str> {
        self.key_text.as_deref()
    }
}

/// The variant whose range `[start, start + weight)` holds the bucket (weights added in order).
fn choose_variant(variants: &[Variant], bucket: f64) -> Result<VariantSplit<'_>, EvalError> {
    let mut start = 0.0;
    for (index, variant) in variants.iter().enumerate() {
        let limit = *variant.weight.as_ref().map_err(Clone::clone)? + start;
        if start <= bucket && bucket < limit {
            let chosen = Some(ChosenVariant {
                variant,
                index,
                start,
                limit,
            });
            return Ok(VariantSplit { bucket, chosen });
        }
        start = limit;
    }
    Ok(VariantSplit {
        bucket,
        chosen: None,
    })
}

/// A flag in its split: the control value, or the chosen variant's value and reason.
fn apply_split<'a>(flag: &mut FlagResult<'a>, split: &VariantSplit<'a>) {
    flag.variant = VariantChoice::Control;
    if let Some(chosen) = &split.chosen {
        let v = chosen.variant;
        if let Ok(value) = &v.value {
            flag.reason = Reason::Split(&v.reason);
            flag.value = value;
            flag.variant = VariantChoice::Key(&v.key);
            flag.variant_index = Some(chosen.index);
        }
    }
}

/// Up to [`LANES`] flags (index in the output, deciding feature context) whose split is not
/// hashed yet.
#[derive(Default)]
struct PendingSplits {
    items: [(usize, usize); LANES],
    len: usize,
}

impl PendingSplits {
    /// Adds one; true when the batch is full.
    fn push(&mut self, index: usize, ctx: usize) -> bool {
        self.items[self.len] = (index, ctx);
        self.len += 1;
        self.len == LANES
    }
}
