//! Explanations: why an identity gets each value. For every flag, the segment or override that
//! decided it and, for a multivariate feature, the option the identity's bucket chose; for every
//! segment that did not match, the first rule and condition that failed and the value the
//! condition saw; for percentage splits, the percentage and the identity's bucket. Built on the
//! evaluator's own matching functions, so an explanation can never disagree with an evaluation.

use crate::condition::{split_bucket, Condition, Operator};
use crate::error::EvalError;
use crate::evaluate::Evaluation;
use crate::identity::Identity;
use crate::model::{Environment, Quantifier, Rule};
use crate::property::Property;
use crate::result::{EvaluationResult, VariantChoice};
use crate::value::Scalar;
use std::fmt::Write;

/// Why one segment did or did not match.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentExplanation {
    pub name: String,
    pub matched: bool,
    /// For a segment that did not match: where it failed, e.g. `rules[0].conditions[1]`.
    pub failed_at: Option<String>,
    /// The failing condition as written (`plan EQUAL "pro"`), and what it saw.
    pub condition: Option<String>,
    pub saw: Option<String>,
    /// Names of the features this segment overrides.
    pub overrides: Vec<String>,
    /// The segment's percentage splits, in rule order.
    pub splits: Vec<SplitExplanation>,
}

/// A `PERCENTAGE_SPLIT` condition: it holds the identities whose bucket (a hash of the segment
/// key and the identity key, or the property's value when one is named) is at most `percentage`.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitExplanation {
    pub percentage: f64,
    /// In [0, 100); `None` when there is nothing to hash (no identity, or the property is unset).
    pub bucket: Option<f64>,
}

/// Where an identity falls in a multivariate feature's split.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantExplanation {
    /// In [0, 100): a hash of the feature key and the identity key.
    pub bucket: f64,
    /// The option (its key, as JSON) whose range `[start, end)` holds the bucket; `None`: past
    /// every option, so the feature's own (control) value.
    pub option: Option<(String, f64, f64)>,
    /// Where the options' ranges end (the sum of their weights).
    pub options_end: f64,
}

/// Everything `--explain` shows.
#[derive(Debug)]
pub struct Explanation<'a> {
    pub result: EvaluationResult<'a>,
    pub segments: Vec<SegmentExplanation>,
    /// Per flag of `result.flags`, in the same order: the multivariate split, if one was made.
    pub variants: Vec<Option<VariantExplanation>>,
}

/// Evaluates and explains.
pub fn explain<'a>(
    env: &'a Environment,
    identity: Option<&'a Identity<'a>>,
) -> Result<Explanation<'a>, EvalError> {
    let result = env.evaluate(identity)?;
    let mut ev = Evaluation::new(env, identity)?;
    let mut segments = Vec::with_capacity(env.segments.len());
    for (index, segment) in env.segments.iter().enumerate() {
        let name = segment
            .name
            .as_ref()
            .map(crate::condition::pystr)
            .unwrap_or_default();
        let overrides = segment
            .overrides
            .iter()
            .filter_map(|&o| env.feature_ctxs[o].name.as_ref().ok().cloned())
            .collect();
        let matched = result.segments.iter().any(|s| s.index == index);
        let key = segment.key.as_deref().unwrap_or("");
        let mut splits = Vec::new();
        if let Ok(rules) = segment.rules.as_ref() {
            for rule in rules.iter() {
                collect_splits(&mut ev, rule, key, &mut splits);
            }
        }
        let mut explanation = SegmentExplanation {
            name,
            matched,
            failed_at: None,
            condition: None,
            saw: None,
            overrides,
            splits,
        };
        if !matched {
            match segment.rules.as_ref() {
                Ok(rules) if rules.is_empty() => {
                    explanation.failed_at = Some("rules (empty: never matches)".into())
                }
                Ok(rules) => {
                    for (i, rule) in rules.iter().enumerate() {
                        if !ev.matches_rule(rule, key).unwrap_or(false) {
                            let failure = find_failure(&mut ev, rule, key, format!("rules[{i}]"));
                            explanation.failed_at = Some(failure.0);
                            explanation.condition = failure.1;
                            explanation.saw = failure.2;
                            break;
                        }
                    }
                    if explanation.failed_at.is_none() {
                        explanation.failed_at =
                            Some("a $.flags dependency that could not be resolved".into());
                    }
                }
                Err(e) => explanation.failed_at = Some(e.to_string()),
            }
        }
        segments.push(explanation);
    }
    let variants = result
        .flags
        .iter()
        .map(|flag| variant_explanation(&ev, env, flag.decided_by))
        .collect();
    Ok(Explanation {
        result,
        segments,
        variants,
    })
}

