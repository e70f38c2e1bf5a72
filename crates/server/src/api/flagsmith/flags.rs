//! `GET /api/v1/flags/`: environment flags, served as bytes prepared per revision.

use http::request::Parts;

use super::{authorise, tally};
use crate::api::error::ApiError;
use crate::api::{respond, AppState, Response};
use crate::body::PreparedBody;
use crate::snapshot::FeatureFlag;
use crate::usage::Resource;

pub(crate) fn flags(state: &AppState, request: &Parts) -> Result<Response, ApiError> {
    let headers = &request.headers;
    let authorised = authorise(state, headers)?;
    let (kind, snapshot) = (authorised.kind, &authorised.snapshot);
    let feature = request.uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "feature")
            .map(|(_, v)| v)
    });
    let answer = match feature {
        None => Ok(respond::prepared(headers, snapshot.flags(kind), None)),
        Some(name) => match snapshot.feature_flag(kind, &name) {
            Some(FeatureFlag::Prepared(body)) => Ok(respond::prepared(headers, body, None)),
            Some(FeatureFlag::Small(bytes)) => Ok(respond::prepared(
                headers,
                &PreparedBody::new(bytes, false),
                None,
            )),
            None => Err(ApiError::not_found(format!("feature '{name}' not found"))),
        },
    };
    tally(&authorised.env, Resource::Flags, answer)
}
