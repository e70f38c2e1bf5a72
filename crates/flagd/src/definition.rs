//! A flag file → a compiled [`FlagSet`]: every check the reference makes when it loads a file
//! (`openfeature-flagd-core` 1.0.0, `FlagStore.update` and `Flag`), done once, with errors
//! naming the JSON path; `$ref`s substituted and targeting rules compiled.

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::evaluators;
use crate::targeting::Targeting;

/// Whether a flag is served (`ENABLED`) or answers the caller's default (`DISABLED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Enabled,
    Disabled,
}

pub use crate::refusal::DefinitionError;

/// The members a flag may have (`source` and `selector` are added by flagd's own sync and
/// ignored); anything else refuses the file, as the reference refuses it.
const FLAG_MEMBERS: &[&str] = &[
    "state",
    "variants",
    "defaultVariant",
    "targeting",
    "metadata",
    "source",
    "selector",
];

/// One flag, compiled.
#[derive(Debug)]
pub struct Flag {
    pub(crate) key: String,
    pub(crate) state: State,
    pub(crate) variants: IndexMap<String, Value>,
    pub(crate) default_variant: Option<String>,
    pub(crate) targeting: Option<Targeting>,
    /// Set metadata with the flag's own over it (the flag's key wins).
    pub(crate) metadata: Map<String, Value>,
    /// The definition as served to in-process providers (`$ref`s resolved).
    pub(crate) definition: Value,
}

impl Flag {
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// The variants in the file's order.
    pub fn variants(&self) -> &IndexMap<String, Value> {
        &self.variants
    }

    pub fn default_variant(&self) -> Option<&str> {
        self.default_variant.as_deref()
    }

    /// Whether no context can change the answer (no targeting rule): flagd's `STATIC`.
    pub fn is_static(&self) -> bool {
        self.targeting.is_none()
    }

    /// The flag's metadata merged over its set's.
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.metadata
    }

    /// The flag's definition as flagd's sync service sends it (`$ref`s resolved).
    pub fn definition(&self) -> &Value {
        &self.definition
    }
}

/// A compiled flag file: flags by key (in key order) and the set's metadata.
#[derive(Debug, Default)]
pub struct FlagSet {
    pub(crate) flags: IndexMap<String, Flag>,
    pub(crate) metadata: Map<String, Value>,
    /// Every rule of the set runs on this engine (its operators registered once).
    pub(crate) engine: Arc<crate::targeting::Engine>,
}

impl FlagSet {
    /// Reads and compiles a flag file's JSON text.
    pub fn from_json(text: &str) -> Result<FlagSet, DefinitionError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| DefinitionError::at("$", format!("not JSON: {e}")))?;
        FlagSet::from_value(&value)
    }

    /// Compiles a parsed flag file.
    pub fn from_value(file: &Value) -> Result<FlagSet, DefinitionError> {
        let file = file
            .as_object()
            .ok_or_else(|| DefinitionError::at("$", "a flag file must be a JSON object"))?;
        let metadata = match file.get("metadata") {
            None => Map::new(),
            Some(Value::Object(m)) => {
                check_metadata(m, "$.metadata")?;
                m.clone()
            }
            Some(_) => return Err(DefinitionError::at("$.metadata", "must be an object")),
        };
        let empty = Map::new();
        let flags = match file.get("flags") {
            None => &empty,
            Some(Value::Object(flags)) => flags,
            Some(_) => return Err(DefinitionError::at("$.flags", "must be an object")),
        };
        let evaluators = evaluators::of_file(file)?;
        let engine = Arc::new(crate::targeting::Engine::new());
        let mut compiled = IndexMap::with_capacity(flags.len());
        for (key, definition) in flags {
            let path = format!("$.flags.{key}");
            let definition = match evaluators {
                Some(evaluators) => evaluators::substitute(definition, evaluators, &path)?,
                None => definition.clone(),
            };
            let flag = compile_flag(key, definition, &metadata, &engine, &path)?;
            compiled.insert(key.clone(), flag);
        }
        compiled.sort_keys();
        Ok(FlagSet {
            flags: compiled,
            metadata,
            engine,
        })
    }

    /// Several sets as one, as flagd merges its sources: a later set's flag replaces an
    /// earlier one's of the same key; set metadata merged the same way. Each flag keeps the
    /// metadata it was compiled with.
    pub fn merge(sets: impl IntoIterator<Item = FlagSet>) -> FlagSet {
        let mut merged = FlagSet::default();
        for set in sets {
            merged.metadata.extend(set.metadata);
            merged.flags.extend(set.flags);
        }
        merged.flags.sort_keys();
        merged
    }

    pub fn get(&self, key: &str) -> Option<&Flag> {
        self.flags.get(key)
    }

    /// Every flag, in key order.
    pub fn flags(&self) -> impl ExactSizeIterator<Item = &Flag> {
        self.flags.values()
    }

    pub fn len(&self) -> usize {
        self.flags.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    /// The set's own metadata.
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.metadata
    }
}

