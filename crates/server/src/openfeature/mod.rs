//! The vendor-neutral OpenFeature layer: every OpenFeature front door (OFREP, flagd's
//! evaluation API, their change streams) resolves through it, and none of them names an engine.
//!
//! A front door admits a call (a key's environment, or the flag set a selector picks) and gets
//! a [`Target`]; it asks the target to prepare the caller's context ([`Caller`]), for the
//! answer's tag, for one flag or every flag as a [`Resolution`] (value, variant, reason, error
//! code, metadata, typing rules) or as [`Encoded`] pieces of a bulk answer, for the answer's
//! own metadata and its change stream; [`changes`] says which flags changed between two
//! revisions. Behind it the engines sit side by side, each mapped into the same answer:
//! `flagsmith/` (a Flagsmith environment), `flagd.rs` (a flagd flag set) and `unleash.rs` (the
//! Unleash toggles a token opens).

pub(crate) mod changes;
mod flagd;
mod flagsmith;
mod resolution;
mod tag;
mod target;
mod unleash;

use std::borrow::Cow;

use serde_json::Value;

pub(crate) use resolution::Refusal;
pub(crate) use resolution::{when_stale, Fractions, Meta, Metadata, Resolution};
#[cfg(test)]
pub(crate) use resolution::{Declared, Typing};
pub(crate) use target::{Caller, StreamOf, Target};
pub(crate) use unleash::NotLoaded;

/// How a front door encodes a flag's value in its bulk answer.
pub(crate) trait Encoding {
    /// Whether answers may be assembled from values encoded once per environment revision.
    /// The snapshot keeps one such table, so only one encoding may say so.
    const PREPARED: bool;

    /// Writes the value's part of a flag: nothing when the door's types have none for it (or
    /// there is no value).
    fn value(out: &mut Vec<u8>, value: Option<&Value>);
}

/// One flag of a bulk answer, its value already encoded.
#[derive(Debug)]
pub(crate) struct Encoded<'a> {
    pub key: &'a str,
    /// With staleness applied.
    pub reason: &'static str,
    /// Empty when the caller's default applies (no value of its own, or a failure).
    pub variant: Cow<'a, [u8]>,
    /// As the door's [`Encoding`] wrote it.
    pub value: Cow<'a, [u8]>,
    pub metadata: Metadata<'a>,
}

/// A resolution as a bulk answer's piece: a failed flag carries its declared type's empty
/// value; a flag with no value of its own (or a failure) no variant and no `STALE`.
fn encode<E: Encoding>(r: Resolution<'_>, stale: bool) -> Encoded<'_> {
    let empty;
    let shown = match r.error {
        Some(_) => {
            empty = r.typing.declared.empty();
            empty.as_ref()
        }
        None => r.value.as_deref(),
    };
    let mut value = Vec::new();
    E::value(&mut value, shown);
    let defaulted = r.error.is_some() || (value.is_empty() && !r.enabled);
    let variant = match r.variant {
        _ if defaulted => Cow::Borrowed(&b""[..]),
        None => Cow::Borrowed(&b""[..]),
        Some(Cow::Borrowed(text)) => Cow::Borrowed(text.as_bytes()),
        Some(Cow::Owned(text)) => Cow::Owned(text.into_bytes()),
    };
    Encoded {
        key: r.key,
        reason: when_stale(r.reason, stale, !defaulted),
        variant,
        value: Cow::Owned(value),
        metadata: r.metadata,
    }
}
