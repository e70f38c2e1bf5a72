//! OpenFeature Remote Evaluation Protocol (the OpenFeature OFREP specification):
//! `POST /ofrep/v1/evaluate/flags/{key}` and `POST /ofrep/v1/evaluate/flags`, on the same
//! snapshots and engine as the Flagsmith API, and `GET /ofrep/v1/events`, its change stream.
//!
//! The ETag is computed from what the request asks (document revision, normalised context, key
//! kind, settings) before anything is evaluated, so a client revalidating gets its 304 for the
//! price of a hash. Errors use OFREP's shape (`errorCode`, `errorDetails`, and `key` on the
//! single-flag endpoint).

use std::sync::Arc;

use bytes::Bytes;
use flagpole_engine::Identity;
use http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::authorise::{self, Family, Gate, Refusal};
use super::openfeature::{context, mapping};
use super::request_body::{self, BodyError};
use super::{full, stream_response, AppState, Response};
use crate::canonical;
use crate::config::OfrepConfig;
use crate::snapshot::etag_memo::EtagMemo;
use crate::snapshot::{KeyKind, Snapshot};
use crate::store::EnvSlot;
use crate::streams::Format;

/// The path of the change stream, as announced in bulk answers.
const EVENTS_PATH: &str = "ofrep/v1/events";

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
        response
    }
}

/// Answers an evaluation: of one flag, or of all (`flag` is `None`). CORS is added by the
/// caller.
pub async fn evaluate(
    state: &AppState,
    request: Request<Incoming>,
    flag: Option<&str>,
) -> Response {
    let asked = flag.map_or(Asked::Bulk, Asked::Flag);
    let mut known = None;
    match evaluation(state, request, flag, &mut known).await {
        Ok(response) => response,
        Err(failure) => {
            // Refused with the environment known: counted there (refusals by the
            // authorisation step are counted by it).
            if let (Some(env), true) = (known, failure.status.is_client_error()) {
                env.usage.reject();
            }
            failure.into_response(asked)
        }
    }
}

async fn evaluation(
    state: &AppState,
    request: Request<Incoming>,
    flag: Option<&str>,
    known: &mut Option<Arc<EnvSlot>>,
) -> Result<Response, Failure> {
    let config = &state.config.ofrep;
    if request.method() != Method::POST {
        return Err(Failure::general(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "method {} is not allowed here; allowed: POST, OPTIONS",
                request.method()
            ),
        ));
    }
    let (parts, body) = request.into_parts();
    let (kind, env, mut snapshot) = authorise(state, &parts.headers)?;
    *known = Some(env.clone());
    let stream = state.streams.of(&env.client_key);
    let body = request_body::read(body, config.max_body_bytes)
        .await
        .map_err(|e| match e {
            BodyError::TooLarge => Failure::general(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is larger than the limit of {} bytes (ofrep.max_body_bytes)",
                    config.max_body_bytes
                ),
            ),
            BodyError::Unreadable(message) => {
                Failure::new(StatusCode::BAD_REQUEST, "PARSE_ERROR", message)
            }
        })?;
    if flag.is_none() {
        if let Some(fresher) = freshen(&env, &snapshot, parts.uri.query(), config).await {
            snapshot = fresher;
        }
    }
    // A revalidation with a body this snapshot has answered before: 304 without parsing.
    let memo_key = EtagMemo::key(kind, flag, &body);
    if let Some((etag, identified)) = snapshot.ofrep_etags.get(memo_key) {
        if matches_etag(&parts.headers, &etag) {
            env.usage.count(usage_resource(identified));
            let mut response = full(StatusCode::NOT_MODIFIED, Bytes::new());
            success_headers(response.headers_mut(), &etag);
            return Ok(response);
        }
    }

    let body = context::parse_body(&body)
        .map_err(|(code, details)| Failure::new(StatusCode::BAD_REQUEST, code, details))?;
    let input = context::input(&body, state.config.limits.max_trait_value_length)
        .map_err(|(code, details)| Failure::new(StatusCode::BAD_REQUEST, code, details))?;
    if config.require_targeting_key && input.identifier.is_none() {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            "TARGETING_KEY_MISSING",
            "a targetingKey is required",
        ));
    }

    // Every environment has its stream facts; the fallback only covers one added later.
    let settings: std::borrow::Cow<'_, str> = match &stream {
        Some(s) => std::borrow::Cow::Borrowed(s.etag_settings.as_str()),
        None => std::borrow::Cow::Owned(crate::canonical::settings_tag(config, None)),
    };
    let etag = etag(&snapshot, kind, flag, &input.normalised(), &settings);
    let identified = input.identifier.is_some();
    snapshot.ofrep_etags.put(memo_key, &etag, identified);
    env.usage.count(usage_resource(identified));
    if matches_etag(&parts.headers, &etag) {
        let mut response = full(StatusCode::NOT_MODIFIED, Bytes::new());
        success_headers(response.headers_mut(), &etag);
        return Ok(response);
    }

    let traits = input.engine_traits();
    let identity = input.identifier.map(|id| Identity::new(id, &traits));
    let result = match &identity {
        Some(identity) => snapshot.env.evaluate(Some(identity)),
        None => snapshot.env.own_flags(),
    }
    .map_err(|e| {
        tracing::error!(error = %e, "OFREP evaluation failed");
        Failure::general(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the flags could not be evaluated",
        )
    })?;

    let mut out = Vec::with_capacity(128 + 160 * result.flags.len());
    match flag {
        Some(key) => {
            let flag = result
                .flags
                .iter()
                .find(|f| f.key == key)
                .filter(|f| snapshot.is_visible(kind, f.key, f.enabled))
                .ok_or_else(|| {
                    Failure::new(
                        StatusCode::NOT_FOUND,
                        "FLAG_NOT_FOUND",
                        format!("no flag named '{key}' in this environment"),
                    )
                })?;
            write_mapped(&mut out, &snapshot, flag, kind, config);
        }
        None => {
            let mut flags: Vec<_> = result
                .flags
                .iter()
                .filter(|f| snapshot.is_visible(kind, f.key, f.enabled))
                .collect();
            // Sorted by key so that equal inputs give byte-equal bodies.
            flags.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
            flags.dedup_by(|a, b| a.key == b.key);
            out.extend_from_slice(b"{\"flags\":[");
            for (i, flag) in flags.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_mapped(&mut out, &snapshot, flag, kind, config);
            }
            out.push(b']');
            if let (true, Some(stream)) = (config.sse.enabled, stream) {
                write_event_streams(&mut out, config, &stream.token, &snapshot);
            }
            out.extend_from_slice(b",\"metadata\":{\"version\":\"");
            out.extend_from_slice(snapshot.content_revision.as_bytes());
            out.push(b'"');
            if snapshot.updated_at_ms > 0 {
                out.extend_from_slice(b",\"lastModified\":");
                out.extend_from_slice((snapshot.updated_at_ms / 1000).to_string().as_bytes());
            }
            out.extend_from_slice(b"}}");
        }
    }
    let mut response = full(StatusCode::OK, out);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    success_headers(response.headers_mut(), &etag);
    Ok(response)
}

