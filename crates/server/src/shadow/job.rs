//! One sampled identity request, owned so that it outlives the request: the environment and
//! the snapshot that answered, the key kind, the identity, and the answer's bytes. Also the same
//! request as the Flagsmith API takes it (`POST /identities/`, transient: nothing is stored).

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use flagpole_engine::{Trait, TraitValue};
use serde_json::{json, Value};

use crate::keys::KeyKind;
use crate::snapshot::Snapshot;
use crate::store::EnvSlot;

pub(crate) struct Job {
    pub env: Arc<EnvSlot>,
    pub snapshot: Arc<Snapshot>,
    pub kind: KeyKind,
    pub identifier: String,
    pub traits: Vec<Trait<'static>>,
    /// Flagpole's answer, as sent.
    pub answer: Bytes,
}

impl Job {
    pub(crate) fn new(
        env: &Arc<EnvSlot>,
        snapshot: &Arc<Snapshot>,
        kind: KeyKind,
        identifier: &str,
        traits: &[Trait<'_>],
        answer: Bytes,
    ) -> Job {
        Job {
            env: env.clone(),
            snapshot: snapshot.clone(),
            kind,
            identifier: identifier.to_owned(),
            traits: traits.iter().map(owned).collect(),
            answer,
        }
    }

    /// The body of `POST {api_url}/identities/`: the identity, its traits, and `transient` so
    /// that the Flagsmith API stores neither.
    pub(crate) fn request_body(&self) -> Vec<u8> {
        let traits: Vec<Value> = self
            .traits
            .iter()
            .map(|t| json!({"trait_key": t.key, "trait_value": json_value(&t.value)}))
            .collect();
        crate::json::to_vec(&json!({
            "identifier": self.identifier,
            "traits": traits,
            "transient": true,
        }))
    }
}

fn owned(t: &Trait<'_>) -> Trait<'static> {
    Trait {
        key: Cow::Owned(t.key.clone().into_owned()),
        value: match &t.value {
            TraitValue::Null => TraitValue::Null,
            TraitValue::Bool(b) => TraitValue::Bool(*b),
            TraitValue::Int(i) => TraitValue::Int(i.clone()),
            TraitValue::Float(f) => TraitValue::Float(*f),
            TraitValue::Str(s) => TraitValue::Str(Cow::Owned(s.clone().into_owned())),
            TraitValue::Json(v) => TraitValue::Json(Cow::Owned(v.clone().into_owned())),
        },
    }
}

/// A trait value as JSON (an integer too large for 64 bits goes as its decimal text parsed by
/// serde_json, which is how the request would have spelled it).
fn json_value(value: &TraitValue<'_>) -> Value {
    match value {
        TraitValue::Null => Value::Null,
        TraitValue::Bool(b) => json!(b),
        TraitValue::Int(flagpole_engine::python::number::PyInt::Small(i)) => json!(i),
        TraitValue::Int(big) => serde_json::from_str(&big.to_string()).unwrap_or(Value::Null),
        TraitValue::Float(f) => json!(f),
        TraitValue::Str(s) => json!(s),
        TraitValue::Json(v) => v.clone().into_owned(),
    }
}
