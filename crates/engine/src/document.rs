//! Environment document → evaluation context, as the Flagsmith SDKs map it for local evaluation
//! (Python SDK 6.3.0 `map_environment_document_to_context`), plus the per-feature facts the REST
//! API needs (`feature.id`, `feature.type`) that the context does not carry.
//!
//! Identity overrides become virtual segments, one per distinct set of overrides, matching on
//! `$.identity.identifier IN [...]` with priority −∞ (`overrides`). JSON cannot spell −∞, so it
//! is written as the number `-1e999`, which every float parser (ours and Python's) reads as
//! −infinity.
//!
//! A document is mapped from one of two readings, by the same code for everything but the
//! identity overrides: a JSON tree ([`document_to_context`]; any document, with errors naming the
//! JSON path), or [`DocumentView`], read straight from the bytes without a tree of the identity
//! overrides (the fast path for documents it maps exactly; everything else, errors included, is
//! left to the tree).
//!
//! Both readings first check that the document is one ([`structure`]: the members every
//! environment document has), so neither takes a JSON object that is not a document.
//!
//! [`pages`]: where the next page of a paginated document is, and how pages merge.

mod overrides;
pub mod pages;
mod structure;
mod view;

use serde_json::{json, Map, Value};

use crate::error::InputError;
use overrides::object_of;
pub use structure::check_members;
pub use view::DocumentView;

/// What the REST API shows about a feature besides its evaluated state.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureInfo {
    pub id: Value,
    pub name: String,
    /// `STANDARD` or `MULTIVARIATE` (as given; `STANDARD` when absent).
    pub kind: String,
}

/// Features of a document in `feature_states` order.
pub fn feature_catalog(doc: &Value) -> Vec<FeatureInfo> {
    feature_catalog_of(doc.get("feature_states"))
}

/// Features of a document's `feature_states` member (absent, or not an array: none), in order.
pub fn feature_catalog_of(feature_states: Option<&Value>) -> Vec<FeatureInfo> {
    let states = feature_states
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    states
        .iter()
        .filter_map(|fs| {
            let feature = fs.get("feature")?;
            Some(FeatureInfo {
                id: feature.get("id").cloned().unwrap_or(Value::Null),
                name: feature.get("name")?.as_str()?.to_owned(),
                kind: feature
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("STANDARD")
                    .to_owned(),
            })
        })
        .collect()
}

/// Maps an environment document to the engine's context format.
pub fn document_to_context(doc: &Value) -> Result<Value, InputError> {
    let doc = doc
        .as_object()
        .ok_or_else(|| InputError::new("$", "environment document must be a JSON object"))?;
    let mut mapped = Mapped::new(Members {
        api_key: doc.get("api_key"),
        name: doc.get("name"),
        feature_states: doc.get("feature_states"),
        project: doc.get("project"),
    })?;
    overrides::identity_override_segments(
        array(doc.get("identity_overrides"), "$.identity_overrides")?,
        &mut mapped.segments,
    )?;
    Ok(mapped.into_context())
}

/// The members of a document the mapping reads besides `identity_overrides` (absent: `None`).
pub(crate) struct Members<'v> {
    pub api_key: Option<&'v Value>,
    pub name: Option<&'v Value>,
    pub feature_states: Option<&'v Value>,
    pub project: Option<&'v Value>,
}

/// A document mapped but for its identity overrides, which are added to `segments` after the
/// project's segments.
pub(crate) struct Mapped {
    environment: Value,
    features: Map<String, Value>,
    pub segments: Map<String, Value>,
}

impl Mapped {
    /// Maps the environment, its features and the project's segments, failing on the first bad
    /// member in the order the SDK reads them.
    pub(crate) fn new(doc: Members<'_>) -> Result<Mapped, InputError> {
        structure::check(&doc)?;
        let api_key = doc
            .api_key
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let name = doc.name.and_then(Value::as_str).unwrap_or("").to_owned();

        let mut features = Map::new();
        for (i, fs) in array(doc.feature_states, "$.feature_states")?
            .iter()
            .enumerate()
        {
            let ctx = feature_context(fs, &format!("$.feature_states[{i}]"))?;
            let key = ctx["name"].as_str().unwrap_or_default().to_owned();
            features.insert(key, ctx);
        }

        let mut segments = Map::new();
        let project = doc.project.and_then(Value::as_object);
        let project_segments = project.and_then(|p| p.get("segments"));
        for (i, segment) in array(project_segments, "$.project.segments")?
            .iter()
            .enumerate()
        {
            let path = format!("$.project.segments[{i}]");
            let s = object(segment, &path)?;
            let id = s.get("id").cloned().unwrap_or(Value::Null);
            let key = crate::condition::pystr(&id);
            let mut overrides = Vec::new();
            for (j, fs) in array(s.get("feature_states"), &format!("{path}.feature_states"))?
                .iter()
                .enumerate()
            {
                overrides.push(feature_context(fs, &format!("{path}.feature_states[{j}]"))?);
            }
            segments.insert(
                key.clone(),
                object_of([
                    ("key", Value::String(key)),
                    ("name", s.get("name").cloned().unwrap_or(Value::Null)),
                    ("rules", rules(s.get("rules"), &format!("{path}.rules"))?),
                    ("overrides", Value::Array(overrides)),
                    ("metadata", json!({"id": id, "source": "api"})),
                ]),
            );
        }
        Ok(Mapped {
            environment: object_of([
                ("key", Value::String(api_key)),
                ("name", Value::String(name)),
            ]),
            features,
            segments,
        })
    }

