//! The Connect protocol's JSON form of the flagd messages (protobuf's JSON mapping: camelCase
//! names, `int64` as a string, `Struct` as a plain object, unset fields left out), written by
//! hand for the few messages there are rather than by a reflection layer. (`ResolveAll`'s
//! answer is written by `all`.)

use prost_types::Struct;
use serde_json::{json, Map, Value};

use super::{proto, v1, v2};

/// A message read from, or written as, Connect JSON.
pub(super) trait Json: Sized {
    fn from_json(value: &Value) -> Result<Self, String>;
    fn to_json(&self) -> Value;
}

/// A field value as JSON; `None` when protobuf's JSON leaves it out.
trait Field {
    fn field(&self) -> Option<Value>;
}

impl Field for bool {
    fn field(&self) -> Option<Value> {
        Some(Value::Bool(*self))
    }
}
impl Field for String {
    fn field(&self) -> Option<Value> {
        Some(Value::String(self.clone()))
    }
}
impl Field for f64 {
    fn field(&self) -> Option<Value> {
        Some(serde_json::Number::from_f64(*self).map_or(Value::Null, Value::Number))
    }
}
impl Field for i64 {
    fn field(&self) -> Option<Value> {
        Some(Value::String(self.to_string()))
    }
}
impl Field for Struct {
    fn field(&self) -> Option<Value> {
        Some(proto::to_json(self))
    }
}
impl<T: Field> Field for Option<T> {
    fn field(&self) -> Option<Value> {
        self.as_ref().and_then(Field::field)
    }
}

fn object(pairs: &[(&str, Option<Value>)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .filter_map(|(k, v)| v.clone().map(|v| ((*k).to_owned(), v)))
            .collect::<Map<String, Value>>(),
    )
}

/// `context` (absent or null: none); it must be an object.
fn context(value: &Value) -> Result<Option<Struct>, String> {
    match value.get("context") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(proto::object(map))),
        Some(_) => Err("context must be an object".to_owned()),
    }
}

fn flag_key(value: &Value) -> Result<String, String> {
    match value.get("flagKey").or_else(|| value.get("flag_key")) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Ok(String::new()),
        Some(_) => Err("flagKey must be a string".to_owned()),
    }
}

macro_rules! resolver_json {
    ($v:ident: $($req:ident => $resp:ident),*) => {$(
        impl Json for $v::$req {
            fn from_json(value: &Value) -> Result<Self, String> {
                Ok($v::$req { flag_key: flag_key(value)?, context: context(value)? })
            }
            fn to_json(&self) -> Value {
                object(&[("flagKey", self.flag_key.field()), ("context", self.context.field())])
            }
        }
        impl Json for $v::$resp {
            fn from_json(_: &Value) -> Result<Self, String> {
                Err("not a request".to_owned())
            }
            fn to_json(&self) -> Value {
                object(&[
                    ("value", self.value.field()),
                    ("reason", self.reason.field()),
                    ("variant", self.variant.field()),
                    ("metadata", self.metadata.field()),
                ])
            }
        }
    )*};
}

macro_rules! version_json {
    ($v:ident) => {
        resolver_json!($v:
            ResolveBooleanRequest => ResolveBooleanResponse,
            ResolveStringRequest => ResolveStringResponse,
            ResolveFloatRequest => ResolveFloatResponse,
            ResolveIntRequest => ResolveIntResponse,
            ResolveObjectRequest => ResolveObjectResponse
        );

        impl Json for $v::ResolveAllRequest {
            fn from_json(value: &Value) -> Result<Self, String> {
                Ok($v::ResolveAllRequest { context: context(value)? })
            }
            fn to_json(&self) -> Value {
                object(&[("context", self.context.field())])
            }
        }

        impl Json for $v::EventStreamRequest {
            fn from_json(_: &Value) -> Result<Self, String> {
                Ok($v::EventStreamRequest {})
            }
            fn to_json(&self) -> Value {
                json!({})
            }
        }

        impl Json for $v::EventStreamResponse {
            fn from_json(_: &Value) -> Result<Self, String> {
                Err("not a request".to_owned())
            }
            fn to_json(&self) -> Value {
                object(&[("type", self.r#type.field()), ("data", self.data.field())])
            }
        }
    };
}

version_json!(v1);
version_json!(v2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_both_spellings_and_responses_leave_out_unset_fields() {
        let r = v2::ResolveIntRequest::from_json(&json!({"flag_key": "n", "context": {"a": 1}}))
            .unwrap();
        assert_eq!(r.flag_key, "n");
        assert_eq!(proto::to_json(r.context.as_ref().unwrap()), json!({"a": 1}));
        let response = v2::ResolveIntResponse {
            value: Some(10),
            reason: "STATIC".into(),
            variant: None,
            metadata: None,
        };
        assert_eq!(
            response.to_json(),
            json!({"value": "10", "reason": "STATIC"})
        );
        assert!(v1::ResolveBooleanRequest::from_json(&json!({"context": 5})).is_err());
    }
}
