//! `GET|POST /api/v1/identities/`: flags for one identity. The only evaluation on the request
//! path: parse the identity, evaluate against the snapshot's compiled environment, write the
//! response bytes once.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use flagpole_engine::python::number::PyInt;
use flagpole_engine::{Identity, Trait, TraitValue};
use http::request::Parts;
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{authorise, read_body, tally};
use crate::api::authorise::Authorised;
use crate::api::error::ApiError;
use crate::api::{respond, AppState, Response};
use crate::snapshot::identity_cache::{self, Answer};
use crate::snapshot::{KeyKind, Snapshot};
use crate::telemetry;
use crate::usage::Resource;

pub(crate) fn get_identity(state: &AppState, request: &Parts) -> Result<Response, ApiError> {
    let authorised = authorise(state, &request.headers)?;
    let answer = get_answer(state, request, &authorised);
    tally(&authorised.env, Resource::Identities, answer)
}

fn get_answer(
    state: &AppState,
    request: &Parts,
    authorised: &Authorised,
) -> Result<Response, ApiError> {
    let (headers, kind, snapshot) = (&request.headers, authorised.kind, &authorised.snapshot);
    let identifier = request
        .uri
        .query()
        .and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "identifier")
                .map(|(_, v)| v)
        })
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request("identifier: a non-empty query parameter is required")
        })?;
    let body = identity_response(state, snapshot, kind, &identifier, &[])?;
    shadow(state, authorised, &identifier, &[], &body);
    Ok(respond::answer(headers, &body))
}

pub(crate) async fn post_identity(
    state: &AppState,
    request: Request<Incoming>,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let authorised = authorise(state, &parts.headers)?;
    let answer = post_answer(state, &parts, body, &authorised).await;
    tally(&authorised.env, Resource::Identities, answer)
}

async fn post_answer(
    state: &AppState,
    parts: &Parts,
    body: Incoming,
    authorised: &Authorised,
) -> Result<Response, ApiError> {
    let (kind, snapshot) = (authorised.kind, &authorised.snapshot);
    let limit = state.config.limits.max_body_bytes;
    let body = read_body(body, limit, "flagpole.limits.max_body_bytes").await?;
    let request = IdentityRequest::parse(&body, state.config.limits.max_trait_value_length)?;
    let response = identity_response(state, snapshot, kind, &request.identifier, &request.traits)?;
    shadow(
        state,
        authorised,
        &request.identifier,
        &request.traits,
        &response,
    );
    Ok(respond::answer(&parts.headers, &response))
}

/// The wire form of a `POST /identities/` body, borrowed from the request bytes. Unknown fields
/// are ignored (SDKs add some); `trait_value` stays raw JSON and is typed in one pass below, so no
/// JSON tree is built.
#[derive(Deserialize)]
struct WireRequest<'a> {
    #[serde(borrow)]
    identifier: Option<Text<'a>>,
    #[serde(borrow, default)]
    traits: Option<Vec<WireTrait<'a>>>,
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "read for its type alone: a `transient` that is not a boolean is refused"
    )]
    transient: Option<bool>,
}

#[derive(Deserialize)]
struct WireTrait<'a> {
    #[serde(borrow)]
    trait_key: Option<Text<'a>>,
    #[serde(borrow, default)]
    trait_value: Option<&'a RawValue>,
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "read for its type alone: a `transient` that is not a boolean is refused"
    )]
    transient: Option<bool>,
}

/// A JSON string borrowed from the request bytes unless it has escapes. (serde borrows a bare
/// `Cow<str>` field but not one inside an `Option`, which would allocate for every key.)
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// A validated `POST /identities/` body, borrowing from the request bytes.
pub struct IdentityRequest<'a> {
    pub identifier: Cow<'a, str>,
    /// Accepted traits in request order (null values dropped, the last duplicate wins).
    pub traits: Vec<Trait<'a>>,
}

