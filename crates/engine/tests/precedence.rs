//! Which value wins (the reference's `evaluate_segments` and `get_flag_result_from_context`):
//! override precedence (lower priority wins, ties go to the first segment in context order, a
//! missing priority is weakest, identity overrides beat segment overrides), segment rule semantics,
//! multivariate bucketing (half-open buckets, control, no variant without an identity, weight-0
//! variants, priority order), STATIC vs DEFAULT reasons and metadata only when non-empty.
//!
//! Every expectation was produced by running the reference (`flagsmith-flag-engine` 11.1.1, and
//! for the environment-document case the Python SDK's mapper) on the same input.

mod common;

use common::{run_cases, run_mv_rows, MvRow};
use flagpole_engine::{Environment, Identity, Trait, TraitValue};
use serde_json::json;

/// Lower priority wins, ties go to the first segment, missing priority is weakest; override
/// contents.
#[test]
fn override_precedence() {
    run_cases(&[
        (
            "lower_priority_wins",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": 1}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b", "priority": 0}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=b","value":"b","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "lower_priority_wins_in_either_order",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": 0}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b", "priority": 1}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "tie_first_in_context_order_wins",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": 3}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b", "priority": 3}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "tie_without_priorities_first_wins",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "missing_priority_is_weakest",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b", "priority": 1000}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=b","value":"b","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "missing_priority_loses_when_second",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": 1000}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "negative_and_float_priorities",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": -1}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b", "priority": -1.5}]},
                    "3": {"key": "3", "name": "c", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "c", "priority": -1.25}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=b","value":"b","variant":null}},"segments":[{"name":"a"},{"name":"b"},{"name":"c"}]}"#,
        ),
        (
            "huge_int_priorities_compare_exactly",
            common::parse(
                r#"{"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": 1180591620717411303425}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b", "priority": 1180591620717411303424}]}}}"#,
            ),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=b","value":"b","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "non_matching_segment_never_wins",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": 0}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b", "priority": 5}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=b","value":"b","variant":null}},"segments":[{"name":"b"}]}"#,
        ),
        (
            "two_overrides_of_one_feature_in_one_segment",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "first", "priority": 1}, {"key": "f", "name": "f", "enabled": true, "value": "second", "priority": 1}, {"key": "f", "name": "f", "enabled": true, "value": "third", "priority": 0}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"third","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "single_null_priority_is_like_missing",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": null}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "very_negative_priority_beats_segments",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": 0}]},
                    "identity_overrides": {"key": "", "name": "identity_overrides", "rules": [{"type": "ALL", "conditions": [{"property": "$.identity.identifier", "operator": "IN", "value": ["user"]}]}], "overrides": [{"key": "", "name": "f", "enabled": true, "value": "mine", "priority": -1e+308}], "metadata": {"source": "identity_overrides"}}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=identity_overrides","value":"mine","variant":null}},"segments":[{"name":"a"},{"name":"identity_overrides","metadata":{"source":"identity_overrides"}}]}"#,
        ),
        (
            "override_for_unknown_feature_is_ignored",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "ghost", "name": "ghost", "enabled": true, "value": "a", "priority": 0}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"STATIC","value":"default","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "override_replaces_metadata_not_inherited",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default", "metadata": {"id": 1}},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default", "metadata": {"id": 2}}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": 0}, {"key": "g", "name": "g", "enabled": true, "value": "b", "priority": 0, "metadata": {"id": 99}}], "metadata": {"id": 1, "source": "api"}}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null},"g":{"enabled":true,"name":"g","reason":"TARGETING_MATCH; segment=a","value":"b","variant":null,"metadata":{"id":99}}},"segments":[{"name":"a","metadata":{"id":1,"source":"api"}}]}"#,
        ),
        (
            "override_value_types_pass_through",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"},
                    "h": {"key": "h", "name": "h", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": 12.5}, {"key": "g", "name": "g", "enabled": false, "value": null}, {"key": "h", "name": "h", "enabled": true, "value": {"x": [1, true]}}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":12.5,"variant":null},"g":{"enabled":false,"name":"g","reason":"TARGETING_MATCH; segment=a","value":null,"variant":null},"h":{"enabled":true,"name":"h","reason":"TARGETING_MATCH; segment=a","value":{"x":[1,true]},"variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "result_keyed_by_name_when_overridden",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"alias": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "segments_listed_in_context_order_with_metadata",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "9": {"key": "9", "name": "z", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [], "metadata": {"id": 9}},
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}], "overrides": []},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [], "metadata": {}},
                    "3": {"key": "3", "name": "c", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": []}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"STATIC","value":"default","variant":null}},"segments":[{"name":"z","metadata":{"id":9}},{"name":"b"},{"name":"c"}]}"#,
        ),
        (
            "no_identity_segments_on_environment_values",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": null,
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.environment.name", "operator": "EQUAL", "value": "Env"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "empty_identity_object_is_no_identity",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.identity.key", "operator": "IS_NOT_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
    ]);
}

