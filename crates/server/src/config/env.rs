//! Environment variables: one per top-level key, named like it in any case (`API_URL`,
//! `environment_key_pairs`), as both Edge Proxies read them. A value that parses as JSON is
//! that JSON (`ENVIRONMENT_KEY_PAIRS='[…]'`, `SERVER='{"port": 8001}'`, `API_POLL_FREQUENCY=5`),
//! anything else a string (`API_URL=https://…`). A variable replaces the file's key whole,
//! including the key's other spelling (`API_POLL_FREQUENCY` replaces the file's
//! `api_poll_frequency_seconds`).

use serde_json::{Map, Value};

use super::file::ALIASES;
use super::suggest::top_level_keys;

/// A variable that set a top-level key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// As spelled in the environment.
    pub name: String,
    /// The key it sets.
    pub key: String,
    /// Why its value is not JSON, if it is not (it was taken as a string).
    pub not_json: Option<String>,
}

/// Applies the variables that name a top-level key to `root`; returns them in the order applied.
pub(super) fn apply(root: &mut Map<String, Value>, env: &[(String, String)]) -> Vec<Variable> {
    let known = top_level_keys();
    let mut applied = Vec::new();
    for (name, value) in env {
        let key = name.to_ascii_lowercase();
        if !known.contains(&key.as_str()) {
            continue;
        }
        let (parsed, not_json) = match serde_json::from_str::<Value>(value) {
            Ok(v) => (v, None),
            Err(e) => (Value::String(value.clone()), Some(e.to_string())),
        };
        for spelling in spellings(&key) {
            root.remove(spelling);
        }
        root.insert(key.clone(), parsed);
        applied.push(Variable {
            name: name.clone(),
            key,
            not_json,
        });
    }
    applied
}

/// Every spelling of the setting `key` names (itself included).
pub(super) fn spellings(key: &str) -> Vec<&str> {
    let canonical = ALIASES
        .iter()
        .find(|(alias, _)| *alias == key)
        .map_or(key, |(_, canonical)| canonical);
    let mut all = vec![canonical];
    all.extend(
        ALIASES
            .iter()
            .filter(|(_, c)| *c == canonical)
            .map(|(alias, _)| *alias),
    );
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn variables_replace_top_level_keys_in_any_case() {
        let mut root = json!({"api_poll_frequency_seconds": 20, "api_url": "https://file.test"})
            .as_object()
            .unwrap()
            .clone();
        let applied = apply(
            &mut root,
            &env(&[
                ("Api_Poll_Frequency", "3"),
                ("SERVER", r#"{"port": 8001}"#),
                ("API_URL", "https://env.test/api/v1"),
                ("PATH", "/usr/bin"),
            ]),
        );
        assert_eq!(
            Value::Object(root),
            json!({"api_poll_frequency": 3, "server": {"port": 8001},
                   "api_url": "https://env.test/api/v1"})
        );
        let names: Vec<_> = applied.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["Api_Poll_Frequency", "SERVER", "API_URL"]);
        assert!(applied[2].not_json.is_some() && applied[0].not_json.is_none());
    }

    #[test]
    fn spellings_of_a_setting() {
        assert_eq!(
            spellings("api_poll_timeout"),
            ["api_poll_timeout_seconds", "api_poll_timeout"]
        );
        assert_eq!(spellings("api_url"), ["api_url"]);
    }
}
