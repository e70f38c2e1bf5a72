//! The Unleash front door: Unleash's client API (`client.rs`), frontend API (`frontend.rs`),
//! SDK registrations and metrics (`metrics.rs`) and Unleash Edge's backstage probes
//! (`backstage.rs`), answered from the offline toggles (`crate::unleash`) with the statuses
//! Unleash Edge gives: a request without a token, with an unknown one or with one of the other
//! kind is refused with a 403. Refusals and bad input carry the proxy's JSON error body, so a
//! person reading it learns what was wrong (Edge's bodies are empty; SDKs read the status).

mod backstage;
mod client;
mod frontend;
mod metrics;

use std::net::SocketAddr;
use std::sync::Arc;

use http::request::Parts;
use http::{header, HeaderValue, Method, StatusCode};
use hyper::body::Incoming;

use super::error::ApiError;
use super::request_body::{self, BodyError};
use super::route::UnleashRoute;
use super::Response;
use crate::unleash::{Admitted, Refused, TokenKind, Unleash, View};

/// Whether this request is answered only once its body is read.
pub(super) fn needs_body(route: &UnleashRoute<'_>, method: &Method) -> bool {
    method == Method::POST
        && !matches!(
            route,
            UnleashRoute::ClientFeatures
                | UnleashRoute::ClientFeature(_)
                | UnleashRoute::BackstageHealth
                | UnleashRoute::BackstageReady
        )
}

/// Answers a request that needs no body.
pub(super) fn now(
    unleash: Option<&Unleash>,
    parts: &Parts,
    route: &UnleashRoute<'_>,
    peer: Option<SocketAddr>,
) -> Response {
    let is_get = parts.method == Method::GET || parts.method == Method::HEAD;
    let answered = match route {
        UnleashRoute::BackstageHealth if is_get => Ok(backstage::health()),
        UnleashRoute::BackstageReady if is_get => Ok(backstage::ready(unleash)),
        UnleashRoute::ClientFeatures if is_get => {
            configured(unleash).and_then(|u| client::features(u, parts))
        }
        UnleashRoute::ClientFeature(name) if is_get => {
            configured(unleash).and_then(|u| client::feature(u, parts, name))
        }
        UnleashRoute::Frontend if is_get => {
            configured(unleash).and_then(|u| frontend::all(u, parts, None, peer))
        }
        UnleashRoute::FrontendFeature(name) if is_get => {
            configured(unleash).and_then(|u| frontend::one(u, parts, None, name, peer))
        }
        route => Ok(not_allowed(&parts.method, route)),
    };
    answered.unwrap_or_else(ApiError::into_response)
}

/// Answers a request once its body is read (within `limit` bytes).
pub(super) async fn with_body(
    unleash: Option<Arc<Unleash>>,
    limit: usize,
    parts: Parts,
    body: Incoming,
    route: UnleashRoute<'static>,
    peer: Option<SocketAddr>,
) -> Response {
    let answered = async {
        let unleash = configured(unleash.as_deref())?;
        // The token first: a refused caller's body is not worth reading.
        let kind = match route {
            UnleashRoute::ClientRegister | UnleashRoute::ClientMetrics => TokenKind::Client,
            _ => TokenKind::Frontend,
        };
        let admitted = admit(unleash, &parts, kind)?;
        declared_json(&parts)?;
        let body = request_body::read(body, limit).await.map_err(|e| match e {
            BodyError::TooLarge => ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is larger than {limit} bytes"),
            ),
            BodyError::Unreadable(message) => ApiError::bad_request(message),
        })?;
        match &route {
            UnleashRoute::Frontend => frontend::all(unleash, &parts, Some(&body), peer),
            UnleashRoute::FrontendFeature(name) => {
                frontend::one(unleash, &parts, Some(&body), name, peer)
            }
            UnleashRoute::ClientRegister | UnleashRoute::FrontendRegister => {
                metrics::register(unleash, &admitted, &body)
            }
            UnleashRoute::ClientMetrics | UnleashRoute::FrontendMetrics => {
                metrics::metrics(unleash, &admitted, &body)
            }
            route => Ok(not_allowed(&parts.method, route)),
        }
    };
    answered.await.unwrap_or_else(ApiError::into_response)
}

/// The Unleash toggles, or the 404 of a proxy serving none.
fn configured(unleash: Option<&Unleash>) -> Result<&Unleash, ApiError> {
    unleash.ok_or_else(|| {
        ApiError::not_found(
            "no Unleash toggles are served here: start with --unleash-features FILE \
             (or unleash.features in the configuration)",
        )
    })
}

/// The request's token, if it opens `kind`; Unleash Edge's 403 otherwise.
fn admit<'u>(
    unleash: &'u Unleash,
    parts: &Parts,
    kind: TokenKind,
) -> Result<Admitted<'u>, ApiError> {
    let header = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    unleash.admit(header, kind).map_err(|refused| {
        let message = match (refused, kind) {
            (Refused::Missing, _) => "no token: send an Unleash token in the Authorization header",
            (Refused::Unknown, _) => "this token is not one this proxy accepts",
            (Refused::WrongKind, TokenKind::Client) => {
                "a frontend token may not read the client API: use a client token"
            }
            (Refused::WrongKind, TokenKind::Frontend) => {
                "a client token may not read the frontend API: use a frontend token"
            }
        };
        ApiError::new(StatusCode::FORBIDDEN, message)
    })
}

/// A body declared as something other than JSON is Unleash Edge's 415 (its JSON extractor
/// refuses it); one declared as nothing is read as JSON, as Unleash's own server reads it.
fn declared_json(parts: &Parts) -> Result<(), ApiError> {
    let Some(essence) = crate::api::request_body::media_type(&parts.headers) else {
        return Ok(());
    };
    if essence == "application/json" || essence.ends_with("+json") {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!("the body must be JSON (Content-Type: application/json), not {essence:?}"),
    ))
}

/// The toggles the admitted token reads; a 503 before its feed's first fetch from the upstream
/// (what Unleash Edge answers while it has no features for a token).
fn view_of(admitted: &Admitted<'_>) -> Result<Arc<View>, ApiError> {
    admitted.feed.view().ok_or_else(|| {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "this token's toggles have not been fetched from the Unleash server yet",
        );
        e.retry_after = Some(1);
        e
    })
}

/// The 405 of a method the endpoint does not take.
fn not_allowed(method: &Method, route: &UnleashRoute<'_>) -> Response {
    let allow = match route {
        UnleashRoute::Frontend | UnleashRoute::FrontendFeature(_) => "GET, HEAD, POST",
        UnleashRoute::ClientRegister
        | UnleashRoute::ClientMetrics
        | UnleashRoute::FrontendMetrics
        | UnleashRoute::FrontendRegister => "POST",
        _ => "GET, HEAD",
    };
    let mut response = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("method {method} is not allowed here; allowed: {allow}"),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// The query string's pairs, percent-decoded.
fn query_pairs(parts: &Parts) -> Vec<(String, String)> {
    url::form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

/// A JSON answer.
fn json(status: StatusCode, bytes: impl Into<bytes::Bytes>) -> Response {
    let mut response = super::full(status, bytes);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
