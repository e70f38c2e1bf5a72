//! SDK registrations (`/api/client/register`, `/api/frontend/client/register`) and usage
//! metrics (`/api/client/metrics`, `/api/frontend/client/metrics`): the body checked for the
//! members Unleash reads and answered with Unleash Edge's 202 (a body that is not JSON is a 400,
//! JSON of another shape a 422, as Edge's JSON extractor refuses them; like Edge, a metrics body
//! without a `bucket` is accepted). Offline there is no upstream to forward them to; the request
//! counts in `/metrics` (route `unleash_metrics`) are what is kept.

use http::StatusCode;
use serde_json::Value;

use crate::api::error::ApiError;
use crate::api::{empty, Response};

/// `POST …/register`: an object naming the application.
pub(super) fn register(body: &[u8]) -> Result<Response, ApiError> {
    let object = object(body)?;
    app_name(&object)?;
    Ok(empty(StatusCode::ACCEPTED))
}

/// `POST …/metrics`: an object naming the application, its `bucket` (if any) an object.
pub(super) fn metrics(body: &[u8]) -> Result<Response, ApiError> {
    let object = object(body)?;
    app_name(&object)?;
    match object.get("bucket") {
        Some(Value::Object(bucket)) => {
            if let Some(toggles) = bucket.get("toggles") {
                if !toggles.is_object() {
                    return Err(ApiError::unprocessable(
                        "$.bucket.toggles: must be an object of counts by toggle name",
                    ));
                }
            }
            Ok(empty(StatusCode::ACCEPTED))
        }
        Some(_) => Err(ApiError::unprocessable("$.bucket: must be an object")),
        None => Ok(empty(StatusCode::ACCEPTED)),
    }
}

fn object(body: &[u8]) -> Result<serde_json::Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ApiError::unprocessable("$: must be a JSON object")),
        Err(e) => Err(ApiError::bad_request(format!("the body is not JSON: {e}"))),
    }
}

fn app_name(object: &serde_json::Map<String, Value>) -> Result<(), ApiError> {
    match object.get("appName") {
        Some(Value::String(name)) if !name.is_empty() => Ok(()),
        Some(_) => Err(ApiError::unprocessable(
            "$.appName: must be a non-empty string",
        )),
        None => Err(ApiError::unprocessable("$.appName: missing")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_what_unleash_reads() {
        assert!(register(br#"{"appName":"a","instanceId":"i"}"#).is_ok());
        assert!(register(br#"{"instanceId":"i"}"#).is_err());
        assert!(register(b"[]").is_err());
        assert!(metrics(br#"{"appName":"a","bucket":{"toggles":{}}}"#).is_ok());
        assert!(metrics(br#"{"appName":"a"}"#).is_ok());
        assert!(metrics(br#"{"bucket":{}}"#).is_err());
        assert!(metrics(b"{").is_err());
        assert!(metrics(br#"{"appName":"a","bucket":{"toggles":[]}}"#).is_err());
    }
}
