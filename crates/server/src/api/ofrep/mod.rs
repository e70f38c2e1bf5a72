//! OpenFeature Remote Evaluation Protocol (the OpenFeature OFREP specification):
//! `POST /ofrep/v1/evaluate/flags/{key}` and `POST /ofrep/v1/evaluate/flags`, on the same
//! snapshots and engine as the Flagsmith API, and `GET /ofrep/v1/events`, its change stream.
//!
//! The ETag is computed from what the request asks (document revision, normalised context, key
//! kind, settings) before anything is evaluated, so a client revalidating gets its 304 for the
//! price of a hash. Errors use OFREP's shape (`errorCode`, `errorDetails`, and `key` on the
//! single-flag endpoint).
//!
//! Files: `evaluate.rs` the two evaluation endpoints, `etag.rs` their ETags, `freshness.rs` the
//! freshness hints a client sends, `events.rs` the change stream, `answer.rs` what both write alike, `flag_sets.rs` the same on
//! flagd flag sets (a request with no key, or a set's token); here, what they share: the key a
//! request presents (an Unleash token in its place reads that token's toggles) and the OFREP
//! error shape.

mod answer;
mod etag;
mod evaluate;
mod events;
mod flag_sets;

pub(crate) use evaluate::evaluate;
pub(crate) use events::events;

use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde_json::json;

use super::authorise::{self, Family, Gate, Refusal};
use super::{full, AppState, Response};
use crate::openfeature::{NotLoaded, Target};
use crate::telemetry::otel::spans::FlagEvaluated;

/// What an error answers for: its body names the flag on the single-flag endpoint, and a
/// 405's `Allow` depends on the endpoint.
#[derive(Clone, Copy)]
enum Asked<'a> {
    Bulk,
    Flag(&'a str),
    Events,
}

/// An OFREP error: status, `errorCode`, `errorDetails`, and headers some statuses carry.
struct Failure {
    status: StatusCode,
    code: &'static str,
    details: String,
    /// `Retry-After` seconds (429s and 503s).
    retry_after: u64,
}

impl Failure {
    fn new(status: StatusCode, code: &'static str, details: impl Into<String>) -> Failure {
        Failure {
            status,
            code,
            details: details.into(),
            retry_after: 5,
        }
    }

    fn general(status: StatusCode, details: impl Into<String>) -> Failure {
        Failure::new(status, "GENERAL", details)
    }

    fn into_response(self, asked: Asked<'_>) -> Response {
        let body = match asked {
            Asked::Flag(key) => {
                json!({"key": key, "errorCode": self.code, "errorDetails": self.details})
            }
            Asked::Bulk | Asked::Events => {
                json!({"errorCode": self.code, "errorDetails": self.details})
            }
        };
        let mut response = full(self.status, crate::json::to_vec(&body));
        let h = response.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        match self.status {
            StatusCode::UNAUTHORIZED => {
                h.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"flagpole\""),
                );
            }
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS => {
                h.insert(header::RETRY_AFTER, HeaderValue::from(self.retry_after));
            }
            StatusCode::METHOD_NOT_ALLOWED => {
                let allow = match asked {
                    Asked::Events => "GET, OPTIONS",
                    Asked::Bulk | Asked::Flag(_) => "POST, OPTIONS",
                };
                h.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            _ => {}
        }
        // A failed evaluation of one flag: its span records the flag and why.
        if let Asked::Flag(key) = asked {
            if let Some(failed) = FlagEvaluated::failed(key, self.code) {
                response.extensions_mut().insert(failed);
            }
        }
        response
    }
}

