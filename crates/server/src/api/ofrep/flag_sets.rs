//! OFREP on flagd flag sets, answered as flagd's OFREP service answers: a request with no key
//! (or a set's bearer token) evaluates the set its `flagd-selector` header picks; a value is
//! left out where flagd leaves it out (no default variant, a disabled flag), unknown flags are
//! `FLAG_NOT_FOUND` 404, the bulk answer's `metadata` (and a missing flag's) is the selector the
//! request named, as flagd gives it. ETags and 304s as for environments (the view's revision,
//! the selector and the whole context hashed before anything is evaluated), and
//! `GET /ofrep/v1/events?selector=…` follows the set.

use http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use hyper::body::Incoming;
use serde_json::{Map, Value};

use super::answer::{read_body, success_headers, too_many_streams, write_event_stream_at};
use super::etag::{flag_set_etag, matches_etag};
use super::{Asked, Failure};
use crate::api::openfeature::{flagd, mapping};
use crate::api::{full, stream_response, AppState, Response};
use crate::flagsets::{FlagView, Refused, Selector};
use crate::telemetry::otel::spans::FlagEvaluated;

/// The header flagd reads a selector from.
const SELECTOR_HEADER: &str = "flagd-selector";

/// Answers an OFREP evaluation on a flag set (`flag`: one flag, else all).
pub(super) async fn evaluate(
    state: &AppState,
    request: Request<Incoming>,
    flag: Option<&str>,
    bearer: Option<String>,
) -> Response {
    let asked = flag.map_or(Asked::Bulk, Asked::Flag);
    evaluation(state, request, flag, bearer.as_deref())
        .await
        .unwrap_or_else(|failure| failure.into_response(asked))
}

