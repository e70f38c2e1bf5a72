//! `ResolveAll`: every flag a key may see, written straight to protobuf bytes (or Connect's
//! JSON) from the evaluation, as OFREP bulk writes JSON, instead of through prost messages.
//!
//! What does not depend on the caller is prepared once per snapshot (`snapshot/by_source`):
//! per value source its encoded value and, for a multivariate variant, its variant name; per
//! flag whether each kind of key sees it, whether it can vary (`STATIC` or `DEFAULT`) and its
//! place in the key-sorted map. An answer then costs the evaluation, a copy per flag and its
//! reason. A flag the table cannot place (a document whose override is named unlike its
//! feature) takes the general way: mapped and encoded on the spot, the same bytes.
//!
//! While the environment's document is stale a flag with a value says `STALE` (a flag on the
//! caller's default keeps `DISABLED`), as the single resolvers answer.
//!
//! Per-flag metadata (`flagsmithEnabled`, `flagsmithFeatureId`, and for server keys
//! `flagsmithReason`, `flagsmithSegment`) is sent only when the call asks for it with the
//! `flagpole-metadata: true` header: a `Struct` per flag is most of what a provider pays to
//! decode an answer, and `flagsmithEnabled` and the feature id say nothing the reason and the
//! key do not. The single-flag resolvers always send it.

use std::borrow::Cow;

use bytes::Bytes;
use flagpole_engine::value::json_truthy;
use flagpole_engine::{FlagResult, Identity, Reason, SourcedValue, VariantChoice};
use flagpole_flagd::{Context, Evaluation};
use prost_types::Struct;
use serde_json::{Map, Value};
use tonic::metadata::MetadataMap;
use tonic::Status;

use super::wire::{self, LEN};
use super::{proto, resolve, sets};
use crate::api::authorise::Authorised;
use crate::api::openfeature;
use crate::api::openfeature::flagsmith;
use crate::api::openfeature::mapping::{self, Resolution};
use crate::api::AppState;
use crate::flagsets::FlagView;
use crate::snapshot::by_source::{BySource, Prepared};
use crate::snapshot::{KeyKind, Snapshot};

/// The request header (gRPC metadata) that asks for each flag's metadata.
pub(super) const METADATA_HEADER: &str = "flagpole-metadata";

/// How the answer is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// `ResolveAllResponse` as protobuf; `v2` marks `variant` optional.
    Proto { v2: bool },
    /// Connect's JSON (protobuf's JSON mapping).
    Json,
}

/// What shapes an answer besides the flags.
#[derive(Clone, Copy, Debug)]
pub(super) struct Options {
    pub form: Form,
    pub metadata: bool,
    /// `ofrep.parse_json_strings`.
    pub parse_json_strings: bool,
    /// The environment's document is stale: answers with a value say `STALE`.
    pub stale: bool,
}

