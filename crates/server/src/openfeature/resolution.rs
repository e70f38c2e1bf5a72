//! One OpenFeature resolution, whatever engine answered it: key, value, variant, reason, error,
//! metadata, and how a typed resolver reads the engine's values. The front doors write it in
//! their own form (an OFREP object, a flagd message) and see nothing of the engine behind it:
//! its metadata is opaque, read as the source's own JSON map or as the fields the proxy
//! derives.
//!
//! While the source is stale (`store::StaleRule` for environments, a polled flag source past
//! its period plus grace for flag sets) an answer with a value says `STALE` instead
//! ([`when_stale`]); the caching providers keep nothing but `STATIC` answers.

use std::borrow::Cow;

use flagpole_engine::{FlagResult, Reason};
use serde_json::{Map, Value};

/// Why a context was refused: `(errorCode, errorDetails)`.
pub(crate) type Refusal = (&'static str, String);

/// The members of an evaluation context as the flag-set and Unleash engines take it: absent or
/// `null` is empty; anything but an object is refused.
pub(super) fn context_members(
    context: Option<&Value>,
) -> Result<Cow<'_, Map<String, Value>>, Refusal> {
    match context {
        None | Some(Value::Null) => Ok(Cow::Owned(Map::new())),
        Some(Value::Object(map)) => Ok(Cow::Borrowed(map)),
        Some(_) => Err((
            "INVALID_CONTEXT",
            "the context must be a JSON object".to_owned(),
        )),
    }
}

/// The context's `targetingKey`, when it is text.
pub(super) fn targeting_key<'c>(members: &Cow<'c, Map<String, Value>>) -> Option<&'c str> {
    match members {
        Cow::Borrowed(map) => map.get("targetingKey").and_then(Value::as_str),
        // An empty context: no key.
        Cow::Owned(_) => None,
    }
}

/// An evaluation that could not be made at all (an engine error, logged where it happened).
#[derive(Debug)]
pub(crate) struct Unevaluated;

/// An engine's error, logged, as [`Unevaluated`].
pub(super) fn failed(e: impl std::fmt::Display) -> Unevaluated {
    tracing::error!(error = %e, "an OpenFeature evaluation failed");
    Unevaluated
}

/// A flag as OpenFeature sees it, borrowing from the evaluation.
#[derive(Debug)]
pub(crate) struct Resolution<'a> {
    pub key: &'a str,
    /// `None`: no value for the caller (its default applies).
    pub value: Option<Cow<'a, Value>>,
    /// One of the OpenFeature reasons (`STATIC`, `DEFAULT`, `TARGETING_MATCH`, `SPLIT`,
    /// `DISABLED`, `ERROR`, `UNKNOWN`), before staleness ([`when_stale`]).
    pub reason: &'static str,
    /// `None`: no variant.
    pub variant: Option<Cow<'a, str>>,
    /// An evaluation error: the OpenFeature code (`FLAG_NOT_FOUND`, `TYPE_MISMATCH`,
    /// `PARSE_ERROR`, `GENERAL`) and a message.
    pub error: Option<(&'static str, Cow<'a, str>)>,
    pub metadata: Metadata<'a>,
    /// How a typed resolver reads this engine's value.
    pub typing: Typing,
    /// Whether the flag is on: a flag that is off and has no value of the asked type is the
    /// caller's default, with no variant.
    pub enabled: bool,
}

/// How a typed resolver (flagd's `ResolveInt` and the like) reads an engine's value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Typing {
    /// A value of another type than the one asked for is the caller's default rather than a
    /// type mismatch (a disabled Flagsmith flag reads `false` whatever its type).
    pub lenient: bool,
    pub fractions: Fractions,
    /// The type the flag declares, which a bulk answer lists a failed flag with (its empty
    /// value), or leaves the flag out for.
    pub declared: Declared,
    /// A boolean resolver reads [`Resolution::enabled`], whatever the value (an Unleash
    /// toggle: its enabled bit is the boolean, its variant's payload the other types' value).
    pub enabled_as_bool: bool,
}

