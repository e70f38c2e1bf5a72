//! Seeded generator of Flagsmith environment documents (`/api/v1/environment-document/`), for
//! benchmarks. The same size and seed always give the same bytes.
//!
//! Three sizes ([`TINY`], [`SMALL`], [`MEDIUM`]) in the shape the Core API emits (compact JSON,
//! every field the SDKs and the official Rust crate require):
//!
//! - features: one environment feature state each; every fifth one is `MULTIVARIATE` with 2–3
//!   variants (option ids, `id`s ascending in document order, integer or `.5` weights, variant
//!   keys); the others cycle through string, int, bool, null and float-as-string values;
//! - segments: nested `ALL`/`ANY`/`NONE` rules covering every operator (`EQUAL`, `NOT_EQUAL`,
//!   `GREATER_THAN(_INCLUSIVE)`, `LESS_THAN(_INCLUSIVE)`, `CONTAINS`, `NOT_CONTAINS`, `REGEX`,
//!   `PERCENTAGE_SPLIT`, `MODULO`, `IS_SET`, `IS_NOT_SET`, `IN` in CSV and JSON-array form, and
//!   `:semver` comparisons), JSONPath properties (`$.identity.identifier`), and segment overrides
//!   with `feature_segment.priority` (some multivariate);
//! - identity overrides (`identity_features`): identities draw their override set from a pool of
//!   "profiles" (skewed towards the first ones), so the SDK mapping groups them into far fewer
//!   virtual segments than identities, as it does for real projects;
//! - `project.server_key_only_feature_ids`.
//!
//! # The benchmark identity
//!
//! [`BENCH_IDENTIFIER`] (`"bench-user"`) with the traits of [`bench_traits_json`]: `{"plan":
//! "enterprise", "age": 42, "app_version": "2.4.1"}`. In every document it matches **exactly 3
//! segments**: the two API segments built by `matching_segment_a`/`_b` (placed at a third and two
//! thirds of the segment list; in `tiny` they are its only two segments) and the identity-override
//! segment of its own override profile (it is listed in `identity_overrides`). Every other API
//! segment ends with a top-level rule that is false for this identity, so the engine does real
//! condition work before rejecting it. The conditions avoid the known divergences of the official
//! Rust crate from the Python reference (unanchored regexes, numeric-looking strings, boolean
//! strings), so both engines agree on membership; multivariate buckets may still differ on an exact
//! `f32` boundary, which the benchmark reports rather than hides.

mod bench_identity;
mod rng;

pub use bench_identity::{
    bench_traits_json, BENCH_AGE, BENCH_APP_VERSION, BENCH_IDENTIFIER, BENCH_MATCHED_SEGMENTS,
    BENCH_PLAN,
};
use bench_identity::{matching_segment_a, matching_segment_b};
pub use rng::SplitMix64;

use serde_json::{json, Map, Value};

/// The seed `gen-docs` and the benchmark use unless told otherwise.
pub const DEFAULT_SEED: u64 = 0x00F1_A6B0_1E5E_ED00;

/// The shape of one generated document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocSize {
    pub name: &'static str,
    pub features: usize,
    pub segments: usize,
    pub identity_overrides: usize,
    /// Distinct identity-override sets (the virtual segments the SDK mapping creates).
    pub override_profiles: usize,
}

pub const TINY: DocSize = DocSize {
    name: "tiny",
    features: 5,
    segments: 2,
    identity_overrides: 5,
    override_profiles: 3,
};
/// About 1 MB of JSON.
pub const SMALL: DocSize = DocSize {
    name: "small",
    features: 50,
    segments: 15,
    identity_overrides: 750,
    override_profiles: 40,
};
/// About 11 MB of JSON.
pub const MEDIUM: DocSize = DocSize {
    name: "medium",
    features: 200,
    segments: 50,
    identity_overrides: 8_700,
    override_profiles: 150,
};
pub const ALL_SIZES: [DocSize; 3] = [TINY, SMALL, MEDIUM];

/// Generates the document for `size` as JSON bytes.
pub fn generate_json(size: &DocSize, seed: u64) -> Vec<u8> {
    serde_json::to_vec(&generate(size, seed)).expect("a generated document serialises")
}

/// Generates the document for `size` as a JSON tree (keys in document order).
pub fn generate(size: &DocSize, seed: u64) -> Value {
    Generator::new(size, seed).document()
}

