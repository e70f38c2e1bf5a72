//! One flagd flag → one OpenFeature [`Resolution`]: the flagd engine's answer as flagd's own
//! doors give it (no value with no default variant or when disabled; reasons `STATIC`,
//! `TARGETING_MATCH`, `DEFAULT`, `DISABLED`, `ERROR`; its error codes; the flag's metadata over
//! its set's), with `STALE` while a polled source is stale, as for environments.

use std::borrow::Cow;

use flagpole_flagd::Evaluation;

use super::mapping::{when_stale, Metadata, Resolution};

/// Maps one flagd evaluation of `key`; `stale`: a source of the flag set is stale.
pub(crate) fn resolve<'a>(
    key: &'a str,
    evaluation: &'a Evaluation<'a>,
    stale: bool,
) -> Resolution<'a> {
    let reason = when_stale(
        evaluation.reason.as_str(),
        stale,
        evaluation.value.is_some(),
    );
    Resolution {
        key,
        value: evaluation.value.map(Cow::Borrowed),
        reason,
        variant: evaluation.variant.map(Cow::Borrowed),
        error: evaluation
            .error
            .as_ref()
            .map(|(code, message)| (code.as_str(), Cow::Borrowed(message.as_str()))),
        metadata: Metadata::Map(evaluation.metadata),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flagpole_flagd::{Context, FlagSet};
    use serde_json::json;

    fn body(set: &FlagSet, key: &str, stale: bool) -> serde_json::Value {
        let attributes = serde_json::Map::new();
        let evaluation = set.evaluate(key, &Context::new(&attributes, 0));
        let mut out = Vec::new();
        super::super::mapping::write_flag(&mut out, &resolve(key, &evaluation, stale));
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn flagd_answers_as_ofrep_objects() {
        let set = FlagSet::from_json(
            r#"{"metadata": {"team": "a", "version": 2}, "flags": {
            "on": {"state": "ENABLED", "variants": {"yes": true, "no": false},
                   "defaultVariant": "yes", "metadata": {"version": 3}},
            "off": {"state": "DISABLED", "variants": {"yes": true}, "defaultVariant": "yes"},
            "none": {"state": "ENABLED", "variants": {"a": 1.0}, "defaultVariant": null}}}"#,
        )
        .unwrap();
        assert_eq!(
            body(&set, "on", false),
            json!({"key": "on", "value": true, "reason": "STATIC", "variant": "yes",
                "metadata": {"team": "a", "version": 3}})
        );
        assert_eq!(body(&set, "on", true)["reason"], "STALE");
        // No value: the caller's default, whatever the staleness.
        assert_eq!(
            body(&set, "off", true),
            json!({"key": "off", "reason": "DISABLED", "metadata": {"team": "a", "version": 2}})
        );
        assert_eq!(
            body(&set, "none", false),
            json!({"key": "none", "reason": "DEFAULT", "metadata": {"team": "a", "version": 2}})
        );
        let missing = body(&set, "nope", false);
        assert_eq!(missing["errorCode"], "FLAG_NOT_FOUND");
        assert!(missing.get("value").is_none());
    }
}
