//! `ResolveAll`: every flag a caller may see, written straight to protobuf bytes (or Connect's
//! JSON) from the OpenFeature layer's encoded pieces, as OFREP bulk writes JSON, instead of
//! through prost messages. The layer assembles an environment's answer from values encoded once
//! per snapshot in this door's protobuf form ([`ProtoValue`] is the prepared encoding), so an
//! answer costs the evaluation, a copy per flag and its reason.
//!
//! While the source is stale a flag with a value says `STALE` (a flag on the caller's default
//! keeps `DISABLED`), as the single resolvers answer.
//!
//! Metadata the proxy derives (a Flagsmith flag's `flagsmithEnabled`, `flagsmithFeatureId`, and
//! for server keys `flagsmithReason`, `flagsmithSegment`) is sent only when the call asks for it
//! with the `flagpole-metadata: true` header: a `Struct` per flag is most of what a provider
//! pays to decode an answer, and those fields say nothing the reason and the key do not. A flag
//! set's flags always carry their own metadata (the file's, as flagd sends it). The answer's
//! own `metadata` is the target's (a flag set's selector, an environment's version).

use bytes::Bytes;
use prost_types::Struct;
use serde_json::{Map, Value};
use tonic::metadata::MetadataMap;
use tonic::Status;

use super::wire::{self, LEN};
use super::{proto, resolve};
use crate::api::AppState;
use crate::openfeature::{Caller, Encoded, Encoding, Meta, Metadata, Target};

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

/// Whether the call asks for per-flag metadata (`flagpole-metadata: true` or `1`).
pub(super) fn asks_metadata(metadata: &MetadataMap) -> bool {
    metadata
        .get(METADATA_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true") || v.trim() == "1")
}

/// A value as an `AnyFlag` field: the encoding the layer prepares per snapshot.
struct ProtoValue;

impl Encoding for ProtoValue {
    const PREPARED: bool = true;

    fn value(out: &mut Vec<u8>, value: Option<&Value>) {
        proto_value(out, value);
    }
}

/// A value as a member of Connect's JSON.
struct JsonValue;

impl Encoding for JsonValue {
    const PREPARED: bool = false;

    fn value(out: &mut Vec<u8>, value: Option<&Value>) {
        json_value(out, value);
    }
}

/// The answer to a `ResolveAll` call on `target`; `asked`: derived metadata asked for.
pub(super) fn answer(
    state: &AppState,
    target: &Target,
    context: Option<&Struct>,
    form: Form,
    asked: bool,
) -> Result<Bytes, Status> {
    let context = context.map(proto::to_json);
    let caller = resolve::caller(state, target, context.as_ref())?;
    target.count(caller.targeting_key().is_some());
    write(target, &caller, form, asked)
}

/// The answer's bytes for this caller.
fn write(target: &Target, caller: &Caller<'_>, form: Form, asked: bool) -> Result<Bytes, Status> {
    let own = target.metadata();
    let written = |pieces: &[Encoded<'_>]| -> Bytes { written(pieces, &own, form, asked).into() };
    match form {
        Form::Proto { .. } => target.encoded::<ProtoValue, _>(caller, written),
        Form::Json => target.encoded::<JsonValue, _>(caller, written),
    }
    .map_err(|_| resolve::evaluation_failed())
}

/// The answer's bytes for these pieces, in their order; `own`: the response's own `metadata`
/// (written even when empty, as flagd does).
fn written(pieces: &[Encoded<'_>], own: &Map<String, Value>, form: Form, asked: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + pieces.len() * 48);
    match form {
        Form::Proto { v2 } => {
            write_proto(&mut out, pieces, v2, asked);
            wire::nested(&mut out, 2, |body| wire::object(body, own));
        }
        Form::Json => {
            write_json(&mut out, pieces, asked);
            // Into the object closed last: `…}}` becomes `…},"metadata":{…}}`.
            out.pop();
            out.extend_from_slice(b",\"metadata\":");
            crate::json::write(&mut out, &proto::to_json(&proto::object(own)));
            out.push(b'}');
        }
    }
    out
}

/// Whether a flag's metadata is written: its source's own always, derived fields when asked.
fn shown(metadata: &Metadata<'_>, asked: bool) -> bool {
    asked || !metadata.derived()
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

/// A flag's metadata as a `Struct`'s body: its source's map, or the derived fields.
fn proto_metadata(meta: &mut Vec<u8>, metadata: &Metadata<'_>) {
    if let Some(map) = metadata.as_map() {
        wire::object(meta, map);
    }
    for (name, value) in metadata.sorted_fields() {
        wire::nested(meta, 1, |entry| {
            wire::bytes_field(entry, 1, name.as_bytes());
            wire::nested(entry, 2, |body| match value {
                Meta::Bool(b) => wire::bool_field(body, 4, b),
                Meta::Number(n) => wire::double_field(body, 2, n.as_f64().unwrap_or(0.0)),
                Meta::Text(s) => wire::bytes_field(body, 3, s.as_bytes()),
            });
        });
    }
}

/// `ResolveAllResponse`: field 1, a map entry per flag (key 1, `AnyFlag` 2); the response's
/// metadata (field 2) is written by the caller.
fn write_proto(out: &mut Vec<u8>, pieces: &[Encoded<'_>], v2: bool, asked: bool) {
    let mut meta = Vec::new();
    for p in pieces {
        let key = p.key.as_bytes();
        meta.clear();
        let with_metadata = shown(&p.metadata, asked);
        if with_metadata {
            proto_metadata(&mut meta, &p.metadata);
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
            + if with_metadata {
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
        if with_metadata {
            wire::bytes_field(out, 7, &meta);
        }
    }
}

/// `{"flags":{key:{"reason","variant",value,"metadata"}}}` (protobuf's JSON mapping).
fn write_json(out: &mut Vec<u8>, pieces: &[Encoded<'_>], asked: bool) {
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
        if shown(&p.metadata, asked) {
            out.extend_from_slice(b",\"metadata\":");
            match p.metadata.as_map() {
                Some(map) => crate::json::write(out, &proto::to_json(&proto::object(map))),
                None => write_json_fields(out, &p.metadata),
            }
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"}}");
}

/// Derived metadata fields as a JSON object, numbers as protobuf carries them.
fn write_json_fields(out: &mut Vec<u8>, metadata: &Metadata<'_>) {
    out.push(b'{');
    for (i, (name, value)) in metadata.sorted_fields().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::json::write(out, name);
        out.push(b':');
        match value {
            Meta::Bool(b) => crate::json::write(out, &b),
            Meta::Number(n) => {
                crate::json::write(out, &proto::number_json(n.as_f64().unwrap_or(0.0)));
            }
            Meta::Text(s) => crate::json::write(out, s),
        }
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests;
