//! `GET|POST /api/v1/identities/`: flags for one identity. The only evaluation on the request
//! path: parse the identity, evaluate against the snapshot's compiled environment, write the
//! response bytes once.

use std::borrow::Cow;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use flagpole_engine::{EvaluationResult, Identity, Trait, TraitValue};
use serde_json::Value;

use super::error::ApiError;
use super::{authorise, respond, AppState};
use crate::snapshot::{KeyKind, Snapshot};

pub async fn get_identity(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (kind, snapshot) = authorise(&state, &headers)?;
    let identifier = query
        .as_deref()
        .and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "identifier")
                .map(|(_, v)| v)
        })
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request("identifier: a non-empty query parameter is required")
        })?;
    let body = identity_response(&snapshot, kind, &identifier, &[])?;
    Ok(respond::dynamic(&headers, body))
}

pub async fn post_identity(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let (kind, snapshot) = authorise(&state, &headers)?;
    let body = body.map_err(|e| ApiError::new(e.status(), e.body_text()))?;
    let request: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::unprocessable(format!("malformed JSON body: {e}")))?;
    let request = IdentityRequest::parse(&request, state.config.max_trait_value_length)?;
    let response = identity_response(&snapshot, kind, request.identifier, &request.traits)?;
    Ok(respond::dynamic(&headers, response))
}

/// A validated `POST /identities/` body, borrowing from the parsed JSON.
pub struct IdentityRequest<'a> {
    pub identifier: &'a str,
    /// Accepted traits in request order (null values dropped, the last duplicate wins).
    pub traits: Vec<Trait<'a>>,
}

impl<'a> IdentityRequest<'a> {
    pub fn parse(
        body: &'a Value,
        max_trait_length: usize,
    ) -> Result<IdentityRequest<'a>, ApiError> {
        let body = body
            .as_object()
            .ok_or_else(|| ApiError::unprocessable("body must be a JSON object"))?;
        let identifier = match body.get("identifier") {
            Some(Value::String(s)) if !s.is_empty() => s.as_str(),
            Some(Value::String(_)) => {
                return Err(ApiError::unprocessable("identifier: must not be empty"))
            }
            None | Some(Value::Null) => {
                return Err(ApiError::unprocessable("identifier: field required"))
            }
            Some(_) => return Err(ApiError::unprocessable("identifier: must be a string")),
        };
        match body.get("transient") {
            None | Some(Value::Null) | Some(Value::Bool(_)) => {}
            Some(_) => return Err(ApiError::unprocessable("transient: must be a boolean")),
        }
        let items = match body.get("traits") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(items)) => items.as_slice(),
            Some(_) => {
                return Err(ApiError::unprocessable(
                    "traits: must be a list of {trait_key, trait_value}",
                ))
            }
        };
        let mut traits: Vec<Trait<'a>> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let item = item.as_object().ok_or_else(|| {
                ApiError::unprocessable(format!("traits[{i}]: must be an object"))
            })?;
            let key = match item.get("trait_key") {
                Some(Value::String(k)) if !k.is_empty() => k.as_str(),
                _ => {
                    return Err(ApiError::unprocessable(format!(
                        "traits[{i}].trait_key: must be a non-empty string"
                    )))
                }
            };
            match item.get("transient") {
                None | Some(Value::Null) | Some(Value::Bool(_)) => {}
                Some(_) => {
                    return Err(ApiError::unprocessable(format!(
                        "traits[{i}].transient: must be a boolean"
                    )))
                }
            }
            let value = item.get("trait_value").unwrap_or(&Value::Null);
            match value {
                Value::Array(_) | Value::Object(_) => {
                    return Err(ApiError::unprocessable(format!(
                        "traits[{i}].trait_value: must be a string, number, boolean or null"
                    )))
                }
                Value::String(s) if s.chars().count() > max_trait_length => {
                    return Err(ApiError::unprocessable(format!(
                        "traits[{i}].trait_value: longer than {max_trait_length} characters"
                    )))
                }
                _ => {}
            }
            let value = TraitValue::from_json(value);
            match traits.iter_mut().find(|t| t.key == key) {
                Some(existing) => existing.value = value,
                None => traits.push(Trait {
                    key: Cow::Borrowed(key),
                    value,
                }),
            }
        }
        traits.retain(|t| !t.value.is_null());
        Ok(IdentityRequest { identifier, traits })
    }
}

fn identity_response(
    snapshot: &Snapshot,
    kind: KeyKind,
    identifier: &str,
    traits: &[Trait<'_>],
) -> Result<Vec<u8>, ApiError> {
    let identity = Identity::new(identifier, traits);
    let result = snapshot.env.evaluate(Some(&identity)).map_err(|e| {
        tracing::error!(error = %e, "evaluation failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the environment cannot be evaluated for this identity",
        )
    })?;
    let mut out = Vec::with_capacity(256 + 96 * result.flags.len());
    write_identity_response(&mut out, snapshot, kind, identifier, traits, &result);
    Ok(out)
}

/// Writes `{"identifier":…,"traits":[…],"flags":[…]}`.
pub fn write_identity_response(
    out: &mut Vec<u8>,
    snapshot: &Snapshot,
    kind: KeyKind,
    identifier: &str,
    traits: &[Trait<'_>],
    result: &EvaluationResult<'_>,
) {
    out.extend_from_slice(b"{\"identifier\":");
    serde_json::to_writer(&mut *out, identifier).expect("serialise");
    out.extend_from_slice(b",\"traits\":[");
    for (i, t) in traits.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"trait_key\":");
        serde_json::to_writer(&mut *out, t.key.as_ref()).expect("serialise");
        out.extend_from_slice(b",\"trait_value\":");
        write_trait_value(out, &t.value);
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"flags\":");
    snapshot.write_flags(out, kind, result);
    out.push(b'}');
}

fn write_trait_value(out: &mut Vec<u8>, v: &TraitValue<'_>) {
    use std::io::Write;
    match v {
        TraitValue::Null => out.extend_from_slice(b"null"),
        TraitValue::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        TraitValue::Int(i) => {
            let _ = write!(out, "{i}");
        }
        TraitValue::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => serde_json::to_writer(&mut *out, &n).expect("serialise"),
            None => out.extend_from_slice(b"null"),
        },
        TraitValue::Str(s) => serde_json::to_writer(&mut *out, s.as_ref()).expect("serialise"),
        TraitValue::Json(j) => serde_json::to_writer(&mut *out, j.as_ref()).expect("serialise"),
    }
}