const FEATURE_WORDS: &[&str] = &[
    "checkout",
    "search",
    "banner",
    "pricing",
    "onboarding",
    "dark_mode",
    "export",
    "billing",
    "recommendations",
    "chat",
    "reports",
    "sso",
    "audit_log",
    "webhooks",
    "beta_ui",
    "rate_limit",
];
const SEGMENT_WORDS: &[&str] = &[
    "power_users",
    "trial",
    "churn_risk",
    "early_adopters",
    "mobile",
    "internal",
    "emea",
    "vip",
    "students",
    "partners",
    "legacy_clients",
    "qa_team",
];
const STRING_VALUES: &[&str] = &[
    "blue",
    "green",
    "control",
    "Welcome back!",
    "v2",
    "compact",
    "{\"layout\": \"grid\"}",
];
const PLANS_OTHER: &[&str] = &["free", "startup", "pro", "team", "business"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    Str,
    Int,
    Bool,
    Null,
    FloatStr,
}

struct Feature {
    id: u64,
    name: String,
    multivariate: bool,
    kind: ValueKind,
}

struct Generator<'s> {
    size: &'s DocSize,
    rng: SplitMix64,
    features: Vec<Feature>,
    next_django_id: u64,
    next_mv_id: u64,
}

impl<'s> Generator<'s> {
    fn new(size: &'s DocSize, seed: u64) -> Self {
        // Each size gets its own stream, so adding a size never changes the others.
        let salt = size.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        Generator {
            size,
            rng: SplitMix64::new(seed ^ salt),
            features: Vec::new(),
            next_django_id: 100_000,
            next_mv_id: 5_000,
        }
    }

    fn document(&mut self) -> Value {
        let api_key = self.rng.alnum(22);
        let kinds = [
            ValueKind::Str,
            ValueKind::Int,
            ValueKind::Bool,
            ValueKind::Null,
            ValueKind::FloatStr,
        ];
        for i in 0..self.size.features {
            let word = self.rng.pick(FEATURE_WORDS);
            self.features.push(Feature {
                id: 1 + i as u64,
                name: format!("{word}_{i:03}"),
                multivariate: i % 5 == 0,
                kind: kinds[(i / 5 + i) % kinds.len()],
            });
        }

        let feature_states: Vec<Value> = (0..self.features.len())
            .map(|f| {
                let enabled = self.rng.chance(0.7);
                let with_mv = self.features[f].multivariate;
                self.feature_state(f, enabled, Value::Null, with_mv, true)
            })
            .collect();
        let segments = self.segments();
        let identity_overrides = self.identity_overrides(&api_key);
        let server_key_only: Vec<u64> = self
            .features
            .iter()
            .filter(|f| f.id % 7 == 3)
            .map(|f| f.id)
            .collect();

        json!({
            "id": 4242,
            "api_key": api_key,
            "name": format!("Benchmark {}", self.size.name),
            "updated_at": "2026-11-01T12:00:00.000000Z",
            "allow_client_traits": true,
            "hide_sensitive_data": false,
            "hide_disabled_flags": null,
            "use_identity_composite_key_for_hashing": true,
            "use_identity_overrides_in_local_eval": true,
            "project": {
                "id": 77,
                "name": "Benchmark Project",
                "hide_disabled_flags": false,
                "enable_realtime_updates": false,
                "server_key_only_feature_ids": server_key_only,
                "organisation": {
                    "id": 9,
                    "name": "Benchmark Org",
                    "feature_analytics": false,
                    "stop_serving_flags": false,
                    "persist_trait_data": true
                },
                "segments": segments
            },
            "feature_states": feature_states,
            "identity_overrides": identity_overrides
        })
    }

    /// A value of the feature's kind (`variant` picks among a few).
    fn value_for(&mut self, kind: ValueKind) -> Value {
        match kind {
            ValueKind::Str => json!(self.rng.pick(STRING_VALUES)),
            ValueKind::Int => json!(self.rng.range(0, 5_000)),
            ValueKind::Bool => json!(self.rng.chance(0.5)),
            ValueKind::Null => Value::Null,
            ValueKind::FloatStr => {
                json!(format!(
                    "{}.{:02}",
                    self.rng.range(0, 99),
                    self.rng.range(1, 99)
                ))
            }
        }
    }

