//! When an evaluation releases the GIL, decided per call.
//!
//! Releasing and taking back the GIL costs about 0.1 µs when no other thread wants it, but when
//! another Python thread is waiting, a release wakes it and the GIL is handed over; taking it
//! back then means waiting for that thread's next release. On a small VM a hand-off costs
//! several µs of latency, so releasing around a short evaluation made two threads slower than
//! one (0.67–0.74× for `all_flags()` on documents evaluated in 2–4.5 µs). A call therefore
//! releases only when the engine work it runs is estimated to cost at least
//! [`RELEASE_THRESHOLD_NS`] (measured: see the constant); below that the GIL is held, which
//! makes N threads as fast as one, never slower.
//!
//! The estimate of one whole evaluation is made once, when a document is compiled
//! ([`estimate_evaluation_ns`], stored in `Compiled`), from the document's shape: a fixed part,
//! the features, and the conditions of its segments. A batch multiplies it by its length, so a
//! batch of a few identities already releases.

use std::collections::HashSet;

use serde_json::Value;

/// The least estimated engine work (ns) for which a call releases the GIL.
///
/// Measured with `bench/python.sh --sweep` (2 vCPUs, CPython 3.11; documents of the benchmark
/// generator from 5 to 400 features): with two threads calling `get_identity_flags(..)
/// .all_flags()`, releasing lost to holding up to about 8 µs of evaluation and won from about
/// 12 µs (bench/RESULTS.md, "Python bindings"). Holding costs nothing near the threshold
/// (N threads run as fast as one), releasing too early costs up to a third, so the threshold
/// sits at the upper end of the crossover.
pub(crate) const RELEASE_THRESHOLD_NS: u64 = 12_000;

/// How a call treats the GIL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gil {
    /// Released when the work is estimated to reach [`RELEASE_THRESHOLD_NS`] (every public
    /// method).
    Auto,
    /// Always released (benchmark only: `_get_identity_flags_gil(.., gil="release")`, the
    /// behaviour before the threshold).
    Release,
    /// Never released (benchmark only: `_get_identity_flags_gil(.., gil="hold")`).
    Hold,
}

impl Gil {
    /// The mode a benchmark names: `"auto"`, `"release"` or `"hold"`.
    pub fn named(name: &str) -> Option<Gil> {
        match name {
            "auto" => Some(Gil::Auto),
            "release" => Some(Gil::Release),
            "hold" => Some(Gil::Hold),
            _ => None,
        }
    }

    /// Whether a call whose engine work is estimated at `work_ns` releases the GIL.
    pub fn releases(self, work_ns: u64) -> bool {
        match self {
            Gil::Auto => work_ns >= RELEASE_THRESHOLD_NS,
            Gil::Release => true,
            Gil::Hold => false,
        }
    }
}

/// Fixed cost of one whole evaluation (ns): the identity key, the override lookup, the result.
const BASE_NS: u64 = 150;
/// Per feature: its value, reason and result entry (multivariate hashing included on average).
const PER_FEATURE_NS: u64 = 44;
/// Per condition of a segment (identity-override segments are found by one index lookup and
/// count nothing).
const PER_CONDITION_NS: u64 = 16;

/// The estimated cost (ns) of one whole evaluation of an identity on the compiled form of a
/// document, from its `feature_states` and `project` members (what the mapping makes features
/// and API segments of; identity overrides are found by one index lookup and count nothing).
/// Read from the document rather than from its compiled form, so that documents compiled
/// without a JSON tree (`DocumentView`) are estimated alike. Fitted by least squares to the
/// engine's time on 17 generated documents (5–400 features, 0–150 segments, 0–1,412
/// conditions; release build, 2.6 GHz Xeon): within 20 % of the measured median for every one
/// above 1 µs.
pub(crate) fn estimate_evaluation_ns(
    feature_states: Option<&Value>,
    project: Option<&Value>,
) -> u64 {
    // Features are keyed by name: a repeated name is one feature.
    let features = feature_states
        .and_then(Value::as_array)
        .map_or(0, |states| {
            states
                .iter()
                .filter_map(|fs| fs.pointer("/feature/name").and_then(Value::as_str))
                .collect::<HashSet<_>>()
                .len() as u64
        });
    let conditions: u64 = project
        .and_then(|p| p.get("segments"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| conditions_in(s.get("rules")))
        .sum();
    BASE_NS + PER_FEATURE_NS * features + PER_CONDITION_NS * conditions
}

/// Conditions of a list of rules, nested rules included.
fn conditions_in(rules: Option<&Value>) -> u64 {
    rules.and_then(Value::as_array).map_or(0, |rules| {
        rules
            .iter()
            .map(|r| {
                let own = r
                    .get("conditions")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                own as u64 + conditions_in(r.get("rules"))
            })
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_estimate_counts_features_and_the_conditions_of_api_segments() {
        let state = |name: &str| json!({"feature": {"name": name}});
        let states = json!([state("a"), state("b"), state("c"), state("a")]);
        let project = json!({"segments": [
            {"rules": [{"type": "ALL", "conditions": [{}, {}], "rules": [
                {"type": "ANY", "conditions": [{}, {}, {}], "rules": []}]}]},
            {"rules": [{"type": "ALL", "conditions": [{}]}]},
        ]});
        assert_eq!(
            estimate_evaluation_ns(Some(&states), Some(&project)),
            BASE_NS + 3 * PER_FEATURE_NS + 6 * PER_CONDITION_NS
        );
        assert_eq!(estimate_evaluation_ns(None, None), BASE_NS);
    }

    #[test]
    fn only_work_past_the_threshold_releases_unless_forced() {
        assert!(!Gil::Auto.releases(RELEASE_THRESHOLD_NS - 1));
        assert!(Gil::Auto.releases(RELEASE_THRESHOLD_NS));
        assert!(Gil::Release.releases(0));
        assert!(!Gil::Hold.releases(u64::MAX));
        assert_eq!(Gil::named("hold"), Some(Gil::Hold));
        assert_eq!(Gil::named("release"), Some(Gil::Release));
        assert_eq!(Gil::named("auto"), Some(Gil::Auto));
        assert_eq!(Gil::named("always"), None);
    }
}