/// Metadata values are scalars (string, number, boolean), as the reference requires.
fn check_metadata(metadata: &Map<String, Value>, path: &str) -> Result<(), DefinitionError> {
    for (key, value) in metadata {
        if key.is_empty() {
            return Err(DefinitionError::at(
                path,
                "a metadata key must not be empty",
            ));
        }
        if !matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
            return Err(DefinitionError::at(
                format!("{path}.{key}"),
                "a metadata value must be a string, a number or a boolean",
            ));
        }
    }
    Ok(())
}

/// Python's truthiness of a JSON value (the reference tests members with `if x`).
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn compile_flag(
    key: &str,
    definition: Value,
    set_metadata: &Map<String, Value>,
    engine: &crate::targeting::Engine,
    path: &str,
) -> Result<Flag, DefinitionError> {
    let object = definition
        .as_object()
        .ok_or_else(|| DefinitionError::at(path, "a flag must be an object"))?;
    if let Some(unknown) = object.keys().find(|k| !FLAG_MEMBERS.contains(&k.as_str())) {
        return Err(DefinitionError::at(
            format!("{path}.{unknown}"),
            format!(
                "a flag has no member {unknown:?} (known: {})",
                FLAG_MEMBERS.join(", ")
            ),
        ));
    }
    let state = match object.get("state").and_then(Value::as_str) {
        Some("ENABLED") => State::Enabled,
        Some("DISABLED") => State::Disabled,
        _ => {
            return Err(DefinitionError::at(
                format!("{path}.state"),
                "must be \"ENABLED\" or \"DISABLED\"",
            ))
        }
    };
    let variants: IndexMap<String, Value> = match object.get("variants") {
        Some(Value::Object(v)) if !v.is_empty() => {
            v.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        }
        _ => {
            return Err(DefinitionError::at(
                format!("{path}.variants"),
                "must be an object naming at least one variant",
            ))
        }
    };
    // A boolean names the "true"/"false" variant; a name that is no variant fails each
    // evaluation that falls back to it (`GENERAL`), as in the reference.
    let default_variant = match object.get("defaultVariant") {
        Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(other) if truthy(other) => {
            return Err(DefinitionError::at(
                format!("{path}.defaultVariant"),
                "must be a variant's name, a boolean or null",
            ))
        }
        _ => None,
    };
    let mut metadata = set_metadata.clone();
    match object.get("metadata") {
        Some(Value::Object(own)) => {
            check_metadata(own, &format!("{path}.metadata"))?;
            metadata.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        Some(other) if truthy(other) => {
            return Err(DefinitionError::at(
                format!("{path}.metadata"),
                "must be an object",
            ))
        }
        _ => {}
    }
    let targeting = match object.get("targeting") {
        Some(rule) if truthy(rule) => Some(engine.compile(rule)),
        _ => None,
    };
    Ok(Flag {
        key: key.to_owned(),
        state,
        variants,
        default_variant,
        targeting,
        metadata,
        definition,
    })
}
