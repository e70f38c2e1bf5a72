//! The configuration's JSON Schema, derived from the serde structs of `file.rs` (`schemars`):
//! what `flagpole config schema` prints (an editor validates `config.json` with it through
//! `"$schema"`), and the one description of the keys everything else reads: the known keys of
//! each section for the did-you-mean (`suggest.rs`), the variables (`env.rs`), the value bounds
//! the loader enforces (`bounds.rs`) and the reference table (`reference.rs`).
//!
//! Three things the derive cannot know are added here: the top-level aliases (`ALIASES`), each
//! key's default, read from the effective configuration of [`Config::default`] as `flagpole
//! check` would print it, so the defaults have one source too; and `additionalProperties:
//! false` on every section under [`CLOSED`], as the loader refuses any other key there
//! (`suggest.rs`): an editor then flags a misspelt key as `check` does. Outside it (the
//! Edge Proxy's own keys) the schema stays open: there the loader only warns about a key it
//! does not know (a config written for either peer starts), unless it is a typo of a known one.

use std::path::PathBuf;
use std::sync::OnceLock;

use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use super::file::{File, ALIASES};
use super::settings::Config;
use super::tls::TlsConfig;

/// Flagpole's own section: every unknown key in it, at any depth, is refused; everywhere else
/// only a likely typo is (the Edge Proxy's sections stay open to keys of newer peers).
pub(super) const CLOSED: &str = "flagpole";

/// The schema, generated once.
pub fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(generate)
}

fn generate() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<File>().to_value();
    let root = schema
        .as_object_mut()
        .expect("the schema of a struct is an object");
    root.insert("title".into(), json!("Flagpole configuration"));
    // A section that is off by default (`server.tls`) has its other keys' defaults once its
    // required keys are given.
    let mut with_sections = Config::default();
    with_sections.server.tls = Some(TlsConfig::with_paths(PathBuf::new(), PathBuf::new()));
    with_sections.fleet = Some(super::FleetConfig::with_url(String::new()));
    let defaults = [
        super::effective(&Config::default()),
        super::effective(&with_sections),
    ];
    set_defaults(&mut schema, &defaults, &[]);
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for (alias, canonical) in ALIASES {
            let mut spelling = properties[*canonical].clone();
            spelling["description"] = json!(format!(
                "Another spelling of `{canonical}` (the Edge Proxy's); given both ways, \
                 `{canonical}` wins."
            ));
            properties.insert((*alias).to_owned(), spelling);
        }
    }
    close(&mut schema["properties"][CLOSED]);
    schema
}

/// `additionalProperties: false` on every node that declares `properties` (and says nothing
/// else about other keys), at any depth.
fn close(node: &mut Value) {
    match node {
        Value::Object(object) => {
            if object.contains_key("properties") && !object.contains_key("additionalProperties") {
                object.insert("additionalProperties".into(), Value::Bool(false));
            }
            object.values_mut().for_each(close);
        }
        Value::Array(list) => list.iter_mut().for_each(close),
        _ => {}
    }
}

/// Sets each property's `default` from the first of `defaults` that has it; removes the
/// derive's `null` (an `Option` field's) from sections and from keys with no default.
fn set_defaults(node: &mut Value, defaults: &[Value], path: &[String]) {
    let required: Vec<String> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|k| k.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            let mut at = path.to_vec();
            at.push(name.clone());
            let found = defaults.iter().find_map(|d| lookup(d, &at));
            if let Some(object) = property.as_object_mut() {
                object.remove("default");
                match found {
                    Some(Value::Object(_)) | None => {}
                    Some(_) if required.contains(name) => {}
                    Some(value) => {
                        object.insert("default".into(), value.clone());
                    }
                }
            }
            set_defaults(property, defaults, &at);
        }
    }
    for alternatives in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(list)) = node.get_mut(alternatives) {
            for alternative in list {
                set_defaults(alternative, defaults, path);
            }
        }
    }
    // Inside a list there is no default (`items` keys).
    if let Some(items) = node.get_mut("items") {
        set_defaults(items, &[], path);
    }
}

/// The value at a key path of an effective configuration.
fn lookup<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter()
        .try_fold(value, |v, key| v.as_object()?.get(key))
}

/// The schema and its alternatives (`anyOf`, …): the nodes a value at this place may match.
pub(super) fn alternatives(node: &Value) -> Vec<&Map<String, Value>> {
    let mut all = Vec::new();
    if let Some(object) = node.as_object() {
        all.push(object);
        for key in ["anyOf", "oneOf", "allOf"] {
            for alternative in object
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                all.extend(alternatives(alternative));
            }
        }
    }
    all
}

