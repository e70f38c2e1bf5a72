//! `GET`/`POST /api/frontend` (and the legacy `/api/proxy`) and `…/features/{name}`: toggles
//! evaluated for one context, for browser and mobile SDKs holding a frontend token. The context
//! comes from the query string (`userId`, `sessionId`, `remoteAddress`, `environment`,
//! `appName`, `currentTime`, `properties[name]=value`) or a POST body; `remoteAddress` defaults
//! to the caller's address and `currentTime` to now, as Unleash fills them. The answer is
//! every enabled toggle of the token's projects (`{"toggles":[...]}`), or one toggle, enabled
//! or not (404 when the token's projects hold none of that name).

use std::net::SocketAddr;
use std::time::SystemTime;

use flagpole_unleash::Context;
use http::request::Parts;
use http::StatusCode;

use super::{admit, json, query_pairs, view_of};
use crate::api::error::ApiError;
use crate::api::Response;
use crate::unleash::{TokenKind, Unleash};

/// Every enabled toggle for the context.
pub(super) fn all(
    unleash: &Unleash,
    parts: &Parts,
    body: Option<&[u8]>,
    peer: Option<SocketAddr>,
) -> Result<Response, ApiError> {
    let admitted = admit(unleash, parts, TokenKind::Frontend)?;
    let view = view_of(&admitted)?;
    let context = context(parts, body, peer)?;
    let toggles = view
        .features
        .enabled_toggles(&context, admitted.token.projects());
    Ok(no_store(json(StatusCode::OK, toggles.to_json())))
}

/// One toggle for the context.
pub(super) fn one(
    unleash: &Unleash,
    parts: &Parts,
    body: Option<&[u8]>,
    name: &str,
    peer: Option<SocketAddr>,
) -> Result<Response, ApiError> {
    let admitted = admit(unleash, parts, TokenKind::Frontend)?;
    let view = view_of(&admitted)?;
    let context = context(parts, body, peer)?;
    let toggle = view
        .features
        .frontend_toggle_in(name, &context, admitted.token.projects())
        .ok_or_else(|| ApiError::not_found(format!("no toggle named {name:?} for this token")))?;
    let bytes = serde_json::to_vec(&toggle)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(no_store(json(StatusCode::OK, bytes)))
}

/// The context: a POST body's (an empty body is an empty context), else the query's; then the
/// caller's address and the time where the request gave none.
fn context(
    parts: &Parts,
    body: Option<&[u8]>,
    peer: Option<SocketAddr>,
) -> Result<Context, ApiError> {
    let mut context = match body {
        Some(body) if !body.iter().all(u8::is_ascii_whitespace) => {
            Context::from_json(body).map_err(|e| ApiError::bad_request(e.to_string()))?
        }
        Some(_) => Context::new(),
        None => {
            let pairs = query_pairs(parts);
            Context::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        }
    };
    if let Some(peer) = peer {
        context.fill_remote_address(peer.ip());
    }
    context.fill_current_time(SystemTime::now());
    Ok(context)
}

/// An evaluated answer depends on the caller: no shared cache may keep it.
fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    response
}