/// One flag as an OFREP evaluation object, mapped as every OpenFeature front door maps it.
fn write_mapped(
    out: &mut Vec<u8>,
    snapshot: &Snapshot,
    flag: &flagpole_engine::FlagResult<'_>,
    kind: KeyKind,
    config: &OfrepConfig,
) {
    let can_vary = snapshot.env.can_vary(flag.key);
    let resolved = mapping::resolve(flag, kind, config.parse_json_strings, can_vary);
    mapping::write_flag(out, &resolved);
}

/// `,"eventStreams":[…]`: where to listen for changes (OFREP's `eventStreams` extension). `since` is the current
/// event id, closing the gap between this response and the connect.
fn write_event_streams(out: &mut Vec<u8>, config: &OfrepConfig, token: &str, snapshot: &Snapshot) {
    let uri = format!(
        "/{EVENTS_PATH}?t={token}&since={}-{}",
        snapshot.updated_at_ms, snapshot.content_revision
    );
    let place = match &config.public_base_url {
        Some(base) => json!({"url": format!("{base}{uri}")}),
        None => json!({"endpoint": {"requestUri": uri}}),
    };
    let mut entry = serde_json::Map::new();
    entry.insert("type".into(), "sse".into());
    if let Value::Object(place) = place {
        entry.extend(place);
    }
    entry.insert(
        "inactivityDelaySec".into(),
        config.sse.inactivity_delay_sec.into(),
    );
    out.extend_from_slice(b",\"eventStreams\":[");
    crate::json::write(out, &entry);
    out.push(b']');
}

/// `GET /ofrep/v1/events` as a response (an open stream or an OFREP error), for a request whose
/// head was read straight off the socket.
pub fn events(state: &AppState, request: &http::request::Parts) -> Response {
    stream(state, request).unwrap_or_else(|failure| failure.into_response(Asked::Events))
}

/// `GET /ofrep/v1/events`: authorised by the URL token (or a key header), then an open stream.
fn stream(state: &AppState, request: &http::request::Parts) -> Result<Response, Failure> {
    let sse = &state.config.ofrep.sse;
    if !sse.enabled {
        return Err(Failure::general(
            StatusCode::NOT_FOUND,
            "change streams are disabled here",
        ));
    }
    if request.method != Method::GET && request.method != Method::HEAD {
        return Err(Failure::general(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "method {} is not allowed here; allowed: GET, OPTIONS",
                request.method
            ),
        ));
    }
    let query = |name: &str| {
        request.uri.query().and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    };
    let env = match query("t") {
        Some(token) => state
            .streams
            .by_token(&token)
            .ok_or_else(|| Failure::general(StatusCode::UNAUTHORIZED, "invalid stream token"))?,
        None => authorise(state, &request.headers)?.1,
    };
    let last_id = request
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query("since"));
    let body = state
        .streams
        .open(
            &env,
            Format::Ofrep,
            last_id.as_deref(),
            std::time::Duration::from_secs(sse.heartbeat_sec),
            sse.max_connections,
        )
        .ok_or_else(|| Failure {
            retry_after: 30,
            ..Failure::general(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many open change streams",
            )
        })?;
    Ok(stream_response(body))
}