/// Whether the call asks for per-flag metadata (`flagpole-metadata: true` or `1`).
pub(super) fn asks_metadata(metadata: &MetadataMap) -> bool {
    metadata
        .get(METADATA_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true") || v.trim() == "1")
}

/// The answer to a `ResolveAll` call.
pub(super) fn answer(
    state: &AppState,
    authorised: &Authorised,
    context: Option<&Struct>,
    form: Form,
    metadata: bool,
) -> Result<Bytes, Status> {
    let (snapshot, kind) = (&authorised.snapshot, authorised.kind);
    let context = context.map(proto::to_json);
    let input = resolve::input(state, context.as_ref())?;
    authorised.env.usage.count(resolve::usage_resource(&input));
    let traits = input.engine_traits();
    let identity = input.identifier.map(|id| Identity::new(id, &traits));
    let result = match &identity {
        Some(identity) => snapshot.env.evaluate(Some(identity)),
        None => snapshot.env.own_flags(),
    }
    .map_err(resolve::evaluation_failed)?;
    let options = Options {
        form,
        metadata,
        parse_json_strings: state.config.ofrep.parse_json_strings,
        stale: authorised.env.is_stale(),
    };
    Ok(write(snapshot, kind, &result.flags, options).into())
}

/// One source's prepared bytes: a flags byte (1: has a value, 2: enabled), the variant's name
/// (length first; empty for a context's own value, whose variant depends on the evaluation),
/// then the value's `AnyFlag` field.
fn prepare(out: &mut Vec<u8>, source: &SourcedValue<'_>, parse_json_strings: bool) {
    let enabled = json_truthy(source.enabled);
    let value = flagsmith::value(enabled, source.value, parse_json_strings);
    let mut field = Vec::new();
    proto_value(&mut field, value.as_deref());
    out.push(u8::from(!field.is_empty()) | u8::from(enabled) << 1);
    let variant = source
        .variant_key
        .map(|key| flagsmith::variant_text(enabled, VariantChoice::Key(key), true, source.value));
    let variant = variant.as_deref().unwrap_or("");
    wire::varint(out, variant.len() as u64);
    out.extend_from_slice(variant.as_bytes());
    out.extend_from_slice(&field);
}

/// One flag of the answer, whichever engine gave it.
struct Piece<'a> {
    key: &'a str,
    reason: &'static str,
    /// Empty when the caller's default applies (disabled, no value).
    variant: Cow<'a, [u8]>,
    /// The value's part of the flag: an `AnyFlag` field, or a JSON member with its comma.
    value: Cow<'a, [u8]>,
    /// Where its metadata comes from, written only when asked for.
    metadata: Metadata<'a>,
}

/// A flag's metadata: a Flagsmith flag's, mapped when written, or a flag set's flag's own.
enum Metadata<'a> {
    Flagsmith {
        flag: &'a FlagResult<'a>,
        can_vary: bool,
    },
    Object(&'a Map<String, Value>),
}

