//! `Features`: a client-features body (`/api/client/features`) read once into Unleash's own
//! engine and the per-toggle facts beside it. Everything that does not depend on a request
//! happens here, so evaluating and serving a filtered body parse nothing; a body the engine's
//! types do not take is refused whole, naming the JSON path, and the caller keeps its old one.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use unleash_types::client_features::{ClientFeature, ClientFeatures, Segment};
use unleash_yggdrasil::EngineState;

use crate::canonical::to_canonical;
use crate::error::FeaturesError;
use crate::payload::Payloads;
use crate::toggle::Toggle;

/// A toggle the engine could not compile (an unparsable constraint, a missing segment): as in
/// every Unleash SDK it then evaluates as off, rather than refusing the whole body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileWarning {
    /// The toggle's name.
    pub toggle: String,
    /// The engine's words.
    pub message: String,
}

/// One client-features body, compiled. Immutable once built, and `Send + Sync`: the server
/// shares one by `Arc` across requests and swaps in a new one when the body changes.
pub struct Features {
    pub(crate) engine: EngineState,
    /// Toggles by name (the engine keys them by name too; a body naming one twice is refused).
    pub(crate) toggles: BTreeMap<String, Toggle>,
    /// Toggle names in the body's order, which a filtered body keeps.
    pub(crate) order: Vec<String>,
    /// Segments by id: the JSON as received, and canonically written.
    pub(crate) segments: BTreeMap<i32, (String, String)>,
    /// Top-level members other than `features`, `segments` and `query`, as received and in
    /// order (`version`, `meta`, …): a filtered body carries them unchanged.
    pub(crate) members: Vec<(String, String)>,
    /// Every variant payload of the body read as its `type` says, once, by type then text:
    /// OpenFeature answers look a chosen variant's payload up here instead of parsing it per
    /// request (`openfeature.rs`).
    pub(crate) payloads: Payloads,
    warnings: Vec<CompileWarning>,
}

impl Features {
    /// Reads and compiles a client-features body.
    pub fn from_slice(body: &[u8]) -> Result<Self, FeaturesError> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| FeaturesError::new("$", format!("not JSON: {e}")))?;
        let Value::Object(object) = value else {
            return Err(FeaturesError::new("$", "not a JSON object"));
        };
        Self::from_object(object)
    }

    fn from_object(mut object: Map<String, Value>) -> Result<Self, FeaturesError> {
        let version = match object.get("version") {
            Some(v) => typed::<u32>(v, "$.version")?,
            None => return Err(FeaturesError::new("$", "no `version` member")),
        };
        let Some(Value::Array(feature_values)) = object.remove("features") else {
            return Err(FeaturesError::new("$.features", "missing, or not an array"));
        };
        let segment_values = match object.remove("segments") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(FeaturesError::new("$.segments", "not an array")),
        };
        object.remove("query");

        let mut features = Vec::with_capacity(feature_values.len());
        let mut toggles = BTreeMap::new();
        let mut order = Vec::with_capacity(feature_values.len());
        for (i, value) in feature_values.iter().enumerate() {
            let path = format!("$.features[{i}]");
            let name = value.get("name").and_then(Value::as_str);
            let feature: ClientFeature = typed(value, &path).map_err(|e| e.in_toggle(name))?;
            let toggle = Toggle::new(value, &feature);
            if toggles.contains_key(&toggle.name) {
                return Err(FeaturesError::new(path, "a second toggle of this name")
                    .in_toggle(Some(&toggle.name)));
            }
            order.push(toggle.name.clone());
            toggles.insert(toggle.name.clone(), toggle);
            features.push(feature);
        }

        let payloads = crate::payload::payloads(&features);

        let mut segments = BTreeMap::new();
        let mut typed_segments = Vec::with_capacity(segment_values.len());
        for (i, value) in segment_values.iter().enumerate() {
            let path = format!("$.segments[{i}]");
            let segment: Segment = typed(value, &path)?;
            if segments
                .insert(segment.id, (value.to_string(), to_canonical(value)))
                .is_some()
            {
                return Err(FeaturesError::new(
                    path,
                    format!("a second segment {}", segment.id),
                ));
            }
            typed_segments.push(segment);
        }

        // The engine's clock fields only time its metrics, which this crate never reads.
        let engine = EngineState::initial_state(DateTime::<Utc>::UNIX_EPOCH);
        let warnings = engine
            .apply_client_features(ClientFeatures {
                version,
                features,
                segments: Some(typed_segments),
                query: None,
                meta: None,
            })
            .unwrap_or_default()
            .into_iter()
            .map(|w| CompileWarning {
                toggle: w.toggle_name,
                message: w.message,
            })
            .collect();

        let members = object
            .into_iter()
            .map(|(key, value)| (key, value.to_string()))
            .collect();
        Ok(Self {
            engine,
            toggles,
            order,
            segments,
            members,
            payloads,
            warnings,
        })
    }

    /// Toggles the engine could not compile; each evaluates as off.
    pub fn warnings(&self) -> &[CompileWarning] {
        &self.warnings
    }

    /// How many toggles the body holds.
    pub fn len(&self) -> usize {
        self.toggles.len()
    }

    /// Whether the body holds no toggle.
    pub fn is_empty(&self) -> bool {
        self.toggles.is_empty()
    }

    /// Every toggle's name, sorted.
    pub fn toggle_names(&self) -> impl Iterator<Item = &str> {
        self.toggles.keys().map(String::as_str)
    }

    /// The project a toggle belongs to (`default` when the body names none); `None` for a
    /// toggle the body does not hold.
    pub fn project(&self, name: &str) -> Option<&str> {
        self.toggles.get(name).map(|t| t.project.as_str())
    }

    /// A toggle's JSON as a filtered client-features body serves it (written once, when the
    /// body was read); `None` for a toggle the body does not hold.
    pub fn toggle_json(&self, name: &str) -> Option<&str> {
        self.toggles.get(name).map(|t| t.raw.as_str())
    }

    /// Whether no context can change the toggle's answer (see [`crate::Resolution::is_static`]);
    /// `None` for a toggle the body does not hold.
    pub fn is_static(&self, name: &str) -> Option<bool> {
        self.toggles.get(name).map(|t| t.is_static)
    }
}