/// STATIC vs DEFAULT, metadata only when non-empty.
#[test]
fn static_default_and_metadata() {
    run_cases(&[
        (
            "static_vs_default",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"},
                    "h": {"key": "h", "name": "h", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "h", "name": "h", "enabled": true, "value": "b"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null},"g":{"enabled":false,"name":"g","reason":"STATIC","value":"default","variant":null},"h":{"enabled":true,"name":"h","reason":"TARGETING_MATCH; segment=b","value":"b","variant":null}},"segments":[{"name":"b"}]}"#,
        ),
        (
            "default_when_targeted_only_by_identity_overrides",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"}},
                "segments": {"identity_overrides": {"key": "", "name": "identity_overrides", "rules": [{"type": "ALL", "conditions": [{"property": "$.identity.identifier", "operator": "IN", "value": ["other"]}]}], "overrides": [{"key": "", "name": "f", "enabled": true, "value": "x"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null},"g":{"enabled":false,"name":"g","reason":"STATIC","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "metadata_only_when_non_empty",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default", "metadata": {"id": 1}},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default", "metadata": {}},
                    "h": {"key": "h", "name": "h", "enabled": false, "value": "default", "metadata": {"nested": {"a": [1]}}}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [], "metadata": {}},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [], "metadata": {"source": "api"}}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"STATIC","value":"default","variant":null,"metadata":{"id":1}},"g":{"enabled":false,"name":"g","reason":"STATIC","value":"default","variant":null},"h":{"enabled":false,"name":"h","reason":"STATIC","value":"default","variant":null,"metadata":{"nested":{"a":[1]}}}},"segments":[{"name":"a"},{"name":"b","metadata":{"source":"api"}}]}"#,
        ),
    ]);
}

/// Rule types, sub-rules with the rule's own type, empty rule lists.
#[test]
fn segment_rule_semantics() {
    run_cases(&[
        (
            "any_with_true_condition_and_false_subrule",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ANY", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}], "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "none_with_false_condition_and_true_subrule",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "NONE", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}], "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "none_with_false_condition_and_false_subrule",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "NONE", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}], "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "empty_rules_never_match",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "rule_without_conditions_or_subrules_matches",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "NONE", "conditions": [], "rules": []}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "rule_with_missing_lists_matches",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ANY"}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "every_top_level_rule_must_match",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}, {"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "nested_rules_use_their_own_type",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "rules": [{"type": "ANY", "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}, {"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}]}, {"type": "NONE", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
    ]);
}