/// The answer's bytes for these evaluated flags.
pub(super) fn write(
    snapshot: &Snapshot,
    kind: KeyKind,
    flags: &[FlagResult<'_>],
    options: Options,
) -> Vec<u8> {
    let table = snapshot.by_source(prepare, options.parse_json_strings);
    let table = table
        .has_setting(options.parse_json_strings)
        .then_some(table);
    // By rank (the key-sorted place): a map's entries go out sorted, the first of a repeated
    // name wins (as the result's order has it). `rest`: what the table cannot place.
    let mut slots: Vec<Option<Piece<'_>>> = Vec::new();
    slots.resize_with(table.map_or(0, BySource::names), || None);
    let mut rest = Vec::new();
    for flag in flags {
        let prepared = table.and_then(|t| t.get(kind, flag));
        let (piece, rank) = match prepared {
            Some(None) => continue,
            Some(Some(prepared)) => (
                piece(snapshot, kind, flag, Some(prepared), options),
                Some(prepared.rank),
            ),
            None if !snapshot.is_visible(kind, flag.key, flag.enabled) => continue,
            None => (
                piece(snapshot, kind, flag, None, options),
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
    let mut pieces: Vec<Piece<'_>> = slots.into_iter().flatten().collect();
    if !rest.is_empty() {
        pieces.extend(rest);
        pieces.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
        pieces.dedup_by(|a, b| a.key == b.key);
    }
    written(&pieces, kind, None, options)
}

/// The answer's bytes for these pieces, in their order; `set`: the response's own `metadata`
/// (flag sets; written even when empty, as flagd does).
fn written(
    pieces: &[Piece<'_>],
    kind: KeyKind,
    set: Option<&Map<String, Value>>,
    options: Options,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + pieces.len() * 48);
    match options.form {
        Form::Proto { v2 } => write_proto(&mut out, pieces, kind, v2, options),
        Form::Json => write_json(&mut out, pieces, kind, options),
    }
    if let Some(set) = set {
        match options.form {
            Form::Proto { .. } => wire::nested(&mut out, 2, |body| wire::object(body, set)),
            Form::Json => {
                // Into the object closed last: `…}}` becomes `…},"metadata":{…}}`.
                out.pop();
                out.extend_from_slice(b",\"metadata\":");
                crate::json::write(&mut out, &proto::to_json(&proto::object(set)));
                out.push(b'}');
            }
        }
    }
    out
}

/// The answer to a `ResolveAll` call on a flag set, as flagd answers it: every flag whose
/// default variant is a boolean, string, number or object (flagd's types), a disabled one
/// with reason `DISABLED` and no value, one whose evaluation failed with reason `ERROR` and the
/// empty value of its default variant's type; a flag without a default variant is left out.
/// Each flag carries its metadata (the file's own, so always
/// sent, unlike Flagsmith's derived fields); the response's `metadata` is the selector the
/// call named (`selected`), as flagd gives it.
pub(super) fn flag_sets(
    view: &FlagView,
    context: Option<&Struct>,
    form: Form,
    selected: &Map<String, Value>,
) -> Bytes {
    let attributes = sets::attributes(context);
    let context = Context::new(&attributes, sets::now());
    let options = Options {
        form,
        metadata: true,
        parse_json_strings: false,
        stale: view.stale(),
    };
    // With each flag, the empty value of its default variant's type: a failed evaluation's.
    let mut evaluations: Vec<(&str, Evaluation<'_>, Value)> = Vec::with_capacity(view.set.len());
    view.set.evaluate_each(&context, |flag, evaluation| {
        let default = flag.default_variant().and_then(|v| flag.variants().get(v));
        let empty = match default {
            Some(Value::Bool(_)) => Value::Bool(false),
            Some(Value::String(_)) => Value::String(String::new()),
            Some(Value::Number(_)) => Value::from(0.0),
            Some(Value::Object(_)) => Value::Object(Map::new()),
            _ => return,
        };
        evaluations.push((flag.key(), evaluation, empty));
    });
    // As every OpenFeature door maps a flagd answer (staleness applied here, with the value).
    let resolutions: Vec<Resolution<'_>> = evaluations
        .iter()
        .map(|(key, evaluation, _)| openfeature::flagd::resolve(key, evaluation, false))
        .collect();
    let pieces: Vec<Piece<'_>> = resolutions
        .iter()
        .zip(&evaluations)
        .map(|(r, (_, evaluation, empty))| {
            let shown = match r.error {
                Some(_) => Some(empty),
                None => r.value.as_deref(),
            };
            let mut value = Vec::new();
            match form {
                Form::Proto { .. } => proto_value(&mut value, shown),
                Form::Json => json_value(&mut value, shown),
            }
            // No value of its own (the caller's default or a failure): no variant, no STALE.
            let defaulted = value.is_empty() || r.error.is_some();
            let variant = if defaulted { "" } else { r.variant_text() };
            Piece {
                key: r.key,
                reason: mapping::when_stale(r.reason, options.stale, !defaulted),
                variant: Cow::Borrowed(variant.as_bytes()),
                value: Cow::Owned(value),
                metadata: Metadata::Object(evaluation.metadata),
            }
        })
        .collect();
    written(&pieces, KeyKind::Client, Some(selected), options).into()
}

/// A flag's piece: from its prepared bytes (protobuf only), or mapped on the spot.
fn piece<'a>(
    snapshot: &Snapshot,
    kind: KeyKind,
    flag: &'a FlagResult<'a>,
    prepared: Option<Prepared<'a>>,
    options: Options,
) -> Piece<'a> {
    let split = matches!(flag.reason, Reason::Split(_));
    if let (Some(prepared), Form::Proto { .. }) = (prepared, options.form) {
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
                match flagsmith::variant_text(enabled, flag.variant, split, flag.value) {
                    Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
                    Cow::Owned(text) => Cow::Owned(text.into_bytes()),
                }
            } else {
                Cow::Borrowed(variant)
            };
            return Piece {
                key: flag.key,
                reason: mapping::when_stale(
                    flagsmith::reason(enabled, &flag.reason, prepared.can_vary),
                    options.stale,
                    !defaulted,
                ),
                variant,
                value: Cow::Borrowed(value),
                metadata: Metadata::Flagsmith {
                    flag,
                    can_vary: prepared.can_vary,
                },
            };
        }
    }
    let can_vary = match prepared {
        Some(prepared) => prepared.can_vary,
        None => snapshot.env.can_vary(flag.key),
    };
    let r = flagsmith::resolve(flag, kind, options.parse_json_strings, can_vary);
    let mut value = Vec::new();
    match options.form {
        Form::Proto { .. } => proto_value(&mut value, r.value.as_deref()),
        Form::Json => json_value(&mut value, r.value.as_deref()),
    }
    let defaulted = value.is_empty() && !r.enabled();
    let variant = if defaulted {
        Cow::Borrowed(&b""[..])
    } else {
        match r.variant.clone().unwrap_or(Cow::Borrowed("")) {
            Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
            Cow::Owned(text) => Cow::Owned(text.into_bytes()),
        }
    };
    Piece {
        key: flag.key,
        reason: mapping::when_stale(r.reason, options.stale, !defaulted),
        variant,
        value: Cow::Owned(value),
        metadata: Metadata::Flagsmith { flag, can_vary },
    }
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

/// The value's `AnyFlag` oneof field (nothing when flagd's types have none for it: an array).
fn proto_value(out: &mut Vec<u8>, value: Option<&Value>) {
    match value {
        Some(Value::Bool(b)) => wire::bool_field(out, 3, *b),
        Some(Value::String(s)) => wire::bytes_field(out, 4, s.as_bytes()),
        Some(Value::Number(n)) => wire::double_field(out, 5, wire::number(n)),
        Some(Value::Object(o)) => wire::nested(out, 6, |body| wire::object(body, o)),
        _ => {}
    }
}

/// The value's JSON member, `,"boolValue":true` (nothing for an array).
fn json_value(out: &mut Vec<u8>, value: Option<&Value>) {
    match value {
        Some(Value::Bool(b)) => {
            out.extend_from_slice(b",\"boolValue\":");
            crate::json::write(out, b);
        }
        Some(Value::String(s)) => {
            out.extend_from_slice(b",\"stringValue\":");
            crate::json::write(out, s);
        }
        Some(Value::Number(n)) => {
            out.extend_from_slice(b",\"doubleValue\":");
            let number = serde_json::Number::from_f64(wire::number(n));
            crate::json::write(out, &number.map_or(Value::Null, Value::Number));
        }
        Some(Value::Object(o)) => {
            // Through protobuf's number type, as the binary form carries it.
            out.extend_from_slice(b",\"objectValue\":");
            crate::json::write(out, &proto::to_json(&proto::object(o)));
        }
        _ => {}
    }
}

/// A flag's metadata members, in key order (a `Struct` is a sorted map).
fn metadata<'a>(r: &Resolution<'a>) -> [(&'static str, Option<Meta<'a>>); 4] {
    [
        ("flagsmithEnabled", Some(Meta::Bool(r.enabled()))),
        (
            "flagsmithFeatureId",
            r.feature_id().and_then(Value::as_f64).map(Meta::Number),
        ),
        ("flagsmithReason", r.engine_reason().map(Meta::Text)),
        ("flagsmithSegment", r.segment().map(Meta::Text)),
    ]
}

enum Meta<'a> {
    Bool(bool),
    Number(f64),
    Text(&'a str),
}

fn resolution<'a>(
    flag: &'a FlagResult<'a>,
    can_vary: bool,
    kind: KeyKind,
    options: Options,
) -> Resolution<'a> {
    flagsmith::resolve(flag, kind, options.parse_json_strings, can_vary)
}

