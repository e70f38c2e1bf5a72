//! One accepted state of the Unleash features files: the merged client-features body compiled
//! once (`flagpole_unleash::Features`), its content revision, and the `/api/client/features`
//! bodies already prepared for it, one per distinct token scope and query filter, made by the
//! first request of that scope and kept until the view is replaced (so never stale).

use std::collections::HashMap;
use std::sync::Arc;

use flagpole_unleash::{ClientScope, Features, FeaturesError};
use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::body::PreparedBody;

/// The toggles served now, immutable but for the prepared-body cache.
pub(crate) struct View {
    pub(crate) features: Features,
    /// A hash of the merged body's bytes (the same files give the same revision).
    pub(crate) revision: String,
    bodies: Mutex<HashMap<ClientScope, Arc<PreparedBody>>>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("toggles", &self.features.len())
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

/// At most this many prepared client bodies per view; past it a scope's body is made per
/// request (a client varying `namePrefix` without end cannot grow memory).
const MAX_PREPARED: usize = 1024;

impl View {
    /// Compiles the merged body of the files' texts (in order).
    pub(crate) fn build(texts: &[Arc<[u8]>]) -> Result<View, FeaturesError> {
        let merged = merge(texts)?;
        let features = Features::from_slice(&merged)?;
        Ok(View {
            features,
            revision: crate::body::etag_of(&merged),
            bodies: Mutex::new(HashMap::new()),
        })
    }

    /// The `/api/client/features` body for `scope`, prepared once per view.
    pub(crate) fn client_body(&self, scope: &ClientScope) -> Arc<PreparedBody> {
        if let Some(body) = self.bodies.lock().get(scope) {
            return body.clone();
        }
        // Written outside the lock: two first requests may both write it; the first kept wins.
        let body = Arc::new(PreparedBody::new(self.features.client_body(scope), true));
        let mut bodies = self.bodies.lock();
        if bodies.len() >= MAX_PREPARED {
            return body;
        }
        bodies.entry(scope.clone()).or_insert(body).clone()
    }
}

/// The files' bodies as one: a single file as it is; several merged member by member, the
/// first file's other members kept, `features` concatenated with a later toggle replacing an
/// earlier one of the same name, `segments` concatenated with a later segment replacing one of
/// the same `id`.
fn merge(texts: &[Arc<[u8]>]) -> Result<Vec<u8>, FeaturesError> {
    if let [one] = texts {
        return Ok(one.to_vec());
    }
    let mut merged: Option<Map<String, Value>> = None;
    for (index, text) in texts.iter().enumerate() {
        // Each file alone first, so a fault is named with that file's own JSON path.
        Features::from_slice(text)?;
        let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(text) else {
            unreachable!("a body the engine took is a JSON object (file {index})");
        };
        match &mut merged {
            None => merged = Some(body),
            Some(into) => {
                replace_by(into, &body, "features", "name");
                replace_by(into, &body, "segments", "id");
            }
        }
    }
    Ok(serde_json::to_vec(&Value::Object(merged.unwrap_or_default())).unwrap_or_default())
}

fn replace_by(into: &mut Map<String, Value>, from: &Map<String, Value>, member: &str, key: &str) {
    let Some(Value::Array(later)) = from.get(member) else {
        return;
    };
    let list = into
        .entry(member.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(list) = list else { return };
    for item in later {
        list.retain(|earlier| earlier.get(key) != item.get(key));
        list.push(item.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: Value) -> Arc<[u8]> {
        serde_json::to_vec(&v).unwrap().into()
    }

    #[test]
    fn later_files_win_on_a_name() {
        let a = text(serde_json::json!({"version": 2, "features": [
            {"name": "a", "enabled": true, "strategies": [{"name": "default"}]},
            {"name": "b", "enabled": true, "strategies": [{"name": "default"}]}]}));
        let b = text(serde_json::json!({"version": 2, "features": [
            {"name": "b", "enabled": false, "strategies": []}]}));
        let view = View::build(&[a, b]).unwrap();
        let names: Vec<&str> = view.features.toggle_names().collect();
        assert_eq!(names.len(), 2);
        assert!(view
            .features
            .is_enabled("a", &flagpole_unleash::Context::new()));
        assert!(!view
            .features
            .is_enabled("b", &flagpole_unleash::Context::new()));
    }

    #[test]
    fn a_fault_names_the_json_path() {
        let bad = text(serde_json::json!({"version": 2, "features": {}}));
        let e = View::build(&[bad]).unwrap_err();
        assert!(e.to_string().starts_with("$.features"), "{e}");
    }
}
