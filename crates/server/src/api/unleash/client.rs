//! `GET /api/client/features` (and `/api/client/features/{name}`): the client-features body
//! for server-side SDKs, filtered to the client token's projects and the query's `project` and
//! `namePrefix` filters. The body of each distinct scope is prepared once per view
//! (`crate::unleash::View::client_body`), with its ETag; a matching `If-None-Match` is a 304,
//! which is what the SDKs poll with.

use flagpole_unleash::ClientScope;
use http::request::Parts;
use http::StatusCode;
use std::sync::Arc;

use super::{admit, json, query_pairs, view_of};
use crate::api::error::ApiError;
use crate::api::{respond, Response};
use crate::unleash::{TokenKind, Unleash, View};

/// Which toggles this request may see, and the view it reads them from.
fn scope(unleash: &Unleash, parts: &Parts) -> Result<(ClientScope, Arc<View>), ApiError> {
    let admitted = admit(unleash, parts, TokenKind::Client)?;
    let view = view_of(&admitted)?;
    let token = admitted.token;
    let pairs = query_pairs(parts);
    let projects = pairs
        .iter()
        .filter(|(k, _)| k == "project")
        .map(|(_, v)| v.as_str());
    let prefix = pairs
        .iter()
        .rev()
        .find(|(k, _)| k == "namePrefix")
        .map(|(_, v)| v.as_str());
    let scope = ClientScope::for_token(token)
        .with_query_projects(projects)
        .with_name_prefix(prefix);
    Ok((scope, view))
}

/// The whole body, prepared.
pub(super) fn features(unleash: &Unleash, parts: &Parts) -> Result<Response, ApiError> {
    let (scope, view) = scope(unleash, parts)?;
    let body = view.client_body(&scope);
    Ok(respond::prepared(&parts.headers, &body, None))
}

/// One toggle of the body, as received; 404 when the scope holds no toggle of that name. Its
/// bytes were written with the view, so the answer is a lookup.
pub(super) fn feature(unleash: &Unleash, parts: &Parts, name: &str) -> Result<Response, ApiError> {
    let (scope, view) = scope(unleash, parts)?;
    let toggle = one_toggle(&view, &scope, name)
        .ok_or_else(|| ApiError::not_found(format!("no toggle named {name:?} for this token")))?;
    Ok(json(StatusCode::OK, bytes::Bytes::copy_from_slice(toggle)))
}

/// The toggle `name` as the scope's client body holds it, if that body holds it.
fn one_toggle<'v>(view: &'v View, scope: &ClientScope, name: &str) -> Option<&'v [u8]> {
    let features = &view.features;
    let project = features.project(name)?;
    scope
        .admits(name, project)
        .then(|| features.toggle_json(name))
        .flatten()
        .map(str::as_bytes)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use flagpole_unleash::{ClientScope, Projects, Token};
    use serde_json::Value;

    use super::one_toggle;
    use crate::unleash::View;

    /// The toggle as this endpoint wrote it before: the scope's body parsed, the toggle found
    /// and written again.
    fn from_the_body(view: &View, scope: &ClientScope, name: &str) -> Option<Vec<u8>> {
        let body: Value = serde_json::from_slice(&view.client_body(scope).bytes()).unwrap();
        body["features"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            .map(crate::json::to_vec)
    }

    #[test]
    fn a_toggle_is_the_bytes_the_scopes_body_holds() {
        let text = r#"{"version": 2, "meta": {"revisionId": 1}, "features": [
            {"strategies": [{"name": "default", "segments": [1], "constraints": []}],
             "name": "web.a", "enabled": true, "project": "web", "description": "caf\u00e9 \"x\" é ☃ \/",
             "variants": [{"name": "v", "weight": 1000, "payload": {"type": "number", "value": "1.50"}}],
             "zeta": 1.50, "alpha": 1E5, "big": 123456789012345678901234567890, "neg": -0.0},
            {"name": "api.b", "enabled": false, "project": "api", "strategies": []},
            {"name": "c", "enabled": true, "strategies": [], "impressionData": true,
             "dependencies": [{"feature": "web.a", "variants": []}], "empty": {}, "list": [ ]}],
            "segments": [{"id": 1, "constraints": []}]}"#;
        let example = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/unleash-features.json"
        ))
        .unwrap();
        for body in [text.as_bytes().to_vec(), example] {
            let view = View::build(&[Arc::<[u8]>::from(body)]).unwrap();
            let scopes = [
                ClientScope::for_projects(Projects::All),
                ClientScope::for_token(&"web:dev.s".parse::<Token>().unwrap()),
                ClientScope::for_token(&"*:dev.s".parse::<Token>().unwrap())
                    .with_name_prefix(Some("web.")),
            ];
            let mut names: Vec<String> = view.features.toggle_names().map(str::to_owned).collect();
            names.push("missing".to_owned());
            let mut served = 0;
            for scope in &scopes {
                for name in &names {
                    served += usize::from(one_toggle(&view, scope, name).is_some());
                    assert_eq!(
                        one_toggle(&view, scope, name).map(<[u8]>::to_vec),
                        from_the_body(&view, scope, name),
                        "{name} in {scope:?}"
                    );
                }
            }
            assert!(served > 2, "{served}");
        }
    }
}
