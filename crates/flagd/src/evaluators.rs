//! `$evaluators`: rules shared between flags by `{"$ref": "name"}`, substituted when the file
//! is read. Like the reference, every object that is exactly `{"$ref": name}` anywhere in a
//! flag's definition is replaced; unlike it, a name is compared without surrounding
//! whitespace, and a reference to no evaluator refuses the file (flagd refuses it when it
//! loads; the reference would fail each evaluation that reached it).

use serde_json::{Map, Value};

use crate::refusal::DefinitionError;

/// How deep evaluators may refer to each other (a cycle would never end).
const MAX_DEPTH: usize = 32;

/// The file's evaluators (`None`: the file has none).
pub(crate) fn of_file(
    file: &Map<String, Value>,
) -> Result<Option<&Map<String, Value>>, DefinitionError> {
    match file.get("$evaluators") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(evaluators)) => Ok(Some(evaluators)),
        Some(_) => Err(DefinitionError::at("$.$evaluators", "must be an object")),
    }
}

/// `value` with every reference replaced; `path` names where it is, for errors.
pub(crate) fn substitute(
    value: &Value,
    evaluators: &Map<String, Value>,
    path: &str,
) -> Result<Value, DefinitionError> {
    walk(value, evaluators, path, 0)
}

fn walk(
    value: &Value,
    evaluators: &Map<String, Value>,
    path: &str,
    depth: usize,
) -> Result<Value, DefinitionError> {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("$ref") => {
            let Some(name) = map["$ref"].as_str() else {
                return Err(DefinitionError::at(path, "\"$ref\" must name an evaluator"));
            };
            let name = name.trim();
            let Some((_, rule)) = evaluators.iter().find(|(k, _)| k.trim() == name) else {
                return Err(DefinitionError::at(
                    path,
                    format!("\"$ref\" names no evaluator in $evaluators: {name:?}"),
                ));
            };
            if depth >= MAX_DEPTH {
                return Err(DefinitionError::at(
                    path,
                    format!("evaluators refer to each other too deeply (at {name:?})"),
                ));
            }
            walk(
                rule,
                evaluators,
                &format!("$.$evaluators.{name}"),
                depth + 1,
            )
        }
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                Ok((
                    k.clone(),
                    walk(v, evaluators, &format!("{path}.{k}"), depth)?,
                ))
            })
            .collect::<Result<Map<_, _>, _>>()
            .map(Value::Object),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| walk(v, evaluators, &format!("{path}[{i}]"), depth))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_replaced_and_unknown_ones_refused() {
        let evaluators = json!({"pro": {"==": [{"var": "plan"}, "pro"]}});
        let evaluators = evaluators.as_object().unwrap();
        let rule = json!({"if": [{"$ref": " pro "}, "on", "off"]});
        assert_eq!(
            substitute(&rule, evaluators, "$").unwrap(),
            json!({"if": [{"==": [{"var": "plan"}, "pro"]}, "on", "off"]})
        );
        let err =
            substitute(&json!({"$ref": "nope"}), evaluators, "$.flags.f.targeting").unwrap_err();
        assert_eq!(err.path, "$.flags.f.targeting");
    }
}
