//! The operators' endpoints: health probes, Prometheus metrics and the status page. No key is
//! needed; nothing secret is shown.

pub(super) mod health;
pub(super) mod metrics;
pub(super) mod status;