/// How an integer resolver reads a number with a fraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fractions {
    /// A type mismatch (Flagsmith values: only whole numbers are integers).
    Refused,
    /// Cut toward zero, as flagd (Go) reads every number as a float and converts it.
    Truncated,
}

/// The type a flag declares, beyond the value one evaluation gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Declared {
    /// Any: the flag has no declared type (a Flagsmith feature); a bulk answer lists it as is.
    Any,
    /// One of OpenFeature's types (flagd: its default variant's).
    Bool,
    String,
    Number,
    Object,
    /// None that OpenFeature's bulk answers carry (flagd: no default variant, or an array):
    /// a bulk answer leaves the flag out, as flagd does.
    Unlisted,
}

impl Declared {
    /// The declared type of a value (flagd: the default variant's).
    pub(crate) fn of(value: Option<&Value>) -> Declared {
        match value {
            Some(Value::Bool(_)) => Declared::Bool,
            Some(Value::String(_)) => Declared::String,
            Some(Value::Number(_)) => Declared::Number,
            Some(Value::Object(_)) => Declared::Object,
            _ => Declared::Unlisted,
        }
    }

    /// The empty value of the type, for a failed flag of a bulk answer.
    pub(crate) fn empty(self) -> Option<Value> {
        match self {
            Declared::Bool => Some(Value::Bool(false)),
            Declared::String => Some(Value::String(String::new())),
            Declared::Number => Some(Value::from(0.0)),
            Declared::Object => Some(Value::Object(Map::new())),
            Declared::Any | Declared::Unlisted => None,
        }
    }
}

/// A resolution's metadata, opaque to the front doors: either the source's own map (flagd:
/// the flag's over its set's, values keeping their JSON types), or fields the proxy derives
/// from the evaluation (Flagsmith: `flagsmithEnabled`, `flagsmithFeatureId`, and for server
/// keys `flagsmithReason`, `flagsmithSegment`), made only when written.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Metadata<'a>(Inner<'a>);

#[derive(Clone, Copy, Debug)]
enum Inner<'a> {
    /// None at all (an environment's answer for a flag it does not have).
    Absent,
    Map(&'a Map<String, Value>),
    Flagsmith {
        flag: &'a FlagResult<'a>,
        enabled: bool,
        server: bool,
    },
    /// An Unleash toggle's enabled bit, beside a value that may be its variant's payload.
    Unleash {
        enabled: bool,
    },
}

/// One derived metadata field's value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Meta<'a> {
    Bool(bool),
    Text(&'a str),
    /// A number as the source document wrote it.
    Number(&'a Value),
}

impl<'a> Metadata<'a> {
    /// The source's own metadata.
    pub(crate) fn map(map: &'a Map<String, Value>) -> Metadata<'a> {
        Metadata(Inner::Map(map))
    }

    /// No metadata: the answer carries none.
    pub(super) fn absent() -> Metadata<'a> {
        Metadata(Inner::Absent)
    }

    /// Whether there is no metadata at all (an OFREP failure then has no `metadata` member).
    pub(crate) fn is_absent(&self) -> bool {
        matches!(self.0, Inner::Absent)
    }

    /// A Flagsmith flag's derived fields (`server`: the caller holds a server key).
    pub(super) fn flagsmith(flag: &'a FlagResult<'a>, enabled: bool, server: bool) -> Metadata<'a> {
        Metadata(Inner::Flagsmith {
            flag,
            enabled,
            server,
        })
    }

    /// An Unleash toggle's derived field (`unleashEnabled`).
    pub(super) fn unleash(enabled: bool) -> Metadata<'a> {
        Metadata(Inner::Unleash { enabled })
    }

    /// The source's own map, when the metadata is one (else [`Metadata::fields`]).
    pub(crate) fn as_map(&self) -> Option<&'a Map<String, Value>> {
        match self.0 {
            Inner::Map(map) => Some(map),
            Inner::Flagsmith { .. } | Inner::Unleash { .. } | Inner::Absent => None,
        }
    }

    /// Whether the proxy derives these fields (rather than the source holding them): a bulk
    /// flagd answer sends derived ones only when asked.
    pub(crate) fn derived(&self) -> bool {
        matches!(self.0, Inner::Flagsmith { .. } | Inner::Unleash { .. })
    }

    /// The derived fields, in the order OFREP answers have always written them (none for a
    /// source's own map); [`Metadata::sorted_fields`] in name order, as a protobuf map is.
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&'static str, Meta<'a>)> {
        let fields = match self.0 {
            Inner::Map(_) | Inner::Absent => [None, None, None, None],
            Inner::Unleash { enabled } => [
                Some(("unleashEnabled", Meta::Bool(enabled))),
                None,
                None,
                None,
            ],
            Inner::Flagsmith {
                flag,
                enabled,
                server,
            } => {
                let feature_id = flag
                    .metadata
                    .and_then(|m| m.get("id"))
                    .filter(|id| id.is_number());
                let segment = match flag.reason {
                    Reason::TargetingMatch(text) if server => {
                        Some(text.split_once("segment=").map_or(text, |(_, s)| s))
                    }
                    _ => None,
                };
                [
                    feature_id.map(|id| ("flagsmithFeatureId", Meta::Number(id))),
                    Some(("flagsmithEnabled", Meta::Bool(enabled))),
                    server.then(|| ("flagsmithReason", Meta::Text(flag.reason.as_str()))),
                    segment.map(|s| ("flagsmithSegment", Meta::Text(s))),
                ]
            }
        };
        fields.into_iter().flatten()
    }
}