    /// One FeatureStateModel. `value` Null with `fresh_value` draws a value of the feature's kind.
    fn feature_state(
        &mut self,
        f: usize,
        enabled: bool,
        value: Value,
        with_mv: bool,
        fresh_value: bool,
    ) -> Value {
        let kind = if self.features[f].multivariate {
            ValueKind::Str
        } else {
            self.features[f].kind
        };
        let value = if fresh_value {
            self.value_for(kind)
        } else {
            value
        };
        let mv = if with_mv {
            self.mv_values()
        } else {
            Vec::new()
        };
        self.next_django_id += 1;
        let feature = &self.features[f];
        let (id, name) = (feature.id, feature.name.clone());
        let kind_name = if feature.multivariate {
            "MULTIVARIATE"
        } else {
            "STANDARD"
        };
        json!({
            "feature": {"id": id, "name": name, "type": kind_name},
            "enabled": enabled,
            "feature_state_value": value,
            "django_id": self.next_django_id,
            "featurestate_uuid": self.rng.uuid(),
            "feature_segment": null,
            "multivariate_feature_state_values": mv
        })
    }

    fn mv_values(&mut self) -> Vec<Value> {
        const SPLITS: &[&[f64]] = &[
            &[30.0, 30.0],
            &[50.0, 25.0],
            &[25.0, 25.0, 25.0],
            &[33.5, 33.0, 33.5],
            &[10.0, 20.0, 30.0],
            &[45.5, 45.5],
        ];
        let split = self.rng.pick(SPLITS);
        split
            .iter()
            .enumerate()
            .map(|(i, &weight)| {
                self.next_mv_id += 1;
                let label = ["a", "b", "c"][i];
                let weight = if weight.fract() == 0.0 {
                    json!(weight as i64)
                } else {
                    json!(weight)
                };
                json!({
                    "id": self.next_mv_id,
                    "mv_fs_value_uuid": self.rng.uuid(),
                    "percentage_allocation": weight,
                    "multivariate_feature_option": {
                        "id": self.next_mv_id + 50_000,
                        "value": format!("variant-{label}-{}", self.next_mv_id),
                        "key": format!("variant_{label}")
                    }
                })
            })
            .collect()
    }

    fn segments(&mut self) -> Vec<Value> {
        let n = self.size.segments;
        let (match_a, match_b) = if n <= 2 { (0, 1) } else { (n / 3, 2 * n / 3) };
        // A feature both matching segments override (the lower priority number must win), and
        // one that a matching segment and the identity override of `bench-user` both override.
        let shared = 1 % self.features.len();
        (0..n)
            .map(|j| {
                let id = 100 + j as u64;
                let (name, rules, mut overridden) = if j == match_a {
                    (
                        "enterprise_power_users".to_string(),
                        matching_segment_a(),
                        vec![(shared, 7u64)],
                    )
                } else if j == match_b {
                    (
                        "modern_app_adults".to_string(),
                        matching_segment_b(),
                        vec![(shared, 2u64)],
                    )
                } else {
                    let word = self.rng.pick(SEGMENT_WORDS);
                    (format!("{word}_{j:02}"), self.other_segment_rules(), vec![])
                };
                let extra = 1 + self.rng.below(3.min(self.features.len()));
                for _ in 0..extra {
                    let f = self.rng.below(self.features.len());
                    if overridden.iter().all(|(g, _)| *g != f) {
                        let priority = self.rng.range(0, 2 * n as i64 + 4) as u64;
                        overridden.push((f, priority));
                    }
                }
                let feature_states: Vec<Value> = overridden
                    .into_iter()
                    .map(|(f, priority)| {
                        let enabled = self.rng.chance(0.8);
                        let with_mv = self.features[f].multivariate && self.rng.chance(0.5);
                        let mut fs = self.feature_state(f, enabled, Value::Null, with_mv, true);
                        fs["feature_segment"] = json!({"priority": priority});
                        fs
                    })
                    .collect();
                json!({"id": id, "name": name, "rules": rules, "feature_states": feature_states})
            })
            .collect()
    }

    /// Rules of a segment `bench-user` does not match: one or two random rules (any outcome,
    /// every operator), then a rule that is false for the benchmark identity.
    fn other_segment_rules(&mut self) -> Vec<Value> {
        let mut rules = Vec::new();
        for _ in 0..1 + self.rng.below(2) {
            rules.push(self.random_rule(2));
        }
        let mut last = vec![self.random_condition()];
        last.push(self.false_condition());
        rules.push(rule("ALL", last, vec![]));
        rules
    }

