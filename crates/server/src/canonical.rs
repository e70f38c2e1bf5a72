//! RFC 8785 (JCS) canonical JSON and the hashes built on it. OFREP revisions and ETags must be
//! equal on every replica and across restarts for the same inputs, so they hash a canonical
//! form: object members sorted by UTF-16 code units, numbers as ECMAScript prints doubles,
//! strings with JSON's minimal escaping (which is what serde_json writes).
//!
//! JCS erases the difference between `1` and `1.0`, which Flagsmith does not (a trait `1.0` is
//! the string `"1.0"` to a condition; the Python provider tells int from float). So ETag inputs
//! and the flag values OFREP returns use a *typed* variant: the same member order, integers in
//! full, floats as the shortest round-trip spelling that keeps a fraction or exponent.

use flagpole_engine::value::{classify_number, JsonNumber};
use serde_json::Value;

/// How numbers are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Numbers {
    /// RFC 8785: every number as an IEEE double, printed the ECMAScript way.
    Jcs,
    /// Integers exactly, floats as floats (`1.0` stays `1.0`, `1e400` is `null`-free: spelled).
    Typed,
}
use sha2::{Digest, Sha256};

use flagpole_config::OfrepConfig;

/// A hash of every OFREP setting that changes response bodies, plus the environment's stream
/// token: part of every ETag, so that a changed setting never yields a wrong 304.
pub(crate) fn settings_tag(config: &OfrepConfig, stream_token: Option<&str>) -> String {
    let described = serde_json::json!({
        // Bump whenever a release could change a body for the same inputs.
        "map": "ofrep-map/2",
        "parse_json_strings": config.parse_json_strings,
        "require_targeting_key": config.require_targeting_key,
        "public_base_url": config.public_base_url,
        "sse_enabled": config.sse.enabled,
        "sse_inactivity_delay_sec": config.sse.inactivity_delay_sec,
        "sse_token": stream_token,
    });
    hex(&sha256(&described), 32)
}

/// Appends the canonical (RFC 8785) form of `value`.
pub(crate) fn write(out: &mut Vec<u8>, value: &Value) {
    write_with(out, value, Numbers::Jcs);
}

/// Appends the canonical form of `value` with numbers written as `numbers` says.
pub(crate) fn write_with(out: &mut Vec<u8>, value: &Value, numbers: Numbers) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) if numbers == Numbers::Typed => write_typed_number(out, n),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => crate::json::write(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_with(out, item, numbers);
            }
            out.push(b']');
        }
        Value::Object(map) => write_object(out, map, numbers),
    }
}

/// Appends the canonical form of an object (members sorted by their UTF-16 keys).
pub(crate) fn write_object(
    out: &mut Vec<u8>,
    map: &serde_json::Map<String, Value>,
    numbers: Numbers,
) {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    out.push(b'{');
    for (i, (key, item)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::json::write(out, key);
        out.push(b':');
        write_with(out, item, numbers);
    }
    out.push(b'}');
}

/// A JSON number as an IEEE double printed the ECMAScript way (`10.0` → `10`, `1e21` →
/// `1e+21`). Numbers beyond a double's range cannot be canonicalised; they keep their spelling.
fn write_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    write_number_text(out, &n.to_string());
}

/// [`write_number`] of the number spelled `text` as the parser keeps it (`e` in lower case and
/// always signed: `1E5` is kept as `1e+5`; see `canonical_text`).
pub(crate) fn write_number_text(out: &mut Vec<u8>, text: &str) {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() => {
            let mut buffer = ryu_js::Buffer::new();
            out.extend_from_slice(buffer.format_finite(f).as_bytes());
        }
        _ => out.extend_from_slice(text.as_bytes()),
    }
}

/// An integer in full; a float as Rust's shortest round-trip spelling (always with `.` or `e`).
fn write_typed_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    match classify_number(n) {
        JsonNumber::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        JsonNumber::Float(f) if f.is_finite() => crate::json::write(out, &f),
        JsonNumber::Float(_) => out.extend_from_slice(n.to_string().as_bytes()),
    }
}

/// SHA-256 of the canonical form.
pub(crate) fn sha256(value: &Value) -> [u8; 32] {
    let mut bytes = Vec::new();
    write(&mut bytes, value);
    Sha256::digest(&bytes).into()
}

/// Lowercase hex of the first `n` bytes.
pub(crate) fn hex(bytes: &[u8], n: usize) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(2 * n);
    for b in &bytes[..n.min(bytes.len())] {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jcs(text: &str) -> String {
        let v: Value = serde_json::from_str(text).unwrap();
        let mut out = Vec::new();
        write(&mut out, &v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rfc8785_examples() {
        // Member order by UTF-16 code units, numbers the ECMAScript way, minimal escapes.
        assert_eq!(
            jcs(
                r#"{"b":[1.0,1e21,0.000001,1e-7,-0.0],"a":"\u20ac\n","\u00e9":1,"\ud83d\ude00":2,"\ufb01":3}"#
            ),
            "{\"a\":\"€\\n\",\"b\":[1,1e+21,0.000001,1e-7,0],\"é\":1,\"😀\":2,\"ﬁ\":3}"
        );
        assert_eq!(jcs("[true,null,\"/\"]"), "[true,null,\"/\"]");
    }

    #[test]
    fn typed_numbers_keep_int_and_float_apart() {
        let v: Value =
            serde_json::from_str(r#"{"b":1.0,"a":[1,1.50,12345678901234567890123,1e2]}"#).unwrap();
        let mut out = Vec::new();
        write_with(&mut out, &v, Numbers::Typed);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":[1,1.5,12345678901234567890123,100.0],"b":1.0}"#
        );
    }

    #[test]
    fn equal_documents_hash_equal_whatever_their_order() {
        let a: Value = serde_json::from_str(r#"{"x":1,"y":{"b":2.0,"a":[1]}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"y":{"a":[1.0],"b":2},"x":1}"#).unwrap();
        assert_eq!(sha256(&a), sha256(&b));
        assert_eq!(hex(&sha256(&a), 16).len(), 32);
    }
}
