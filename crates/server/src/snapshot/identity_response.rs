//! The identities response, `{"identifier":…,"traits":[…],"flags":[…]}`, written once into one
//! buffer from the snapshot's prepared flag fragments. It lives beside the snapshot, not in a
//! front door, because the CLI (`flagpole eval`), the benches and the HTTP API must write the
//! same bytes.

use flagpole_engine::{EvalError, EvaluationResult, Identity, Trait, TraitValue};

use super::{KeyKind, Snapshot};
use crate::json;

/// Evaluates `identity` (whose identifier and traits are `identifier` and `traits`) and writes
/// its answer. Only the flags that can differ from the environment's own flags are evaluated
/// where the engine offers that ([`flagpole_engine::Environment::evaluate_varied`]); the others
/// are copied from `/flags`. The bytes are those [`write`] writes for the whole result.
pub fn evaluate_and_write(
    out: &mut Vec<u8>,
    snapshot: &Snapshot,
    kind: KeyKind,
    identity: &Identity<'_>,
    identifier: &str,
    traits: &[Trait<'_>],
) -> Result<(), EvalError> {
    let Some(varied) = snapshot.env.evaluate_varied(Some(identity)) else {
        let result = snapshot.env.evaluate(Some(identity))?;
        write(out, snapshot, kind, identifier, traits, &result);
        return Ok(());
    };
    let varied = varied?;
    write_head(out, identifier, traits);
    if !snapshot.write_varied_flags(out, kind, &varied) {
        let result = snapshot.env.merge_varied(varied)?;
        snapshot.write_flags(out, kind, &result);
    }
    out.push(b'}');
    Ok(())
}

/// Writes `{"identifier":…,"traits":[…],"flags":[…]}`.
pub fn write(
    out: &mut Vec<u8>,
    snapshot: &Snapshot,
    kind: KeyKind,
    identifier: &str,
    traits: &[Trait<'_>],
    result: &EvaluationResult<'_>,
) {
    write_head(out, identifier, traits);
    snapshot.write_flags(out, kind, result);
    out.push(b'}');
}

/// `{"identifier":…,"traits":[…],"flags":` (the flags and the closing brace follow).
fn write_head(out: &mut Vec<u8>, identifier: &str, traits: &[Trait<'_>]) {
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

#[cfg(test)]
mod tests {
    use flagpole_engine::python::number::PyInt;
    use serde_json::Value;

    use super::*;

    const EXAMPLE: &str = include_str!("../../../../examples/environment.json");

    /// The answer written from the varied flags and `/flags` is byte for byte the answer written
    /// from the whole evaluation, for identities with and without overrides, segments and
    /// splits, for both kinds of key, with disabled flags shown and hidden.
    #[test]
    fn varied_answers_equal_whole_answers() {
        for hide_disabled in [false, true] {
            let mut doc: Value = serde_json::from_str(EXAMPLE).unwrap();
            doc["project"]["hide_disabled_flags"] = Value::Bool(hide_disabled);
            let snapshot = Snapshot::build(&doc, 1).unwrap();
            for i in 0..300 {
                let identifier = match i % 5 {
                    0 => "vip-customer".to_owned(),
                    _ => format!("user-{i}"),
                };
                let text = |key: &'static str, value: &'static str| Trait {
                    key: key.into(),
                    value: TraitValue::Str(value.into()),
                };
                let traits = [
                    text("plan", ["free", "pro", "enterprise"][i % 3]),
                    text("country", ["GB", "US", "DE"][i % 3]),
                    Trait {
                        key: "seats".into(),
                        value: TraitValue::Int(PyInt::Small(i as i64 % 150)),
                    },
                ];
                let traits = &traits[..i % 4];
                let identity = Identity::new(&identifier, traits);
                assert!(snapshot.env.evaluate_varied(Some(&identity)).is_some());
                let whole = snapshot.env.evaluate(Some(&identity)).unwrap();
                for kind in [KeyKind::Server, KeyKind::Client] {
                    let (mut varied, mut expected) = (Vec::new(), Vec::new());
                    evaluate_and_write(
                        &mut varied,
                        &snapshot,
                        kind,
                        &identity,
                        &identifier,
                        traits,
                    )
                    .unwrap();
                    write(&mut expected, &snapshot, kind, &identifier, traits, &whole);
                    assert_eq!(
                        String::from_utf8(varied).unwrap(),
                        String::from_utf8(expected).unwrap(),
                        "{identifier}, {kind:?}, hide_disabled {hide_disabled}"
                    );
                }
            }
        }
    }
}
