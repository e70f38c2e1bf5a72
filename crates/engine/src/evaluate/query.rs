//! What a condition's JSONPath property reads: answers from the identity, from a resolved flag,
//! or, for queries that need it, from the whole context materialised as the reference sees it.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::EvalError;
use crate::jsonpath::{Found, JsonPathQuery, LazyFlags};
use crate::model::RootEntry;
use crate::property::{into_static, is_scalar, walk, Query, Step};
use crate::result::{FlagResult, Reason, VariantChoice};
use crate::value::{coerce_json, coerce_str, Scalar, TraitValue};

use super::dependencies::FlagLookup;
use super::evaluation::{Evaluation, IdentityKey};
use super::scope::{trimmed_features, trimmed_segments, Scope};

impl<'a> Evaluation<'a> {
    pub(super) fn query(&mut self, query: &'a Query) -> Result<Scalar<'a>, EvalError> {
        match query {
            Query::Static(value) => Ok(borrow_scalar(value.as_ref().map_err(Clone::clone)?)),
            Query::Identity(steps) => self.identity_query(steps),
            Query::Flag(name, steps) => {
                let Some(flag) = self.read_flag(name)? else {
                    return Ok(Scalar::Null);
                };
                flag_query(&flag, steps)
            }
            Query::General(path) => self.general_query(path),
        }
    }

    /// A query over the whole context (as this evaluation's scope sees it).
    pub(super) fn general_query(&mut self, path: &JsonPathQuery) -> Result<Scalar<'a>, EvalError> {
        let root = self.materialise_root();
        let found = path.find_first(&root, &mut FlagsBridge { ev: self })?;
        match found {
            Found::Value(v) if is_scalar(&v) => coerce_json(&v).map(into_static),
            _ => Ok(Scalar::Null),
        }
    }

    pub(super) fn identity_query(&self, steps: &'a [Step]) -> Result<Scalar<'a>, EvalError> {
        let Some(identity) = self.identity else {
            return Ok(Scalar::Null);
        };
        let (first, rest) = match steps.split_first() {
            Some((Step::Name(first), rest)) => (first.as_str(), rest),
            _ => return Ok(Scalar::Null),
        };
        match (first, rest) {
            ("key", []) => match &self.key {
                Some(IdentityKey::Given(v)) => v.coerce(),
                Some(IdentityKey::Derived) => {
                    coerce_str(self.key_text.as_deref().unwrap_or("")).map(into_static)
                }
                None => Ok(Scalar::Null),
            },
            ("identifier", []) if identity.raw.is_none() => match &identity.identifier {
                Some(v) => v.coerce(),
                None => Ok(Scalar::Null),
            },
            ("traits", [Step::Name(name), deeper @ ..]) if identity.raw.is_none() => {
                match identity.trait_value(name) {
                    None => Ok(Scalar::Null),
                    Some(v) if deeper.is_empty() => v.coerce(),
                    Some(TraitValue::Json(json)) => json_query(json_at(json, deeper)),
                    Some(_) => Ok(Scalar::Null),
                }
            }
            _ => match identity.raw {
                Some(raw) => {
                    let mut node = raw.get(first);
                    for step in rest {
                        node = node.and_then(|n| walk(n, step));
                    }
                    json_query(node)
                }
                None => Ok(Scalar::Null),
            },
        }
    }

    /// A read of `$.flags.<name>`: resolves the flag on first use (the reference's `__missing__`).
    /// The whole context as the reference's JSONPath sees it, for queries that need it.
    pub(super) fn materialise_root(&self) -> Value {
        let mut root = serde_json::Map::new();
        for entry in &self.env.root_order {
            match entry {
                RootEntry::Static(k) => {
                    if let Some(v) = self.env.root.get(k) {
                        let v = match (self.scope, k.as_str()) {
                            (Scope::Feature(scope), "features") => trimmed_features(v, &scope),
                            (Scope::Feature(scope), "segments") => trimmed_segments(v, &scope),
                            _ => v.clone(),
                        };
                        root.insert(k.clone(), v);
                    }
                }
                RootEntry::Identity => {
                    if let Some(identity) = self.identity_json() {
                        root.insert("identity".into(), identity);
                    }
                }
                // A placeholder: the JSONPath evaluator asks `FlagsBridge` when it gets here.
                RootEntry::Flags => {
                    root.insert("flags".into(), Value::Null);
                }
            }
        }
        Value::Object(root)
    }

    pub(super) fn identity_json(&self) -> Option<Value> {
        let identity = self.identity?;
        let key = match &self.key {
            Some(IdentityKey::Given(v)) => trait_json(v),
            Some(IdentityKey::Derived) => {
                Value::String(self.key_text.as_deref().unwrap_or("").to_owned())
            }
            None => Value::Null,
        };
        let mut map = match identity.raw {
            Some(raw) => raw.clone(),
            None => {
                let mut map = serde_json::Map::new();
                if let Some(identifier) = &identity.identifier {
                    map.insert("identifier".into(), trait_json(identifier));
                }
                let traits = identity
                    .traits
                    .iter()
                    .map(|t| (t.key.to_string(), trait_json(&t.value)))
                    .collect();
                map.insert("traits".into(), Value::Object(traits));
                map
            }
        };
        map.insert("key".into(), key);
        Some(Value::Object(map))
    }
}

pub(super) fn borrow_scalar<'a>(s: &'a Scalar<'static>) -> Scalar<'a> {
    match s {
        Scalar::Str(text) => Scalar::Str(Cow::Borrowed(text.as_ref())),
        other => other.clone(),
    }
}

pub(super) fn json_at<'v>(json: &'v Value, steps: &[Step]) -> Option<&'v Value> {
    steps.iter().try_fold(json, |node, step| walk(node, step))
}