    fn random_rule(&mut self, depth: usize) -> Value {
        let kind = self.rng.pick(&["ALL", "ANY", "NONE"]);
        let conditions = (0..1 + self.rng.below(3))
            .map(|_| self.random_condition())
            .collect();
        let sub_rules = if depth > 0 && self.rng.chance(0.5) {
            (0..1 + self.rng.below(2))
                .map(|_| self.random_rule(depth - 1))
                .collect()
        } else {
            vec![]
        };
        rule(kind, conditions, sub_rules)
    }

    /// A condition with any outcome for the benchmark identity (never one that raises).
    fn random_condition(&mut self) -> Value {
        let r = &mut self.rng;
        let comparators = [
            "EQUAL",
            "NOT_EQUAL",
            "GREATER_THAN",
            "GREATER_THAN_INCLUSIVE",
            "LESS_THAN",
            "LESS_THAN_INCLUSIVE",
        ];
        match r.below(16) {
            0 => cond(
                r.pick(&["EQUAL", "NOT_EQUAL"]),
                "plan",
                json!(r.pick(PLANS_OTHER)),
            ),
            1 => cond(
                r.pick(&["CONTAINS", "NOT_CONTAINS"]),
                "plan",
                json!(r.pick(&["ent", "pro", "free", "team"])),
            ),
            2 => cond(
                "REGEX",
                "plan",
                json!(r.pick(&["^(pro|team).*", "^ent[a-z]+$", "^b"])),
            ),
            3 => {
                let mut plans: Vec<&str> = (0..2).map(|_| r.pick(PLANS_OTHER)).collect();
                if r.chance(0.5) {
                    plans.push(BENCH_PLAN);
                }
                if r.chance(0.5) {
                    cond("IN", "plan", json!(plans.join(",")))
                } else {
                    cond("IN", "plan", json!(serde_json::to_string(&plans).unwrap()))
                }
            }
            4 => cond(
                r.pick(&comparators),
                "age",
                json!(r.range(16, 70).to_string()),
            ),
            5 => cond(
                "MODULO",
                "age",
                json!(format!("{}|{}", r.range(2, 9), r.range(0, 1))),
            ),
            6 => cond(
                "IN",
                "age",
                json!(format!("{},{},{}", r.range(18, 30), 42, r.range(50, 60))),
            ),
            7 => cond(
                r.pick(&comparators),
                "app_version",
                json!(format!(
                    "{}.{}.{}:semver",
                    r.range(1, 3),
                    r.range(0, 9),
                    r.range(0, 9)
                )),
            ),
            8 => cond(
                "REGEX",
                "app_version",
                json!(r.pick(&["^2\\.", "^1\\.[0-9]+"])),
            ),
            9 => cond(
                r.pick(&["IS_SET", "IS_NOT_SET"]),
                r.pick(&["country", "plan", "email"]),
                Value::Null,
            ),
            10 => cond("PERCENTAGE_SPLIT", "", json!(format!("{}", r.range(5, 95)))),
            11 => cond("EQUAL", "country", json!(r.pick(&["GB", "US", "DE"]))),
            12 => cond("REGEX", "email", json!(".*@example\\.com$")),
            13 => cond("GREATER_THAN_INCLUSIVE", "seats", json!("50")),
            14 => cond(
                "IN",
                "$.identity.identifier",
                json!(format!(
                    "user-{:06},user-{:06}",
                    r.below(1_000_000),
                    r.below(1_000_000)
                )),
            ),
            _ => cond("CONTAINS", "app_version", json!(".4")),
        }
    }

    /// A condition that is false for the benchmark identity in both engines.
    fn false_condition(&mut self) -> Value {
        let r = &mut self.rng;
        match r.below(10) {
            0 => cond("EQUAL", "plan", json!(r.pick(PLANS_OTHER))),
            1 => cond("LESS_THAN", "age", json!(r.range(10, 40).to_string())),
            2 => cond("GREATER_THAN", "age", json!(r.range(43, 90).to_string())),
            3 => cond("LESS_THAN", "app_version", json!("2.0.0:semver")),
            4 => cond("IS_SET", "country", Value::Null),
            5 => cond("IN", "plan", json!("free,startup,team")),
            6 => cond("EQUAL", "$.identity.identifier", json!("ops-admin")),
            7 => cond("REGEX", "plan", json!("^free")),
            8 => cond("MODULO", "age", json!("5|0")),
            _ => cond("CONTAINS", "email", json!("@")),
        }
    }

