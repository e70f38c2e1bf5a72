//! Unknown keys and "did you mean". A key the configuration does not know is usually a typo of
//! one it does (`enviroment_key_pairs`), and a typo silently drops the setting it meant: so an
//! unknown key close to a known one at the same level (edit distance ≤ 2, or equal ignoring case
//! and `_`/`-`) stops startup naming the key it is close to, in any section. Other unknown keys
//! depend on whose section they are in. In Flagpole's own (`flagpole`, at any depth) every
//! unknown key stops startup, naming the section's keys, as the published schema refuses it
//! (`additionalProperties: false`). At the top level and in the Edge Proxy's sections it is a
//! warning and ignored, so a config written for either peer (or a newer one) starts; the schema
//! leaves those sections open.
//!
//! Unknown keys are found by walking the file along the JSON Schema derived from the serde
//! structs (`schema.rs`), so the known keys cannot drift from what is parsed: every section, at
//! any depth, knows its keys, and a typo is found wherever it is, even beside a wrong value
//! elsewhere (the typo usually explains it). Free-form values (`logging.override`) declare no
//! keys, so nothing inside them is unknown.

use std::fmt;

use serde_json::Value;

use super::schema::{alternatives, items, keys, property, schema, CLOSED};

/// One step of a key path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Segment {
    Key(String),
    Index(usize),
}

/// A key path as written in messages: `flagpole.documents[0].path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct KeyPath(pub Vec<Segment>);

impl KeyPath {
    /// The section a key sits in, by name (list indices do not change the section).
    fn section(&self) -> Vec<&str> {
        let parent = &self.0[..self.0.len().saturating_sub(1)];
        parent
            .iter()
            .filter_map(|s| match s {
                Segment::Key(k) => Some(k.as_str()),
                Segment::Index(_) => None,
            })
            .collect()
    }

    fn last_key(&self) -> Option<&str> {
        match self.0.last() {
            Some(Segment::Key(k)) => Some(k),
            _ => None,
        }
    }

    /// This path with its last key replaced.
    fn with_last(&self, key: &str) -> KeyPath {
        let mut segments = self.0.clone();
        segments.pop();
        segments.push(Segment::Key(key.to_owned()));
        KeyPath(segments)
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(k) if i == 0 => f.write_str(k)?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Every key of `root` that its section does not declare, in the file's order.
pub(super) fn unknown(root: &Value) -> Vec<KeyPath> {
    fn walk(value: &Value, node: &Value, at: &mut Vec<Segment>, out: &mut Vec<KeyPath>) {
        match value {
            Value::Object(members) => {
                let declares = alternatives(node)
                    .iter()
                    .any(|n| n.contains_key("properties"));
                for (key, member) in members {
                    at.push(Segment::Key(key.clone()));
                    match property(node, key) {
                        Some(child) => walk(member, child, at, out),
                        None if declares => out.push(KeyPath(at.clone())),
                        None => {}
                    }
                    at.pop();
                }
            }
            Value::Array(elements) => {
                if let Some(element) = items(node) {
                    for (i, member) in elements.iter().enumerate() {
                        at.push(Segment::Index(i));
                        walk(member, element, at, out);
                        at.pop();
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(root, schema(), &mut Vec::new(), &mut out);
    out
}

/// Unknown keys, sorted into refusals (errors) and the rest (warnings).
#[derive(Debug, Default)]
pub(super) struct Unknown {
    /// `unknown key 'x': did you mean 'y'?`, or in Flagpole's section the keys it has.
    pub refused: Vec<String>,
    /// `unknown config key 'x' ignored`
    pub ignored: Vec<String>,
}

pub(super) fn sort(paths: &[KeyPath]) -> Unknown {
    let mut unknown = Unknown::default();
    for path in paths {
        let known = keys(&path.section()).unwrap_or_default();
        let meant = path.last_key().and_then(|key| closest(key, &known));
        let closed = path.0.len() > 1 && path.0.first() == Some(&Segment::Key(CLOSED.into()));
        match meant {
            Some(meant) => unknown.refused.push(format!(
                "unknown key '{path}': did you mean '{}'?",
                path.with_last(meant)
            )),
            None if closed => unknown.refused.push(format!(
                "unknown key '{path}': not a setting (`flagpole config reference` lists them; here: {})",
                known.join(", ")
            )),
            None => unknown
                .ignored
                .push(format!("unknown config key '{path}' ignored")),
        }
    }
    unknown
}

/// The known key `key` is a likely typo of, if any: equal ignoring case and `_`/`-`, else the
/// nearest within two edits (a swap of neighbours counts as one).
pub(crate) fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let squash = |s: &str| -> String {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let squashed = squash(key);
    if let Some(k) = known.iter().find(|k| squash(k) == squashed) {
        return Some(k);
    }
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(key, k), *k))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

/// Every top-level key, aliases included (the names environment variables may use).
pub(super) fn top_level_keys() -> Vec<&'static str> {
    keys(&[]).expect("the top level is a section")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_keys_are_suggested() {
        let known = ["environment_key_pairs", "api_url", "server", "proxy_key"];
        assert_eq!(
            closest("enviroment_key_pairs", &known),
            Some("environment_key_pairs")
        );
        assert_eq!(
            closest("Environment-Key-Pairs", &known),
            Some("environment_key_pairs")
        );
        assert_eq!(closest("api_ulr", &known), Some("api_url"));
        assert_eq!(closest("sevrer", &known), Some("server"));
        assert_eq!(closest("some_future_key", &known), None);
        assert_eq!(closest("servers_list", &known), None);
    }

    #[test]
    fn paths_read_as_written() {
        let path = KeyPath(vec![
            Segment::Key("flagpole".into()),
            Segment::Key("documents".into()),
            Segment::Index(0),
            Segment::Key("pth".into()),
        ]);
        assert_eq!(
            sort(&[path]).refused,
            ["unknown key 'flagpole.documents[0].pth': did you mean 'flagpole.documents[0].path'?"]
        );
    }
}
