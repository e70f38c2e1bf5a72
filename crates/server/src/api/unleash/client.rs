//! `GET /api/client/features` (and `/api/client/features/{name}`): the client-features body
//! for server-side SDKs, filtered to the client token's projects and the query's `project` and
//! `namePrefix` filters. The body of each distinct scope is prepared once per view
//! (`crate::unleash::View::client_body`), with its ETag; a matching `If-None-Match` is a 304,
//! which is what the SDKs poll with.

use flagpole_unleash::ClientScope;
use http::request::Parts;
use http::StatusCode;
use serde_json::Value;

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

/// One toggle of the body, as received; 404 when the scope holds no toggle of that name.
pub(super) fn feature(unleash: &Unleash, parts: &Parts, name: &str) -> Result<Response, ApiError> {
    let (scope, view) = scope(unleash, parts)?;
    let body = view.client_body(&scope);
    let parsed: Value = serde_json::from_slice(&body.bytes())
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let toggle = parsed
        .get("features")
        .and_then(Value::as_array)
        .and_then(|all| {
            all.iter()
                .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
        })
        .ok_or_else(|| ApiError::not_found(format!("no toggle named {name:?} for this token")))?;
    Ok(json(StatusCode::OK, crate::json::to_vec(toggle)))
}
