//! Values that cannot be meant, refused by the bounds the JSON Schema states: a key's
//! `minimum`, `maximum` and `exclusiveMinimum` (from the `schemars` attributes on its field in
//! `file.rs`, or from its value type) are checked against the value given, so the published
//! schema and the loader apply one rule. Runs once the file has deserialized (types are right).
//! A value of the wrong type is refused by the deserializer; its message gets the key's bounds
//! from here ([`allowed_at`]), so it says what is allowed, not only the type.
//!
//! Only numbers are bounded here, and a number is never a secret, so messages show the value.

use serde_json::Value;

use super::schema::{alternatives, items, property, schema};
use super::{origin, ConfigError, Variable};

/// Every value out of its key's bounds, as one error; `Ok` when all are within them.
pub(super) fn check(root: &Value, variables: &[Variable]) -> Result<(), ConfigError> {
    let mut problems = Vec::new();
    walk(root, schema(), &mut String::new(), &mut problems);
    if problems.is_empty() {
        return Ok(());
    }
    let messages: Vec<String> = problems
        .into_iter()
        .map(|(path, problem)| format!("{path}{}: {problem}", origin(&path, variables)))
        .collect();
    Err(ConfigError(messages.join("; ")))
}

fn walk(value: &Value, node: &Value, path: &mut String, problems: &mut Vec<(String, String)>) {
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                if let Some(child) = property(node, key) {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                    walk(member, child, path, problems);
                    path.truncate(len);
                }
            }
        }
        Value::Array(elements) => {
            if let Some(element) = items(node) {
                for (i, member) in elements.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(member, element, path, problems);
                    path.truncate(len);
                }
            }
        }
        Value::Number(_) | Value::String(_) => {
            if let Some(problem) = out_of_bounds(value, node) {
                problems.push((path.clone(), problem));
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// Why `value` is outside the bounds of `node`, if it is.
fn out_of_bounds(value: &Value, node: &Value) -> Option<String> {
    let number = value.as_f64()?;
    let (minimum, above, maximum) = bounds(node);
    let outside = minimum.is_some_and(|m| number < m)
        || maximum.is_some_and(|m| number > m)
        || above.is_some_and(|m| number <= m);
    if !outside {
        return None;
    }
    Some(format!(
        "{value} is out of range: must be {}",
        allowed(node)?
    ))
}

/// The bounds of the key at `path` (`flagpole.limits.max_body_bytes`, list indices allowed), as
/// words: `at least 1`.
pub(super) fn allowed_at(path: &str) -> Option<String> {
    let mut node = schema();
    for step in path.split('.') {
        let name = step.split('[').next().unwrap_or_default();
        node = property(node, name).or_else(|| property(items(node)?, name))?;
        if step.contains('[') {
            node = items(node)?;
        }
    }
    allowed(node)
}

/// `minimum`, `exclusiveMinimum`, `maximum` of a node (of any of its alternatives).
fn bounds(node: &Value) -> (Option<f64>, Option<f64>, Option<f64>) {
    let bound = |key: &str| {
        alternatives(node)
            .into_iter()
            .find_map(|n| n.get(key)?.as_f64())
    };
    (
        bound("minimum"),
        bound("exclusiveMinimum"),
        bound("maximum"),
    )
}

/// What the bounds of `node` allow, as words; `None` when it has none.
fn allowed(node: &Value) -> Option<String> {
    Some(match bounds(node) {
        (_, Some(above), Some(max)) => format!("greater than {above} and at most {max}"),
        (_, Some(above), None) => format!("greater than {above}"),
        (Some(min), None, Some(max)) => format!("from {min} to {max}"),
        (Some(min), None, None) => format!("at least {min}"),
        (None, None, Some(max)) => format!("at most {max}"),
        (None, None, None) => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::from_json;

    fn error(v: serde_json::Value) -> String {
        from_json(v.as_object().unwrap()).unwrap_err().0
    }

    #[test]
    fn values_outside_the_schema_bounds_are_refused_naming_key_value_and_range() {
        let cases = [
            (
                json!({"api_poll_frequency_seconds": 0}),
                "api_poll_frequency_seconds: 0 is out of range: must be at least 1",
            ),
            (
                json!({"api_poll_frequency": "10"}),
                "api_poll_frequency: invalid type: string \"10\", expected a number of seconds (at least 1)",
            ),
            (
                json!({"api_poll_frequency_seconds": "ten"}),
                "api_poll_frequency_seconds: invalid type: string \"ten\", expected a number of seconds (at least 1)",
            ),
            (
                json!({"api_poll_timeout_seconds": 0}),
                "api_poll_timeout_seconds: 0 is out of range: must be greater than 0",
            ),
            (
                json!({"flagpole": {"limits": {"max_header_bytes": 100}}}),
                "flagpole.limits.max_header_bytes: 100 is out of range: must be at least 8192",
            ),
            (
                json!({"flagpole": {"analytics": {"flush_interval_seconds": 0.01}}}),
                "flagpole.analytics.flush_interval_seconds: 0.01 is out of range: must be at least 0.1",
            ),
            (
                json!({"flagpole": {"shadow": {"timeout_seconds": 0}}}),
                "flagpole.shadow.timeout_seconds: 0 is out of range: must be greater than 0",
            ),
        ];
        for (config, expected) in cases {
            let e = error(config.clone());
            assert_eq!(e, expected, "{config}");
        }
    }

    #[test]
    fn values_within_bounds_load() {
        let ok = json!({"api_poll_frequency_seconds": 1, "api_poll_timeout_seconds": 0.5,
            "flagpole": {"limits": {"max_header_bytes": 8192, "write_timeout_seconds": 0.1}}});
        from_json(ok.as_object().unwrap()).unwrap();
    }
}