/// The multivariate split of the feature context that decided a flag, as the evaluator made it.
fn variant_explanation(
    ev: &Evaluation<'_>,
    env: &Environment,
    ctx: usize,
) -> Option<VariantExplanation> {
    let ctx = &env.feature_ctxs[ctx];
    let split = ev.variant_split(ctx).ok()??;
    let options_end = match ctx.variants.as_ref()?.as_ref() {
        Ok(variants) => variants.iter().filter_map(|v| v.weight.as_ref().ok()).sum(),
        Err(_) => 0.0,
    };
    let option = split
        .chosen
        .map(|c| (c.variant.key.to_string(), c.start, c.limit));
    Some(VariantExplanation {
        bucket: split.bucket,
        option,
        options_end,
    })
}

/// Appends every percentage split of `rule` (and its sub-rules) with this identity's bucket.
fn collect_splits<'a>(
    ev: &mut Evaluation<'a>,
    rule: &'a Rule,
    key: &str,
    out: &mut Vec<SplitExplanation>,
) {
    for c in &rule.conditions {
        if let Some(percentage) = split_percentage(c) {
            out.push(SplitExplanation {
                percentage,
                bucket: split_value(ev, c).map(|v| split_bucket(&v, key)),
            });
        }
    }
    for sub in &rule.rules {
        collect_splits(ev, sub, key, out);
    }
}

/// The percentage of a `PERCENTAGE_SPLIT` condition whose value is a number.
fn split_percentage(c: &Condition) -> Option<f64> {
    match c.operator.as_ref() {
        Ok(Operator::PercentageSplit(Ok(Some(percentage)))) => Some(*percentage),
        _ => None,
    }
}

/// What a split hashes: the identity key, or the named property's value (`None`: nothing).
fn split_value<'a>(ev: &mut Evaluation<'a>, c: &'a Condition) -> Option<Scalar<'a>> {
    let value = match c.property.as_ref().ok()? {
        Property::IdentityKey => Scalar::Str(ev.identity_key_text()?.to_owned().into()),
        property => ev.context_value(c, property).ok()?,
    };
    (!value.is_null()).then_some(value)
}

type Failure = (String, Option<String>, Option<String>);

/// Finds the condition that made `rule` fail.
fn find_failure<'a>(
    ev: &mut Evaluation<'a>,
    rule: &'a Rule,
    key: &'a str,
    path: String,
) -> Failure {
    let Ok(q) = rule.quantifier.as_ref() else {
        return (format!("{path}.type (unknown rule type)"), None, None);
    };
    // The condition whose outcome decided the failure: the first false one for ALL, the first
    // true one for NONE; for ANY, all were false, so the first one is shown.
    let decisive = rule.conditions.iter().enumerate().find(|(_, c)| {
        let m = ev.matches_condition(c, key).unwrap_or(false);
        match q {
            Quantifier::All => !m,
            Quantifier::None => m,
            Quantifier::Any => true,
        }
    });
    let conditions_ok = rule.conditions.is_empty() || ev.quantified_conditions(rule, key);
    if !conditions_ok {
        if let Some((i, c)) = decisive {
            let label = match q {
                Quantifier::Any => format!("{path}.conditions (ANY: none matched; first shown)"),
                Quantifier::None => format!("{path}.conditions[{i}] (NONE: this one matched)"),
                Quantifier::All => format!("{path}.conditions[{i}]"),
            };
            return (label, Some(describe(c)), Some(seen(ev, c, key)));
        }
    }
    for (i, sub) in rule.rules.iter().enumerate() {
        let m = ev.matches_rule(sub, key).unwrap_or(false);
        let decisive = match q {
            Quantifier::All => !m,
            Quantifier::None => m,
            Quantifier::Any => true,
        };
        if decisive {
            if m {
                return (
                    format!("{path}.rules[{i}] (NONE: this rule matched)"),
                    None,
                    None,
                );
            }
            return find_failure(ev, sub, key, format!("{path}.rules[{i}]"));
        }
    }
    (path, None, None)
}