impl<'a> IdentityRequest<'a> {
    pub fn parse(body: &'a [u8], max_trait_length: usize) -> Result<IdentityRequest<'a>, ApiError> {
        // The fast parse tracks no path; only a failing body is parsed again to name the field.
        let wire: WireRequest<'a> = match serde_json::from_slice(body) {
            Ok(wire) => wire,
            Err(_) => return Err(describe_invalid_body(body)),
        };
        let identifier = match wire.identifier {
            Some(Text(id)) if !id.is_empty() => id,
            Some(_) => return Err(ApiError::unprocessable("identifier: must not be empty")),
            None => return Err(ApiError::unprocessable("identifier: field required")),
        };
        let items = wire.traits.unwrap_or_default();
        let mut traits: Vec<Trait<'a>> = Vec::with_capacity(items.len());
        // A later trait with the same key replaces the earlier one. Short lists (every SDK's)
        // are searched; long ones get an index, so a hostile 28k-trait body stays linear.
        let mut index: Option<foldhash::HashMap<Cow<'a, str>, usize>> =
            (items.len() > 32).then(foldhash::HashMap::default);
        for (i, item) in items.into_iter().enumerate() {
            let key = match item.trait_key {
                Some(Text(k)) if !k.is_empty() => k,
                _ => {
                    return Err(ApiError::unprocessable(format!(
                        "traits[{i}].trait_key: must be a non-empty string"
                    )))
                }
            };
            let value = match item.trait_value {
                None => TraitValue::Null,
                Some(raw) => trait_value(raw.get(), max_trait_length).map_err(|m| {
                    ApiError::unprocessable(format!("traits[{i}].trait_value: {m}"))
                })?,
            };
            let existing = match &mut index {
                Some(index) => match index.get(&key) {
                    Some(&at) => Some(at),
                    None => {
                        index.insert(key.clone(), traits.len());
                        None
                    }
                },
                None => traits.iter().position(|t| t.key == key),
            };
            match existing {
                Some(at) => traits[at].value = value,
                None => traits.push(Trait { key, value }),
            }
        }
        traits.retain(|t| !t.value.is_null());
        Ok(IdentityRequest { identifier, traits })
    }
}

/// The 422 for a body that does not parse, naming the field that was wrong.
fn describe_invalid_body(body: &[u8]) -> ApiError {
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed: Result<WireRequest<'_>, _> = serde_path_to_error::deserialize(&mut de);
    match parsed.map(|_| de.end()) {
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_syntax() || inner.is_eof() || path == "." {
                ApiError::unprocessable(format!("malformed JSON body: {inner}"))
            } else {
                ApiError::unprocessable(format!("{path}: {inner}"))
            }
        }
        Ok(Err(e)) => ApiError::unprocessable(format!("malformed JSON body: {e}")),
        Ok(Ok(())) => ApiError::unprocessable("malformed JSON body"),
    }
}

/// Types a raw JSON trait value: string (borrowed when it has no escapes), number (int of any
/// size or float, by its spelling), bool, null. Arrays and objects are rejected.
fn trait_value(raw: &str, max_length: usize) -> Result<TraitValue<'_>, String> {
    match raw.as_bytes().first() {
        Some(b'"') => {
            // Without escapes the text between the quotes is the string: borrow it.
            let s: Cow<'_, str> = match raw.get(1..raw.len() - 1) {
                Some(inner) if !inner.contains('\\') => Cow::Borrowed(inner),
                _ => Cow::Owned(serde_json::from_str(raw).map_err(|e| e.to_string())?),
            };
            if s.chars().count() > max_length {
                return Err(format!("longer than {max_length} characters"));
            }
            Ok(TraitValue::Str(s))
        }
        Some(b't') => Ok(TraitValue::Bool(true)),
        Some(b'f') => Ok(TraitValue::Bool(false)),
        Some(b'n') => Ok(TraitValue::Null),
        Some(b'[' | b'{') => Err("must be a string, number, boolean or null".into()),
        // A number, already validated by the JSON parser: an int unless spelled with `.`/`e`.
        _ if raw.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) => raw
            .parse::<f64>()
            .map(TraitValue::Float)
            .map_err(|e| e.to_string()),
        _ => match raw.parse::<i64>() {
            Ok(i) => Ok(TraitValue::Int(PyInt::Small(i))),
            Err(_) => raw
                .parse::<num_bigint::BigInt>()
                .map(|b| TraitValue::Int(PyInt::from_bigint(b)))
                .map_err(|e| e.to_string()),
        },
    }
}