/// A Flagsmith flag's metadata members as a `Struct`'s body.
fn proto_metadata(meta: &mut Vec<u8>, r: &Resolution<'_>) {
    for (name, value) in metadata(r) {
        let Some(value) = value else { continue };
        wire::nested(meta, 1, |entry| {
            wire::bytes_field(entry, 1, name.as_bytes());
            wire::nested(entry, 2, |body| match value {
                Meta::Bool(b) => wire::bool_field(body, 4, b),
                Meta::Number(n) => wire::double_field(body, 2, n),
                Meta::Text(s) => wire::bytes_field(body, 3, s.as_bytes()),
            });
        });
    }
}

/// `ResolveAllResponse`: field 1, a map entry per flag (key 1, `AnyFlag` 2); the response's
/// metadata (field 2) is written by the caller.
fn write_proto(out: &mut Vec<u8>, pieces: &[Piece<'_>], kind: KeyKind, v2: bool, options: Options) {
    let mut meta = Vec::new();
    for p in pieces {
        let key = p.key.as_bytes();
        meta.clear();
        match (&p.metadata, options.metadata) {
            (_, false) => {}
            (Metadata::Object(map), true) => wire::object(&mut meta, map),
            (Metadata::Flagsmith { flag, can_vary }, true) => {
                proto_metadata(&mut meta, &resolution(flag, *can_vary, kind, options));
            }
        }
        // v1's `variant` is a plain string (left out when empty), v2's is `optional`.
        let variant = v2 || !p.variant.is_empty();
        let flag_len = wire::len_field_size(p.reason.len())
            + if variant {
                wire::len_field_size(p.variant.len())
            } else {
                0
            }
            + p.value.len()
            + if options.metadata {
                wire::len_field_size(meta.len())
            } else {
                0
            };
        let entry_len = if key.is_empty() {
            0
        } else {
            wire::len_field_size(key.len())
        } + wire::len_field_size(flag_len);
        wire::key(out, 1, LEN);
        wire::varint(out, entry_len as u64);
        if !key.is_empty() {
            wire::bytes_field(out, 1, key);
        }
        wire::key(out, 2, LEN);
        wire::varint(out, flag_len as u64);
        wire::bytes_field(out, 1, p.reason.as_bytes());
        if variant {
            wire::bytes_field(out, 2, &p.variant);
        }
        out.extend_from_slice(&p.value);
        if options.metadata {
            wire::bytes_field(out, 7, &meta);
        }
    }
}

/// `{"flags":{key:{"reason","variant",value,"metadata"}}}` (protobuf's JSON mapping).
fn write_json(out: &mut Vec<u8>, pieces: &[Piece<'_>], kind: KeyKind, options: Options) {
    out.extend_from_slice(b"{\"flags\":{");
    for (i, p) in pieces.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::json::write(out, p.key);
        out.extend_from_slice(b":{\"reason\":\"");
        out.extend_from_slice(p.reason.as_bytes());
        out.extend_from_slice(b"\",\"variant\":");
        crate::json::write(out, &*String::from_utf8_lossy(&p.variant));
        out.extend_from_slice(&p.value);
        if let (true, Metadata::Object(map)) = (options.metadata, &p.metadata) {
            out.extend_from_slice(b",\"metadata\":");
            crate::json::write(out, &proto::to_json(&proto::object(map)));
        }
        if let (true, Metadata::Flagsmith { flag, can_vary }) = (options.metadata, &p.metadata) {
            out.extend_from_slice(b",\"metadata\":{");
            let mut first = true;
            for (name, value) in metadata(&resolution(flag, *can_vary, kind, options)) {
                let Some(value) = value else { continue };
                if !first {
                    out.push(b',');
                }
                first = false;
                crate::json::write(out, name);
                out.push(b':');
                match value {
                    Meta::Bool(b) => crate::json::write(out, &b),
                    Meta::Number(n) => crate::json::write(out, &proto::number_json(n)),
                    Meta::Text(s) => crate::json::write(out, s),
                }
            }
            out.push(b'}');
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests;
