//! Segment matching: a segment's rules, a rule's conditions and sub-rules, in the reference's
//! order, or cheapest first where that cannot change the verdict (see `crate::order`).

use crate::error::EvalError;
use crate::model::{Quantifier, Rule, Segment};

use super::evaluation::Evaluation;

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
