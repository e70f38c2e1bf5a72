//! `$.flags` dependencies (the reference's dependency resolution, new in 11.1.0): conditions
//! reading another flag's `enabled`/`value`/`variant`/`reason`, resolution through that flag's own
//! overrides, missing flags, cycles (`ERROR; code=CIRCULAR_DEPENDENCY`, segments that cut a cycle
//! not reported), wildcard/descendant/bracket-rooted queries and caller-supplied `flags` ignored.
//!
//! Every expectation was produced by running the reference (`flagsmith-flag-engine` 11.1.1) on
//! the same context.

mod common;

use common::run_cases;
use serde_json::json;

/// `$.flags` conditions, dependency resolution and cycles.
#[test]
fn flag_dependencies() {
    run_cases(&[
        (
            "enabled_of_another_flag",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": true, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.enabled", "operator": "EQUAL", "value": "true"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"g":{"enabled":true,"name":"g","reason":"STATIC","value":"default","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "enabled_of_another_flag_false",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.enabled", "operator": "EQUAL", "value": "true"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null},"g":{"enabled":false,"name":"g","reason":"STATIC","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "value_sees_the_overridden_value",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "plain"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.value", "operator": "EQUAL", "value": "boosted"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "g", "name": "g", "enabled": true, "value": "boosted"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"g":{"enabled":true,"name":"g","reason":"TARGETING_MATCH; segment=b","value":"boosted","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "bracket_name_with_space",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "my feature": {"key": "my feature", "name": "my feature", "enabled": false, "value": "x"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags['my feature'].value", "operator": "EQUAL", "value": "x"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"my feature":{"enabled":false,"name":"my feature","reason":"STATIC","value":"x","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "reason_of_untargeted_flag_is_static",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.reason", "operator": "EQUAL", "value": "STATIC"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"g":{"enabled":false,"name":"g","reason":"STATIC","value":"default","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "reason_of_targeted_flag",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.reason", "operator": "EQUAL", "value": "TARGETING_MATCH; segment=b"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "g", "name": "g", "enabled": true, "value": "x"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"g":{"enabled":true,"name":"g","reason":"TARGETING_MATCH; segment=b","value":"x","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "variant_of_mv_flag",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "key": "2"},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "1", "name": "g", "enabled": false, "value": "default", "variants": [{"value": "v", "weight": 100, "priority": 1, "key": "k"}]}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.variant", "operator": "EQUAL", "value": "k"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"g":{"enabled":false,"name":"g","reason":"SPLIT; weight=100","value":"v","variant":"k"}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "missing_flag_is_not_set",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.ghost.enabled", "operator": "IS_NOT_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "missing_flag_other_operators_false",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.ghost.enabled", "operator": "NOT_EQUAL", "value": "x"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "two_flag_cycle",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.enabled", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.f.enabled", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "g", "name": "g", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"ERROR; code=CIRCULAR_DEPENDENCY","value":"default","variant":null},"g":{"enabled":false,"name":"g","reason":"ERROR; code=CIRCULAR_DEPENDENCY","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "self_cycle",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.f.enabled", "operator": "IS_NOT_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"ERROR; code=CIRCULAR_DEPENDENCY","value":"default","variant":null},"g":{"enabled":false,"name":"g","reason":"STATIC","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "three_flag_cycle_and_bystander",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"},
                    "h": {"key": "h", "name": "h", "enabled": false, "value": "default"},
                    "x": {"key": "x", "name": "x", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.enabled", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.h.enabled", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "g", "name": "g", "enabled": true, "value": "on"}]},
                    "3": {"key": "3", "name": "c", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.f.enabled", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "h", "name": "h", "enabled": true, "value": "on"}]},
                    "4": {"key": "4", "name": "d", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.f.value", "operator": "IS_NOT_SET", "value": ""}]}], "overrides": [{"key": "x", "name": "x", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"ERROR; code=CIRCULAR_DEPENDENCY","value":"default","variant":null},"g":{"enabled":false,"name":"g","reason":"ERROR; code=CIRCULAR_DEPENDENCY","value":"default","variant":null},"h":{"enabled":false,"name":"h","reason":"ERROR; code=CIRCULAR_DEPENDENCY","value":"default","variant":null},"x":{"enabled":false,"name":"x","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "chain_without_cycle",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"},
                    "h": {"key": "h", "name": "h", "enabled": true, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.enabled", "operator": "EQUAL", "value": "true"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.h.enabled", "operator": "EQUAL", "value": "true"}]}], "overrides": [{"key": "g", "name": "g", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"g":{"enabled":true,"name":"g","reason":"TARGETING_MATCH; segment=b","value":"on","variant":null},"h":{"enabled":true,"name":"h","reason":"STATIC","value":"default","variant":null}},"segments":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            "wildcard_sees_nothing",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": true, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.*.enabled", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null},"g":{"enabled":true,"name":"g","reason":"STATIC","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "bracket_rooted_is_a_trait",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": true, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$['flags']['g']['enabled']", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null},"g":{"enabled":true,"name":"g","reason":"STATIC","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "descendant_hits_features_first",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": true, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$..enabled", "operator": "EQUAL", "value": "false"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"g":{"enabled":true,"name":"g","reason":"STATIC","value":"default","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "caller_supplied_flags_are_ignored",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.enabled", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}},
                "flags": {"g": {"enabled": true, "name": "g", "reason": "x", "value": 1, "variant": null}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "dependency_without_identity",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": null,
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": true, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.enabled", "operator": "EQUAL", "value": "true"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"g":{"enabled":true,"name":"g","reason":"STATIC","value":"default","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "segment_in_cycle_is_not_reported",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ANY", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}, {"property": "$.flags.g.enabled", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "on"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.f.enabled", "operator": "IS_NOT_SET", "value": ""}]}], "overrides": [{"key": "g", "name": "g", "enabled": true, "value": "on"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"on","variant":null},"g":{"enabled":false,"name":"g","reason":"DEFAULT","value":"default","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
    ]);
}
