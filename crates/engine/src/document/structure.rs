//! What makes a JSON object an environment document: the members every document the Flagsmith
//! API serves has, and without which the SDKs' mapping (`map_environment_document_to_context`)
//! fails: `api_key` (a string), `feature_states` (an array) and `project` (an object) with its
//! `segments` (an array). Anything else may be absent (`name`, `identity_overrides`, ...).
//!
//! It is checked here, before the mapping, because the mapping alone would take
//! `{"api_key": "…"}` as an environment with no features: a value that is JSON but not a
//! document (cut to its first member, a placeholder, another API's answer) must be refused, not
//! served as "no flags". Every reading of a document (the tree, the view, so every source: the
//! upstream, a file, a fleet's store, the CLI, the Python bindings) goes through this one check,
//! and its error names the JSON path of what is missing or wrong.

use serde_json::Value;

use super::Members;
use crate::error::InputError;

/// Checks the members of a document that the mapping requires.
pub(crate) fn check(doc: &Members<'_>) -> Result<(), InputError> {
    check_members(doc.api_key, doc.feature_states, doc.project)
}

/// The same check, for a reader that took only these members of a document (`None`: absent),
/// such as one that looks a file over before it is built.
pub fn check_members(
    api_key: Option<&Value>,
    feature_states: Option<&Value>,
    project: Option<&Value>,
) -> Result<(), InputError> {
    if !matches!(api_key, Some(Value::String(_))) {
        return Err(wrong("$.api_key", api_key, "a string"));
    }
    if !matches!(feature_states, Some(Value::Array(_))) {
        return Err(wrong(
            "$.feature_states",
            feature_states,
            "an array of feature states",
        ));
    }
    let project = match project {
        Some(Value::Object(project)) => project,
        other => return Err(wrong("$.project", other, "an object")),
    };
    let segments = project.get("segments");
    if !matches!(segments, Some(Value::Array(_))) {
        return Err(wrong(
            "$.project.segments",
            segments,
            "an array of segments",
        ));
    }
    Ok(())
}

/// The error for a member that is absent (`required`) or of the wrong type (`must be`).
fn wrong(path: &str, found: Option<&Value>, expected: &str) -> InputError {
    match found {
        None => InputError::new(path, format!("is required: {expected}")),
        Some(_) => InputError::new(path, format!("must be {expected}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::document::document_to_context;

    fn error_of(doc: Value) -> (String, String) {
        let e = document_to_context(&doc).expect_err("refused");
        (e.path, e.message)
    }

    fn minimal() -> Value {
        json!({"api_key": "k", "feature_states": [], "project": {"segments": []}})
    }

    #[test]
    fn the_smallest_document_is_taken() {
        assert!(document_to_context(&minimal()).is_ok());
    }

    #[test]
    fn a_json_object_that_is_not_a_document_is_refused_naming_what_is_missing() {
        let (path, message) = error_of(json!({"api_key": "k", "hello": 1}));
        assert_eq!(path, "$.feature_states");
        assert!(message.starts_with("is required"), "{message}");
        assert_eq!(error_of(json!({"hello": 1})).0, "$.api_key");
        assert_eq!(error_of(json!([])).0, "$");
        for (member, path) in [
            ("api_key", "$.api_key"),
            ("feature_states", "$.feature_states"),
            ("project", "$.project"),
        ] {
            let mut doc = minimal();
            doc.as_object_mut().unwrap().remove(member);
            let (found, message) = error_of(doc);
            assert_eq!(found, path);
            assert!(message.starts_with("is required"), "{message}");
        }
        let mut doc = minimal();
        doc["project"].as_object_mut().unwrap().remove("segments");
        assert_eq!(error_of(doc).0, "$.project.segments");
    }

    #[test]
    fn members_of_the_wrong_type_are_refused_naming_them() {
        for (pointer, value, path) in [
            ("/api_key", json!(7), "$.api_key"),
            ("/api_key", Value::Null, "$.api_key"),
            ("/feature_states", Value::Null, "$.feature_states"),
            ("/feature_states", json!({}), "$.feature_states"),
            ("/project", Value::Null, "$.project"),
            ("/project", json!([]), "$.project"),
            ("/project/segments", Value::Null, "$.project.segments"),
            ("/project/segments", json!("x"), "$.project.segments"),
        ] {
            let mut doc = minimal();
            *doc.pointer_mut(pointer).unwrap() = value;
            let (found, message) = error_of(doc);
            assert_eq!(found, path, "{pointer}");
            assert!(message.starts_with("must be"), "{message}");
        }
    }

    #[test]
    fn optional_members_may_be_absent_or_null() {
        let mut doc = minimal();
        doc["name"] = Value::Null;
        doc["identity_overrides"] = Value::Null;
        assert!(document_to_context(&doc).is_ok());
    }
}
