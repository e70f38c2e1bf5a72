//! The reference's `$.flags` mapping: a flag is resolved the first time a condition reads it,
//! segment verdicts are memoised, and a dependency cycle is cut (its flags read as missing, the
//! segments that hit it do not match, and its flags end with a CIRCULAR_DEPENDENCY reason).

use crate::error::{EvalError, PyErrorKind};
use crate::model::Environment;
use crate::result::{FlagResult, Reason};

use super::evaluation::{Dependencies, Evaluation};

/// The outcome of `flags[name]`.
pub(super) enum FlagLookup<'a> {
    /// The lookup raised `KeyError`: no node.
    NoNode,
    /// A node: the resolved flag, or null.
    Node(Option<FlagResult<'a>>),
}

impl<'a> Evaluation<'a> {
    /// A read of `$.flags.<name>` on the fast path: the flag, or `None` when it reads as missing.
    pub(super) fn read_flag(&mut self, name: &str) -> Result<Option<FlagResult<'a>>, EvalError> {
        Ok(match self.lookup_flag(name)? {
            FlagLookup::NoNode | FlagLookup::Node(None) => None,
            FlagLookup::Node(Some(flag)) => Some(flag),
        })
    }

    /// `flags[name]` on the reference's lazy mapping: resolves the flag on first use (its
    /// `__missing__`). A `KeyError` while resolving is swallowed by the JSONPath name selector
    /// (no node); a name that resolves to nothing gives a node whose value is null.
    pub(super) fn lookup_flag(&mut self, name: &str) -> Result<FlagLookup<'a>, EvalError> {
        let env = self.env;
        let deps = self
            .deps
            .as_mut()
            .expect("flag reads are compiled with dependency state");
        if let Some((_, flag)) = deps.resolved.iter().find(|(k, _)| *k == name) {
            return Ok(FlagLookup::Node(Some(flag.clone())));
        }
        deps.used = true;
        if let Some(e) = self.override_name_error() {
            return if e.kind == PyErrorKind::KeyError {
                Ok(FlagLookup::NoNode)
            } else {
                Err(e.clone())
            };
        }
        // Only features (in scope) can resolve; their names live as long as the environment.
        let Some((name, _)) = env
            .feature_by_key
            .get_key_value(name)
            .filter(|(name, _)| self.scope.has_feature(name))
        else {
            return Ok(FlagLookup::Node(None));
        };
        match self.resolve_feature(name) {
            Ok(()) => {}
            Err(e) if e.kind == PyErrorKind::KeyError => return Ok(FlagLookup::NoNode),
            Err(e) => return Err(e),
        }
        let deps = self.deps.as_ref().expect("dependency state");
        Ok(FlagLookup::Node(
            deps.resolved
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, f)| f.clone()),
        ))
    }

    pub(super) fn deps(&mut self) -> &mut Dependencies<'a> {
        self.deps.as_mut().expect("dependency state")
    }

    pub(super) fn resolve_feature(&mut self, name: &'a str) -> Result<(), EvalError> {
        if let Some(e) = self.override_name_error() {
            return Err(e.clone());
        }
        let deps = self.deps();
        if let Some(start) = deps.resolving.iter().position(|n| *n == name) {
            let cycle: Vec<&'a str> = deps.resolving[start..].to_vec();
            for n in cycle {
                if !deps.cyclic.contains(&n) {
                    deps.cyclic.push(n);
                }
            }
            deps.cycle_hits += 1;
            return Ok(());
        }
        let Some(&feature) = self.env.feature_by_key.get(name) else {
            return Ok(());
        };
        self.deps().resolving.push(name);
        let winner = self.segment_override(name);
        self.deps().resolving.pop();
        let winner = winner?;
        if self.deps().cyclic.contains(&name) {
            return Ok(());
        }
        let result = match winner {
            Some((o, s)) => self.flag_result(
                name,
                o,
                Reason::TargetingMatch(&self.env.segments[s].reason),
                Some(s),
            )?,
            None => self.flag_result(name, feature, fallback_reason(self.env, name), None)?,
        };
        self.deps().resolved.push((name, result));
        Ok(())
    }

    pub(super) fn segment_override(
        &mut self,
        name: &str,
    ) -> Result<Option<(usize, usize)>, EvalError> {
        let env = self.env;
        let Some(&id) = env.name_ids.get(name) else {
            return Ok(None);
        };
        let mut winner: Option<(usize, usize)> = None;
        for &s in &env.segments_by_name[id as usize] {
            if !self.matches_segment(s)? {
                continue;
            }
            let segment = &env.segments[s];
            for &o in &segment.overrides {
                let ctx = &env.feature_ctxs[o];
                if ctx.name.as_deref().ok() != Some(name) {
                    continue;
                }
                let wins = match winner {
                    None => true,
                    Some((incumbent, _)) => {
                        ctx.priority.py_lt(&env.feature_ctxs[incumbent].priority)?
                    }
                };
                if wins {
                    segment.name.as_ref().map_err(Clone::clone)?;
                    winner = Some((o, s));
                }
            }
        }
        Ok(winner)
    }

    pub(super) fn matches_segment(&mut self, index: usize) -> Result<bool, EvalError> {
        if let Some(m) = self.deps().segment_matches[index] {
            return Ok(m);
        }
        let hits = self.cycle_hits();
        let matches = self.is_in_segment(index)?;
        if self.cycle_hits() != hits {
            return Ok(false);
        }
        self.deps().segment_matches[index] = Some(matches);
        Ok(matches)
    }
}

/// The reason of a flag no override won: DEFAULT when a segment targets its name, else STATIC.
fn fallback_reason<'a>(env: &Environment, name: &str) -> Reason<'a> {
    match env.name_ids.get(name) {
        Some(&id) if env.targeted[id as usize] => Reason::Default,
        _ => Reason::Static,
    }
}
