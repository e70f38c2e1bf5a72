//! One toggle for one context, answered by the engine exactly as an Unleash SDK answers it
//! (`isEnabled`, `getVariant`), dependencies on other toggles included. Custom strategies have
//! no implementation here, as in Edge: a toggle relying on one alone is off.

use serde::Serialize;
use unleash_types::client_features::Payload;

use crate::context::Context;
use crate::features::Features;

/// A toggle's variant for a context, as the SDKs' `getVariant` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// The variant's name; `disabled` when no variant applies.
    pub name: String,
    /// Whether a variant applies (false for `disabled`).
    pub enabled: bool,
    /// The variant's payload, as the body gives it (`type` and the `value` text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<VariantPayload>,
    /// Whether the toggle itself is enabled for the context, as the engine decided while
    /// choosing the variant.
    #[serde(rename = "feature_enabled")]
    pub feature_enabled: bool,
}

/// A variant's payload as Unleash writes it: `{"type": "string"|"number"|"json"|"csv", "value"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariantPayload {
    /// `string`, `number`, `json` or `csv` (others are passed on as written).
    #[serde(rename = "type")]
    pub kind: String,
    /// The payload, always text.
    pub value: String,
}

impl From<Payload> for VariantPayload {
    fn from(payload: Payload) -> Self {
        Self {
            kind: payload.payload_type,
            value: payload.value,
        }
    }
}

impl Features {
    /// Whether the toggle is enabled for the context; `false` for a toggle the body does not
    /// hold.
    pub fn is_enabled(&self, name: &str, context: &Context) -> bool {
        self.engine.is_enabled(name, &context.inner, &None)
    }

    /// The toggle's variant for the context (`disabled` for a toggle the body does not hold).
    pub fn variant(&self, name: &str, context: &Context) -> Variant {
        let variant = self.engine.get_variant(name, &context.inner, &None);
        Variant {
            name: variant.name,
            enabled: variant.enabled,
            payload: variant.payload.map(VariantPayload::from),
            feature_enabled: variant.feature_enabled,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Context, Features};

    const BODY: &str = r#"{"version":1,"features":[
        {"name":"on","enabled":true,"strategies":[{"name":"default"}],
         "variants":[{"name":"blue","weight":1000,"payload":{"type":"string","value":"b"}}]},
        {"name":"users","enabled":true,"strategies":[{"name":"userWithId","parameters":{"userIds":"1,2"}}]},
        {"name":"child","enabled":true,"dependencies":[{"feature":"users"}]},
        {"name":"off","enabled":false}
    ]}"#;

    #[test]
    fn answers_as_the_sdks() {
        let features = Features::from_slice(BODY.as_bytes()).unwrap();
        let mut user = Context::new();
        user.set("userId", "2");
        let anonymous = Context::new();
        assert!(features.is_enabled("on", &anonymous));
        assert!(features.is_enabled("users", &user));
        assert!(!features.is_enabled("users", &anonymous));
        assert!(features.is_enabled("child", &user));
        assert!(!features.is_enabled("child", &anonymous));
        assert!(!features.is_enabled("off", &user));
        assert!(!features.is_enabled("missing", &user));

        let blue = features.variant("on", &anonymous);
        assert_eq!(
            (blue.name.as_str(), blue.enabled, blue.feature_enabled),
            ("blue", true, true)
        );
        assert_eq!(blue.payload.unwrap().value, "b");
        let none = features.variant("users", &user);
        assert_eq!(
            (none.name.as_str(), none.enabled, none.feature_enabled),
            ("disabled", false, true)
        );
        let missing = features.variant("missing", &user);
        assert_eq!(
            (missing.name.as_str(), missing.feature_enabled),
            ("disabled", false)
        );
    }
}
