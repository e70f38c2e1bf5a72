//! Variant payloads read as their `type` says (`string`/`csv` text, `number` parsed, `json`
//! parsed), every payload of a body once, when the body is read: the OpenFeature answers then
//! borrow the typed value instead of parsing a payload per request.

use std::collections::HashMap;

use serde_json::Value;
use unleash_types::client_features::{ClientFeature, Payload};

/// A payload as its `type` says to read it, as JSON: `string` and `csv` payloads a JSON
/// string (the text as is), `number` a JSON number (its text kept exactly), `json` the parsed
/// value (an object, usually; the door checks).
#[derive(Debug, Clone, PartialEq)]
pub struct TypedValue(Value);

impl TypedValue {
    /// The value as JSON.
    pub fn as_json(&self) -> &Value {
        &self.0
    }
}

/// A payload whose text does not read as its `type` says, or of a type Unleash has not defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadError {
    /// The payload's `type`.
    pub kind: String,
    /// What is wrong.
    pub message: String,
}

/// Every payload of a body, typed, by `type` then text.
pub(crate) type Payloads = HashMap<String, HashMap<String, Result<TypedValue, PayloadError>>>;

/// Reads every payload of these toggles (their own variants and their strategies') once.
pub(crate) fn payloads(features: &[ClientFeature]) -> Payloads {
    let mut out = Payloads::new();
    let mut add = |payload: &Payload| {
        let by_text = out.entry(payload.payload_type.clone()).or_default();
        if !by_text.contains_key(&payload.value) {
            let typed = typed(&payload.payload_type, &payload.value);
            by_text.insert(payload.value.clone(), typed);
        }
    };
    for feature in features {
        for variant in feature.variants.iter().flatten() {
            variant.payload.iter().for_each(&mut add);
        }
        for strategy in feature.strategies.iter().flatten() {
            for variant in strategy.variants.iter().flatten() {
                variant.payload.iter().for_each(&mut add);
            }
        }
    }
    out
}

/// A payload's text read as its type says.
pub(crate) fn typed(kind: &str, text: &str) -> Result<TypedValue, PayloadError> {
    let error = |message: String| PayloadError {
        kind: kind.to_owned(),
        message,
    };
    match kind {
        "string" | "csv" => Ok(TypedValue(Value::String(text.to_owned()))),
        "number" => match serde_json::from_str::<Value>(text.trim()) {
            Ok(number @ Value::Number(_)) => Ok(TypedValue(number)),
            _ => Err(error(format!("{text:?} is not a number"))),
        },
        "json" => serde_json::from_str(text)
            .map(TypedValue)
            .map_err(|e| error(format!("not JSON: {e}"))),
        other => Err(error(format!("unknown payload type {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::typed;

    #[test]
    fn payloads_typed_by_their_type() {
        assert_eq!(typed("string", " a ").unwrap().as_json(), &json!(" a "));
        assert_eq!(typed("csv", "a,b").unwrap().as_json(), &json!("a,b"));
        let n = typed("number", " 1.50 ").unwrap();
        assert_eq!(n.as_json().to_string(), "1.50");
        assert!(typed("number", "1x").is_err());
        assert!(typed("number", "\"1\"").is_err());
        assert_eq!(
            typed("json", r#"{"a":[1]}"#).unwrap().as_json(),
            &json!({"a":[1]})
        );
        assert!(typed("json", "{").is_err());
        assert!(typed("yaml", "a: 1").is_err());
    }
}
