//! A flag file → a compiled [`FlagSet`]: every check flagd makes when it loads a file, done
//! once, with errors naming the flag and the JSON path.

use indexmap::IndexMap;
use serde_json::{Map, Value};

/// Whether a flag is served (`ENABLED`) or answers the caller's default (`DISABLED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Enabled,
    Disabled,
}

/// Why a flag file was refused: the JSON path of the offending value and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionError {
    /// `$.flags.my-flag.defaultVariant` and the like.
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for DefinitionError {}

fn refuse(path: impl Into<String>, message: impl Into<String>) -> DefinitionError {
    DefinitionError {
        path: path.into(),
        message: message.into(),
    }
}

/// One flag, compiled.
#[derive(Debug)]
pub struct Flag {
    pub(crate) key: String,
    pub(crate) state: State,
    pub(crate) variants: IndexMap<String, Value>,
    pub(crate) default_variant: Option<String>,
    /// The targeting rule with every `$ref` resolved (`None`: no rule, or `{}`).
    pub(crate) targeting: Option<Value>,
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
}

impl FlagSet {
    /// Reads and compiles a flag file's JSON text.
    pub fn from_json(text: &str) -> Result<FlagSet, DefinitionError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| refuse("$", format!("not JSON: {e}")))?;
        FlagSet::from_value(&value)
    }

    /// Compiles a parsed flag file.
    pub fn from_value(file: &Value) -> Result<FlagSet, DefinitionError> {
        let file = file
            .as_object()
            .ok_or_else(|| refuse("$", "a flag file must be a JSON object"))?;
        let metadata = match file.get("metadata") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(refuse("$.metadata", "must be an object")),
        };
        let flags = match file.get("flags") {
            Some(Value::Object(flags)) => flags,
            Some(_) => return Err(refuse("$.flags", "must be an object")),
            None => return Err(refuse("$.flags", "is required")),
        };
        let mut compiled = IndexMap::with_capacity(flags.len());
        for (key, definition) in flags {
            compiled.insert(key.clone(), compile_flag(key, definition, &metadata)?);
        }
        compiled.sort_keys();
        Ok(FlagSet {
            flags: compiled,
            metadata,
        })
    }

    /// Several sets as one, as flagd merges its sources: a later set's flag replaces an
    /// earlier one's of the same key; set metadata merged the same way.
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

fn compile_flag(
    key: &str,
    definition: &Value,
    set_metadata: &Map<String, Value>,
) -> Result<Flag, DefinitionError> {
    let path = format!("$.flags.{key}");
    let object = definition
        .as_object()
        .ok_or_else(|| refuse(&path, "a flag must be an object"))?;
    let state = match object.get("state").and_then(Value::as_str) {
        Some("ENABLED") => State::Enabled,
        Some("DISABLED") => State::Disabled,
        _ => {
            return Err(refuse(
                format!("{path}.state"),
                "must be \"ENABLED\" or \"DISABLED\"",
            ))
        }
    };
    let variants: IndexMap<String, Value> = match object.get("variants") {
        Some(Value::Object(v)) => v.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => return Err(refuse(format!("{path}.variants"), "must be an object")),
    };
    let default_variant = match object.get("defaultVariant") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) if variants.contains_key(name) => Some(name.clone()),
        Some(Value::String(name)) => {
            return Err(refuse(
                format!("{path}.defaultVariant"),
                format!("names no variant of the flag: {name:?}"),
            ))
        }
        Some(_) => {
            return Err(refuse(
                format!("{path}.defaultVariant"),
                "must be a string or null",
            ))
        }
    };
    let targeting = match object.get("targeting") {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) if o.is_empty() => None,
        Some(rule) => Some(rule.clone()),
    };
    let mut metadata = set_metadata.clone();
    match object.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(own)) => {
            metadata.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())))
        }
        Some(_) => return Err(refuse(format!("{path}.metadata"), "must be an object")),
    }
    Ok(Flag {
        key: key.to_owned(),
        state,
        variants,
        default_variant,
        targeting,
        metadata,
        definition: definition.clone(),
    })
}
