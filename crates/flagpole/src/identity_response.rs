//! The `/api/v1/identities` response body (`{"identifier","traits","flags"}`), written in one
//! pass from an evaluation result. Shared by `flagpole eval identity` and the HTTP API.

use std::borrow::Cow;

use flagpole_engine::document::FeatureInfo;
use flagpole_engine::{EvaluationResult, InputError, Trait, TraitValue};
use serde_json::Value;

/// Traits from `{"k": v}` or `[{"trait_key": k, "trait_value": v}]`. Null values mean "not set"
/// and are dropped; a repeated key keeps its first position and its last value.
pub fn parse_traits(v: Option<&Value>) -> Result<Vec<Trait<'_>>, InputError> {
    fn push<'v>(traits: &mut Vec<Trait<'v>>, key: &'v str, value: &'v Value) {
        let value = TraitValue::from_json(value);
        if let Some(existing) = traits.iter_mut().find(|t| t.key == key) {
            existing.value = value;
        } else {
            traits.push(Trait {
                key: Cow::Borrowed(key),
                value,
            });
        }
    }
    let mut traits: Vec<Trait<'_>> = Vec::new();
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => map.iter().for_each(|(k, v)| push(&mut traits, k, v)),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let key = item.get("trait_key").and_then(Value::as_str);
                let Some(key) = key else {
                    return Err(InputError::new(
                        format!("$.traits[{i}].trait_key"),
                        "must be a string",
                    ));
                };
                push(
                    &mut traits,
                    key,
                    item.get("trait_value").unwrap_or(&Value::Null),
                );
            }
        }
        Some(_) => {
            return Err(InputError::new(
                "$.traits",
                "must be an object or a list of traits",
            ))
        }
    }
    for (i, t) in traits.iter().enumerate() {
        if let TraitValue::Json(_) = t.value {
            return Err(InputError::new(
                format!("$.traits[{i}].trait_value"),
                "must be a string, number, boolean or null",
            ));
        }
    }
    traits.retain(|t| !t.value.is_null());
    Ok(traits)
}

/// Writes `{"identifier":…,"traits":[…],"flags":[…]}`.
pub fn write_identity_response(
    identifier: &str,
    traits: &[Trait<'_>],
    result: &EvaluationResult<'_>,
    catalog: &[FeatureInfo],
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b"{\"identifier\":");
    write_json(out, &identifier);
    out.extend_from_slice(b",\"traits\":[");
    for (i, t) in traits.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"trait_key\":");
        write_json(out, &t.key);
        out.extend_from_slice(b",\"trait_value\":");
        write_trait_value(out, &t.value);
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"flags\":[");
    for (i, flag) in result.flags.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let info = catalog.iter().find(|f| f.name == flag.key);
        let id = flag
            .metadata
            .and_then(|m| m.get("id"))
            .or(info.map(|f| &f.id))
            .unwrap_or(&Value::Null);
        out.extend_from_slice(b"{\"feature\":{\"id\":");
        write_json(out, id);
        out.extend_from_slice(b",\"name\":");
        write_json(out, &flag.name);
        out.extend_from_slice(b",\"type\":");
        write_json(out, &info.map_or("STANDARD", |f| f.kind.as_str()));
        out.extend_from_slice(b"},\"enabled\":");
        write_json(out, flag.enabled);
        out.extend_from_slice(b",\"feature_state_value\":");
        write_json(out, flag.value);
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    serde_json::to_writer(out, v).expect("serialising to a Vec cannot fail");
}

fn write_trait_value(out: &mut Vec<u8>, v: &TraitValue<'_>) {
    match v {
        TraitValue::Null => out.extend_from_slice(b"null"),
        TraitValue::Bool(b) => write_json(out, b),
        TraitValue::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        TraitValue::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => write_json(out, &n),
            None => out.extend_from_slice(b"null"),
        },
        TraitValue::Str(s) => write_json(out, s.as_ref()),
        TraitValue::Json(j) => write_json(out, j.as_ref()),
    }
}
