//! An identity's result told as what can differ from the environment's own flags.
//!
//! Most features of an environment answer every identity with their environment state: only a
//! feature that a matching segment overrides (identity overrides are segments too) or whose own
//! context is multivariate (split per identity) can differ. [`evaluate_varied`] runs the
//! segment step as the whole evaluation does, then evaluates only those features; every other
//! flag is the one at the same position of [`Environment::own_flags`] (its reason `DEFAULT` when
//! some segment overrides the feature, else `STATIC`). A caller holding the own flags' bytes
//! (the proxy: `/flags`) copies them for the rest, so an identity costs its segments and its
//! few varied flags rather than one `FlagResult` per feature.
//!
//! This is exact only where the feature step cannot raise and reads nothing but the winning
//! overrides, which compile time checks once ([`varied_plan`]): no `$.flags` reads (a resolved
//! flag may replace any other), no override without a name, distinct feature names each stored
//! under their own name, and every feature context (own or override) well formed, splits
//! included. Elsewhere `varied_plan` gives `None` and callers evaluate the whole result.

use crate::error::EvalError;
use crate::identity::Identity;
use crate::model::{Environment, FeatureCtx, VariedPlan};
use crate::result::{EvaluationResult, Reason, VariedResult};

use super::{Evaluation, Scope};

/// The plan for `env`, or `None` when its results cannot be told as varied flags.
pub(crate) fn varied_plan(env: &Environment) -> Option<VariedPlan> {
    if env.reads_flags || env.override_name_error.is_some() || env.flag_slots != env.features.len()
    {
        return None;
    }
    // A context whose evaluation cannot raise, whatever the identity.
    let sound = |ctx: &FeatureCtx| {
        ctx.name.is_ok()
            && ctx.enabled.is_ok()
            && ctx.value.is_ok()
            && (ctx.variants.is_none() || ctx.split_cannot_fail())
    };
    let mut position_by_name = vec![u32::MAX; env.names.len()];
    let mut multivariate = Vec::new();
    for (position, entry) in env.features.iter().enumerate() {
        let ctx = &env.feature_ctxs[entry.ctx];
        // The feature falls back to itself (stored under its own name).
        if !matches!(entry.fallback, Ok(c) if c == entry.ctx) || !sound(ctx) {
            return None;
        }
        let id = ctx.name_id?;
        position_by_name[id as usize] = u32::try_from(position).ok()?;
        if ctx.variants.is_some() {
            multivariate.push(position);
        }
    }
    let overrides = env.segments.iter().flat_map(|s| &s.overrides);
    if !overrides.into_iter().all(|&o| sound(&env.feature_ctxs[o])) {
        return None;
    }
    multivariate.shrink_to_fit();
    Some(VariedPlan {
        multivariate,
        position_by_name,
    })
}

/// The flags of `identity` that can differ from the own flags, or `None` when the environment
/// has no plan (see the module documentation).
pub(crate) fn evaluate_varied<'a>(
    env: &'a Environment,
    identity: Option<&'a Identity<'a>>,
) -> Option<Result<VariedResult<'a>, EvalError>> {
    let plan = env.varied.as_ref()?;
    Some(evaluate_with(env, plan, identity))
}

fn evaluate_with<'a>(
    env: &'a Environment,
    plan: &VariedPlan,
    identity: Option<&'a Identity<'a>>,
) -> Result<VariedResult<'a>, EvalError> {
    let mut ev = Evaluation::with_scope(env, identity, Scope::All)?;
    let (segments, overrides) = ev.evaluate_segments()?;
    let splits = if ev.key_text.is_some() {
        plan.multivariate.as_slice()
    } else {
        &[]
    };
    let mut positions = Vec::with_capacity(splits.len() + 4 * segments.len());
    for segment in &segments {
        for &o in &env.segments[segment.index].overrides {
            let id = env.feature_ctxs[o]
                .name_id
                .expect("named override has an id");
            let position = plan.position_by_name[id as usize];
            if position != u32::MAX {
                positions.push(position as usize);
            }
        }
    }
    if positions.is_empty() {
        positions.extend_from_slice(splits);
    } else {
        positions.extend_from_slice(splits);
        positions.sort_unstable();
        positions.dedup();
    }
    let entries = positions.iter().map(|&p| &env.features[p]);
    let flags = ev.flags_of(&overrides, entries, positions.len(), true)?;
    Ok(VariedResult {
        positions,
        flags,
        segments,
    })
}

/// The whole result a varied one stands for: the own flags (reason `DEFAULT` where some segment
/// overrides the feature) with the varied flags in their positions.
pub(crate) fn merge_varied<'a>(
    env: &'a Environment,
    varied: VariedResult<'a>,
) -> Result<EvaluationResult<'a>, EvalError> {
    let mut flags = env.own_flags()?.flags;
    for (flag, entry) in flags.iter_mut().zip(&env.features) {
        if entry.targeted {
            flag.reason = Reason::Default;
        }
    }
    for (position, flag) in varied.positions.into_iter().zip(varied.flags) {
        flags[position] = flag;
    }
    Ok(EvaluationResult {
        flags,
        segments: varied.segments,
    })
}
