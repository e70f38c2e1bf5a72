//! Error behaviour (where the reference raises): every input on which the reference raises must
//! make `Environment::evaluate` return `Err` (never panic, never a result): invalid regexes (Python
//! `re` rejects more than most engines), MODULO by zero and on huge ints, PERCENTAGE_SPLIT and IN
//! with a null value, missing `property`/`type`/`priority`/`key`/`name`/`enabled`, unknown rule
//! types, a features key that differs from the name, a null priority compared with a number, trait
//! strings of more than 4300 digits. The reference raises lazily, so the neighbouring cases where
//! evaluation never reaches the bad spot must *not* fail. Finally, inputs of the wrong JSON shape
//! are rejected by `Environment::from_context` with the JSON path of the bad field.
//!
//! Every evaluation expectation was produced by running the reference
//! (`flagsmith-flag-engine` 11.1.1) on the same context.

mod common;

use common::{run_cases, run_rows, Exp::*, Row};
use flagpole_engine::Environment;
use serde_json::json;

/// Conditions on which the reference raises (and their non-raising neighbours).
#[rustfmt::skip]
const RAISING_CONDITIONS: &[Row] = &[
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""(""#, E), // Python: error: missing ), unterminated subpattern at position 0
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""[""#, E), // Python: error: unterminated character set at position 0
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""*""#, E), // Python: error: nothing to repeat at position 0
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""a{2,1}""#, E), // Python: error: min repeat greater than max repeat at position 2
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""(?<=a+)b""#, E), // Python: error: look-behind requires fixed-width pattern
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""\\p{L}""#, E), // Python: error: bad escape \p at position 0
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""(?P<x""#, E), // Python: error: missing >, unterminated name at position 4
    (r#"{"t":7}"#, "t", "REGEX", r#""(""#, E), // Python: error: missing ), unterminated subpattern at position 0
    (r#"{}"#, "t", "REGEX", r#""(""#, N),
    (r#"{"t":4}"#, "t", "MODULO", r#""0|0""#, E), // Python: ZeroDivisionError: float modulo
    (r#"{"t":4}"#, "t", "MODULO", r#""0.0|1""#, E), // Python: ZeroDivisionError: float modulo
    (r#"{"t":1.5}"#, "t", "MODULO", r#""0|0""#, E), // Python: ZeroDivisionError: float modulo
    (r#"{"t":true}"#, "t", "MODULO", r#""0|1""#, E), // Python: ZeroDivisionError: float modulo
    (r#"{"t":"4"}"#, "t", "MODULO", r#""-0|0""#, E), // Python: ZeroDivisionError: float modulo
    (r#"{}"#, "t", "MODULO", r#""0|0""#, N),
    (r#"{"t":"abc"}"#, "t", "MODULO", r#""0|0""#, N),
    (r#"{"t":10000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000}"#, "t", "MODULO", r#""2|0""#, E), // Python: OverflowError: int too large to convert to float
    (r#"{"t":"10000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"}"#, "t", "MODULO", r#""2|0""#, E), // Python: OverflowError: int too large to convert to float
    (r#"{"t":"abc"}"#, "t", "PERCENTAGE_SPLIT", r#"null"#, E), // Python: TypeError: float() argument must be a string or a real number, not 'NoneType'
    (r#"{}"#, "t", "PERCENTAGE_SPLIT", r#"null"#, N),
    (r#"{}"#, "", "PERCENTAGE_SPLIT", r#"null"#, E), // Python: TypeError: float() argument must be a string or a real number, not 'NoneType'
    (r#"{"t":"abc"}"#, "t", "IN", r#"null"#, E), // Python: AttributeError: 'NoneType' object has no attribute 'startswith'
    (r#"{}"#, "t", "IN", r#"null"#, E), // Python: AttributeError: 'NoneType' object has no attribute 'startswith'
    (r#"{"t":"5"}"#, "t", "IN", r#"5"#, E), // Python: AttributeError: 'int' object has no attribute 'startswith'
    (r#"{"t":"11111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111"}"#, "t", "EQUAL", r#""1""#, E), // Python: ValueError: Exceeds the limit (4300 digits) for integer string conversion: value
    (r#"{"t":"1111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111"}"#, "t", "EQUAL", r#""1""#, N),
    (r#"{"t":"-11111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111"}"#, "t", "IS_SET", r#""""#, E), // Python: ValueError: Exceeds the limit (4300 digits) for integer string conversion: value
];

#[test]
fn raising_conditions() {
    run_rows(RAISING_CONDITIONS, true);
}

/// Context shapes on which the reference raises, and the lazy neighbours on which it does not.
#[test]
fn raising_contexts() {
    run_cases(&[
        (
            "condition_without_property",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"operator": "EQUAL", "value": "x"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            "ERR", // Python: KeyError: 'property'
        ),
        (
            "condition_without_property_not_reached",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}, {"type": "ALL", "conditions": [{"operator": "EQUAL", "value": "x"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "unknown_rule_type",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "SOME", "conditions": []}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "unknown_rule_type_with_conditions",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "SOME", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            "ERR", // Python: KeyError: 'SOME'
        ),
        (
            "unknown_rule_type_with_subrules",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "SOME", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            "ERR", // Python: KeyError: 'SOME'
        ),
        (
            "rule_without_type_with_conditions",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            "ERR", // Python: KeyError: 'type'
        ),
        (
            "rule_without_type",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"conditions": []}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "unknown_rule_type_not_reached",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}, {"type": "SOME", "conditions": []}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "variant_without_priority",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"mv": {"key": "1", "name": "mv", "enabled": false, "value": "default", "variants": [{"value": "v", "weight": 50}]}},
                "segments": {}}),
            "ERR", // Python: KeyError: 'priority'
        ),
        (
            "variant_without_priority_no_identity",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": null,
                "features": {"mv": {"key": "1", "name": "mv", "enabled": false, "value": "default", "variants": [{"value": "v", "weight": 50}]}},
                "segments": {}}),
            r#"{"flags":{"mv":{"enabled":false,"name":"mv","reason":"STATIC","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "feature_key_differs_from_name",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"alias": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {}}),
            "ERR", // Python: KeyError: 'f'
        ),
        (
            "feature_key_differs_from_name_with_unmatched_override",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"alias": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            "ERR", // Python: KeyError: 'f'
        ),
        (
            "null_priority_then_number",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": null}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b", "priority": 7}]}}}),
            "ERR", // Python: TypeError: '<' not supported between instances of 'int' and 'NoneType'
        ),
        (
            "number_then_null_priority",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a", "priority": 7}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "b", "priority": null}]}}}),
            "ERR", // Python: TypeError: '<' not supported between instances of 'NoneType' and 'int'
        ),
        (
            "invalid_regex_in_unreached_rule",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}]}, {"type": "ALL", "conditions": [{"property": "t", "operator": "REGEX", "value": "("}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"DEFAULT","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "invalid_regex_in_subrule_after_failed_conditions",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "nope", "operator": "IS_SET", "value": ""}], "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "REGEX", "value": "("}]}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            "ERR", // Python: error: missing ), unterminated subpattern at position 0
        ),
        (
            "invalid_regex_after_true_any_condition",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ANY", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}, {"property": "t", "operator": "REGEX", "value": "("}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            r#"{"flags":{"f":{"enabled":true,"name":"f","reason":"TARGETING_MATCH; segment=a","value":"a","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "invalid_regex_in_segment_without_overrides",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "REGEX", "value": "("}]}], "overrides": []}}}),
            "ERR", // Python: error: missing ), unterminated subpattern at position 0
        ),
        (
            "invalid_regex_without_identity",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": null,
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.environment.name", "operator": "REGEX", "value": "("}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            "ERR", // Python: error: missing ), unterminated subpattern at position 0
        ),
        (
            "modulo_by_zero_in_flag_dependency",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {
                    "f": {"key": "f", "name": "f", "enabled": false, "value": "default"},
                    "g": {"key": "g", "name": "g", "enabled": false, "value": "default"}},
                "segments": {
                    "1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "$.flags.g.enabled", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]},
                    "2": {"key": "2", "name": "b", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "MODULO", "value": "0|0"}]}], "overrides": [{"key": "g", "name": "g", "enabled": true, "value": "b"}]}}}),
            "ERR", // Python: ZeroDivisionError: float modulo
        ),
        (
            "missing_environment_key_with_identity",
            json!({"environment": {"name": "Env"},
                "identity": {"identifier": "u"},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {}}),
            "ERR", // Python: KeyError: 'key'
        ),
        (
            "missing_environment_key_without_identity",
            json!({"environment": {"name": "Env"},
                "identity": null,
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"STATIC","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "missing_environment_key_explicit_identity_key",
            json!({"environment": {"name": "Env"},
                "identity": {"identifier": "u", "key": "k"},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"STATIC","value":"default","variant":null}},"segments":[]}"#,
        ),
        (
            "mv_feature_without_key",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"mv": {"name": "mv", "enabled": true, "value": "c", "variants": [{"value": "v", "weight": 50, "priority": 1}]}},
                "segments": {}}),
            "ERR", // Python: KeyError: 'key'
        ),
        (
            "segment_without_key_percentage_split",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "PERCENTAGE_SPLIT", "value": "100"}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            "ERR", // Python: KeyError: 'key'
        ),
        (
            "matched_segment_without_name",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}], "overrides": [{"key": "f", "name": "f", "enabled": true, "value": "a"}]}}}),
            "ERR", // Python: KeyError: 'name'
        ),
        (
            "matched_segment_without_overrides",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "default"}},
                "segments": {"1": {"key": "1", "name": "a", "rules": [{"type": "ALL", "conditions": [{"property": "t", "operator": "IS_SET", "value": ""}]}]}}}),
            r#"{"flags":{"f":{"enabled":false,"name":"f","reason":"STATIC","value":"default","variant":null}},"segments":[{"name":"a"}]}"#,
        ),
        (
            "feature_without_enabled",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}},
                "features": {"f": {"key": "f", "name": "f", "value": "x"}},
                "segments": {}}),
            "ERR", // Python: KeyError: 'enabled'
        ),
        (
            "missing_features_and_segments",
            json!({"environment": {"key": "env", "name": "Env"},
                "identity": {"identifier": "user", "traits": {"t": 1}}}),
            r#"{"flags":{},"segments":[]}"#,
        ),
    ]);
}

