//! What the OpenFeature layer needs of one Unleash toggle for one context: enabled (the
//! boolean door), the variant's name, its payload typed by the payload's `type` (the string,
//! number and object doors), whether the toggle itself is switched on (`DISABLED`), and
//! whether it can vary by context at all (the `STATIC` reason). The doors decide reasons and
//! type mismatches; this module only reads the engine.
//!
//! Payloads are read once per body (`payload.rs`, built with [`Features`]): an answer looks its
//! variant's payload up rather than parsing JSON per request.

use crate::context::Context;
use crate::features::Features;
use crate::payload::{PayloadError, TypedValue};

/// One toggle resolved for OpenFeature, borrowing the body's typed payloads.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution<'f> {
    /// Whether the toggle is enabled for the context.
    pub enabled: bool,
    /// The toggle's own `enabled`: a toggle switched off is off for every context.
    pub switched_on: bool,
    /// The variant's name, when a variant applies (none for a toggle without variants or
    /// disabled for the context).
    pub variant: Option<String>,
    /// The variant's payload typed by its `type`; `None` when the variant has no payload.
    pub value: Option<Result<&'f TypedValue, &'f PayloadError>>,
    /// No context can change the answer (a disabled toggle, or one on for everyone with at
    /// most one possible variant). Conservative: `false` when unsure.
    pub is_static: bool,
}

/// What a payload the body does not hold reads as (never met: the engine only chooses the
/// body's own variants).
static UNKNOWN: std::sync::LazyLock<PayloadError> = std::sync::LazyLock::new(|| PayloadError {
    kind: String::new(),
    message: "a payload the toggles do not hold".to_owned(),
});

impl Features {
    /// The toggle for OpenFeature; `None` for a toggle the body does not hold.
    pub fn resolve_for_openfeature(&self, name: &str, context: &Context) -> Option<Resolution<'_>> {
        let toggle = self.toggles.get(name)?;
        // One evaluation: choosing the variant decides whether the toggle is on as well (and a
        // random rollout cannot answer the two questions differently).
        let variant = self.engine.get_variant(name, &context.inner, &None);
        let enabled = variant.feature_enabled;
        let (variant, value) = if variant.enabled {
            let value = variant.payload.map(|p| {
                self.payloads
                    .get(&p.payload_type)
                    .and_then(|by_text| by_text.get(&p.value))
                    .map_or(Err(&*UNKNOWN), Result::as_ref)
            });
            (Some(variant.name), value)
        } else {
            (None, None)
        };
        Some(Resolution {
            enabled,
            switched_on: toggle.switched_on,
            variant,
            value,
            is_static: toggle.is_static,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{Context, Features};

    #[test]
    fn resolves_a_toggle() {
        let body = r#"{"version":1,"features":[
            {"name":"n","enabled":true,"variants":[{"name":"ten","weight":1000,"payload":{"type":"number","value":"10"}}]},
            {"name":"u","enabled":true,"strategies":[{"name":"userWithId","parameters":{"userIds":"1"}}],
             "variants":[{"name":"x","weight":1000}]},
            {"name":"s","enabled":true,"strategies":[{"name":"default","variants":[
              {"name":"bad","weight":1000,"payload":{"type":"json","value":"{"}}]}]},
            {"name":"off","enabled":false}
        ]}"#;
        let features = Features::from_slice(body.as_bytes()).unwrap();
        let anonymous = Context::new();
        let n = features.resolve_for_openfeature("n", &anonymous).unwrap();
        assert!(n.enabled && n.is_static && n.switched_on);
        assert_eq!(n.variant.as_deref(), Some("ten"));
        assert_eq!(n.value.unwrap().unwrap().as_json(), &json!(10));

        let u = features.resolve_for_openfeature("u", &anonymous).unwrap();
        assert!(!u.enabled && !u.is_static && u.switched_on);
        assert_eq!((u.variant, u.value), (None, None));
        let mut user = Context::new();
        user.set("userId", "1");
        let u = features.resolve_for_openfeature("u", &user).unwrap();
        assert_eq!(
            (u.enabled, u.variant.as_deref(), u.value),
            (true, Some("x"), None)
        );

        // A strategy's variant payload is read once too; a broken one is an error.
        let s = features.resolve_for_openfeature("s", &user).unwrap();
        assert_eq!(s.variant.as_deref(), Some("bad"));
        assert!(s.value.unwrap().is_err());

        let off = features.resolve_for_openfeature("off", &user).unwrap();
        assert!(!off.enabled && off.is_static && !off.switched_on);
        assert!(features.resolve_for_openfeature("missing", &user).is_none());
    }
}
