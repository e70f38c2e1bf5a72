//! SDK registrations (`/api/client/register`, `/api/frontend/client/register`) and usage
//! metrics (`/api/client/metrics`, `/api/frontend/client/metrics`): the body checked for the
//! members Unleash reads and answered with Unleash Edge's 202 (a body that is not JSON is a 400,
//! JSON of another shape a 422, as Edge's JSON extractor refuses them; like Edge, a metrics body
//! without a `bucket` is accepted). With an upstream they are gathered under the token's feed
//! and environment and forwarded in bulk (`crate::unleash`'s usage); offline there is no
//! upstream to forward them to, and the request counts in `/metrics` (route `unleash_metrics`)
//! are what is kept.

use http::StatusCode;

use crate::api::error::ApiError;
use crate::api::{empty, Response};
use crate::unleash::{Admitted, Unleash};

/// `POST …/register`: an object naming the application.
pub(super) fn register(
    unleash: &Unleash,
    admitted: &Admitted<'_>,
    body: &[u8],
) -> Result<Response, ApiError> {
    let identity = &unleash.identity;
    admitted
        .feed
        .record_registration(
            body,
            admitted.token.environment(),
            (identity.app_name, &identity.instance_id),
            unleash.forwards_usage(),
        )
        .map_err(refusal)?;
    Ok(empty(StatusCode::ACCEPTED))
}

/// `POST …/metrics`: an object naming the application, its `bucket` (if any) an object.
pub(super) fn metrics(
    unleash: &Unleash,
    admitted: &Admitted<'_>,
    body: &[u8],
) -> Result<Response, ApiError> {
    admitted
        .feed
        .record_metrics(body, admitted.token.environment(), unleash.forwards_usage())
        .map_err(refusal)?;
    Ok(empty(StatusCode::ACCEPTED))
}

/// Not JSON is a 400; JSON of another shape a 422.
fn refusal(e: flagpole_unleash::UsageError) -> ApiError {
    if e.0.starts_with("$: not JSON") {
        ApiError::bad_request(e.0)
    } else {
        ApiError::unprocessable(e.0)
    }
}
