//! `POST /api/v1/analytics/flags/`: the SDKs' flag analytics. Answered at once with what the
//! Flagsmith API answers (200, empty body); the counts are added to the environment's and
//! forwarded later by `analytics::forward`. Client and server keys are both accepted, and the
//! environment need not have its document yet (counting needs none): the key is admitted by
//! the shared authorisation step without a snapshot, with the rate limit and counts of `/flags`.

use http::{Request, StatusCode};
use hyper::body::Incoming;

use crate::analytics::request;
use crate::api::error::ApiError;
use crate::api::{empty, AppState, Response};
use crate::store::Source;

pub(crate) async fn post_analytics(
    state: &AppState,
    request: Request<Incoming>,
) -> Result<Response, ApiError> {
    let config = &state.analytics.config;
    if !config.enabled {
        return Err(ApiError::not_found(
            "flag analytics are disabled (flagpole.analytics.enabled)",
        ));
    }
    let (parts, body) = request.into_parts();
    let admitted = super::admit(state, &parts.headers)?;
    let refuse = |e: ApiError| {
        admitted.env.usage.reject();
        e
    };
    let body = super::read_body(
        body,
        config.max_body_bytes,
        "flagpole.analytics.max_body_bytes",
    )
    .await
    .map_err(refuse)?;
    let evaluations = request::parse(&body, config.max_features_per_request)
        .map_err(|m| refuse(ApiError::unprocessable(m)))?;
    let upstream = matches!(admitted.env.source, Source::Upstream { .. });
    state
        .analytics
        .record(&admitted.env.client_key, upstream, &evaluations);
    Ok(empty(StatusCode::OK))
}
