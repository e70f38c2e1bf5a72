//! `POST /ofrep/v1/evaluate/flags/{key}` and `POST /ofrep/v1/evaluate/flags`: a context in, the
//! flags resolved through the OpenFeature layer out, whatever engine is behind the target (an
//! environment by its key, a flag set by its selector), with an ETag computed before anything
//! is evaluated (a revalidation is answered 304 for the price of a hash, or of a memo lookup
//! when the environment's snapshot has seen the same body).

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, StatusCode};
use hyper::body::Incoming;

use super::answer::{parse_body, read_body, success_headers, write_flag};
use super::etag::matches_etag;
use super::{admit, flag_sets, Asked, Failure};
use crate::api::{full, AppState, Response};
use crate::openfeature::{when_stale, StreamOf, Target};
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
    let asked = flag.map_or(Asked::Bulk, Asked::Flag);
    let mut known = None;
    match evaluation(state, request, flag, &mut known).await {
        Ok(response) => response,
        Err(failure) => {
            // Refused with the target known: counted there (refusals by the admission step
            // are counted by it).
            if let (Some(target), true) = (known, failure.status.is_client_error()) {
                target.reject();
            }
            failure.into_response(asked)
        }
    }
}

async fn evaluation(
    state: &AppState,
    request: Request<Incoming>,
    flag: Option<&str>,
    known: &mut Option<Target>,
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
    let target = known.insert(admit(state, &parts.headers)?);
    let body = read_body(body, config).await?;
    if flag.is_none() {
        target.freshen(parts.uri.query(), config).await;
    }
    let target = &*target;
    // A revalidation with a body this snapshot has answered before: 304 without parsing.
    let memo_key = target.memo_key(flag, &body);
    if let Some((etag, identified)) = target.recall(memo_key) {
        if matches_etag(&parts.headers, &etag) {
            target.count(identified);
            return Ok(not_modified(&etag));
        }
    }

    let body = parse_body(&body)
        .map_err(|(code, details)| Failure::new(StatusCode::BAD_REQUEST, code, details))?;
    let caller = target
        .caller(
            body.get("context"),
            state.config.limits.max_trait_value_length,
        )
        .map_err(|(code, details)| Failure::new(StatusCode::BAD_REQUEST, code, details))?;
    let identified = caller.targeting_key().is_some();
    if config.require_targeting_key && !identified {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            "TARGETING_KEY_MISSING",
            "a targetingKey is required",
        ));
    }

    // An environment's stream facts; every environment has them, the fallback only covers one
    // added later (and flag sets, which have no key).
    let stream = match target.stream() {
        StreamOf::Environment { client_key } => state.streams.of(client_key),
        StreamOf::FlagSet { .. } | StreamOf::Nowhere => None,
    };
    let settings = match &stream {
        Some(s) => s.etag_settings.as_str(),
        None => state.streams.keyless_settings(),
    };
    let etag = target.tag(flag, &caller, settings);
    target.remember(memo_key, &etag, identified);
    target.count(identified);
    if matches_etag(&parts.headers, &etag) {
        return Ok(not_modified(&etag));
    }

    let stale = target.stale();
    let unevaluated = |_| {
        Failure::general(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the flags could not be evaluated",
        )
    };
    let mut out = Vec::with_capacity(128 + 160 * target.len());
    let mut status = StatusCode::OK;
    let mut traced = None;
    match flag {
        Some(key) => {
            target
                .one(key, &caller, |mut r| {
                    r.reason = when_stale(r.reason, stale, r.value.is_some());
                    match &r.error {
                        Some((code, _)) => {
                            status = match *code {
                                "FLAG_NOT_FOUND" => StatusCode::NOT_FOUND,
                                _ => StatusCode::BAD_REQUEST,
                            };
                            traced = FlagEvaluated::failed(key, code);
                        }
                        None => {
                            traced = FlagEvaluated::note(
                                key,
                                r.variant_text(),
                                r.reason,
                                caller.targeting_key(),
                            );
                        }
                    }
                    write_flag(&mut out, &r);
                })
                .map_err(unevaluated)?;
        }
        None => {
            out.extend_from_slice(b"{\"flags\":[");
            let mut first = true;
            target
                .each(&caller, |mut r| {
                    if !std::mem::take(&mut first) {
                        out.push(b',');
                    }
                    r.reason = when_stale(r.reason, stale, r.value.is_some());
                    write_flag(&mut out, &r);
                })
                .map_err(unevaluated)?;
            out.push(b']');
            if config.sse.enabled {
                let since = target.event_id();
                match (target.stream(), &stream) {
                    (StreamOf::Environment { .. }, Some(stream)) => {
                        let uri = format!("/{EVENTS_PATH}?t={}&since={since}", stream.token);
                        super::answer::write_event_stream_at(&mut out, config, &uri);
                    }
                    (StreamOf::FlagSet { selector }, _) => {
                        let uri = flag_sets::stream_uri(state, selector, &since);
                        super::answer::write_event_stream_at(&mut out, config, &uri);
                    }
                    (StreamOf::Environment { .. }, None) | (StreamOf::Nowhere, _) => {}
                }
            }
            out.extend_from_slice(b",\"metadata\":");
            write_members(&mut out, &target.metadata());
            out.push(b'}');
        }
    }
    if status.is_client_error() {
        target.reject();
    }
    let mut response = full(status, out);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == StatusCode::OK {
        success_headers(headers, &etag);
    } else {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if let Some(traced) = traced {
        response.extensions_mut().insert(traced);
    }
    Ok(response)
}

/// A JSON object's members in their order, each value in canonical form.
fn write_members(out: &mut Vec<u8>, map: &serde_json::Map<String, serde_json::Value>) {
    out.push(b'{');
    for (i, (name, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::json::write(out, name.as_str());
        out.push(b':');
        crate::canonical::write_with(out, value, crate::canonical::Numbers::Typed);
    }
    out.push(b'}');
}

fn not_modified(etag: &str) -> Response {
    let mut response = full(StatusCode::NOT_MODIFIED, Bytes::new());
    success_headers(response.headers_mut(), etag);
    response
}