pub(super) fn json_query(node: Option<&Value>) -> Result<Scalar<'_>, EvalError> {
    match node {
        Some(v) if is_scalar(v) => coerce_json(v),
        _ => Ok(Scalar::Null),
    }
}

/// Steps into a flag result (`enabled`, `name`, `reason`, `value`, `variant`, `metadata`).
pub(super) fn flag_query<'a>(
    flag: &FlagResult<'a>,
    steps: &[Step],
) -> Result<Scalar<'a>, EvalError> {
    let Some((Step::Name(field), rest)) = steps.split_first() else {
        return Ok(Scalar::Null);
    };
    let text = |s: &'a str| {
        if rest.is_empty() {
            coerce_str(s)
        } else {
            Ok(Scalar::Null)
        }
    };
    match field.as_str() {
        "enabled" => json_query(json_at(flag.enabled, rest)),
        "value" => json_query(json_at(flag.value, rest)),
        "metadata" => json_query(flag.metadata.and_then(|m| json_at(m, rest))),
        "name" => text(flag.name),
        "reason" => match flag.reason {
            Reason::TargetingMatch(s) | Reason::Split(s) => text(s),
            Reason::Static => text("STATIC"),
            Reason::Default => text("DEFAULT"),
            Reason::CircularDependency => text("ERROR; code=CIRCULAR_DEPENDENCY"),
        },
        "variant" => match flag.variant {
            VariantChoice::None => Ok(Scalar::Null),
            VariantChoice::Control => text("control"),
            VariantChoice::Key(v) => json_query(json_at(v, rest)),
        },
        _ => Ok(Scalar::Null),
    }
}

pub(super) fn flag_json(flag: &FlagResult<'_>) -> Value {
    let mut bytes = Vec::new();
    flag.write_json(&mut bytes)
        .expect("writing to a Vec cannot fail");
    serde_json::from_slice(&bytes).expect("flag JSON is valid")
}

pub(super) fn trait_json(v: &TraitValue<'_>) -> Value {
    match v {
        TraitValue::Null => Value::Null,
        TraitValue::Bool(b) => Value::Bool(*b),
        TraitValue::Int(i) => serde_json::from_str(&i.to_string()).unwrap_or(Value::Null),
        TraitValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        TraitValue::Str(s) => Value::String(s.to_string()),
        TraitValue::Json(j) => j.clone().into_owned(),
    }
}

/// The reference's lazy `$.flags` mapping, as the JSONPath evaluator sees it.
struct FlagsBridge<'e, 'a> {
    ev: &'e mut Evaluation<'a>,
}

impl LazyFlags for FlagsBridge<'_, '_> {
    fn lookup(&mut self, name: &str) -> Result<Option<Value>, EvalError> {
        Ok(match self.ev.lookup_flag(name)? {
            FlagLookup::NoNode => None,
            FlagLookup::Node(None) => Some(Value::Null),
            FlagLookup::Node(Some(flag)) => Some(flag_json(&flag)),
        })
    }

    fn entries(&self) -> Vec<(String, Value)> {
        self.ev
            .deps
            .as_ref()
            .map(|d| {
                d.resolved
                    .iter()
                    .map(|(k, f)| (k.to_string(), flag_json(f)))
                    .collect()
            })
            .unwrap_or_default()
    }
}