/// Shadow verification (`flagpole.shadow`): a sampled request is queued, with its answer, for
/// comparison with the Flagsmith API; the response never waits for it.
fn shadow(
    state: &AppState,
    authorised: &Authorised,
    identifier: &str,
    traits: &[Trait<'_>],
    answer: &Answer,
) {
    if let Some(shadow) = state.shadow.as_deref().filter(|s| s.sampled()) {
        shadow.offer(|| {
            crate::shadow::job::Job::new(
                &authorised.env,
                &authorised.snapshot,
                authorised.kind,
                identifier,
                traits,
                answer.plain.clone(),
            )
        });
    }
}

/// The answer for an identity: from the snapshot's identity cache when this identity asked
/// before (with the same traits), else evaluated, written and kept there.
fn identity_response(
    state: &AppState,
    snapshot: &Snapshot,
    kind: KeyKind,
    identifier: &str,
    traits: &[Trait<'_>],
) -> Result<Arc<Answer>, ApiError> {
    let max_bytes = state.config.limits.identity_cache_bytes;
    let key = (max_bytes > 0).then(|| identity_cache::key(kind, identifier, traits));
    if let Some(key) = &key {
        let hit = snapshot.identity_cache.get(key);
        telemetry::identity_cache(hit.is_some());
        if let Some(answer) = hit {
            return Ok(answer);
        }
    }
    let identity = Identity::new(identifier, traits);
    let mut out = Vec::with_capacity(256 + snapshot.flags_capacity_hint());
    crate::snapshot::identity_response::evaluate_and_write(
        &mut out, snapshot, kind, &identity, identifier, traits,
    )
    .map_err(|e| {
        tracing::error!(error = %e, "evaluation failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the environment cannot be evaluated for this identity",
        )
    })?;
    let answer = Arc::new(Answer::new(Bytes::from(out)));
    if let Some(key) = key {
        snapshot
            .identity_cache
            .insert(key, answer.clone(), max_bytes);
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_borrowed_unless_escaped_and_decoded_either_way() {
        let body = br#"{"identifier":"a\"b","traits":[{"trait_key":"k\u00e9","trait_value":"x\ny"},{"trait_key":"plain","trait_value":"v"},{"trait_key":"n","trait_value":12345678901234567890123}]}"#;
        let r = IdentityRequest::parse(body, 100).unwrap();
        assert_eq!(r.identifier, "a\"b");
        assert!(matches!(r.identifier, Cow::Owned(_)));
        assert_eq!(r.traits[0].key, "ké");
        assert!(matches!(&r.traits[0].value, TraitValue::Str(s) if s == "x\ny"));
        assert!(matches!(r.traits[1].key, Cow::Borrowed("plain")));
        assert!(matches!(
            &r.traits[1].value,
            TraitValue::Str(Cow::Borrowed("v"))
        ));
        assert!(matches!(&r.traits[2].value, TraitValue::Int(_)));
    }

    #[test]
    fn wrong_types_name_the_field() {
        let e = IdentityRequest::parse(br#"{"identifier":5}"#, 100)
            .err()
            .unwrap();
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(e.message.starts_with("identifier"), "{}", e.message);
        let e = IdentityRequest::parse(br#"{"identifier":"u","traits":[{"trait_key":1}]}"#, 100)
            .err()
            .unwrap();
        assert!(e.message.contains("trait_key"), "{}", e.message);
    }

    #[test]
    fn repeated_keys_keep_the_first_place_and_the_last_value_short_and_long() {
        for n in [3, 100] {
            let mut items: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"trait_key":"k{i}","trait_value":{i}}}"#))
                .collect();
            items.push(r#"{"trait_key":"k1","trait_value":"last"}"#.into());
            items.push(r#"{"trait_key":"k2","trait_value":null}"#.into());
            let body = format!(r#"{{"identifier":"u","traits":[{}]}}"#, items.join(","));
            let r = IdentityRequest::parse(body.as_bytes(), 100).unwrap();
            assert_eq!(r.traits.len(), n - 1, "k2 removed by its null");
            assert_eq!(r.traits[1].key, "k1");
            assert!(matches!(&r.traits[1].value, TraitValue::Str(s) if s == "last"));
            if n > 3 {
                assert_eq!(r.traits[2].key, "k3");
            }
        }
    }
}
