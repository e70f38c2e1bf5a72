//! Every flag of an environment, encoded for a bulk answer (flagd's `ResolveAll`) from what the
//! snapshot prepared.
//!
//! What does not depend on the caller is prepared once per snapshot (`snapshot/by_source`):
//! per value source its encoded value and, for a multivariate variant, its variant name; per
//! flag whether each kind of key sees it, whether it can vary (`STATIC` or `DEFAULT`) and its
//! place in the key-sorted map. An answer then costs the evaluation, a copy per flag and its
//! reason. A flag the table cannot place (a document whose override is named unlike its
//! feature) takes the general way: mapped and encoded on the spot, the same bytes. Only one
//! encoding is prepared ([`Encoding::PREPARED`]); another is mapped and encoded per flag.

use std::borrow::Cow;

use flagpole_engine::value::json_truthy;
use flagpole_engine::{FlagResult, Reason, SourcedValue, VariantChoice};

use super::{reason, resolve, value, variant_text};
use crate::keys::KeyKind;
use crate::openfeature::resolution::{when_stale, Metadata};
use crate::openfeature::{Encoded, Encoding};
use crate::snapshot::by_source::{BySource, Prepared};
use crate::snapshot::Snapshot;

/// What shapes the pieces besides the flags.
#[derive(Clone, Copy, Debug)]
pub(in crate::openfeature) struct Options {
    pub kind: KeyKind,
    /// `ofrep.parse_json_strings`.
    pub parse_json_strings: bool,
    /// The environment's document is stale: answers with a value say `STALE`.
    pub stale: bool,
}

/// One source's prepared bytes: a flags byte (1: has a value, 2: enabled), the variant's name
/// (length first; empty for a context's own value, whose variant depends on the evaluation),
/// then the value as `E` encodes it.
fn prepare<E: Encoding>(out: &mut Vec<u8>, source: &SourcedValue<'_>, parse_json_strings: bool) {
    let enabled = json_truthy(source.enabled);
    let value = value(enabled, source.value, parse_json_strings);
    let mut field = Vec::new();
    E::value(&mut field, value.as_deref());
    out.push(u8::from(!field.is_empty()) | u8::from(enabled) << 1);
    let variant = source
        .variant_key
        .map(|key| variant_text(enabled, VariantChoice::Key(key), true, source.value));
    let variant = variant.as_deref().unwrap_or("");
    write_varint(out, variant.len() as u64);
    out.extend_from_slice(variant.as_bytes());
    out.extend_from_slice(&field);
}

/// The pieces of these evaluated flags a key of `options.kind` sees, in key order (the first of
/// a repeated name wins, as the result's order has it).
pub(in crate::openfeature) fn pieces<'a, E: Encoding>(
    snapshot: &'a Snapshot,
    flags: &'a [FlagResult<'a>],
    options: Options,
) -> Vec<Encoded<'a>> {
    let kind = options.kind;
    let table = E::PREPARED.then(|| snapshot.by_source(prepare::<E>, options.parse_json_strings));
    let table = table.filter(|t| t.has_setting(options.parse_json_strings));
    // By rank (the key-sorted place). `rest`: what the table cannot place.
    let mut slots: Vec<Option<Encoded<'a>>> = Vec::new();
    slots.resize_with(table.map_or(0, BySource::names), || None);
    let mut rest = Vec::new();
    for flag in flags {
        let prepared = table.and_then(|t| t.get(kind, flag));
        let (piece, rank) = match prepared {
            Some(None) => continue,
            Some(Some(prepared)) => (
                piece::<E>(snapshot, flag, Some(prepared), options),
                Some(prepared.rank),
            ),
            None if !snapshot.is_visible(kind, flag.key, flag.enabled) => continue,
            None => (
                piece::<E>(snapshot, flag, None, options),
                table.and_then(|t| t.rank(flag.key)),
            ),
        };
        match rank.and_then(|r| slots.get_mut(r as usize)) {
            Some(slot) => {
                if slot.is_none() {
                    *slot = Some(piece);
                }
            }
            None => rest.push(piece),
        }
    }
    let mut pieces: Vec<Encoded<'a>> = slots.into_iter().flatten().collect();
    if !rest.is_empty() {
        pieces.extend(rest);
        pieces.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
        pieces.dedup_by(|a, b| a.key == b.key);
    }
    pieces
}

/// A flag's piece: from its prepared bytes, or mapped on the spot.
fn piece<'a, E: Encoding>(
    snapshot: &Snapshot,
    flag: &'a FlagResult<'a>,
    prepared: Option<Prepared<'a>>,
    options: Options,
) -> Encoded<'a> {
    let split = matches!(flag.reason, Reason::Split(_));
    let server = options.kind == KeyKind::Server;
    if let Some(prepared) = prepared {
        // A variant's prepared name is its split's; a variant source is always one.
        if flag.source().variant.is_none() || split {
            let bits = prepared.bytes[0];
            let (has_value, enabled) = (bits & 1 != 0, bits & 2 != 0);
            let (length, rest) = read_varint(&prepared.bytes[1..]);
            let (variant, value) = rest.split_at(length);
            let defaulted = !has_value && !enabled;
            let variant = if defaulted {
                Cow::Borrowed(&b""[..])
            } else if variant.is_empty() {
                match variant_text(enabled, flag.variant, split, flag.value) {
                    Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
                    Cow::Owned(text) => Cow::Owned(text.into_bytes()),
                }
            } else {
                Cow::Borrowed(variant)
            };
            return Encoded {
                key: flag.key,
                reason: when_stale(
                    reason(enabled, &flag.reason, prepared.can_vary),
                    options.stale,
                    !defaulted,
                ),
                variant,
                value: Cow::Borrowed(value),
                metadata: Metadata::flagsmith(flag, enabled, server),
            };
        }
    }
    let can_vary = match prepared {
        Some(prepared) => prepared.can_vary,
        None => snapshot.env.can_vary(flag.key),
    };
    let r = resolve(flag, options.kind, options.parse_json_strings, can_vary);
    crate::openfeature::encode::<E>(r, options.stale)
}

/// A protobuf-style varint: the length prefix of a prepared variant name.
fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn read_varint(bytes: &[u8]) -> (usize, &[u8]) {
    let (mut value, mut shift) = (0usize, 0);
    for (i, &b) in bytes.iter().enumerate() {
        value |= usize::from(b & 0x7f) << shift;
        if b < 0x80 {
            return (value, &bytes[i + 1..]);
        }
        shift += 7;
    }
    (0, &[])
}
