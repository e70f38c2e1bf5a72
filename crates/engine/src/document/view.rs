//! An environment document read straight from its bytes, for compiling it without a JSON tree
//! of the whole document.
//!
//! Nearly all of a large document is `identity_overrides` (an 11 MB document holds thousands of
//! identities and a few hundred kB of everything else). Reading it into a `serde_json::Value`
//! (an ordered, hashed map per object, an owned string per string and per number) and freeing
//! that tree again cost most of a compile. Here the identity overrides are read by typed visitors
//! that borrow from the input (names as `Cow<str>`, values as `&RawValue`) and are grouped into
//! their virtual segments while they are read; only the members the mapping reads as JSON
//! (`feature_states`, `project`, ...; small) become `Value`s, and are mapped by the same code as
//! the tree path ([`super::Mapped`]).
//!
//! It is a fast path with an exact fallback. It accepts only documents it maps exactly as the
//! tree path does: members the mapping reads must have the expected shape, with no duplicates;
//! an override's `id`, `enabled` and value must be scalars (the raw JSON of an array or object
//! was delimited without the parser's nesting limit); and everything it skips is still checked
//! as strictly as the tree parser would (valid UTF-8, paired surrogates, the nesting limit). Anything else, including every invalid document, makes
//! [`DocumentView::parse`] or [`DocumentView::compile`] return `None`, and the caller takes the
//! tree path, which gives the result or the error (with its JSON path) it always gave. So error
//! paths are only ever built for documents that have an error.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::overrides::{override_context, push_key_entry, push_raw_eq_key, Groups};
use super::{Mapped, Members};
use crate::compile::{compile_context_sharing, Diagnostic};
use crate::model::Environment;
use crate::shared::Shared;

/// An environment document: the members the mapping reads as JSON, and its identity overrides
/// already grouped into virtual segments.
#[derive(Debug)]
pub struct DocumentView {
    /// Each member as given (`None` when absent; a JSON `null` is `Some(Value::Null)`).
    pub api_key: Option<Value>,
    pub name: Option<Value>,
    pub updated_at: Option<Value>,
    pub feature_states: Option<Value>,
    pub project: Option<Value>,
    overrides: Groups,
}

impl DocumentView {
    /// Reads a document, or `None` when it is not one the view maps exactly (the caller then
    /// parses it as a tree, which also reports what is wrong with it).
    pub fn parse(bytes: &[u8]) -> Option<DocumentView> {
        // One pass over the whole input is cheaper than checking every string on its own (a
        // document holds hundreds of thousands of short ones), and the parser then need not.
        Self::parse_str(std::str::from_utf8(bytes).ok()?)
    }

    /// [`DocumentView::parse`] of text already known to be UTF-8.
    pub fn parse_str(text: &str) -> Option<DocumentView> {
        serde_json::from_str(text).ok()
    }

    /// Maps the document to a context and compiles it, exactly as `document_to_context` and
    /// `compile_context` do with the tree; `None` if the document has an error (the tree path
    /// reports it).
    pub fn compile(self) -> Option<(Environment, Vec<Diagnostic>)> {
        compile_context_sharing(&self.context()?, None).ok()
    }

    /// [`DocumentView::compile`], sharing compiled segment rules with the other environments
    /// compiled with the same [`Shared`].
    pub fn compile_sharing(self, shared: &Shared) -> Option<(Environment, Vec<Diagnostic>)> {
        compile_context_sharing(&self.context()?, Some(shared)).ok()
    }

    /// The context `document_to_context` maps the document to, or `None` on an error.
    fn context(self) -> Option<Value> {
        let mut mapped = Mapped::new(Members {
            api_key: self.api_key.as_ref(),
            name: self.name.as_ref(),
            feature_states: self.feature_states.as_ref(),
            project: self.project.as_ref(),
        })
        .ok()?;
        self.overrides.into_segments(&mut mapped.segments);
        Some(mapped.into_context())
    }
}

/// The members read as JSON, in the order of [`DocumentView`]'s fields.
const JSON_MEMBERS: [&str; 5] = ["api_key", "name", "updated_at", "feature_states", "project"];

impl<'de> Deserialize<'de> for DocumentView {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DocumentVisitor)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = DocumentView;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an environment document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DocumentView, A::Error> {
        let mut json: [Option<Value>; 5] = Default::default();
        let mut overrides = None;
        // Keys are compared decoded: an escaped key names the same member.
        while let Some(Key(key)) = map.next_key()? {
            if key == "identity_overrides" {
                if overrides.is_some() {
                    return Err(A::Error::custom("duplicate identity_overrides"));
                }
                overrides = Some(map.next_value_seed(OverridesSeed)?);
                continue;
            }
            match JSON_MEMBERS.iter().position(|m| *m == key) {
                Some(i) => {
                    if json[i].is_some() {
                        return Err(A::Error::custom("duplicate member"));
                    }
                    json[i] = Some(map.next_value()?);
                }
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        let [api_key, name, updated_at, feature_states, project] = json;
        Ok(DocumentView {
            api_key,
            name,
            updated_at,
            feature_states,
            project,
            overrides: overrides.unwrap_or_default(),
        })
    }
}

/// `identity_overrides`: `null` or an array of identities, grouped as they are read.
struct OverridesSeed;

impl<'de> DeserializeSeed<'de> for OverridesSeed {
    type Value = Groups;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Groups, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for OverridesSeed {
    type Value = Groups;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of identities or null")
    }

