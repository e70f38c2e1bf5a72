//! JSON values ↔ `google.protobuf.Struct`, the way flagd's wire carries contexts, object values
//! and metadata.
//!
//! Protobuf has one number type (a double), so a context's `31` arrives as `31.0`. Flagsmith
//! types numbers by their JSON spelling (`31` and `31.0` evaluate differently), and the
//! providers' users wrote integers: an integral double within ±2^53 becomes an integer again.

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value as PValue};
use serde_json::{Map, Number, Value};

/// The largest integer a double holds exactly.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// A `Struct` as a JSON object.
pub(super) fn to_json(s: &Struct) -> Value {
    Value::Object(
        s.fields
            .iter()
            .map(|(k, v)| (k.clone(), value_to_json(v)))
            .collect::<Map<String, Value>>(),
    )
}

fn value_to_json(v: &PValue) -> Value {
    match &v.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::NumberValue(n)) => number_json(*n),
        Some(Kind::StructValue(s)) => to_json(s),
        Some(Kind::ListValue(l)) => Value::Array(l.values.iter().map(value_to_json).collect()),
    }
}

/// A protobuf number as JSON: an integer when it is one.
pub(super) fn number_json(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() <= EXACT {
        Value::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// A JSON object as a `Struct` (numbers become doubles).
pub(super) fn object(map: &Map<String, Value>) -> Struct {
    Struct {
        fields: map.iter().map(|(k, v)| (k.clone(), value(v))).collect(),
    }
}

/// A JSON value as a protobuf `Value`.
pub(super) fn value(v: &Value) -> PValue {
    let kind = match v {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(value).collect(),
        }),
        Value::Object(map) => Kind::StructValue(object(map)),
    };
    PValue { kind: Some(kind) }
}

/// Small constructors for metadata.
pub(super) fn string(s: impl Into<String>) -> PValue {
    PValue {
        kind: Some(Kind::StringValue(s.into())),
    }
}

pub(super) fn boolean(b: bool) -> PValue {
    PValue {
        kind: Some(Kind::BoolValue(b)),
    }
}

pub(super) fn number(n: f64) -> PValue {
    PValue {
        kind: Some(Kind::NumberValue(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_numbers_come_back_as_integers() {
        let doc = json!({"age": 31, "ratio": 2.5, "on": true, "name": "x", "none": null,
                         "list": [1, "a"], "deep": {"n": 1}});
        let Value::Object(map) = &doc else {
            unreachable!()
        };
        assert_eq!(to_json(&object(map)), doc);
    }
}
