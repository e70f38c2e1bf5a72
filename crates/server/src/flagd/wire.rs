//! Protobuf written straight to bytes: the few wire forms flagd's answers use (varints,
//! length-delimited fields, doubles, `google.protobuf.Struct` from JSON), in the order and with
//! the omissions prost's encoding has, and [`Encoded`], a message that is its bytes, so tonic
//! sends an answer written here as it is.
//!
//! Maps are written sorted by key, as prost writes a `BTreeMap` (the generated messages are
//! built with them), so the bytes equal prost's for the same message (tested in `all`).

use bytes::BufMut;
use serde_json::{Map, Value};

/// Wire types.
pub(crate) const VARINT: u8 = 0;
pub(crate) const FIXED64: u8 = 1;
pub(crate) const LEN: u8 = 2;

pub(crate) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn varint_len(v: u64) -> usize {
    // 1 byte per 7 bits, at least one.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

pub(crate) fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from((field << 3) | u32::from(wire)));
}

/// A length-delimited field's size (its key is one byte: fields 1–15).
pub(crate) fn len_field_size(len: usize) -> usize {
    1 + varint_len(len as u64) + len
}

/// A length-delimited field: key, length, bytes.
pub(crate) fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(out, field, LEN);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A length-delimited field whose body `write` appends (written aside, then copied: for what is
/// prepared once, or small).
pub(crate) fn nested(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    let mut body = Vec::new();
    write(&mut body);
    bytes_field(out, field, &body);
}

pub(crate) fn bool_field(out: &mut Vec<u8>, field: u32, b: bool) {
    key(out, field, VARINT);
    out.push(u8::from(b));
}

pub(crate) fn double_field(out: &mut Vec<u8>, field: u32, f: f64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&f.to_le_bytes());
}

/// A JSON number as protobuf's one number type.
pub(crate) fn number(n: &serde_json::Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

/// `google.protobuf.Value`'s body (`kind` is a oneof: written whatever its value).
pub(crate) fn value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => {
            key(out, 1, VARINT);
            out.push(0);
        }
        Value::Number(n) => double_field(out, 2, number(n)),
        Value::String(s) => bytes_field(out, 3, s.as_bytes()),
        Value::Bool(b) => bool_field(out, 4, *b),
        Value::Object(map) => nested(out, 5, |body| object(body, map)),
        Value::Array(items) => nested(out, 6, |body| {
            for item in items {
                nested(body, 1, |element| value(element, item));
            }
        }),
    }
}

/// `google.protobuf.Struct`'s body: one map entry per member, sorted by key (an empty key and
/// an empty value are left out of an entry, as prost leaves out default map keys and values).
pub(crate) fn object(out: &mut Vec<u8>, map: &Map<String, Value>) {
    let mut members: Vec<_> = map.iter().collect();
    members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    for (name, v) in members {
        nested(out, 1, |entry| {
            if !name.is_empty() {
                bytes_field(entry, 1, name.as_bytes());
            }
            nested(entry, 2, |body| value(body, v));
        });
    }
}

/// A message that is its encoding: what a handler wrote here is what tonic sends. Decoding one
/// keeps the bytes as they came.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Encoded(pub bytes::Bytes);

impl prost::Message for Encoded {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.0);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use serde_json::json;

    #[test]
    fn values_are_encoded_as_prost_encodes_them() {
        for doc in [
            json!({"b": 1, "a": [true, null, "x", 2.5, {"z": {}}], "": "empty key", "c": ""}),
            json!({}),
            json!({"deep": {"deeper": {"n": -1e300, "list": []}}}),
        ] {
            let Value::Object(map) = &doc else {
                unreachable!()
            };
            let mut ours = Vec::new();
            object(&mut ours, map);
            assert_eq!(
                ours,
                super::super::proto::object(map).encode_to_vec(),
                "{doc}"
            );
        }
        for n in [0u64, 1, 127, 128, 16_383, 16_384, u64::MAX] {
            let mut out = Vec::new();
            varint(&mut out, n);
            assert_eq!(out.len(), varint_len(n), "{n}");
            assert_eq!(prost::encoding::encoded_len_varint(n), varint_len(n));
        }
    }
}