/// A wrong JSON type where the schema requires an object, array or string is an input error
/// naming the JSON path (the reference would raise too; this engine says where).
#[test]
fn wrong_shapes_are_input_errors_naming_the_path() {
    let base = || {
        json!({
            "environment": {"key": "env", "name": "Env"},
            "features": {"f": {"key": "f", "name": "f", "enabled": false, "value": "x"}},
            "segments": {"1": {"key": "1", "name": "a",
                "rules": [{"type": "ALL", "conditions": [
                    {"property": "t", "operator": "EQUAL", "value": "x"}]}],
                "overrides": []}}
        })
    };
    let mut cases = Vec::new();
    let mut c = base();
    c["segments"] = json!([]);
    cases.push((c, "$.segments"));
    let mut c = base();
    c["features"] = json!("nope");
    cases.push((c, "$.features"));
    let mut c = base();
    c["segments"]["1"]["rules"] = json!({});
    cases.push((c, "rules"));
    let mut c = base();
    c["segments"]["1"]["rules"][0]["conditions"] = json!("x");
    cases.push((c, "conditions"));
    let mut c = base();
    c["segments"]["1"]["overrides"] = json!("x");
    cases.push((c, "overrides"));
    let mut c = base();
    c["environment"] = json!([]);
    cases.push((c, "$.environment"));
    cases.push((json!([]), "$"));
    for (ctx, path) in cases {
        match Environment::from_context(&ctx) {
            Err(e) => assert!(e.path.contains(path), "{e} should name {path}"),
            Ok(_) => panic!("accepted a wrong shape (expected an error at {path}): {ctx}"),
        }
    }
}
