//! Unleash Edge's probes, `/internal-backstage/health` and `/internal-backstage/ready`, answered
//! as Edge answers them (`{"status":"OK"}`, `{"status":"READY"}`), so health checks written for
//! Edge work unchanged. Offline, the toggles are loaded before the proxy listens: once it
//! answers, it is ready. With an upstream it is ready once every client token's toggles were
//! fetched (503 `{"status":"NOT_READY"}` before); it stays ready while the server is away,
//! serving the last good toggles, so an outage upstream does not empty a load balancer.

use http::StatusCode;

use super::json;
use crate::api::Response;
use crate::unleash::Unleash;

pub(super) fn health() -> Response {
    json(StatusCode::OK, &br#"{"status":"OK"}"#[..])
}

pub(super) fn ready(unleash: Option<&Unleash>) -> Response {
    match unleash {
        Some(u) if !u.is_ready() => json(
            StatusCode::SERVICE_UNAVAILABLE,
            &br#"{"status":"NOT_READY"}"#[..],
        ),
        _ => json(StatusCode::OK, &br#"{"status":"READY"}"#[..]),
    }
}
