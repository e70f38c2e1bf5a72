//! One OpenFeature resolution, whatever engine answered it: key, value, variant, reason, error
//! and metadata (a Flagsmith flag's fields, or a flagd flag's metadata map), as every
//! OpenFeature front door answers it; and the OFREP object written straight to bytes in the
//! order `key, value, reason, variant, metadata` (a failure: `key, errorCode, errorDetails,
//! metadata`). The engines' mappings are beside it: `flagsmith.rs` (a Flagsmith flag) and
//! `flagd.rs` (a flagd flag).
//!
//! While the source is stale (`store::StaleRule` for environments, a polled flag source past
//! its period plus grace for flag sets) an answer with a value says `STALE` instead
//! ([`when_stale`]); the caching providers keep nothing but `STATIC` answers.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::canonical;

/// A flag as OpenFeature sees it, borrowing from the evaluation.
#[derive(Debug)]
pub(crate) struct Resolution<'a> {
    pub key: &'a str,
    /// `None`: no value for the caller (its default applies).
    pub value: Option<Cow<'a, Value>>,
    /// One of the OpenFeature reasons (`STATIC`, `DEFAULT`, `TARGETING_MATCH`, `SPLIT`,
    /// `DISABLED`, `ERROR`, `UNKNOWN`, `STALE`).
    pub reason: &'static str,
    /// `None`: no variant (a flagd answer without one; a Flagsmith flag always has one).
    pub variant: Option<Cow<'a, str>>,
    /// An evaluation error: the OpenFeature code (`FLAG_NOT_FOUND`, `TYPE_MISMATCH`,
    /// `PARSE_ERROR`, `GENERAL`) and a message.
    pub error: Option<(&'static str, Cow<'a, str>)>,
    pub metadata: Metadata<'a>,
}

/// A resolution's metadata, as its engine has it.
#[derive(Debug)]
pub(crate) enum Metadata<'a> {
    Flagsmith(FlagsmithMetadata<'a>),
    /// flagd: the flag's metadata over its set's, values keeping their JSON types.
    Map(&'a Map<String, Value>),
}

/// What a Flagsmith flag adds: its on/off bit and where the answer came from.
#[derive(Debug)]
pub(crate) struct FlagsmithMetadata<'a> {
    /// The on/off bit (`flagsmithEnabled`).
    pub enabled: bool,
    /// `flagsmithFeatureId`, when the document gives a number.
    pub feature_id: Option<&'a Value>,
    /// Server keys only: the engine's reason text (`flagsmithReason`) and, on a targeting
    /// match, the segment (`flagsmithSegment`).
    pub engine_reason: Option<&'a str>,
    pub segment: Option<&'a str>,
}

impl<'a> Resolution<'a> {
    /// The Flagsmith on/off bit; a flagd flag is "on" unless disabled.
    pub(crate) fn enabled(&self) -> bool {
        match &self.metadata {
            Metadata::Flagsmith(m) => m.enabled,
            Metadata::Map(_) => self.reason != "DISABLED",
        }
    }

    pub(crate) fn feature_id(&self) -> Option<&'a Value> {
        match &self.metadata {
            Metadata::Flagsmith(m) => m.feature_id,
            Metadata::Map(_) => None,
        }
    }

    pub(crate) fn engine_reason(&self) -> Option<&'a str> {
        match &self.metadata {
            Metadata::Flagsmith(m) => m.engine_reason,
            Metadata::Map(_) => None,
        }
    }

    pub(crate) fn segment(&self) -> Option<&'a str> {
        match &self.metadata {
            Metadata::Flagsmith(m) => m.segment,
            Metadata::Map(_) => None,
        }
    }

    /// The variant, or "" where there is none.
    pub(crate) fn variant_text(&self) -> &str {
        self.variant.as_deref().unwrap_or("")
    }
}

/// Writes one OFREP evaluation object.
pub(crate) fn write_flag(out: &mut Vec<u8>, flag: &Resolution<'_>) {
    out.extend_from_slice(b"{\"key\":");
    crate::json::write(out, flag.key);
    if let Some((code, details)) = &flag.error {
        out.extend_from_slice(b",\"errorCode\":");
        crate::json::write(out, *code);
        out.extend_from_slice(b",\"errorDetails\":");
        crate::json::write(out, details.as_ref());
        write_metadata(out, &flag.metadata);
        out.push(b'}');
        return;
    }
    if let Some(value) = &flag.value {
        out.extend_from_slice(b",\"value\":");
        // Canonical member order and number spelling: the body must depend only on what the
        // content revision hashes, not on how the document happened to be written.
        canonical::write_with(out, value.as_ref(), canonical::Numbers::Typed);
    }
    out.extend_from_slice(b",\"reason\":\"");
    out.extend_from_slice(flag.reason.as_bytes());
    out.push(b'"');
    if let Some(variant) = &flag.variant {
        out.extend_from_slice(b",\"variant\":");
        crate::json::write(out, variant.as_ref());
    }
    write_metadata(out, &flag.metadata);
    out.push(b'}');
}

fn write_metadata(out: &mut Vec<u8>, metadata: &Metadata<'_>) {
    out.extend_from_slice(b",\"metadata\":");
    match metadata {
        Metadata::Map(map) => {
            out.push(b'{');
            for (i, (name, value)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                crate::json::write(out, name.as_str());
                out.push(b':');
                canonical::write_with(out, value, canonical::Numbers::Typed);
            }
            out.push(b'}');
        }
        Metadata::Flagsmith(m) => {
            out.push(b'{');
            if let Some(id) = m.feature_id {
                out.extend_from_slice(b"\"flagsmithFeatureId\":");
                crate::json::write(out, id);
                out.push(b',');
            }
            out.extend_from_slice(if m.enabled {
                b"\"flagsmithEnabled\":true"
            } else {
                b"\"flagsmithEnabled\":false"
            });
            if let Some(reason) = m.engine_reason {
                out.extend_from_slice(b",\"flagsmithReason\":");
                crate::json::write(out, reason);
            }
            if let Some(segment) = m.segment {
                out.extend_from_slice(b",\"flagsmithSegment\":");
                crate::json::write(out, segment);
            }
            out.push(b'}');
        }
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
    fn failures_are_ofrep_failure_objects() {
        let metadata = Map::new();
        let r = Resolution {
            key: "k",
            value: None,
            reason: "ERROR",
            variant: None,
            error: Some(("FLAG_NOT_FOUND", Cow::Borrowed("flag: k not found"))),
            metadata: Metadata::Map(&metadata),
        };
        let mut out = Vec::new();
        write_flag(&mut out, &r);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"key":"k","errorCode":"FLAG_NOT_FOUND","errorDetails":"flag: k not found","metadata":{}}"#
        );
    }
}