/// Half-open buckets, control, no identity, weight 0, priority order, variant keys.
#[rustfmt::skip]
const MULTIVARIATE_BUCKETS: &[MvRow] = &[
    ("mv", Some("id3679"), r#"[{"value": "a", "weight": 50, "priority": 1, "key": "a"}, {"value": "b", "weight": 50, "priority": 2, "key": "b"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=50","value":"b","variant":"b"}},"segments":[]}"#),
    ("mv", Some("id3679"), r#"[{"value": "a", "weight": 50.000000001, "priority": 1, "key": "a"}, {"value": "b", "weight": 50, "priority": 2, "key": "b"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=50.000000001","value":"a","variant":"a"}},"segments":[]}"#),
    ("mv", Some("id4583"), r#"[{"value": "z", "weight": 0, "priority": 1, "key": "z"}, {"value": "a", "weight": 10, "priority": 2, "key": "a"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=10","value":"a","variant":"a"}},"segments":[]}"#),
    ("mv", Some("id4583"), r#"[{"value": "z", "weight": 0, "priority": 1, "key": "z"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"STATIC","value":"control","variant":"control"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": "a", "weight": 10, "priority": 1, "key": "a"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"STATIC","value":"control","variant":"control"}},"segments":[]}"#),
    ("1", None, r#"[{"value": "a", "weight": 100, "priority": 1, "key": "a"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"STATIC","value":"control","variant":null}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": "b", "weight": 30, "priority": 2, "key": "b"}, {"value": "a", "weight": 30, "priority": 1, "key": "a"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=30","value":"a","variant":"a"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": "x", "weight": 30, "priority": 1, "key": "x"}, {"value": "y", "weight": 30, "priority": 1, "key": "y"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=30","value":"x","variant":"x"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": "nokey", "weight": 30, "priority": 1}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=30","value":"nokey","variant":null}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value":"big","weight":30,"priority":340282366920938463463374607431768211455,"key":"big"},{"value":"small","weight":30,"priority":1,"key":"small"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=30","value":"small","variant":"small"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": "f", "weight": 30, "priority": 1.5, "key": "f"}, {"value": "i", "weight": 30, "priority": 1, "key": "i"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=30","value":"i","variant":"i"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": 7, "weight": 20, "priority": 1, "key": "int"}, {"value": null, "weight": 20, "priority": 2, "key": "null"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=20","value":null,"variant":"null"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": {"o": 1}, "weight": 30, "priority": 1, "key": "obj"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=30","value":{"o":1},"variant":"obj"}},"segments":[]}"#),
    ("1", Some("2"), r#"[]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"STATIC","value":"control","variant":null}},"segments":[]}"#),
    ("", Some("2"), r#"[{"value": "a", "weight": 50, "priority": 1, "key": "a"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=50","value":"a","variant":"a"}},"segments":[]}"#),
    ("78986", Some("32103813"), r#"[{"value": "a", "weight": 49.27985597119424, "priority": 1, "key": "a"}, {"value": "b", "weight": 50, "priority": 2, "key": "b"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=50","value":"b","variant":"b"}},"segments":[]}"#),
    ("78986", Some("32103813"), r#"[{"value": "a", "weight": 49.279855971194245, "priority": 1, "key": "a"}, {"value": "b", "weight": 50, "priority": 2, "key": "b"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=49.279855971194245","value":"a","variant":"a"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": "a", "weight": -10, "priority": 1, "key": "a"}, {"value": "b", "weight": 40, "priority": 2, "key": "b"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=40","value":"b","variant":"b"}},"segments":[]}"#),
];

#[test]
fn multivariate_buckets() {
    run_mv_rows(MULTIVARIATE_BUCKETS);
}

/// A SPLIT on a segment override replaces TARGETING_MATCH.
#[test]
fn multivariate_on_overrides() {
    run_cases(&[
        (
            "split_on_segment_override_replaces_targeting_reason",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "key": "2"},
                "features": {"mv": {"key": "1", "name": "mv", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "1", "name": "mv", "enabled": true, "value": "seg-control", "priority": 0, "variants": [{"value": "v", "weight": 100, "priority": 1, "key": "k"}]}]}}}),
            r#"{"flags":{"mv":{"enabled":false,"name":"mv","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "segment_override_without_split_keeps_targeting_reason",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "key": "2", "traits": {"t": 1}},
                "features": {"mv": {"key": "1", "name": "mv", "enabled": false, "value": "default", "variants": [{"value": "v", "weight": 100, "priority": 1, "key": "k"}]}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "1", "name": "mv", "enabled": true, "value": "seg-value", "priority": 0}]}}}),
            r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"TARGETING_MATCH; segment=a","value":"seg-value","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "override_key_is_hashed_not_feature_key",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "key": "32103813", "traits": {"t": 1}},
                "features": {"mv": {"key": "1", "name": "mv", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "78986", "name": "mv", "enabled": true, "value": "c", "priority": 0, "variants": [{"value": "v", "weight": 49.3, "priority": 1, "key": "k"}]}]}}}),
            r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=49.3","value":"v","variant":"k"}},"segments":[{"name":"a"}]}"#,
        ),
    ]);
}