impl<'a> Metadata<'a> {
    /// The derived fields in name order.
    pub(crate) fn sorted_fields(&self) -> impl Iterator<Item = (&'static str, Meta<'a>)> {
        let mut slots: [Option<(&'static str, Meta<'a>)>; 4] = [None; 4];
        for (slot, field) in slots.iter_mut().zip(self.fields()) {
            *slot = Some(field);
        }
        slots.sort_by_key(|slot| slot.map(|(name, _)| name));
        slots.into_iter().flatten()
    }
}

impl<'a> Resolution<'a> {
    /// A flag the target does not hold, or the caller may not see: `FLAG_NOT_FOUND` saying
    /// `message`, with no value and no metadata at all.
    pub(super) fn not_found(key: &'a str, message: String) -> Resolution<'a> {
        Resolution {
            key,
            value: None,
            reason: "ERROR",
            variant: None,
            error: Some(("FLAG_NOT_FOUND", Cow::Owned(message))),
            metadata: Metadata::absent(),
            typing: Typing {
                lenient: false,
                fractions: Fractions::Refused,
                declared: Declared::Unlisted,
                enabled_as_bool: false,
            },
            enabled: false,
        }
    }

    /// The variant, or "" where there is none.
    pub(crate) fn variant_text(&self) -> &str {
        self.variant.as_deref().unwrap_or("")
    }
}

/// The reason sent: `STALE` in place of `reason` while the source is stale, for an answer that
/// carries a value. One without (a disabled flag: the caller's default applies) keeps its
/// reason: the Python and JS flagd providers return the caller's default only for `DISABLED`
/// (or `DEFAULT`) with an empty variant, and would otherwise return the empty wire value.
pub(crate) fn when_stale(reason: &'static str, stale: bool, has_value: bool) -> &'static str {
    if stale && has_value {
        "STALE"
    } else {
        reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_answers_say_so_unless_the_callers_default_applies() {
        assert_eq!(when_stale("STATIC", true, true), "STALE");
        assert_eq!(when_stale("DISABLED", true, true), "STALE");
        assert_eq!(when_stale("DISABLED", true, false), "DISABLED");
        assert_eq!(
            when_stale("TARGETING_MATCH", false, true),
            "TARGETING_MATCH"
        );
    }

    #[test]
    fn declared_types_have_their_empty_values() {
        assert_eq!(Declared::of(Some(&Value::Bool(true))), Declared::Bool);
        assert_eq!(
            Declared::of(Some(&serde_json::json!([1]))),
            Declared::Unlisted
        );
        assert_eq!(Declared::of(None), Declared::Unlisted);
        assert_eq!(Declared::Number.empty(), Some(Value::from(0.0)));
        assert_eq!(Declared::Any.empty(), None);
    }
}