/// What an evaluation reads: the Unleash toggles its token opens (see [`for_unleash`]), the
/// flag set it asks for (see [`for_flag_sets`]), or the environment its key opens.
fn admit(state: &AppState, headers: &HeaderMap) -> Result<Target, Failure> {
    if let Some(toggles) = for_unleash(state, headers) {
        return toggles.map_err(|NotLoaded| Failure {
            retry_after: 1,
            ..Failure::general(
                StatusCode::SERVICE_UNAVAILABLE,
                "this Unleash token's toggles have not been fetched yet",
            )
        });
    }
    match for_flag_sets(state, headers) {
        Some(bearer) => flag_sets::admit(state, headers, bearer),
        None => authorise(state, headers).map(|authorised| {
            Target::environment(
                authorised.kind,
                authorised.env,
                authorised.snapshot,
                state.config.ofrep.parse_json_strings,
            )
        }),
    }
}

/// The key a request presents (`X-API-Key`, `Authorization: Bearer`, a bare `Authorization`,
/// `X-Environment-Key`), the environment it opens and its current snapshot.
fn authorise(state: &AppState, headers: &HeaderMap) -> Result<authorise::Authorised, Failure> {
    let unauthorised = |details: &str| Failure::general(StatusCode::UNAUTHORIZED, details);
    // Refused before a key reached an environment.
    let unrecognised = |details: &str| {
        state.store.unrecognised.count();
        unauthorised(details)
    };
    let key = presented(headers).map_err(unrecognised)?.ok_or_else(|| {
        unrecognised("missing key: send X-API-Key, Authorization: Bearer, or X-Environment-Key")
    })?;
    let gate = Gate {
        family: Family::Ofrep,
        client_keys: state.config.ofrep.client_keys,
        server_keys: state.config.ofrep.server_keys,
    };
    let authorised =
        authorise::authorise(&state.store, key, gate).map_err(|refusal| match refusal {
            Refusal::UnknownKey => unauthorised("unknown key"),
            Refusal::RateLimited(seconds) => Failure {
                retry_after: seconds,
                ..Failure::general(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many requests with this key: over ofrep.rate_limit_per_key_rps",
                )
            },
            Refusal::KindNotAllowed => Failure::general(
                StatusCode::FORBIDDEN,
                "this kind of key is not allowed to use OFREP here",
            ),
            Refusal::NotLoaded => Failure::general(
                StatusCode::SERVICE_UNAVAILABLE,
                "the environment's document is not loaded yet",
            ),
        })?;
    Ok(authorised)
}

/// The toggles of the Unleash token a request presents as its key (in any of the places a key
/// goes), when Unleash toggles are served and the key opens no environment; `None` otherwise.
fn for_unleash(state: &AppState, headers: &HeaderMap) -> Option<Result<Target, NotLoaded>> {
    let unleash = state.unleash.as_deref()?;
    let key = presented(headers).ok().flatten()?;
    if state.store.lookup(key).is_some() {
        return None;
    }
    Target::unleash_token(unleash, key, state.config.health.stale_grace)
}

/// Whether a request is for the flagd flag sets, and with which bearer token: flag sets are
/// configured and the request presents no key, or one that opens no environment (a set's
/// token). A request with an environment's key goes to its environment.
fn for_flag_sets<'h>(state: &AppState, headers: &'h HeaderMap) -> Option<Option<&'h str>> {
    if !state.flag_sets.is_configured() {
        return None;
    }
    match presented(headers) {
        Ok(None) => Some(None),
        Ok(Some(key)) if state.store.lookup(key).is_none() => Some(Some(key)),
        _ => None,
    }
}

/// The one key a request presents, if any; two different ones are refused.
fn presented(headers: &HeaderMap) -> Result<Option<&str>, &'static str> {
    let mut presented: Option<&str> = None;
    let candidates = [
        headers.get("x-api-key").and_then(|v| v.to_str().ok()),
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(|v| match v.trim().split_once(' ') {
                Some((scheme, key)) if scheme.eq_ignore_ascii_case("bearer") => key,
                Some(_) => "",
                None => v,
            }),
        headers
            .get("x-environment-key")
            .and_then(|v| v.to_str().ok()),
    ];
    for key in candidates.into_iter().flatten().map(str::trim) {
        if key.is_empty() {
            continue;
        }
        match presented {
            Some(other) if other != key => return Err("the request presents two different keys"),
            _ => presented = Some(key),
        }
    }
    Ok(presented)
}
