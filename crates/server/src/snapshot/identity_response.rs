//! The identities response, `{"identifier":…,"traits":[…],"flags":[…]}`, written once into one
//! buffer from the snapshot's prepared flag fragments. It lives beside the snapshot, not in a
//! front door, because the CLI (`flagpole eval`), the benches and the HTTP API must write the
//! same bytes.

use flagpole_engine::{EvaluationResult, Trait, TraitValue};

use super::{KeyKind, Snapshot};
use crate::json;

/// Writes `{"identifier":…,"traits":[…],"flags":[…]}`.
pub fn write(
    out: &mut Vec<u8>,
    snapshot: &Snapshot,
    kind: KeyKind,
    identifier: &str,
    traits: &[Trait<'_>],
    result: &EvaluationResult<'_>,
) {
    out.extend_from_slice(b"{\"identifier\":");
    json::write(out, identifier);
    out.extend_from_slice(b",\"traits\":[");
    for (i, t) in traits.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"trait_key\":");
        json::write(out, t.key.as_ref());
        out.extend_from_slice(b",\"trait_value\":");
        write_trait_value(out, &t.value);
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"flags\":");
    snapshot.write_flags(out, kind, result);
    out.push(b'}');
}

fn write_trait_value(out: &mut Vec<u8>, v: &TraitValue<'_>) {
    use std::io::Write;
    match v {
        TraitValue::Null => out.extend_from_slice(b"null"),
        TraitValue::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        TraitValue::Int(i) => {
            let _ = write!(out, "{i}");
        }
        TraitValue::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => json::write(out, &n),
            None => out.extend_from_slice(b"null"),
        },
        TraitValue::Str(s) => json::write(out, s.as_ref()),
        TraitValue::Json(j) => json::write(out, j.as_ref()),
    }
}
