//! The Flagsmith engine under the OpenFeature layer: one Flagsmith flag → one OpenFeature
//! [`Resolution`], as every OpenFeature front door answers it; the caller's context as the
//! engine's identity and traits (`context`); an environment as a target (`environment`); the
//! prepared bulk answer (`bulk`); the freshness hints of an OFREP bulk call (`freshness`).
//!
//! Flagsmith flags have an on/off bit and an optional value; OpenFeature has a typed value, a
//! reason and a variant. The on/off bit drives valueless and boolean flags (a disabled flag reads
//! `false`: a kill switch), a disabled flag with a real value sends no value (the code default
//! applies), and the variant is always present because the Python OFREP provider requires it.
//! `STATIC` is only for a feature that can vary by nothing: caching providers (flagd's) keep a
//! `STATIC` answer by flag key alone, whatever the context.

use std::borrow::Cow;

use flagpole_engine::{FlagResult, Reason, VariantChoice};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::resolution::{Declared, Fractions, Metadata, Resolution, Typing};
use crate::canonical;
use crate::keys::KeyKind;

mod bulk;
pub(super) mod context;
pub(super) mod environment;
mod freshness;

/// How a typed resolver reads a Flagsmith flag: a disabled one reads `false` (or the caller's
/// default) whatever its type; only whole numbers are integers.
fn typing(enabled: bool) -> Typing {
    Typing {
        lenient: !enabled,
        fractions: Fractions::Refused,
        declared: Declared::Any,
        enabled_as_bool: false,
    }
}

/// Maps one evaluated flag; `can_vary` is [`flagpole_engine::Environment::can_vary`] of it.
pub(super) fn resolve<'a>(
    flag: &'a FlagResult<'a>,
    kind: KeyKind,
    parse_json_strings: bool,
    can_vary: bool,
) -> Resolution<'a> {
    let enabled = flagpole_engine::value::json_truthy(flag.enabled);
    Resolution {
        key: flag.key,
        value: value(enabled, flag.value, parse_json_strings),
        reason: reason(enabled, &flag.reason, can_vary),
        variant: Some(variant(enabled, flag)),
        error: None,
        metadata: Metadata::flagsmith(flag, enabled, kind == KeyKind::Server),
        typing: typing(enabled),
        enabled,
    }
}

/// The value sent, or `None` (disabled with a real value: the code default applies).
pub(super) fn value<'v>(
    enabled: bool,
    value: &'v Value,
    parse_json_strings: bool,
) -> Option<Cow<'v, Value>> {
    let empty = matches!(value, Value::Null) || value.as_str() == Some("");
    if enabled {
        if empty {
            return Some(Cow::Owned(Value::Bool(true)));
        }
        if parse_json_strings {
            if let Some(text) = value.as_str().filter(|t| t.starts_with(['{', '['])) {
                if let Ok(parsed) = serde_json::from_str::<Value>(text) {
                    if parsed.is_object() || parsed.is_array() {
                        return Some(Cow::Owned(parsed));
                    }
                }
            }
        }
        return Some(Cow::Borrowed(value));
    }
    (empty || value.is_boolean()).then(|| Cow::Owned(Value::Bool(false)))
}

/// The OpenFeature reason (only the OFREP enum's members are ever sent).
pub(super) fn reason(enabled: bool, reason: &Reason<'_>, can_vary: bool) -> &'static str {
    if !enabled {
        return "DISABLED";
    }
    match reason {
        Reason::Static | Reason::Default if can_vary => "DEFAULT",
        Reason::Static | Reason::Default => "STATIC",
        Reason::TargetingMatch(_) => "TARGETING_MATCH",
        Reason::Split(_) => "SPLIT",
        Reason::CircularDependency => "UNKNOWN",
    }
}

/// The variant, always present.
fn variant<'a>(enabled: bool, flag: &FlagResult<'a>) -> Cow<'a, str> {
    let split = matches!(flag.reason, Reason::Split(_));
    variant_text(enabled, flag.variant, split, flag.value)
}

/// The variant of a flag with this on/off bit, engine variant and value; `split`: the flag's
/// engine reason is a split.
pub(super) fn variant_text<'a>(
    enabled: bool,
    choice: VariantChoice<'a>,
    split: bool,
    value: &Value,
) -> Cow<'a, str> {
    if !enabled {
        return Cow::Borrowed("disabled");
    }
    match choice {
        VariantChoice::Control => Cow::Borrowed("control"),
        VariantChoice::Key(Value::String(key)) => Cow::Borrowed(key),
        VariantChoice::Key(key) if !key.is_null() => Cow::Owned(key.to_string()),
        _ if split => {
            let mut bytes = Vec::new();
            canonical::write(&mut bytes, value);
            let digest: [u8; 32] = Sha256::digest(&bytes).into();
            Cow::Owned(format!("mv-{}", canonical::hex(&digest, 4)))
        }
        _ => Cow::Borrowed("enabled"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_follow_the_on_off_bit() {
        assert_eq!(
            value(true, &Value::Null, false).unwrap().as_ref(),
            &json!(true)
        );
        assert_eq!(
            value(true, &json!(""), false).unwrap().as_ref(),
            &json!(true)
        );
        assert_eq!(value(true, &json!(10), false).unwrap().as_ref(), &json!(10));
        assert_eq!(
            value(false, &Value::Null, false).unwrap().as_ref(),
            &json!(false)
        );
        assert_eq!(
            value(false, &json!(true), false).unwrap().as_ref(),
            &json!(false)
        );
        assert!(value(false, &json!("Hi"), false).is_none());
        assert_eq!(
            value(true, &json!("{\"a\":1}"), true).unwrap().as_ref(),
            &json!({"a": 1})
        );
        assert_eq!(
            value(true, &json!("{\"a\":1}"), false).unwrap().as_ref(),
            &json!("{\"a\":1}")
        );
        assert_eq!(
            value(true, &json!("[oops"), true).unwrap().as_ref(),
            &json!("[oops")
        );
    }

    #[test]
    fn reasons_are_the_ofrep_enum() {
        assert_eq!(
            reason(false, &Reason::TargetingMatch("x"), true),
            "DISABLED"
        );
        assert_eq!(reason(true, &Reason::Default, false), "STATIC");
        assert_eq!(reason(true, &Reason::Static, false), "STATIC");
        // A feature some context could change is never STATIC: caching providers would keep it.
        assert_eq!(reason(true, &Reason::Default, true), "DEFAULT");
        assert_eq!(reason(true, &Reason::Static, true), "DEFAULT");
        assert_eq!(
            reason(true, &Reason::Split("SPLIT; weight=50"), true),
            "SPLIT"
        );
        assert_eq!(reason(true, &Reason::CircularDependency, false), "UNKNOWN");
    }
}
