//! Segment matching, all of it: a segment's rules, a rule's conditions and sub-rules, in the
//! reference's order, or cheapest first where that cannot change the verdict (see
//! `crate::order`), down to one condition against the context's value. The evaluation calls in
//! here (`is_in_segment`); nothing here calls back up, except a `$.flags` read, which asks the
//! dependencies for another flag (`dependencies.rs`).

use std::borrow::Cow;

use crate::condition::Condition;
use crate::error::EvalError;
use crate::model::{Quantifier, Rule, Segment};
use crate::property::{Property, Query};
use crate::value::Scalar;

use super::evaluation::Evaluation;
use super::scope::Scope;

impl<'a> Evaluation<'a> {
    pub(crate) fn is_in_segment(&mut self, index: usize) -> Result<bool, EvalError> {
        let segment = &self.env.segments[index];
        let rules = segment.rules.as_ref().map_err(Clone::clone)?;
        if rules.is_empty() {
            return Ok(false);
        }
        // The segment's trait slots while its conditions run (a `$.flags` read may test
        // another segment on the way: restored after).
        let outer = std::mem::replace(&mut self.segment_slots, &segment.trait_slots);
        let matches = self.matches_rules(segment, rules);
        self.segment_slots = outer;
        matches
    }

    fn matches_rules(
        &mut self,
        segment: &'a Segment,
        rules: &'a [Rule],
    ) -> Result<bool, EvalError> {
        if let (true, Some(order), Ok(key)) = (self.tame, &segment.rule_order, &segment.key) {
            for &i in order.iter() {
                if !self.matches_rule(&rules[i as usize], key)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        for rule in rules.iter() {
            let key = segment.key.as_ref().map_err(Clone::clone)?;
            if !self.matches_rule(rule, key)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub(crate) fn matches_rule(
        &mut self,
        rule: &'a Rule,
        segment_key: &'a str,
    ) -> Result<bool, EvalError> {
        if self.tame && rule.plan.safe {
            return self.matches_safe_rule(rule, segment_key);
        }
        let conditions = if rule.conditions.is_empty() {
            true
        } else {
            let q = *rule.quantifier.as_ref().map_err(Clone::clone)?;
            quantify(q, &rule.conditions, |c| {
                self.matches_condition(c, segment_key)
            })?
        };
        let rules = if rule.rules.is_empty() {
            true
        } else {
            let q = *rule.quantifier.as_ref().map_err(Clone::clone)?;
            quantify(q, &rule.rules, |r| self.matches_rule(r, segment_key))?
        };
        Ok(conditions && rules)
    }

    /// [`matches_rule`](Self::matches_rule) for a rule whose parts cannot raise (see
    /// `crate::order`): cheapest first, and the sub-rules only when the conditions hold.
    fn matches_safe_rule(&mut self, rule: &'a Rule, key: &'a str) -> Result<bool, EvalError> {
        let (conditions, rules) = (&rule.conditions, &rule.rules);
        if conditions.is_empty() && rules.is_empty() {
            // Its type is never read.
            return Ok(true);
        }
        let q = *rule.quantifier.as_ref().map_err(Clone::clone)?;
        let hold = match &rule.plan.conditions {
            _ if conditions.is_empty() => true,
            Some(order) => quantify(q, order, |&i| {
                self.matches_condition(&conditions[i as usize], key)
            })?,
            None => quantify(q, conditions, |c| self.matches_condition(c, key))?,
        };
        if !hold {
            return Ok(false);
        }
        Ok(match &rule.plan.rules {
            _ if rules.is_empty() => true,
            Some(order) => quantify(q, order, |&i| self.matches_rule(&rules[i as usize], key))?,
            None => quantify(q, rules, |r| self.matches_rule(r, key))?,
        })
    }

    pub(crate) fn matches_condition(
        &mut self,
        c: &'a Condition,
        segment_key: &str,
    ) -> Result<bool, EvalError> {
        let property = c.property.as_ref().map_err(Clone::clone)?;
        let operator = c.operator.as_ref().map_err(Clone::clone)?;
        if let Property::IdentityKey = property {
            // Borrow the key rather than copying it into the value.
            let value = match &self.key_text {
                Some(text) => Scalar::Str(Cow::Borrowed(text.as_ref())),
                None => Scalar::Null,
            };
            return operator.matches(&value, segment_key);
        }
        if let (Property::Trait(name), true) = (property, operator.compares_versions()) {
            // The trait's parse as a version is kept for the other conditions reading it.
            let (value, version) = self.trait_version(c, name)?;
            return operator.matches_parsed(&value, segment_key, version);
        }
        let value = self.context_value(c, property)?;
        operator.matches(&value, segment_key)
    }

    /// `get_context_value` of condition `c`'s property, coerced (or the raw identity key for an
    /// empty split property).
    pub(crate) fn context_value(
        &mut self,
        c: &Condition,
        property: &'a Property,
    ) -> Result<Scalar<'a>, EvalError> {
        match property {
            Property::IdentityKey => Ok(match &self.key_text {
                Some(text) => Scalar::Str(Cow::Owned(text.to_string())),
                None => Scalar::Null,
            }),
            Property::Trait(name) => self.trait_scalar(c, name),
            Property::Invalid(e) => Err(e.clone()),
            Property::Path { literal, query } => {
                let literal_value = self.trait_scalar(c, literal)?;
                if !literal_value.is_null() {
                    return Ok(literal_value);
                }
                let trimmed = &self.env.trim_sensitive;
                if let (Scope::Feature(_), Query::Static(_)) = (self.scope, query) {
                    if !trimmed.is_empty() {
                        if let Some(path) = trimmed.get(literal) {
                            return self.general_query(path);
                        }
                    }
                }
                self.query(query)
            }
        }
    }
}

/// `all` / `any` / `not any` over lazily evaluated items, short-circuiting like Python.
fn quantify<'t, T>(
    q: Quantifier,
    items: &'t [T],
    mut f: impl FnMut(&'t T) -> Result<bool, EvalError>,
) -> Result<bool, EvalError> {
    for item in items {
        let m = f(item)?;
        match q {
            Quantifier::All if !m => return Ok(false),
            Quantifier::Any if m => return Ok(true),
            Quantifier::None if m => return Ok(false),
            _ => {}
        }
    }
    Ok(!matches!(q, Quantifier::Any))
}
