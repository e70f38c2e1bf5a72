//! Unleash Edge's probes, `/internal-backstage/health` and `/internal-backstage/ready`, answered
//! as Edge answers them (`{"status":"OK"}`, `{"status":"READY"}`), so health checks written for
//! Edge work unchanged. Offline, the toggles are loaded before the proxy listens: once it
//! answers, it is ready.

use http::StatusCode;

use super::json;
use crate::api::Response;
use crate::unleash::Unleash;

pub(super) fn health() -> Response {
    json(StatusCode::OK, &br#"{"status":"OK"}"#[..])
}

pub(super) fn ready(_unleash: Option<&Unleash>) -> Response {
    json(StatusCode::OK, &br#"{"status":"READY"}"#[..])
}
