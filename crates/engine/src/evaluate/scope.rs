//! What one evaluation covers: the whole context, the context trimmed to one feature, or the
//! context without its segments (the environment's own flags).
//!
//! The trimmed context is what the Flagsmith SDKs evaluate when a single flag is read: the same
//! context with `features` reduced to that feature and `segments` to the segments that override
//! it (in context order). A per-feature evaluation runs the whole algorithm (`evaluate_segments`,
//! `evaluate_features`, the `$.flags` mapping) over that scope, so it costs what the feature
//! needs: one identifier-index lookup, and the segments that override the feature.
//!
//! Its flag equals the whole evaluation's for the same feature whenever no condition reads
//! `$.flags`, `$.features` or `$.segments` (those see the trimmed context) and no segment outside
//! the scope raises (the whole evaluation raises then; the trimmed one never reaches it).

use serde_json::Value;

use crate::model::{Environment, NameId};

/// What an evaluation covers.
#[derive(Clone, Copy)]
pub(crate) enum Scope<'a> {
    /// The whole context.
    All,
    /// The context trimmed to one feature.
    Feature(FeatureScope<'a>),
    /// The context without `segments`: every feature at its environment state, never targeted
    /// (`STATIC`). No segment is tested, so no condition, query or `$.flags` read runs.
    Unsegmented,
}

#[derive(Clone, Copy)]
pub(crate) struct FeatureScope<'a> {
    /// The `features` key asked for: the trimmed context's only feature.
    pub key: &'a str,
    /// Its feature context (which is also the index of its `features` entry).
    pub ctx: usize,
    /// The name id of `key`, when some feature or override has that name.
    pub name_id: Option<NameId>,
    /// The segments that override `key`, in context order: the trimmed context's segments.
    pub segments: &'a [usize],
}

impl<'a> FeatureScope<'a> {
    pub(crate) fn new(env: &'a Environment, key: &'a str, ctx: usize) -> Self {
        let name_id = env.name_ids.get(key).copied();
        let segments = name_id.map_or(&[][..], |id| &env.segments_by_name[id as usize]);
        FeatureScope {
            key,
            ctx,
            name_id,
            segments,
        }
    }

    pub(crate) fn has_segment(&self, segment: usize) -> bool {
        self.segments.binary_search(&segment).is_ok()
    }

    /// The segments in scope that the identifier index does not cover.
    pub(crate) fn unindexed(&self, env: &'a Environment) -> &'a [usize] {
        match self.name_id {
            Some(id) => &env.identifier_index.others_by_name[id as usize],
            None => &[],
        }
    }
}

impl Scope<'_> {
    /// Whether `$.flags.<key>` can resolve: every feature, or only the scope's own.
    pub(crate) fn has_feature(&self, key: &str) -> bool {
        match self {
            Scope::All | Scope::Unsegmented => true,
            Scope::Feature(scope) => scope.key == key,
        }
    }
}

/// The winning override per name id: (feature context, segment).
pub(super) enum Overrides {
    /// Indexed by name id: a whole evaluation meets most names.
    Dense(Vec<Option<(usize, usize)>>),
    /// A short list: a per-feature evaluation meets the names of a few segments' overrides (an
    /// unsegmented one, none).
    Sparse(Vec<(NameId, (usize, usize))>),
}

impl Overrides {
    pub(super) fn new(env: &Environment, scope: Scope<'_>) -> Self {
        match scope {
            Scope::All => Overrides::Dense(vec![None; env.names.len()]),
            Scope::Feature(_) | Scope::Unsegmented => Overrides::Sparse(Vec::new()),
        }
    }

    pub(super) fn get(&self, id: NameId) -> Option<(usize, usize)> {
        match self {
            Overrides::Dense(slots) => slots[id as usize],
            Overrides::Sparse(list) => list.iter().find(|(n, _)| *n == id).map(|&(_, w)| w),
        }
    }

    pub(super) fn set(&mut self, id: NameId, winner: (usize, usize)) {
        match self {
            Overrides::Dense(slots) => slots[id as usize] = Some(winner),
            Overrides::Sparse(list) => match list.iter_mut().find(|(n, _)| *n == id) {
                Some(slot) => slot.1 = winner,
                None => list.push((id, winner)),
            },
        }
    }
}

/// Segments in context order, each with whether it is already known to match. Yields
/// `(segment, known_to_match)`.
pub(super) enum SegmentOrder<'s> {
    /// Every segment of the context, each tested (no usable index).
    Every(std::ops::Range<usize>),
    /// Listed segments, each tested (a scope without a usable index).
    Listed(std::slice::Iter<'s, usize>),
    /// Unindexed segments (tested) merged with the indexed ones this identity is known to match.
    Merged {
        others: &'s [usize],
        hits: &'s [usize],
    },
}

impl Iterator for SegmentOrder<'_> {
    type Item = (usize, bool);

    fn next(&mut self) -> Option<(usize, bool)> {
        match self {
            SegmentOrder::Every(range) => range.next().map(|i| (i, false)),
            SegmentOrder::Listed(list) => list.next().map(|&i| (i, false)),
            SegmentOrder::Merged { others, hits } => match (others.first(), hits.first()) {
                (Some(&o), Some(&h)) if h < o => {
                    *hits = &hits[1..];
                    Some((h, true))
                }
                (Some(&o), _) => {
                    *others = &others[1..];
                    Some((o, false))
                }
                (None, Some(&h)) => {
                    *hits = &hits[1..];
                    Some((h, true))
                }
                (None, None) => None,
            },
        }
    }
}

/// The trimmed context's `features`: only the scope's feature.
pub(super) fn trimmed_features(features: &Value, scope: &FeatureScope<'_>) -> Value {
    match features {
        Value::Object(map) => Value::Object(
            map.get_key_value(scope.key)
                .map(|(k, v)| (k.clone(), v.clone()))
                .into_iter()
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The trimmed context's `segments`: the ones in scope (segment indices are context order).
pub(super) fn trimmed_segments(segments: &Value, scope: &FeatureScope<'_>) -> Value {
    match segments {
        Value::Object(map) => Value::Object(
            map.iter()
                .enumerate()
                .filter(|(i, _)| scope.has_segment(*i))
                .map(|(_, (k, v))| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}
