//! An answer's tag (OFREP's ETag): a hash of everything its body depends on (the request, the
//! key kind, the source's revision, whether it is stale, the front door's settings), known
//! before anything is evaluated, so a client revalidating gets its 304 for the price of a hash.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::canonical;
use crate::keys::KeyKind;

/// `W/"<32 hex>"` for an environment's answer; `input`: the caller's normalised identity and
/// traits (all that a Flagsmith evaluation reads).
pub(super) fn environment(
    revision: &str,
    kind: KeyKind,
    flag: Option<&str>,
    stale: bool,
    input: &Value,
    settings: &str,
) -> String {
    let (op, flag) = match flag {
        None => ("bulk", Value::Null),
        Some(key) => ("flag", Value::String(key.to_owned())),
    };
    let mut described = json!({
        "v": 1,
        "op": op,
        "flag": flag,
        "kind": match kind { KeyKind::Client => "client", KeyKind::Server => "server" },
        "rev": revision,
        "cfg": settings,
        "in": input,
    });
    // Only while stale: a fresh answer's tag is what it always was.
    if stale {
        described["stale"] = Value::Bool(true);
    }
    digest(&described)
}

/// The same for a flag set: its view's revision, the selector, the flag asked (or all),
/// staleness, the whole context (flagd rules may read any member) and the settings.
pub(super) fn flag_set(
    revision: &str,
    selector: &str,
    flag: Option<&str>,
    stale: bool,
    context: &Map<String, Value>,
    settings: &str,
) -> String {
    // The canonical form of {v, op, flag, set, rev, cfg, in, stale} written in place, members in
    // canonical order, rather than built as a JSON value: the context is not copied.
    let mut bytes = Vec::with_capacity(256);
    bytes.extend_from_slice(b"{\"cfg\":");
    crate::json::write(&mut bytes, settings);
    bytes.extend_from_slice(b",\"flag\":");
    crate::json::write(&mut bytes, &flag);
    bytes.extend_from_slice(b",\"in\":");
    canonical::write_object(&mut bytes, context, canonical::Numbers::Typed);
    bytes.extend_from_slice(if flag.is_some() {
        b",\"op\":\"flag\",\"rev\":"
    } else {
        b",\"op\":\"bulk\",\"rev\":"
    });
    crate::json::write(&mut bytes, revision);
    bytes.extend_from_slice(b",\"set\":");
    crate::json::write(&mut bytes, selector);
    bytes.extend_from_slice(if stale {
        b",\"stale\":true,\"v\":1}"
    } else {
        b",\"stale\":false,\"v\":1}"
    });
    tag(&bytes)
}

fn digest(described: &Value) -> String {
    let mut bytes = Vec::with_capacity(256);
    // Typed: a trait `1` and a trait `1.0` evaluate differently, so they must not share a tag.
    canonical::write_with(&mut bytes, described, canonical::Numbers::Typed);
    tag(&bytes)
}

/// The weak ETag of canonical bytes.
fn tag(bytes: &[u8]) -> String {
    let digest: [u8; 32] = Sha256::digest(bytes).into();
    format!("W/\"{}\"", canonical::hex(&digest, 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flag set's tag is the canonical form of its inputs, written in place: the same bytes
    /// as canonicalising them as one JSON value.
    #[test]
    fn a_flag_set_tag_is_its_inputs_canonical_form() {
        let context =
            json!({"z": 1, "a": [1.0, "x"], "é": {"b": null, "a": true}, "targetingKey": "u"});
        let Value::Object(map) = &context else {
            unreachable!()
        };
        for (flag, stale) in [(Some("f"), false), (None, true)] {
            let want = digest(&json!({
                "v": 1,
                "op": if flag.is_some() { "flag" } else { "bulk" },
                "flag": flag,
                "set": "flagSetId=a",
                "rev": "r1",
                "cfg": "c",
                "in": context,
                "stale": stale,
            }));
            assert_eq!(flag_set("r1", "flagSetId=a", flag, stale, map, "c"), want);
        }
    }
}
