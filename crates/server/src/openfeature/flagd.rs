//! The flagd engine under the OpenFeature layer: one flagd evaluation → one OpenFeature
//! [`Resolution`] as flagd's own doors give it (no value with no default variant or when
//! disabled; reasons `STATIC`, `TARGETING_MATCH`, `DEFAULT`, `DISABLED`, `ERROR`; its error
//! codes; the flag's metadata over its set's). flagd reads every number as a float, so an
//! integer resolver cuts a fraction toward zero; a value of another type than asked is a type
//! mismatch.

use std::borrow::Cow;

use flagpole_flagd::{Evaluation, Flag};

use super::resolution::{Declared, Fractions, Metadata, Resolution, Typing};

/// The type a flag declares: its default variant's.
pub(super) fn declared(flag: Option<&Flag>) -> Declared {
    let default = flag.and_then(|f| f.default_variant().and_then(|v| f.variants().get(v)));
    Declared::of(default)
}

/// Maps one flagd evaluation of `key`; `declared`: the flag's type ([`declared`]).
pub(super) fn resolve<'a>(
    key: &'a str,
    evaluation: &'a Evaluation<'a>,
    declared: Declared,
) -> Resolution<'a> {
    Resolution {
        key,
        value: evaluation.value.map(Cow::Borrowed),
        reason: evaluation.reason.as_str(),
        variant: evaluation.variant.map(Cow::Borrowed),
        error: evaluation
            .error
            .as_ref()
            .map(|(code, message)| (code.as_str(), Cow::Borrowed(message.as_str()))),
        metadata: Metadata::map(evaluation.metadata),
        typing: Typing {
            lenient: false,
            fractions: Fractions::Truncated,
            declared,
        },
        enabled: evaluation.value.is_some() && evaluation.error.is_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flagpole_flagd::{Context, FlagSet};
    use serde_json::{json, Value};

    fn answer(set: &FlagSet, key: &str) -> (Option<Value>, &'static str, Option<String>, Value) {
        let attributes = serde_json::Map::new();
        let evaluation = set.evaluate(key, &Context::new(&attributes, 0));
        let r = resolve(key, &evaluation, declared(set.get(key)));
        let metadata = Value::Object(r.metadata.as_map().cloned().unwrap_or_default());
        (
            r.value.map(Cow::into_owned),
            r.reason,
            r.error.map(|(code, _)| code.to_owned()),
            metadata,
        )
    }

    #[test]
    fn flagd_answers_as_flagd_gives_them() {
        let set = FlagSet::from_json(
            r#"{"metadata": {"team": "a", "version": 2}, "flags": {
            "on": {"state": "ENABLED", "variants": {"yes": true, "no": false},
                   "defaultVariant": "yes", "metadata": {"version": 3}},
            "off": {"state": "DISABLED", "variants": {"yes": true}, "defaultVariant": "yes"},
            "none": {"state": "ENABLED", "variants": {"a": 1.0}, "defaultVariant": null}}}"#,
        )
        .unwrap();
        assert_eq!(
            answer(&set, "on"),
            (
                Some(json!(true)),
                "STATIC",
                None,
                json!({"team": "a", "version": 3})
            )
        );
        // No value: the caller's default.
        assert_eq!(
            answer(&set, "off"),
            (None, "DISABLED", None, json!({"team": "a", "version": 2}))
        );
        assert_eq!(answer(&set, "none").1, "DEFAULT");
        assert_eq!(answer(&set, "none").0, None);
        assert_eq!(answer(&set, "nope").2.as_deref(), Some("FLAG_NOT_FOUND"));
        assert_eq!(declared(set.get("on")), Declared::Bool);
        assert_eq!(declared(set.get("none")), Declared::Unlisted);
    }
}
