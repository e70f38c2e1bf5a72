//! What the OpenFeature layer needs of one Unleash toggle for one context: enabled (the
//! boolean door), the variant's name, its payload typed by the payload's `type` (the string,
//! number and object doors), and whether the toggle can vary by context at all (the `STATIC`
//! reason). The doors decide reasons and type mismatches; this module only reads the engine.

use serde_json::{Number, Value};

use crate::context::Context;
use crate::features::Features;

/// One toggle resolved for OpenFeature.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// Whether the toggle is enabled for the context.
    pub enabled: bool,
    /// The variant's name, when a variant applies (none for a toggle without variants or
    /// disabled for the context).
    pub variant: Option<String>,
    /// The variant's payload typed by its `type`; `None` when the variant has no payload.
    pub value: Option<Result<TypedValue, PayloadError>>,
    /// No context can change the answer (a disabled toggle, or one on for everyone with at
    /// most one possible variant). Conservative: `false` when unsure.
    pub is_static: bool,
}

/// A payload as its `type` says to read it.
#[derive(Debug, Clone, PartialEq)]
pub enum TypedValue {
    /// `string` and `csv` payloads: the text as is.
    String(String),
    /// A `number` payload, parsed (its text kept exactly).
    Number(Number),
    /// A `json` payload, parsed (an object, usually; the door checks).
    Json(Value),
}

/// A payload whose text does not read as its `type` says, or of a type Unleash has not defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadError {
    /// The payload's `type`.
    pub kind: String,
    /// What is wrong.
    pub message: String,
}

impl Features {
    /// The toggle for OpenFeature; `None` for a toggle the body does not hold.
    pub fn resolve_for_openfeature(&self, name: &str, context: &Context) -> Option<Resolution> {
        let toggle = self.toggles.get(name)?;
        let enabled = self.engine.is_enabled(name, &context.inner, &None);
        let variant = self.engine.get_variant(name, &context.inner, &None);
        let (variant, value) = if variant.enabled {
            let value = variant.payload.map(|p| typed(&p.payload_type, &p.value));
            (Some(variant.name), value)
        } else {
            (None, None)
        };
        Some(Resolution {
            enabled,
            variant,
            value,
            is_static: toggle.is_static,
        })
    }
}

/// A payload's text read as its type says.
pub(crate) fn typed(kind: &str, text: &str) -> Result<TypedValue, PayloadError> {
    let error = |message: String| PayloadError {
        kind: kind.to_owned(),
        message,
    };
    match kind {
        "string" | "csv" => Ok(TypedValue::String(text.to_owned())),
        "number" => match serde_json::from_str::<Value>(text.trim()) {
            Ok(Value::Number(number)) => Ok(TypedValue::Number(number)),
            _ => Err(error(format!("{text:?} is not a number"))),
        },
        "json" => serde_json::from_str(text)
            .map(TypedValue::Json)
            .map_err(|e| error(format!("not JSON: {e}"))),
        other => Err(error(format!("unknown payload type {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{typed, TypedValue};
    use crate::{Context, Features};

    #[test]
    fn payloads_typed_by_their_type() {
        assert_eq!(
            typed("string", " a ").unwrap(),
            TypedValue::String(" a ".into())
        );
        assert_eq!(
            typed("csv", "a,b").unwrap(),
            TypedValue::String("a,b".into())
        );
        let TypedValue::Number(n) = typed("number", " 1.50 ").unwrap() else {
            panic!()
        };
        assert_eq!(n.to_string(), "1.50");
        assert!(typed("number", "1x").is_err());
        assert!(typed("number", "\"1\"").is_err());
        assert_eq!(
            typed("json", r#"{"a":[1]}"#).unwrap(),
            TypedValue::Json(json!({"a":[1]}))
        );
        assert!(typed("json", "{").is_err());
        assert!(typed("yaml", "a: 1").is_err());
    }

    #[test]
    fn resolves_a_toggle() {
        let body = r#"{"version":1,"features":[
            {"name":"n","enabled":true,"variants":[{"name":"ten","weight":1000,"payload":{"type":"number","value":"10"}}]},
            {"name":"u","enabled":true,"strategies":[{"name":"userWithId","parameters":{"userIds":"1"}}],
             "variants":[{"name":"x","weight":1000}]},
            {"name":"off","enabled":false}
        ]}"#;
        let features = Features::from_slice(body.as_bytes()).unwrap();
        let anonymous = Context::new();
        let n = features.resolve_for_openfeature("n", &anonymous).unwrap();
        assert!(n.enabled && n.is_static);
        assert_eq!(n.variant.as_deref(), Some("ten"));
        assert!(matches!(n.value, Some(Ok(TypedValue::Number(_)))));

        let u = features.resolve_for_openfeature("u", &anonymous).unwrap();
        assert!(!u.enabled && !u.is_static);
        assert_eq!((u.variant, u.value), (None, None));
        let mut user = Context::new();
        user.set("userId", "1");
        let u = features.resolve_for_openfeature("u", &user).unwrap();
        assert_eq!(
            (u.enabled, u.variant.as_deref(), u.value),
            (true, Some("x"), None)
        );

        let off = features.resolve_for_openfeature("off", &user).unwrap();
        assert!(!off.enabled && off.is_static);
        assert!(features.resolve_for_openfeature("missing", &user).is_none());
    }
}
