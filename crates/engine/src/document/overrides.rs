//! Identity overrides → virtual segments, as the Flagsmith SDKs map them
//! (`_map_identity_overrides_to_segments`): identities whose sets of overrides are equal share one
//! segment, `$.identity.identifier IN [their identifiers]`, whose overrides have priority −∞.
//!
//! "Equal" is Python's tuple equality over `(feature id, name, enabled, value)` sorted by name,
//! so `1 == 1.0 == True`. Each set is reduced to a *group key*, a text equal exactly when the
//! sets are: per override `eq_key(id)|name|eq_key(enabled)|eq_key(value)`, joined by NUL.
//!
//! Both ways of reading a document group here: the JSON tree (`document_to_context`) and the
//! borrowed view of [`super::view`], which builds the same key text from the raw JSON of each
//! value (without a tree for the common literals) and so forms the same groups, in the same
//! order, with the same first identity's values.

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use crate::value::{classify_number, JsonNumber};

/// Groups of identities with equal override sets, in order of first appearance.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    /// Group key → (the overrides of the group's first identity, every identifier in order).
    groups: IndexMap<String, (Vec<Value>, Vec<Value>)>,
}

impl Groups {
    /// Adds an identity whose override set has the group key `key`. `overrides` makes the
    /// group's override contexts (see [`override_context`]); it is called only for the first
    /// identity of a group, and an error from it is returned as is.
    pub(super) fn add<E>(
        &mut self,
        key: &str,
        identifier: Value,
        overrides: impl FnOnce() -> Result<Vec<Value>, E>,
    ) -> Result<(), E> {
        match self.groups.get_mut(key) {
            Some(group) => group.1.push(identifier),
            None => {
                self.groups
                    .insert(key.to_owned(), (overrides()?, vec![identifier]));
            }
        }
        Ok(())
    }

    /// Inserts one segment per group, keyed `identity_overrides:<n>`, after those already there
    /// (a key already present is replaced in place, as the tree mapping always did).
    pub(super) fn into_segments(self, segments: &mut Map<String, Value>) {
        for (i, (_, (overrides, identifiers))) in self.groups.into_iter().enumerate() {
            let key = format!("identity_overrides:{i}");
            let condition = object_of([
                ("property", "$.identity.identifier".into()),
                ("operator", "IN".into()),
                ("value", Value::Array(identifiers)),
            ]);
            let rule = object_of([
                ("type", "ALL".into()),
                ("conditions", Value::Array(vec![condition])),
            ]);
            segments.insert(
                key.clone(),
                object_of([
                    ("key", Value::String(key)),
                    ("name", "identity_overrides".into()),
                    ("rules", Value::Array(vec![rule])),
                    ("overrides", Value::Array(overrides)),
                    ("metadata", json!({"source": "identity_overrides"})),
                ]),
            );
        }
    }
}

/// The feature context of one identity override.
pub(crate) fn override_context(name: &str, id: Value, enabled: Value, value: Value) -> Value {
    object_of([
        ("key", Value::String(String::new())),
        ("name", Value::String(name.to_owned())),
        ("enabled", enabled),
        ("value", value),
        ("priority", negative_infinity()),
        ("metadata", object_of([("id", id)])),
    ])
}

/// Appends one override's part of a group key, `eq_key(id)|name|eq_key(enabled)|eq_key(value)`
/// (after a NUL unless it is the first), with `eq_key` appended by `push`.
pub(crate) fn push_key_entry<V, E>(
    key: &mut String,
    first: bool,
    name: &str,
    [id, enabled, value]: [V; 3],
    push: impl Fn(&mut String, V) -> Result<(), E>,
) -> Result<(), E> {
    if !first {
        key.push('\u{0}');
    }
    push(key, id)?;
    key.push('|');
    key.push_str(name);
    key.push('|');
    push(key, enabled)?;
    key.push('|');
    push(key, value)
}