    fn identity_overrides(&mut self, api_key: &str) -> Vec<Value> {
        let n_features = self.features.len();
        // Each profile: 3–5 distinct features with a fixed enabled/value.
        let profiles: Vec<Vec<(usize, bool, Value)>> = (0..self.size.override_profiles)
            .map(|_| {
                let k = (3 + self.rng.below(3)).min(n_features);
                let mut chosen: Vec<usize> = Vec::with_capacity(k);
                if self.rng.chance(0.5) {
                    chosen.push(1 % n_features); // the feature the matching segments override
                }
                while chosen.len() < k {
                    let f = self.rng.below(n_features);
                    if !chosen.contains(&f) {
                        chosen.push(f);
                    }
                }
                chosen
                    .into_iter()
                    .map(|f| {
                        let kind = if self.features[f].multivariate {
                            ValueKind::Str
                        } else {
                            self.features[f].kind
                        };
                        let enabled = self.rng.chance(0.6);
                        (f, enabled, self.value_for(kind))
                    })
                    .collect()
            })
            .collect();
        let bench_position = self.rng.below(self.size.identity_overrides);
        let mut used_ids = std::collections::HashSet::new();
        (0..self.size.identity_overrides)
            .map(|i| {
                let (identifier, profile) = if i == bench_position {
                    (BENCH_IDENTIFIER.to_string(), 0)
                } else {
                    let identifier = loop {
                        let candidate = if self.rng.chance(0.7) {
                            format!("user-{:06}", self.rng.below(1_000_000))
                        } else {
                            format!("{}@example.com", self.rng.alnum(10).to_lowercase())
                        };
                        if used_ids.insert(candidate.clone()) {
                            break candidate;
                        }
                    };
                    // Skewed: a few profiles are shared by many identities.
                    let u = self.rng.unit();
                    (identifier, ((u * u) * profiles.len() as f64) as usize)
                };
                let features: Vec<Value> = profiles[profile]
                    .clone()
                    .into_iter()
                    .map(|(f, enabled, value)| {
                        let mut fs = self.feature_state(f, enabled, value, false, false);
                        fs["django_id"] = Value::Null;
                        fs
                    })
                    .collect();
                let mut identity = Map::new();
                identity.insert("identifier".into(), json!(identifier));
                identity.insert("identity_uuid".into(), json!(self.rng.uuid()));
                identity.insert(
                    "created_date".into(),
                    json!(format!(
                        "2026-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00",
                        self.rng.range(1, 10),
                        self.rng.range(1, 28),
                        self.rng.range(0, 23),
                        self.rng.range(0, 59),
                        self.rng.range(0, 59),
                        self.rng.range(0, 999_999)
                    )),
                );
                identity.insert("updated_at".into(), Value::Null);
                identity.insert("environment_api_key".into(), json!(api_key));
                identity.insert("django_id".into(), Value::Null);
                identity.insert("identity_features".into(), Value::Array(features));
                identity.insert("identity_traits".into(), json!([]));
                Value::Object(identity)
            })
            .collect()
    }
}

fn cond(operator: &str, property: &str, value: Value) -> Value {
    json!({"operator": operator, "property_": property, "value": value})
}

fn rule(kind: &str, conditions: Vec<Value>, rules: Vec<Value>) -> Value {
    json!({"type": kind, "conditions": conditions, "rules": rules})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_sized() {
        let a = generate_json(&TINY, DEFAULT_SEED);
        let b = generate_json(&TINY, DEFAULT_SEED);
        assert_eq!(a, b);
        let c = generate_json(&TINY, DEFAULT_SEED + 1);
        assert_ne!(a, c);
        let doc = generate(&SMALL, DEFAULT_SEED);
        assert_eq!(doc["feature_states"].as_array().unwrap().len(), 50);
        assert_eq!(doc["project"]["segments"].as_array().unwrap().len(), 15);
        assert_eq!(doc["identity_overrides"].as_array().unwrap().len(), 750);
    }
}
