//! What OFREP does of its own for flagd flag sets: a request with no key (or a set's bearer
//! token) reads the set its `flagd-selector` header picks, refused as OFREP refuses; a bulk
//! answer names the set's change stream, `GET /ofrep/v1/events?selector=…`, which follows the
//! set. The answers themselves are the OpenFeature layer's, as for environments.

use http::{HeaderMap, StatusCode};

use super::answer::{last_event_id, too_many_streams};
use super::Failure;
use crate::api::{stream_response, AppState, Response};
use crate::flagsets::{Refused, Selector};
use crate::openfeature::Target;

/// The header flagd reads a selector from.
const SELECTOR_HEADER: &str = "flagd-selector";

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

/// The flag set a request asks for (`bearer`: the token it presents, if any), admitted.
pub(super) fn admit(
    state: &AppState,
    headers: &HeaderMap,
    bearer: Option<&str>,
) -> Result<Target, Failure> {
    let selector = selector(headers);
    state
        .flag_sets
        .admit(selector, bearer)
        .map_err(|r| refused(state, r))?;
    let view = state
        .flag_sets
        .view(selector)
        .ok_or_else(|| refused(state, Refused::UnknownSelector))?;
    Ok(Target::flag_set(view, selector))
}

/// Where a bulk answer's client listens for changes of the set `selector` picks: the path and
/// query, `since` the event id of what it was answered from, `t` for a guarded set.
pub(super) fn stream_uri(state: &AppState, selector: Option<&str>, since: &str) -> String {
    let mut uri = format!("/ofrep/v1/events?since={since}");
    if let Some(selector) = selector {
        uri.push_str("&selector=");
        uri.extend(url::form_urlencoded::byte_serialize(selector.as_bytes()));
    }
    if let Some(token) = state.flag_sets.guard(selector) {
        uri.push_str("&t=");
        uri.push_str(&stream_token(token, selector));
    }
    uri
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
    let last_id = last_event_id(&request.headers, query);
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