    fn visit_none<E>(self) -> Result<Groups, E> {
        Ok(Groups::default())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Groups, D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Groups, A::Error> {
        let mut state = Grouping {
            groups: Groups::default(),
            key: String::new(),
        };
        while seq.next_element_seed(IdentitySeed(&mut state))?.is_some() {}
        Ok(state.groups)
    }
}

struct Grouping {
    groups: Groups,
    /// The group key being built (reused between identities).
    key: String,
}

/// One identity: its `identifier` and `identity_features`, added to its group when read.
struct IdentitySeed<'s>(&'s mut Grouping);

impl<'de> DeserializeSeed<'de> for IdentitySeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for IdentitySeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an identity")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut identifier = None;
        let mut features: Option<Option<Vec<OverrideFeature<'de>>>> = None;
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "identifier" if identifier.is_none() => identifier = Some(map.next_value()?),
                "identity_features" if features.is_none() => features = Some(map.next_value()?),
                "identifier" | "identity_features" => {
                    return Err(A::Error::custom("duplicate member"))
                }
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        let mut features = features.flatten().unwrap_or_default();
        if features.is_empty() {
            return Ok(());
        }
        features.sort_by(|a, b| a.name.cmp(&b.name));
        let state = self.0;
        state.key.clear();
        for (j, f) in features.iter().enumerate() {
            let raw = [(f.id, "null"), (f.enabled, "false"), (f.value, "null")]
                .map(|(raw, absent)| raw.map_or(absent, RawValue::get));
            push_key_entry(&mut state.key, j == 0, &f.name, raw, |k, raw| {
                push_raw_eq_key(k, raw).ok_or(())
            })
            .map_err(|()| A::Error::custom("a value the view does not key"))?;
        }
        let identifier = identifier.unwrap_or(Value::Null);
        state.groups.add(&state.key, identifier, || {
            features
                .iter()
                .map(|f| {
                    Ok(override_context(
                        &f.name,
                        tree(f.id, Value::Null)?,
                        tree(f.enabled, Value::Bool(false))?,
                        tree(f.value, Value::Null)?,
                    ))
                })
                .collect()
        })
    }
}

/// The value spelled `raw`, or `absent`.
fn tree<E: serde::de::Error>(raw: Option<&RawValue>, absent: Value) -> Result<Value, E> {
    match raw {
        None => Ok(absent),
        Some(raw) => serde_json::from_str(raw.get()).map_err(E::custom),
    }
}

/// One of an identity's `identity_features`: what grouping reads of it.
struct OverrideFeature<'de> {
    name: Cow<'de, str>,
    id: Option<&'de RawValue>,
    enabled: Option<&'de RawValue>,
    value: Option<&'de RawValue>,
}

impl<'de> Deserialize<'de> for OverrideFeature<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(OverrideFeatureVisitor)
    }
}

struct OverrideFeatureVisitor;

impl<'de> Visitor<'de> for OverrideFeatureVisitor {
    type Value = OverrideFeature<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a feature state")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut feature: Option<FeatureRef<'de>> = None;
        let mut enabled = None;
        let mut value = None;
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "feature" if feature.is_none() => feature = Some(map.next_value()?),
                "enabled" if enabled.is_none() => enabled = Some(map.next_value()?),
                "feature_state_value" if value.is_none() => value = Some(map.next_value()?),
                "feature" | "enabled" | "feature_state_value" => {
                    return Err(A::Error::custom("duplicate member"))
                }
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        let feature = feature.ok_or_else(|| A::Error::missing_field("feature"))?;
        Ok(OverrideFeature {
            name: feature.name,
            id: feature.id,
            enabled,
            value,
        })
    }
}

/// `feature`: an object with a string `name`.
struct FeatureRef<'de> {
    name: Cow<'de, str>,
    id: Option<&'de RawValue>,
}

impl<'de> Deserialize<'de> for FeatureRef<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FeatureRefVisitor)
    }
}

struct FeatureRefVisitor;

impl<'de> Visitor<'de> for FeatureRefVisitor {
    type Value = FeatureRef<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a feature")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut name: Option<Key<'de>> = None;
        let mut id = None;
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "name" if name.is_none() => name = Some(map.next_value()?),
                "id" if id.is_none() => id = Some(map.next_value()?),
                "name" | "id" => return Err(A::Error::custom("duplicate member")),
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        let name = name.ok_or_else(|| A::Error::missing_field("name"))?.0;
        Ok(FeatureRef { name, id })
    }
}

/// A string, borrowed from the input unless it has escapes. Also how keys are read.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }
}

/// A value the view does not read, checked as strictly as the tree parser checks it: strings
/// are decoded (UTF-8, escapes, paired surrogates) and arrays and objects count towards the
/// nesting limit. (`IgnoredAny` would skip them unchecked, accepting documents the tree path
/// rejects.)
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Skip)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_none<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Skip, D::Error> {
        Skip::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    /// An object, or (with arbitrary-precision numbers) the parser's wrapping of a number.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_key::<Skip>()?.is_some() {
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
}

#[cfg(test)]
mod tests;
