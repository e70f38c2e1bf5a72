//! The flagd engine under the OpenFeature layer: a flag set as an OpenFeature target ([`Set`]:
//! the view a selector picks, answering what `Target` asks of it), and one flagd evaluation →
//! one OpenFeature [`Resolution`] as flagd's own doors give it (no value with no default
//! variant or when disabled; reasons `STATIC`, `TARGETING_MATCH`, `DEFAULT`, `DISABLED`,
//! `ERROR`; its error codes; the flag's metadata over its set's, a missing flag's the
//! selector). flagd reads every number as a float, so an integer resolver cuts a fraction
//! toward zero; a value of another type than asked is a type mismatch.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use flagpole_flagd::{Context, Evaluation, Flag};
use serde_json::{Map, Value};

use super::resolution::{
    context_members, targeting_key, Declared, Fractions, Metadata, Refusal, Resolution, Typing,
    Unevaluated,
};
use super::{encode, tag, Encoded, Encoding};
use crate::flagsets::{FlagView, Selector};

/// A flag set's view, picked by a selector.
pub(super) struct Set {
    pub view: Arc<FlagView>,
    pub selector: Option<String>,
    /// The selector as flagd answers it in metadata.
    pub selected: Map<String, Value>,
}

/// The caller's context as flagd rules read it: the whole context and the time
/// (`$flagd.timestamp`).
pub(super) struct Reading<'c> {
    attributes: Cow<'c, Map<String, Value>>,
    now: u64,
}

impl<'c> Reading<'c> {
    /// The context (absent or `null`: empty); anything but an object is refused.
    pub(super) fn of(context: Option<&'c Value>) -> Result<Reading<'c>, Refusal> {
        let attributes = context_members(context)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Ok(Reading { attributes, now })
    }

    pub(super) fn targeting_key(&self) -> Option<&'c str> {
        targeting_key(&self.attributes)
    }

    fn context(&self) -> Context<'_> {
        Context::new(&self.attributes, self.now)
    }
}

impl Set {
    pub(super) fn new(view: Arc<FlagView>, selector: Option<&str>) -> Set {
        Set {
            view,
            selector: selector.map(str::to_owned),
            selected: Selector::parse(selector).metadata(),
        }
    }

    /// The answer's tag: flagd rules may read any member, so the whole context is hashed.
    pub(super) fn tag(
        &self,
        flag: Option<&str>,
        reading: &Reading<'_>,
        stale: bool,
        settings: &str,
    ) -> String {
        tag::flag_set(
            &self.view.revision,
            &Selector::parse(self.selector.as_deref()).key(),
            flag,
            stale,
            &reading.attributes,
            settings,
        )
    }

    pub(super) fn one<R>(
        &self,
        key: &str,
        reading: &Reading<'_>,
        f: impl FnOnce(Resolution<'_>) -> R,
    ) -> Result<R, Unevaluated> {
        let evaluation = self.view.set.evaluate(key, &reading.context());
        let mut r = resolve(key, &evaluation, declared(self.view.set.get(key)));
        if matches!(r.error, Some(("FLAG_NOT_FOUND", _))) {
            r.metadata = Metadata::map(&self.selected);
        }
        Ok(f(r))
    }

    pub(super) fn each(
        &self,
        reading: &Reading<'_>,
        mut f: impl FnMut(Resolution<'_>),
    ) -> Result<(), Unevaluated> {
        self.view
            .set
            .evaluate_each(&reading.context(), |flag, evaluation| {
                f(resolve(flag.key(), &evaluation, declared(Some(flag))));
            });
        Ok(())
    }

    /// The bulk pieces as flagd's `ResolveAll` lists them: a flag whose declared type no bulk
    /// answer carries is left out.
    pub(super) fn encoded<E: Encoding, R>(
        &self,
        reading: &Reading<'_>,
        stale: bool,
        f: impl FnOnce(&[Encoded<'_>]) -> R,
    ) -> Result<R, Unevaluated> {
        let mut evaluations = Vec::with_capacity(self.view.set.len());
        self.view
            .set
            .evaluate_each(&reading.context(), |flag, evaluation| {
                let declared = declared(Some(flag));
                if declared != Declared::Unlisted {
                    evaluations.push((flag.key(), evaluation, declared));
                }
            });
        let pieces: Vec<Encoded<'_>> = evaluations
            .iter()
            .map(|(key, evaluation, declared)| {
                encode::<E>(resolve(key, evaluation, *declared), stale)
            })
            .collect();
        Ok(f(&pieces))
    }
}

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
            enabled_as_bool: false,
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
