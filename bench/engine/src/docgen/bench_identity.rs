//! The benchmark identity and the two API segments it matches in every document (the third
//! match is its own identity override): kept together so that its traits and the conditions
//! written for them cannot drift apart.

use serde_json::{json, Value};

use super::{cond, rule};

/// The identifier of the benchmark identity.
pub const BENCH_IDENTIFIER: &str = "bench-user";
/// Trait `plan` of the benchmark identity (a string).
pub const BENCH_PLAN: &str = "enterprise";
/// Trait `age` of the benchmark identity (an int).
pub const BENCH_AGE: i64 = 42;
/// Trait `app_version` of the benchmark identity (a semver string).
pub const BENCH_APP_VERSION: &str = "2.4.1";
/// How many segments the benchmark identity matches in every generated document.
pub const BENCH_MATCHED_SEGMENTS: usize = 3;

/// The traits of the benchmark identity as a JSON object (key order: plan, age, app_version).
pub fn bench_traits_json() -> Value {
    json!({"plan": BENCH_PLAN, "age": BENCH_AGE, "app_version": BENCH_APP_VERSION})
}

/// Matched by the benchmark identity: an `ALL` rule whose `ANY` and `NONE` sub-rules both hold.
pub(super) fn matching_segment_a() -> Vec<Value> {
    vec![rule(
        "ALL",
        vec![
            cond("EQUAL", "plan", json!(BENCH_PLAN)),
            cond("GREATER_THAN_INCLUSIVE", "age", json!("21")),
            cond("IS_SET", "plan", Value::Null),
        ],
        vec![
            rule(
                "ANY",
                vec![
                    cond("IN", "country", json!("GB,IE")),
                    cond(
                        "GREATER_THAN_INCLUSIVE",
                        "app_version",
                        json!("2.0.0:semver"),
                    ),
                ],
                vec![],
            ),
            rule(
                "NONE",
                vec![
                    cond("CONTAINS", "plan", json!("free")),
                    cond("LESS_THAN", "age", json!("18")),
                ],
                vec![],
            ),
        ],
    )]
}

/// Matched by the benchmark identity: four top-level rules, every one true.
pub(super) fn matching_segment_b() -> Vec<Value> {
    vec![
        rule(
            "ALL",
            vec![
                cond("LESS_THAN", "app_version", json!("3.0.0:semver")),
                cond("MODULO", "age", json!("2|0")),
                cond("IS_NOT_SET", "email", Value::Null),
                cond("NOT_CONTAINS", "plan", json!("free")),
                cond("REGEX", "plan", json!("^ent")),
            ],
            vec![],
        ),
        rule(
            "ANY",
            vec![
                cond("EQUAL", "country", json!("GB")),
                cond("GREATER_THAN", "age", json!("40")),
            ],
            vec![],
        ),
        rule(
            "ALL",
            vec![cond("PERCENTAGE_SPLIT", "", json!("100"))],
            vec![],
        ),
        rule(
            "ALL",
            vec![
                cond("NOT_EQUAL", "plan", json!("free")),
                cond("LESS_THAN_INCLUSIVE", "age", json!("42")),
                cond("LESS_THAN", "age", json!("65")),
                cond("IN", "plan", json!("enterprise,business")),
                cond("IN", "age", json!("41,42,43")),
                cond("CONTAINS", "app_version", json!("2.4")),
            ],
            vec![],
        ),
    ]
}