/// The selector a request sends (`flagd-selector`), if any.
fn selector(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(SELECTOR_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A refusal of the flag sets, in OFREP's shape.
fn refused(state: &AppState, refusal: Refused) -> Failure {
    match refusal {
        Refused::UnknownSelector if state.flag_sets.view(None).is_none() => Failure {
            retry_after: 1,
            ..Failure::general(
                StatusCode::SERVICE_UNAVAILABLE,
                "the flag sets are not loaded yet",
            )
        },
        Refused::UnknownSelector => Failure::new(
            StatusCode::NOT_FOUND,
            "FLAG_NOT_FOUND",
            "the selector names no flag source and no flag set",
        ),
        Refused::MissingToken => Failure::general(
            StatusCode::UNAUTHORIZED,
            "this flag set wants a bearer token (Authorization: Bearer …)",
        ),
        Refused::WrongToken => Failure::general(
            StatusCode::FORBIDDEN,
            "this token does not open this flag set",
        ),
    }
}

async fn evaluation(
    state: &AppState,
    request: Request<Incoming>,
    flag: Option<&str>,
    bearer: Option<&str>,
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
    let selector = selector(&parts.headers);
    state
        .flag_sets
        .admit(selector, bearer)
        .map_err(|r| refused(state, r))?;
    let view = state
        .flag_sets
        .view(selector)
        .ok_or_else(|| refused(state, Refused::UnknownSelector))?;
    let body = read_body(body, config).await?;
    let body = crate::api::openfeature::context::parse_body(&body)
        .map_err(|(code, details)| Failure::new(StatusCode::BAD_REQUEST, code, details))?;
    let context = match body.get("context") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            return Err(Failure::new(
                StatusCode::BAD_REQUEST,
                "INVALID_CONTEXT",
                "the context must be a JSON object",
            ))
        }
    };
    let stale = view.stale();
    let parsed = Selector::parse(selector);
    let selector_key = parsed.key();
    let settings = state.streams.keyless_settings();
    let etag = flag_set_etag(
        &view.revision,
        &selector_key,
        flag,
        stale,
        &context,
        settings,
    );
    if matches_etag(&parts.headers, &etag) {
        let mut response = full(StatusCode::NOT_MODIFIED, bytes::Bytes::new());
        success_headers(response.headers_mut(), &etag);
        return Ok(response);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let evaluation_context = flagpole_flagd::Context::new(&context, now);
    let mut out = Vec::with_capacity(128 + 160 * view.set.len());
    let mut status = StatusCode::OK;
    let mut traced = None;
    // A missing flag's metadata and the bulk answer's own: the selector, as flagd gives them.
    let selected = parsed.metadata();
    match flag {
        Some(key) => {
            let evaluation = view.set.evaluate(key, &evaluation_context);
            let mut resolved = flagd::resolve(key, &evaluation, stale);
            if matches!(resolved.error, Some(("FLAG_NOT_FOUND", _))) {
                resolved.metadata = mapping::Metadata::Map(&selected);
            }
            if let Some((code, _)) = &resolved.error {
                status = match *code {
                    "FLAG_NOT_FOUND" => StatusCode::NOT_FOUND,
                    _ => StatusCode::BAD_REQUEST,
                };
                traced = FlagEvaluated::failed(key, code);
            } else {
                traced = FlagEvaluated::note(
                    key,
                    resolved.variant_text(),
                    resolved.reason,
                    context.get("targetingKey").and_then(Value::as_str),
                );
            }
            mapping::write_flag(&mut out, &resolved);
        }
        None => write_bulk(
            &mut out,
            state,
            &view,
            &evaluation_context,
            stale,
            (selector, &selected),
        ),
    }
    let mut response = full(status, out);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == StatusCode::OK {
        success_headers(response.headers_mut(), &etag);
    }
    if let Some(traced) = traced {
        response.extensions_mut().insert(traced);
    }
    Ok(response)
}

/// `{"flags": [...], "eventStreams": [...], "metadata": {the selector}}`, flags in key order;
/// `selected`: the selector as the request sent it and as flagd answers it in `metadata`.
fn write_bulk(
    out: &mut Vec<u8>,
    state: &AppState,
    view: &FlagView,
    context: &flagpole_flagd::Context<'_>,
    stale: bool,
    (selector, selected): (Option<&str>, &Map<String, Value>),
) {
    out.extend_from_slice(b"{\"flags\":[");
    let mut first = true;
    view.set.evaluate_each(context, |flag, evaluation| {
        if !first {
            out.push(b',');
        }
        first = false;
        mapping::write_flag(out, &flagd::resolve(flag.key(), &evaluation, stale));
    });
    out.push(b']');
    let sse = &state.config.ofrep.sse;
    if sse.enabled {
        let since = crate::streams::event_id(view.updated_at_ms, &view.revision, stale);
        let mut uri = format!("/ofrep/v1/events?since={since}");
        if let Some(selector) = selector {
            uri.push_str("&selector=");
            uri.extend(url::form_urlencoded::byte_serialize(selector.as_bytes()));
        }
        if let Some(token) = state.flag_sets.guard(selector) {
            uri.push_str("&t=");
            uri.push_str(&stream_token(token, selector));
        }
        write_event_stream_at(out, &state.config.ofrep, &uri);
    }
    out.extend_from_slice(b",\"metadata\":");
    crate::canonical::write_with(
        out,
        &Value::Object(selected.clone()),
        crate::canonical::Numbers::Typed,
    );
    out.push(b'}');
}

/// The URL token of a guarded set's change stream: derived from a set token and the selector
/// (`EventSource` cannot send headers), revealing neither.
fn stream_token(token: &str, selector: Option<&str>) -> String {
    let key = Selector::parse(selector).key();
    crate::streams::token(token, &format!("flagd-selector:{key}"))
}

/// `GET /ofrep/v1/events` for a flag set: `selector` in the query (or the header), `t` for a
/// guarded set.
pub(super) fn stream(
    state: &AppState,
    request: &http::request::Parts,
    query: &dyn Fn(&str) -> Option<String>,
) -> Result<Response, Failure> {
    let sse = &state.config.ofrep.sse;
    let selector = query("selector").or_else(|| selector(&request.headers).map(str::to_owned));
    let selector = selector.as_deref().filter(|s| !s.trim().is_empty());
    let t = query("t");
    state
        .flag_sets
        .admit_by(selector, t.is_some(), |token| {
            t.as_deref() == Some(stream_token(token, selector).as_str())
        })
        .map_err(|r| refused(state, r))?;
    let last_id = request
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query("since"));
    let body = state
        .streams
        .open_flag_set(
            state.flag_sets.revisions(selector),
            state.flag_sets.stopping(),
            last_id.as_deref(),
            std::time::Duration::from_secs(sse.heartbeat_sec),
            sse.max_connections,
        )
        .ok_or_else(too_many_streams)?;
    Ok(stream_response(body))
}