/// The condition as written: property (when there is one), operator, value.
fn describe(c: &Condition) -> String {
    let s = &c.source;
    [s.property.as_str(), s.operator.as_str(), s.value.as_str()]
        .iter()
        .filter(|part| !part.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the condition saw; for a percentage split, the bucket (what it compares), not the value
/// it hashed.
fn seen<'a>(ev: &mut Evaluation<'a>, c: &'a Condition, segment_key: &str) -> String {
    if let Some(percentage) = split_percentage(c) {
        return match split_value(ev, c) {
            Some(v) => format!(
                "bucket {} (the split holds buckets up to {})",
                number(split_bucket(&v, segment_key)),
                number(percentage)
            ),
            None => "nothing to hash (no identity, or the property is not set)".into(),
        };
    }
    match c.property.as_ref() {
        Ok(p) => match ev.context_value(c, p) {
            Ok(v) if v.is_null() => "no value (not set)".into(),
            Ok(v) => v.describe(),
            Err(e) => format!("error: {e}"),
        },
        Err(e) => format!("error: {e}"),
    }
}

impl<'a> Evaluation<'a> {
    fn quantified_conditions(&mut self, rule: &'a Rule, key: &'a str) -> bool {
        let Ok(q) = rule.quantifier.as_ref() else {
            return false;
        };
        let mut any = false;
        for c in &rule.conditions {
            let m = self.matches_condition(c, key).unwrap_or(false);
            match q {
                Quantifier::All if !m => return false,
                Quantifier::Any if m => return true,
                Quantifier::None if m => return false,
                _ => any |= m,
            }
        }
        !matches!(q, Quantifier::Any) || any
    }
}

/// Human description of how a flag was decided.
pub fn decided_by(env: &Environment, flag: &crate::result::FlagResult<'_>) -> String {
    match flag.segment {
        Some(s) => {
            let segment = &env.segments[s];
            let name = segment
                .name
                .as_ref()
                .map(crate::condition::pystr)
                .unwrap_or_default();
            let is_identity = segment
                .metadata
                .as_ref()
                .and_then(|m| m.get("source"))
                .and_then(|s| s.as_str())
                == Some("identity_overrides");
            if is_identity {
                "identity override".into()
            } else {
                format!(
                    "segment {name:?} (key {})",
                    segment.key.as_deref().unwrap_or("?")
                )
            }
        }
        None => "environment default".into(),
    }
}

/// What decided a flag, the multivariate split included: the segment or default that gave the
/// feature context, then the option the identity's bucket chose.
fn decided_with_split(
    env: &Environment,
    flag: &crate::result::FlagResult<'_>,
    split: Option<&VariantExplanation>,
) -> String {
    let Some(split) = split else {
        return decided_by(env, flag);
    };
    let bucket = number(split.bucket);
    let chosen = match &split.option {
        Some((option, start, end)) => format!(
            "multivariate option {option}: bucket {bucket}, in {} to {}",
            number(*start),
            number(*end)
        ),
        None => format!(
            "multivariate control value: bucket {bucket}, past the options (0 to {})",
            number(split.options_end)
        ),
    };
    match flag.segment {
        Some(_) => format!("{}, then {chosen}", decided_by(env, flag)),
        None => chosen,
    }
}

/// A percentage or bucket for people: at most two decimals, no trailing zeros.
fn number(x: f64) -> String {
    let text = format!("{x:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Renders an explanation as a table a person can read to answer "why does this user get this
/// value": per flag the value, the reason and what decided it (with a multivariate split's
/// option and bucket); per segment whether it matched, its percentage splits with the identity's
/// bucket and, if it did not match, the first condition that failed and what it saw. Words are
/// separated by single spaces; only the table's columns are padded. (Pure text: the CLI and the
/// Python bindings print it.)
pub fn render_table(
    env: &Environment,
    identity: Option<&Identity<'_>>,
    explanation: &Explanation<'_>,
) -> String {
    let mut s = String::new();
    match identity {
        Some(identity) => {
            let mut identifier = String::new();
            if let Some(id) = &identity.identifier {
                id.write_pystr(&mut identifier);
            }
            let _ = writeln!(s, "Identity {identifier:?}");
            if identity.traits.is_empty() {
                let _ = writeln!(s, "  traits: (none)");
            }
            for t in identity.traits {
                let mut v = String::new();
                t.value.write_pystr(&mut v);
                let _ = writeln!(s, "  trait {} = {}", t.key, v);
            }
        }
        None => {
            let _ = writeln!(
                s,
                "No identity (environment defaults; no percentage splits or variants)"
            );
        }
    }
    let _ = writeln!(s);

    let rows: Vec<[String; 4]> = explanation
        .result
        .flags
        .iter()
        .zip(&explanation.variants)
        .map(|(f, split)| {
            let variant = match f.variant {
                VariantChoice::None => String::new(),
                VariantChoice::Control => " (variant control)".into(),
                VariantChoice::Key(k) => format!(" (variant {k})"),
            };
            [
                format!(
                    "{}{}",
                    f.key,
                    if f.enabled.as_bool() == Some(true) {
                        ""
                    } else {
                        " [off]"
                    }
                ),
                format!("{}{variant}", f.value),
                f.reason.as_str().to_owned(),
                decided_with_split(env, f, split.as_ref()),
            ]
        })
        .collect();
    table(&mut s, ["FLAG", "VALUE", "REASON", "DECIDED BY"], &rows);

    let _ = writeln!(s, "\nSEGMENTS (in evaluation order)");
    if explanation.segments.is_empty() {
        let _ = writeln!(s, "  (none)");
    }
    for seg in &explanation.segments {
        let overrides = if seg.overrides.is_empty() {
            String::new()
        } else {
            format!(" (overrides {})", seg.overrides.join(", "))
        };
        let outcome = if seg.matched { "match" } else { "no match" };
        let _ = writeln!(s, "  {}: {outcome}{overrides}", seg.name);
        // A segment that did not match shows its failing condition (a split's with the bucket).
        for split in seg.splits.iter().filter(|_| seg.matched) {
            if let Some(bucket) = split.bucket {
                let _ = writeln!(
                    s,
                    "    percentage split {}%: this identity's bucket is {}",
                    number(split.percentage),
                    number(bucket)
                );
            }
        }
        if let Some(at) = &seg.failed_at {
            let _ = writeln!(s, "    failed at {at}");
        }
        if let Some(c) = &seg.condition {
            let _ = writeln!(s, "    condition {c}");
        }
        if let Some(v) = &seg.saw {
            let _ = writeln!(s, "    saw {v}");
        }
    }
    s
}

fn table(s: &mut String, header: [&str; 4], rows: &[[String; 4]]) {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count()).min(48);
        }
    }
    let line = |s: &mut String, cells: [&str; 4]| {
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i == 3 {
                let _ = write!(s, "{cell}");
            } else {
                let _ = write!(s, "{cell:<w$}  ");
            }
        }
        let _ = writeln!(s);
    };
    line(s, header);
    for row in rows {
        line(s, [&row[0], &row[1], &row[2], &row[3]]);
    }
}
