//! The identity an evaluation is for: identifier, optional hashing key, traits. Borrowed from the
//! caller (a request body, a parsed context): evaluation copies none of it.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::InputError;
use crate::value::TraitValue;

/// One trait. Duplicate keys: the last one wins, as in a JSON object.
#[derive(Clone, Debug, PartialEq)]
pub struct Trait<'a> {
    pub key: Cow<'a, str>,
    pub value: TraitValue<'a>,
}

#[derive(Clone, Debug, Default)]
pub struct Identity<'a> {
    /// `identity.identifier` (a string in every real caller; kept general for contexts).
    pub identifier: Option<TraitValue<'a>>,
    /// `identity.key`: when missing or falsy the engine derives `<environment key>_<identifier>`.
    pub key: Option<TraitValue<'a>>,
    pub traits: &'a [Trait<'a>],
    /// The identity object of a context, when evaluating one, so that queries over keys other
    /// than identifier/key/traits see them too.
    pub raw: Option<&'a serde_json::Map<String, Value>>,
}

impl<'a> Identity<'a> {
    /// An identity as the SDKs and the proxy build it: identifier and traits, no explicit key.
    pub fn new(identifier: &'a str, traits: &'a [Trait<'a>]) -> Self {
        Identity {
            identifier: Some(TraitValue::Str(Cow::Borrowed(identifier))),
            key: None,
            traits,
            raw: None,
        }
    }

    /// Looks a trait up by name (last duplicate wins).
    pub fn trait_value(&self, name: &str) -> Option<&TraitValue<'a>> {
        self.traits
            .iter()
            .rev()
            .find(|t| t.key == name)
            .map(|t| &t.value)
    }
}

/// Borrows the traits of a context's `identity.traits` object.
pub fn traits_from_json<'a>(
    traits: Option<&'a Value>,
    path: &str,
) -> Result<Vec<Trait<'a>>, InputError> {
    match traits {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => Ok(map
            .iter()
            .map(|(k, v)| Trait {
                key: Cow::Borrowed(k.as_str()),
                value: TraitValue::from_json(v),
            })
            .collect()),
        Some(_) => Err(InputError::new(
            format!("{path}.traits"),
            "must be an object of trait values",
        )),
    }
}