fn fs(id: u32, name: &str, value: &str, enabled: bool, priority: Option<i32>) -> serde_json::Value {
    json!({
        "feature": {"id": id, "name": name, "type": "STANDARD"},
        "enabled": enabled, "feature_state_value": value,
        "django_id": null, "featurestate_uuid": format!("00000000-0000-4000-8000-{id:012}"),
        "feature_segment": priority.map(|p| json!({"priority": p})),
        "multivariate_feature_state_values": []
    })
}

/// Precedence through the environment-document mapping (the Python SDK's
/// `map_environment_document_to_context`): identity overrides become a virtual
/// segment with priority −∞ that beats every segment override, even one with priority 0.
#[test]
fn identity_override_beats_segment_override() {
    let mut f_seg = fs(1, "f", "segment", true, Some(0));
    f_seg["django_id"] = json!(11);
    let mut g_seg = fs(2, "g", "segment-g", true, Some(0));
    g_seg["django_id"] = json!(12);
    let doc = json!({
        "id": 1, "api_key": "env", "name": "Env",
        "project": {"id": 1, "name": "p", "hide_disabled_flags": false,
            "organisation": {"id": 1, "name": "o", "feature_analytics": false,
                             "stop_serving_flags": false, "persist_trait_data": true},
            "segments": [{"id": 5, "name": "everyone",
                "rules": [{"type": "ALL", "rules": [], "conditions": [
                    {"operator": "IS_SET", "property_": "plan", "value": null}]}],
                "feature_states": [f_seg, g_seg]}]},
        "feature_states": [fs(1, "f", "default", false, None), fs(2, "g", "default-g", false, None)],
        "identity_overrides": [{"identifier": "vip", "identity_uuid": "x", "django_id": null,
            "identity_traits": [], "identity_features": [fs(1, "f", "identity", true, None)]}]
    });
    let env = Environment::from_document(&doc).expect("document compiles");
    let traits = [Trait {
        key: "plan".into(),
        value: TraitValue::Str("pro".into()),
    }];
    let expected = [
        (
            "vip",
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=identity_overrides","value":"identity","variant":null,"metadata":{"id":1}},"g":{"enabled":true,"name":"g","reason":"TARGETING_MATCH; segment=everyone","value":"segment-g","variant":null,"metadata":{"id":2}}},"segments":[{"name":"everyone","metadata":{"id":5,"source":"api"}},{"name":"identity_overrides","metadata":{"source":"identity_overrides"}}]}"#,
        ),
        (
            "someone",
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=everyone","value":"segment","variant":null,"metadata":{"id":1}},"g":{"enabled":true,"name":"g","reason":"TARGETING_MATCH; segment=everyone","value":"segment-g","variant":null,"metadata":{"id":2}}},"segments":[{"name":"everyone","metadata":{"id":5,"source":"api"}}]}"#,
        ),
    ];
    for (identifier, expected) in expected {
        let identity = Identity::new(identifier, &traits);
        let result = env.evaluate(Some(&identity)).expect("evaluates");
        let mut out = Vec::new();
        result.write_json(&mut out).unwrap();
        let got: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(got, common::parse(expected), "identity {identifier}");
    }
}
