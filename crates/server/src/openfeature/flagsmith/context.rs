//! An OpenFeature evaluation context (an OFREP body's, or a flagd request's) → the Flagsmith
//! inputs: `targetingKey` becomes the
//! identity, scalar members become traits (JSON type kept), `null`s, objects and arrays are
//! ignored, and a `traits` object is flattened under the flat members. Also the normalised form
//! the ETag hashes, so the 304 decision needs no evaluation.

use std::borrow::Cow;

use flagpole_engine::{Trait, TraitValue};
use serde_json::{Map, Value};

use crate::openfeature::resolution::Refusal;

/// Longest identifier and trait key accepted (as by `POST /api/v1/identities/`).
const MAX_IDENTIFIER_CHARS: usize = 2000;
const MAX_TRAIT_KEY_CHARS: usize = 200;

/// What a request body asks to evaluate, borrowing from the parsed body.
#[derive(Debug, Default)]
pub(in crate::openfeature) struct Input<'a> {
    /// `None`: environment-level flags (no identity, no segments).
    pub identifier: Option<&'a str>,
    /// Normalised traits, sorted by key (none without an identity).
    pub traits: Vec<(&'a str, &'a Value)>,
}

/// A context (absent or `null`: empty), normalised.
pub(in crate::openfeature) fn of_context(
    context: Option<&Value>,
    max_trait_value_chars: usize,
) -> Result<Input<'_>, Refusal> {
    let context = match context {
        None | Some(Value::Null) => return Ok(Input::default()),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err((
                "INVALID_CONTEXT",
                "context must be an object or null".to_owned(),
            ))
        }
    };
    let identifier = match context.get("targetingKey") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) if s.chars().count() > MAX_IDENTIFIER_CHARS => {
            return Err((
                "INVALID_CONTEXT",
                format!("targetingKey: longer than {MAX_IDENTIFIER_CHARS} characters"),
            ))
        }
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => {
            return Err((
                "INVALID_CONTEXT",
                "targetingKey: must be a string".to_owned(),
            ))
        }
    };
    let Some(identifier) = identifier else {
        // Flagsmith segments need an identity: without one, traits change nothing.
        return Ok(Input::default());
    };
    let mut traits: Vec<(&str, &Value)> = Vec::new();
    add_traits(&mut traits, context, false, max_trait_value_chars)?;
    if let Some(Value::Object(nested)) = context.get("traits") {
        add_traits(&mut traits, nested, true, max_trait_value_chars)?;
    }
    traits.sort_unstable_by(|a, b| a.0.cmp(b.0));
    Ok(Input {
        identifier: Some(identifier),
        traits,
    })
}

/// Adds the scalar members of `map` as traits, validated; members already present win (flat
/// members are added before the `traits` object's).
fn add_traits<'a>(
    traits: &mut Vec<(&'a str, &'a Value)>,
    map: &'a Map<String, Value>,
    nested: bool,
    max_trait_value_chars: usize,
) -> Result<(), Refusal> {
    for (key, value) in map {
        if !nested && (key == "targetingKey" || key == "traits") {
            continue;
        }
        if !matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
            continue;
        }
        let name = if nested {
            format!("traits.{key}")
        } else {
            key.clone()
        };
        let chars = key.chars().count();
        if chars == 0 || chars > MAX_TRAIT_KEY_CHARS {
            return Err((
                "INVALID_CONTEXT",
                format!("{name}: a trait key must have 1 to {MAX_TRAIT_KEY_CHARS} characters"),
            ));
        }
        if let Value::String(s) = value {
            if s.chars().count() > max_trait_value_chars {
                return Err((
                    "INVALID_CONTEXT",
                    format!("{name}: longer than {max_trait_value_chars} characters"),
                ));
            }
        }
        if !traits.iter().any(|(k, _)| *k == key.as_str()) {
            traits.push((key.as_str(), value));
        }
    }
    Ok(())
}

impl<'a> Input<'a> {
    /// The engine's traits.
    pub(in crate::openfeature) fn engine_traits(&self) -> Vec<Trait<'a>> {
        self.traits
            .iter()
            .map(|(key, value)| Trait {
                key: Cow::Borrowed(key),
                value: TraitValue::from_json(value),
            })
            .collect()
    }

    /// `{"identifier": …, "traits": {…}}`: what the ETag hashes.
    pub(in crate::openfeature) fn normalised(&self) -> Value {
        let mut traits = Map::new();
        for (key, value) in &self.traits {
            traits.insert((*key).to_owned(), (*value).clone());
        }
        let mut out = Map::new();
        out.insert(
            "identifier".into(),
            self.identifier
                .map_or(Value::Null, |s| Value::String(s.to_owned())),
        );
        out.insert("traits".into(), Value::Object(traits));
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Value, Refusal> {
        let body: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text).unwrap()
        };
        of_context(body.get("context"), 2000).map(|i| i.normalised())
    }

    #[test]
    fn empty_forms_mean_no_identity() {
        let none = serde_json::json!({"identifier": null, "traits": {}});
        for text in [
            "",
            "  ",
            "{}",
            r#"{"context":null}"#,
            r#"{"context":{}}"#,
            r#"{"context":{"targetingKey":""}}"#,
            r#"{"context":{"plan":"pro"}}"#,
        ] {
            assert_eq!(parse(text).unwrap(), none, "{text}");
        }
    }

    #[test]
    fn scalars_become_traits_flat_wins_and_the_rest_is_ignored() {
        let got = parse(
            r#"{"context":{"targetingKey":"u","plan":"pro","n":1,"ok":true,"x":null,
            "o":{"a":1},"l":[1],"traits":{"plan":"free","age":31,"deep":{"z":1}}}}"#,
        )
        .unwrap();
        assert_eq!(
            got,
            serde_json::json!({"identifier":"u","traits":{"age":31,"n":1,"ok":true,"plan":"pro"}})
        );
    }

    #[test]
    fn refusals_name_the_member() {
        assert_eq!(
            parse(r#"{"context":{"targetingKey":5}}"#).unwrap_err().0,
            "INVALID_CONTEXT"
        );
        assert_eq!(parse(r#"{"context":[]}"#).unwrap_err().0, "INVALID_CONTEXT");
        let long = format!(
            r#"{{"context":{{"targetingKey":"u","bio":"{}"}}}}"#,
            "a".repeat(2001)
        );
        let (code, details) = parse(&long).unwrap_err();
        assert_eq!(code, "INVALID_CONTEXT");
        assert!(details.starts_with("bio"), "{details}");
    }
}
