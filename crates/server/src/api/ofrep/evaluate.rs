//! `POST /ofrep/v1/evaluate/flags/{key}` and `POST /ofrep/v1/evaluate/flags`: a context in, the
//! flags mapped as every OpenFeature front door maps them out, with an ETag computed before
//! anything is evaluated (a revalidation is answered 304 for the price of a hash, or of a memo
//! lookup when the snapshot has seen the same body).

use std::sync::Arc;

use bytes::Bytes;
use flagpole_engine::Identity;
use http::{header, HeaderValue, Method, Request, StatusCode};
use hyper::body::Incoming;

use super::answer::read_body;
use super::answer::{success_headers, write_event_stream_at};
use super::etag::{etag, matches_etag};
use super::freshness::freshen;
use super::{authorise, Asked, Failure};
use crate::api::openfeature::{context, flagsmith, mapping};
use crate::api::{full, AppState, Response};
use crate::config::OfrepConfig;
use crate::snapshot::etag_memo::EtagMemo;
use crate::snapshot::{KeyKind, Snapshot};
use crate::store::EnvSlot;
use crate::telemetry::otel::spans::FlagEvaluated;

/// The path of the change stream, as announced in bulk answers.
const EVENTS_PATH: &str = "ofrep/v1/events";

/// Answers an evaluation: of one flag, or of all (`flag` is `None`). CORS is added by the
/// caller.
pub(crate) async fn evaluate(
    state: &AppState,
    request: Request<Incoming>,
    flag: Option<&str>,
) -> Response {
    if let Some(bearer) = super::for_flag_sets(state, request.headers()) {
        let bearer = bearer.map(str::to_owned);
        return super::flag_sets::evaluate(state, request, flag, bearer).await;
    }
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
    let body = read_body(body, config).await?;
    if flag.is_none() {
        if let Some(fresher) = freshen(&env, &snapshot, parts.uri.query(), config).await {
            snapshot = fresher;
        }
    }
    // Read once: the ETag and the body agree on it. A switch changes every ETag, so an answer
    // cached either side of it is never revalidated across it.
    let stale = env.is_stale();
    // A revalidation with a body this snapshot has answered before: 304 without parsing.
    let memo_key = EtagMemo::key(kind, flag, stale, &body);
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
    let settings = match &stream {
        Some(s) => s.etag_settings.as_str(),
        None => state.streams.keyless_settings(),
    };
    let etag = etag(&snapshot, kind, flag, stale, &input.normalised(), settings);
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
    let mut traced = None;
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
            let resolved = write_mapped(&mut out, &snapshot, flag, kind, config, stale);
            traced = FlagEvaluated::note(
                key,
                resolved.variant_text(),
                resolved.reason,
                input.identifier,
            );
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
                write_mapped(&mut out, &snapshot, flag, kind, config, stale);
            }
            out.push(b']');
            if let (true, Some(stream)) = (config.sse.enabled, stream) {
                write_event_streams(&mut out, config, &stream.token, &snapshot, stale);
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
    if let Some(traced) = traced {
        response.extensions_mut().insert(traced);
    }
    Ok(response)
}

/// One flag as an OFREP evaluation object, mapped as every OpenFeature front door maps it
/// (`STALE` while the document is `stale`); returns the mapping (a single-flag span records it).
fn write_mapped<'a>(
    out: &mut Vec<u8>,
    snapshot: &Snapshot,
    flag: &'a flagpole_engine::FlagResult<'a>,
    kind: KeyKind,
    config: &OfrepConfig,
    stale: bool,
) -> mapping::Resolution<'a> {
    let can_vary = snapshot.env.can_vary(flag.key);
    let mut resolved = flagsmith::resolve(flag, kind, config.parse_json_strings, can_vary);
    resolved.reason = mapping::when_stale(resolved.reason, stale, resolved.value.is_some());
    mapping::write_flag(out, &resolved);
    resolved
}

/// `,"eventStreams":[…]`: where to listen for changes (OFREP's `eventStreams` extension). `since` is the current
/// event id, closing the gap between this response and the connect.
fn write_event_streams(
    out: &mut Vec<u8>,
    config: &OfrepConfig,
    token: &str,
    snapshot: &Snapshot,
    stale: bool,
) {
    let since = crate::streams::event_id(snapshot.updated_at_ms, &snapshot.content_revision, stale);
    write_event_stream_at(
        out,
        config,
        &format!("/{EVENTS_PATH}?t={token}&since={since}"),
    );
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
