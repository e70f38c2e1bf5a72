//! Cheap conditions first: the order in which a rule's conditions and sub-rules, and a segment's
//! rules, may be tested without changing any answer, decided once at compile time.
//!
//! The reference tests conditions left to right and stops at the first that decides the
//! quantifier; sub-rules are tested even when the conditions already failed. The order decides
//! which error is raised, so it may only change where nothing can raise. A rule is *safe* when
//! none of its conditions (nor those of its sub-rules) can raise for a *tame* request (see
//! `evaluate/slots.rs`: no trait, identifier or key that coerces to an error or to an int too
//! large for a float, and no raw identity object): its parts are pure booleans then, so any order
//! and any short-circuit gives the same verdict. Only safe rules are reordered, and only for tame
//! requests; everything else runs in the reference's order.
//!
//! The cost of a condition is a rough count of what it does per call (a hash lookup, a compare,
//! a regex run, an MD5 of the segment key and identity key); a rule costs its parts.

use crate::condition::{Condition, ModuloSpec, Operator};
use crate::model::Rule;
pub(crate) use crate::model::RulePlan;
use crate::property::{Property, Query};

/// Plans a rule whose conditions and sub-rules are compiled (sub-rules planned already).
pub(crate) fn plan_rule(rule: &Rule) -> RulePlan {
    let costs: Vec<Option<u32>> = rule.conditions.iter().map(condition_cost).collect();
    let quantifier_ok =
        rule.quantifier.is_ok() || (rule.conditions.is_empty() && rule.rules.is_empty());
    let safe = quantifier_ok
        && costs.iter().all(Option::is_some)
        && rule.rules.iter().all(|r| r.plan.safe);
    let cost = costs.iter().map(|c| c.unwrap_or(COST_UNKNOWN)).sum::<u32>()
        + rule.rules.iter().map(|r| r.plan.cost).sum::<u32>();
    if !safe {
        return RulePlan {
            safe,
            cost,
            ..RulePlan::default()
        };
    }
    let condition_costs: Vec<u32> = costs.into_iter().flatten().collect();
    let rule_costs: Vec<u32> = rule.rules.iter().map(|r| r.plan.cost).collect();
    RulePlan {
        safe,
        cost,
        conditions: cheapest_first(&condition_costs),
        rules: cheapest_first(&rule_costs),
    }
}

/// A segment's rules cheapest first, when they may be reordered and that differs from the
/// written order. `key_ok`: the segment's key is well formed (the reference reads it before
/// every rule, so a missing one raises whichever rule comes first).
pub(crate) fn plan_segment(rules: &[Rule], key_ok: bool) -> Option<Box<[u32]>> {
    if !key_ok || !rules.iter().all(|r| r.plan.safe) {
        return None;
    }
    let costs: Vec<u32> = rules.iter().map(|r| r.plan.cost).collect();
    cheapest_first(&costs)
}

const COST_UNKNOWN: u32 = 100;

fn cheapest_first(costs: &[u32]) -> Option<Box<[u32]>> {
    let mut order: Vec<u32> = (0..costs.len() as u32).collect();
    // Stable: equal costs keep the written order.
    order.sort_by_key(|&i| costs[i as usize]);
    let written = order.iter().enumerate().all(|(i, &o)| i as u32 == o);
    (!written).then(|| order.into_boxed_slice())
}

/// The cost of a condition, or `None` when it can raise for some tame request.
fn condition_cost(c: &Condition) -> Option<u32> {
    let property = match c.property.as_ref().ok()? {
        Property::IdentityKey => 0,
        Property::Trait(_) => 1,
        Property::Path {
            query: Query::Static(Ok(_)),
            ..
        } => 1,
        Property::Path {
            query: Query::Identity(_),
            ..
        } => 2,
        // `$.flags` reads resolve flags (and may cut cycles); general queries materialise the
        // context and may raise; invalid properties raise.
        Property::Path { .. } | Property::Invalid(_) => return None,
    };
    let operator = c.operator.as_ref().ok()?;
    // A version compare parses the trait (once per request) and compares three numbers.
    let versions = if operator.compares_versions() { 2 } else { 0 };
    let operator = match operator {
        Operator::IsSet | Operator::IsNotSet | Operator::Unknown => 1,
        Operator::Compare(_, Ok(value)) if value.cannot_raise() => 2,
        Operator::In(Ok(_)) => 4,
        Operator::NotContains(Ok(_)) => 3,
        Operator::Modulo(Ok(spec)) => match spec {
            ModuloSpec::Falsy | ModuloSpec::Invalid => 1,
            ModuloSpec::Valid { divisor, .. } if *divisor != 0.0 => 3,
            _ => return None,
        },
        Operator::Regex(Ok(_)) => 20,
        Operator::PercentageSplit(Ok(_)) => 25,
        _ => return None,
    };
    Some(property + operator + versions)
}