    pub(crate) fn into_context(self) -> Value {
        object_of([
            ("environment", self.environment),
            ("features", Value::Object(self.features)),
            ("segments", Value::Object(self.segments)),
        ])
    }
}

fn array<'v>(v: Option<&'v Value>, path: &str) -> Result<&'v [Value], InputError> {
    match v {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(InputError::new(path, "must be an array")),
    }
}

fn object<'v>(v: &'v Value, path: &str) -> Result<&'v Map<String, Value>, InputError> {
    v.as_object()
        .ok_or_else(|| InputError::new(path, "must be an object"))
}

fn truthy(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| crate::value::json_truthy(v))
}

/// A FeatureStateModel → FeatureContext.
fn feature_context(fs: &Value, path: &str) -> Result<Value, InputError> {
    let fs = object(fs, path)?;
    let feature = fs
        .get("feature")
        .and_then(Value::as_object)
        .ok_or_else(|| InputError::new(format!("{path}.feature"), "must be an object"))?;
    let name = match feature.get("name") {
        Some(Value::String(n)) => n.clone(),
        _ => {
            return Err(InputError::new(
                format!("{path}.feature.name"),
                "must be a string",
            ))
        }
    };
    // `str(django_id or featurestate_uuid)`: a Python truthiness test, so 0 falls back too.
    let key = match truthy(fs.get("django_id")).or_else(|| fs.get("featurestate_uuid")) {
        Some(v) => crate::condition::pystr(v),
        None => {
            return Err(InputError::new(
                format!("{path}.featurestate_uuid"),
                "needed when django_id is empty",
            ))
        }
    };
    let mut ctx = Map::new();
    ctx.insert("key".into(), Value::String(key));
    ctx.insert("name".into(), Value::String(name));
    ctx.insert(
        "enabled".into(),
        fs.get("enabled").cloned().unwrap_or(Value::Bool(false)),
    );
    ctx.insert(
        "value".into(),
        fs.get("feature_state_value")
            .cloned()
            .unwrap_or(Value::Null),
    );
    ctx.insert(
        "metadata".into(),
        json!({"id": feature.get("id").cloned().unwrap_or(Value::Null)}),
    );
    let mv_path = format!("{path}.multivariate_feature_state_values");
    let mv = array(
        truthy(fs.get("multivariate_feature_state_values")),
        &mv_path,
    )?;
    if !mv.is_empty() {
        let mut variants = Vec::with_capacity(mv.len());
        for (i, v) in mv.iter().enumerate() {
            let vp = format!("{mv_path}[{i}]");
            let v = object(v, &vp)?;
            let option = v
                .get("multivariate_feature_option")
                .and_then(Value::as_object)
                .ok_or_else(|| {
                    InputError::new(
                        format!("{vp}.multivariate_feature_option"),
                        "must be an object",
                    )
                })?;
            let priority = match truthy(v.get("id")) {
                Some(id) => id.clone(),
                None => uuid_priority(v.get("mv_fs_value_uuid"), &vp)?,
            };
            let mut variant = Map::new();
            variant.insert(
                "value".into(),
                option.get("value").cloned().unwrap_or(Value::Null),
            );
            variant.insert(
                "weight".into(),
                v.get("percentage_allocation").cloned().unwrap_or(json!(0)),
            );
            variant.insert("priority".into(), priority);
            if let Some(k) = option.get("key").filter(|k| !k.is_null()) {
                variant.insert("key".into(), k.clone());
            }
            variants.push(Value::Object(variant));
        }
        ctx.insert("variants".into(), Value::Array(variants));
    }
    // A null priority would crash the Python SDK when compared; Core skips it, and so do we.
    if let Some(fseg) = truthy(fs.get("feature_segment")) {
        if let Some(p) = fseg.get("priority").filter(|p| !p.is_null()) {
            ctx.insert("priority".into(), p.clone());
        }
    }
    Ok(Value::Object(ctx))
}

/// `uuid.UUID(mv_fs_value_uuid).int`: the 128-bit integer of the UUID.
fn uuid_priority(v: Option<&Value>, path: &str) -> Result<Value, InputError> {
    let text = v.and_then(Value::as_str).unwrap_or("");
    let hex: String = text
        .trim_start_matches("urn:")
        .trim_start_matches("uuid:")
        .chars()
        .filter(|c| !matches!(c, '-' | '{' | '}'))
        .collect();
    match (hex.len(), u128::from_str_radix(&hex, 16)) {
        (32, Ok(n)) => Ok(serde_json::from_str(&n.to_string()).expect("an integer is valid JSON")),
        _ => Err(InputError::new(
            format!("{path}.mv_fs_value_uuid"),
            "needs a UUID when id is empty",
        )),
    }
}

fn rules(v: Option<&Value>, path: &str) -> Result<Value, InputError> {
    let mut out = Vec::new();
    for (i, rule) in array(v, path)?.iter().enumerate() {
        let rp = format!("{path}[{i}]");
        let r = object(rule, &rp)?;
        let mut conditions = Vec::new();
        for (j, c) in array(r.get("conditions"), &format!("{rp}.conditions"))?
            .iter()
            .enumerate()
        {
            let c = object(c, &format!("{rp}.conditions[{j}]"))?;
            conditions.push(json!({
                "property": truthy(c.get("property_")).cloned().unwrap_or(json!("")),
                "operator": c.get("operator").cloned().unwrap_or(Value::Null),
                "value": c.get("value").cloned().unwrap_or(Value::Null),
            }));
        }
        out.push(json!({
            "type": r.get("type").cloned().unwrap_or(Value::Null),
            "conditions": conditions,
            "rules": rules(r.get("rules"), &format!("{rp}.rules"))?,
        }));
    }
    Ok(Value::Array(out))
}