/// `flagConfigLastModified` / `flagConfigEtag`: the client has seen, through
/// a stream held by another replica, a revision this one may not have yet. A newer
/// `flagConfigLastModified` makes this replica fetch now and wait (bounded) for it; an unknown
/// `flagConfigEtag` alone only starts the fetch. Never a cause of a 304, never an error: the
/// answer is whatever is current when the wait ends.
async fn freshen(
    env: &Arc<EnvSlot>,
    snapshot: &Arc<Snapshot>,
    query: Option<&str>,
    config: &OfrepConfig,
) -> Option<Arc<Snapshot>> {
    let query = query?;
    let param = |name: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let ours = snapshot.updated_at_ms / 1000;
    let newer = param("flagConfigLastModified")
        .and_then(|v| parse_last_modified(&v))
        .is_some_and(|theirs| theirs > ours);
    if !newer {
        if param("flagConfigEtag")
            .is_some_and(|etag| etag.trim_matches('"') != snapshot.content_revision)
        {
            env.request_refresh();
        }
        return None;
    }
    let mut changes = env.revisions.subscribe();
    if !env.request_refresh() && !matches!(env.source, crate::store::Source::Upstream { .. }) {
        return None; // a local document is never behind
    }
    let wait = std::time::Duration::from_millis(config.freshness_wait_ms);
    let _ = tokio::time::timeout(wait, async {
        while changes.changed().await.is_ok() {
            let current = changes.borrow_and_update().clone();
            if current.is_some_and(|c| c.updated_at_ms / 1000 > ours) {
                break;
            }
        }
    })
    .await;
    env.snapshot()
}

/// How an OFREP evaluation counts in usage: with an identity like `/identities`, else like
/// `/flags`.
fn usage_resource(identified: bool) -> crate::usage::Resource {
    if identified {
        crate::usage::Resource::Identities
    } else {
        crate::usage::Resource::Flags
    }
}

/// Unix seconds, or an RFC 3339 time.
fn parse_last_modified(text: &str) -> Option<u64> {
    if let Ok(seconds) = text.trim().parse::<u64>() {
        return Some(seconds);
    }
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .and_then(|t| u64::try_from(t.timestamp()).ok())
}

fn success_headers(h: &mut HeaderMap, etag: &str) {
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
}

/// The key a request presents (`X-API-Key`, `Authorization: Bearer`, a bare `Authorization`,
/// `X-Environment-Key`), the environment it opens and its current snapshot.
fn authorise(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<(KeyKind, Arc<EnvSlot>, Arc<Snapshot>), Failure> {
    let unauthorised = |details: &str| Failure::general(StatusCode::UNAUTHORIZED, details);
    // Refused before a key reached an environment.
    let unrecognised = |details: &str| {
        state.store.unrecognised.count();
        unauthorised(details)
    };
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
            Some(other) if other != key => {
                return Err(unrecognised("the request presents two different keys"))
            }
            _ => presented = Some(key),
        }
    }
    let key = presented.ok_or_else(|| {
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
    Ok((authorised.kind, authorised.env, authorised.snapshot))
}

/// `W/"<32 hex>"` over everything a response body depends on.
fn etag(
    snapshot: &Snapshot,
    kind: KeyKind,
    flag: Option<&str>,
    input: &Value,
    settings: &str,
) -> String {
    let (op, flag) = match flag {
        None => ("bulk", Value::Null),
        Some(key) => ("flag", Value::String(key.to_owned())),
    };
    let described = json!({
        "v": 1,
        "op": op,
        "flag": flag,
        "kind": match kind { KeyKind::Client => "client", KeyKind::Server => "server" },
        "rev": snapshot.content_revision,
        "cfg": settings,
        "in": input,
    });
    let mut bytes = Vec::with_capacity(256);
    // Typed: a trait `1` and a trait `1.0` evaluate differently, so they must not share an ETag.
    canonical::write_with(&mut bytes, &described, canonical::Numbers::Typed);
    let digest: [u8; 32] = Sha256::digest(&bytes).into();
    format!("W/\"{}\"", canonical::hex(&digest, 16))
}

/// `If-None-Match` against our ETag, weakly: `W/"x"`, `"x"` and `x` are the same; `*` is not
/// a match here (a POST always evaluates unless the client names the version it has).
fn matches_etag(headers: &HeaderMap, etag: &str) -> bool {
    let ours = etag.trim_start_matches("W/").trim_matches('"');
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/").trim_matches('"'))
        .any(|t| t == ours)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_matching_is_weak() {
        let mut h = HeaderMap::new();
        for sent in ["W/\"abc\"", "\"abc\"", "abc", "\"x\", W/\"abc\""] {
            h.insert(header::IF_NONE_MATCH, HeaderValue::from_str(sent).unwrap());
            assert!(matches_etag(&h, "W/\"abc\""), "{sent}");
        }
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(!matches_etag(&h, "W/\"abc\""));
    }
}
