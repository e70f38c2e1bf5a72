//! `GET /ofrep/v1/events`: OFREP's change stream, authorised by the token a bulk answer
//! announced (or a key header), on the shared per-environment cell and connection cap.

use http::{Method, StatusCode};

use super::answer::last_event_id;
use super::{authorise, Asked, Failure};
use crate::api::{stream_response, AppState, Response};
use crate::streams::Format;

/// `GET /ofrep/v1/events` as a response (an open stream or an OFREP error), for a request whose
/// head was read straight off the socket.
pub(crate) fn events(state: &AppState, request: &http::request::Parts) -> Response {
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
    // A flag set's stream: no environment token, and a selector or no environment key.
    let env_token = query("t").and_then(|t| state.streams.by_token(&t));
    if env_token.is_none()
        && state.flag_sets.is_configured()
        && (query("selector").is_some() || super::for_flag_sets(state, &request.headers).is_some())
    {
        return super::flag_sets::stream(state, request, &query);
    }
    let env = match query("t") {
        Some(token) => state
            .streams
            .by_token(&token)
            .ok_or_else(|| Failure::general(StatusCode::UNAUTHORIZED, "invalid stream token"))?,
        None => authorise(state, &request.headers)?.env,
    };
    let last_id = last_event_id(&request.headers, &query);
    let body = state
        .streams
        .open(
            &env,
            Format::Ofrep,
            last_id.as_deref(),
            std::time::Duration::from_secs(sse.heartbeat_sec),
            sse.max_connections,
        )
        .ok_or_else(super::answer::too_many_streams)?;
    Ok(stream_response(body))
}
