//! The operators' endpoints: health probes, Prometheus metrics and the status page. No key is
//! needed; nothing secret is shown.

pub mod health;
pub mod metrics;
pub mod status;