/// Groups the identity overrides of a document tree (`identity_overrides`, already known to be
/// an array or absent) into `segments`, with the error paths of the tree mapping.
pub(crate) fn identity_override_segments(
    identities: &[Value],
    segments: &mut Map<String, Value>,
) -> Result<(), crate::error::InputError> {
    use crate::error::InputError;
    let mut groups = Groups::default();
    let mut key = String::new();
    for (i, identity) in identities.iter().enumerate() {
        // Paths are formatted only on error: a medium document has thousands of identities.
        let path = || format!("$.identity_overrides[{i}]");
        let identity = identity
            .as_object()
            .ok_or_else(|| InputError::new(path(), "must be an object"))?;
        let features = match identity.get("identity_features") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) => a.as_slice(),
            Some(_) => {
                return Err(InputError::new(
                    format!("{}.identity_features", path()),
                    "must be an array",
                ))
            }
        };
        if features.is_empty() {
            continue;
        }
        let mut entries = Vec::with_capacity(features.len());
        for (j, fs) in features.iter().enumerate() {
            let fp = || format!("{}.identity_features[{j}]", path());
            let fs = fs
                .as_object()
                .ok_or_else(|| InputError::new(fp(), "must be an object"))?;
            let feature = fs
                .get("feature")
                .and_then(Value::as_object)
                .ok_or_else(|| InputError::new(format!("{}.feature", fp()), "must be an object"))?;
            let name = feature.get("name").and_then(Value::as_str).ok_or_else(|| {
                InputError::new(format!("{}.feature.name", fp()), "must be a string")
            })?;
            entries.push((
                name,
                feature.get("id").unwrap_or(&NULL),
                fs.get("enabled").unwrap_or(&FALSE),
                fs.get("feature_state_value").unwrap_or(&NULL),
            ));
        }
        entries.sort_by(|a, b| a.0.cmp(b.0));
        key.clear();
        for (j, (name, id, enabled, value)) in entries.iter().enumerate() {
            push_key_entry(&mut key, j == 0, name, [*id, *enabled, *value], |k, v| {
                k.push_str(&py_eq_key(v));
                Ok::<(), InputError>(())
            })?;
        }
        let identifier = identity.get("identifier").cloned().unwrap_or(Value::Null);
        groups.add(&key, identifier, || {
            Ok::<_, InputError>(
                entries
                    .iter()
                    .map(|(name, id, enabled, value)| {
                        override_context(name, (*id).clone(), (*enabled).clone(), (*value).clone())
                    })
                    .collect(),
            )
        })?;
    }
    groups.into_segments(segments);
    Ok(())
}

/// A JSON object of these members, in this order. Unlike `json!`, which copies every
/// interpolated value through `to_value`, it moves them (the segments hold thousands of
/// identifiers).
pub(crate) fn object_of<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

static NULL: Value = Value::Null;
static FALSE: Value = Value::Bool(false);

fn negative_infinity() -> Value {
    serde_json::from_str("-1e999").expect("arbitrary-precision numbers keep -1e999")
}

/// A string equal for values Python's `==` (and `hash`) treats as equal.
pub(crate) fn py_eq_key(v: &Value) -> String {
    match v {
        Value::Bool(b) => (*b as u8).to_string(),
        Value::Number(n) => match classify_number(n) {
            JsonNumber::Int(i) => i.to_string(),
            JsonNumber::Float(f) if f.fract() == 0.0 && f.abs() < 1e300 => {
                format!("{}", num_bigint::BigInt::from(f as i128))
            }
            JsonNumber::Float(f) => format!("f{f:?}"),
        },
        other => other.to_string(),
    }
}

/// Appends [`py_eq_key`] of the JSON scalar spelled `raw` (one complete JSON value, as the
/// parser delimited it). The common literals are keyed from their text; other scalars are
/// parsed and keyed as a tree. `None` for arrays and objects (the parser delimited them without
/// its nesting limit, so only the tree path reads them exactly) and for what does not parse.
pub(crate) fn push_raw_eq_key(key: &mut String, raw: &str) -> Option<()> {
    let bytes = raw.as_bytes();
    match bytes.first()? {
        b't' if raw == "true" => key.push('1'),
        b'f' if raw == "false" => key.push('0'),
        b'n' if raw == "null" => key.push_str("null"),
        // A string without escapes is written back exactly as it is spelled.
        b'"' if !bytes.contains(&b'\\') => key.push_str(raw),
        // An integer that fits in an i64 and is spelled as Python prints it.
        b'1'..=b'9' if bytes.len() <= 18 && bytes.iter().all(u8::is_ascii_digit) => {
            key.push_str(raw)
        }
        b'-' if bytes.len() <= 19
            && matches!(bytes.get(1), Some(b'1'..=b'9'))
            && bytes[1..].iter().all(u8::is_ascii_digit) =>
        {
            key.push_str(raw)
        }
        b'0' if raw == "0" => key.push('0'),
        b'[' | b'{' => return None,
        _ => key.push_str(&py_eq_key(&serde_json::from_str(raw).ok()?)),
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_keys_equal_tree_keys() {
        for raw in [
            "true",
            "false",
            "null",
            "0",
            "-0",
            "7",
            "-7",
            "123456789012345678",
            "1234567890123456789",
            "123456789012345678901234567890",
            "1.0",
            "1.5",
            "-0.0",
            "1e2",
            "1E400",
            "1e39",
            "\"\"",
            "\"plain\"",
            "\"caf\u{e9}\"",
            "\"a\\u0062\\n\"",
            "\"\\\"\"",
        ] {
            let mut fast = String::new();
            push_raw_eq_key(&mut fast, raw).unwrap();
            let tree: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(fast, py_eq_key(&tree), "{raw}");
        }
        for refused in ["\"\\ud800\"", "[1]", "{}"] {
            assert_eq!(
                push_raw_eq_key(&mut String::new(), refused),
                None,
                "{refused}"
            );
        }
    }
}