/// `value` read as a `T`, or the error at the JSON path inside it.
fn typed<T: DeserializeOwned>(value: &Value, path: &str) -> Result<T, FeaturesError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let full = match inner.as_str() {
            "." | "" => path.to_owned(),
            _ if inner.starts_with('[') => format!("{path}{inner}"),
            _ => format!("{path}.{inner}"),
        };
        FeaturesError::new(full, e.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::Features;

    fn refused(body: &str) -> String {
        match Features::from_slice(body.as_bytes()) {
            Ok(_) => panic!("accepted: {body}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Features>();
    }

    #[test]
    fn reads_a_body() {
        let body = r#"{"version":2,"features":[{"name":"b","enabled":true,"project":"p"},
            {"name":"a","enabled":false}],"segments":[],"query":{"environment":"x"},"meta":{"etag":"e"}}"#;
        let features = Features::from_slice(body.as_bytes()).unwrap();
        assert_eq!(features.toggle_names().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(features.order, ["b", "a"]);
        assert_eq!(features.project("b"), Some("p"));
        assert_eq!(features.project("a"), Some("default"));
        assert_eq!(features.project("c"), None);
        let members: Vec<_> = features.members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(members, ["version", "meta"]);
        assert!(features.warnings().is_empty());
    }

    #[test]
    fn refuses_broken_bodies_naming_the_path() {
        assert!(refused("{").starts_with("$: not JSON"));
        assert_eq!(refused("[]"), "$: not a JSON object");
        assert_eq!(
            refused(r#"{"version":1}"#),
            "$.features: missing, or not an array"
        );
        assert!(refused(r#"{"version":"x","features":[]}"#).starts_with("$.version: invalid type"));
        let e = refused(
            r#"{"version":1,"features":[{"name":"ok","enabled":true},
            {"name":"bad","enabled":true,"strategies":[{"name":"default","constraints":[{"contextName":"x","operator":"IN","values":[1]}]}]}]}"#,
        );
        assert!(
            e.starts_with(r#"$.features[1].strategies[0].constraints[0].values[0] (toggle "bad"): invalid type"#),
            "{e}"
        );
        assert!(refused(
            r#"{"version":1,"features":[{"name":"a","enabled":true},{"name":"a","enabled":true}]}"#
        )
        .contains("a second toggle"));
        assert!(refused(r#"{"version":1,"features":[],"segments":[{"id":1,"constraints":[]},{"id":1,"constraints":[]}]}"#)
            .contains("a second segment 1"));
    }

    #[test]
    fn a_toggle_the_engine_cannot_compile_is_a_warning() {
        let body = r#"{"version":1,"features":[{"name":"a","enabled":true,"strategies":[{"name":"default","segments":[9]}]}]}"#;
        let features = Features::from_slice(body.as_bytes()).unwrap();
        // One for the enabled rule, one for the variant rules.
        assert!(!features.warnings().is_empty());
        assert!(features.warnings().iter().all(|w| w.toggle == "a"));
        assert!(!features.is_enabled("a", &crate::Context::new()));
    }
}