/// The property `name` of a section (of any of its alternatives).
pub(super) fn property<'s>(node: &'s Value, name: &str) -> Option<&'s Value> {
    alternatives(node)
        .into_iter()
        .find_map(|n| n.get("properties")?.get(name))
}

/// The element schema of a list (of any of its alternatives).
pub(super) fn items(node: &Value) -> Option<&Value> {
    alternatives(node).into_iter().find_map(|n| n.get("items"))
}

/// The keys a section declares, by its path of key names (list elements are not steps:
/// `["flagpole", "documents"]` is an element of that list), or `None` for a place with no
/// declared keys (a free-form value such as `logging.override`, or no such section).
pub(super) fn keys(section: &[&str]) -> Option<Vec<&'static str>> {
    let mut node = schema();
    for name in section {
        node = property(node, name).or_else(|| property(items(node)?, name))?;
    }
    let node = items(node).filter(|i| has_keys(i)).unwrap_or(node);
    let keys: Vec<&str> = alternatives(node)
        .into_iter()
        .filter_map(|n| n.get("properties")?.as_object())
        .flat_map(|p| p.keys().map(String::as_str))
        .collect();
    (!keys.is_empty()).then_some(keys)
}

fn has_keys(node: &Value) -> bool {
    alternatives(node)
        .iter()
        .any(|n| n.get("properties").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_know_their_keys_and_aliases() {
        let top = keys(&[]).unwrap();
        for key in [
            "environment_key_pairs",
            "api_poll_frequency",
            "flagpole",
            "ofrep",
            "$schema",
        ] {
            assert!(top.contains(&key), "{key} missing from {top:?}");
        }
        assert!(keys(&["logging"]).unwrap().contains(&"override"));
        assert!(keys(&["ofrep", "sse"]).unwrap().contains(&"heartbeat_sec"));
        assert_eq!(keys(&["flagpole", "documents"]).unwrap(), ["path"]);
        assert_eq!(
            keys(&["flagpole", "identity_cache"]).unwrap(),
            ["max_bytes"]
        );
        assert_eq!(keys(&["flagpole", "grpc"]).unwrap(), ["port", "sync_port"]);
        assert_eq!(
            keys(&["flagpole", "metrics"]).unwrap(),
            ["enabled", "per_environment"]
        );
        assert_eq!(
            keys(&["environment_key_pairs"]).unwrap(),
            ["server_side_key", "client_side_key"]
        );
        assert_eq!(keys(&["logging", "override"]), None);
        assert_eq!(keys(&["endpoint_caches"]), None);
    }

    #[test]
    fn flagpoles_sections_are_closed_the_edge_proxys_open() {
        /// Counts the sections found, asserting each is closed or open as `closed` says.
        fn walk(node: &Value, at: &str, closed: bool) -> usize {
            let mut sections = 0;
            if let Some(object) = node.as_object() {
                if object.contains_key("properties") {
                    sections += 1;
                    let extra = object.get("additionalProperties");
                    if closed {
                        assert_eq!(extra, Some(&Value::Bool(false)), "{at}");
                    } else {
                        assert_ne!(extra, Some(&Value::Bool(false)), "{at}");
                    }
                }
                for (key, child) in object {
                    let closed = closed || (at == "/properties" && key == CLOSED);
                    sections += walk(child, &format!("{at}/{key}"), closed);
                }
            } else if let Some(list) = node.as_array() {
                sections += list
                    .iter()
                    .map(|child| walk(child, at, closed))
                    .sum::<usize>();
            }
            sections
        }
        assert!(walk(schema(), "", false) > 5);
        assert_eq!(
            schema()["properties"][CLOSED]["additionalProperties"],
            false
        );
        assert!(walk(&schema()["properties"][CLOSED], "", true) > 3);
    }

    #[test]
    fn defaults_and_bounds_are_in_the_schema() {
        let s = schema();
        let top = &s["properties"];
        assert_eq!(top["api_poll_frequency_seconds"]["default"], 10);
        assert_eq!(top["api_poll_frequency_seconds"]["minimum"], 1);
        assert_eq!(top["api_poll_frequency"]["minimum"], 1);
        assert_eq!(top["allow_origins"]["default"], json!(["*"]));
        assert_eq!(top["logging"]["properties"]["log_level"]["default"], "INFO");
        let tls = &top["server"]["properties"]["tls"];
        assert_eq!(tls["default"], Value::Null, "{tls}");
        assert_eq!(tls["properties"]["reload_interval_seconds"]["default"], 2);
        assert!(tls["properties"]["cert_path"].get("default").is_none());
        let sample = &top["flagpole"]["properties"]["shadow"]["properties"]["sample_rate"];
        assert_eq!(
            (&sample["minimum"], &sample["maximum"]),
            (&json!(0), &json!(1))
        );
    }
}
