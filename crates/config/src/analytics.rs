//! The `flagpole.analytics` section: SDK flag analytics (`POST /api/v1/analytics/flags/`)
//! accepted, aggregated per environment and forwarded upstream. Its own file so that the
//! configuration depends on no front door and the section can change without touching others.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::values::{seconds, Object, Positive, Seconds};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AnalyticsConfig {
    /// Accept the SDKs' analytics requests (404 when false, as before this existed).
    pub enabled: bool,
    /// How often aggregated counts are posted upstream, one request per environment.
    #[serde(rename = "flush_interval_seconds", serialize_with = "seconds")]
    pub flush_interval: Duration,
    /// Request bodies above this are refused with 413.
    pub max_body_bytes: usize,
    /// Feature names one request may carry (422 above it).
    pub max_features_per_request: usize,
    /// Feature names one environment may hold awaiting delivery (fresh counts and counts kept
    /// for a retry); past it the oldest kept counts are dropped, and counted as dropped.
    pub max_pending_features: usize,
}

impl Default for AnalyticsConfig {
    fn default() -> Self {
        AnalyticsConfig {
            enabled: true,
            flush_interval: Duration::from_secs(10),
            max_body_bytes: 65_536,
            max_features_per_request: 1_000,
            max_pending_features: 10_000,
        }
    }
}

/// The section as written; absent and `null` members mean the default.
#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct AnalyticsFile {
    /// Accept the SDKs' analytics requests (404 when false).
    enabled: Option<bool>,
    /// Seconds between posts of the aggregated counts upstream, one request per environment (at least 0.1: shorter would be a busy loop).
    #[schemars(range(min = 0.1))]
    flush_interval_seconds: Option<Seconds>,
    /// Request bodies above this get 413.
    max_body_bytes: Option<Positive>,
    /// Feature names one request may carry (422 above it).
    max_features_per_request: Option<Positive>,
    /// Feature names one environment may hold awaiting delivery; past it the oldest kept counts are dropped (and counted).
    max_pending_features: Option<Positive>,
}

impl AnalyticsFile {
    pub(super) fn settings(self) -> AnalyticsConfig {
        let d = AnalyticsConfig::default();
        AnalyticsConfig {
            enabled: self.enabled.unwrap_or(d.enabled),
            flush_interval: self
                .flush_interval_seconds
                .map_or(d.flush_interval, |s| s.0),
            max_body_bytes: self
                .max_body_bytes
                .map_or(d.max_body_bytes, Positive::usize),
            max_features_per_request: self
                .max_features_per_request
                .map_or(d.max_features_per_request, Positive::usize),
            max_pending_features: self
                .max_pending_features
                .map_or(d.max_pending_features, Positive::usize),
        }
    }
}

impl AnalyticsFile {
    pub(super) fn from_settings(c: &AnalyticsConfig) -> AnalyticsFile {
        let count = |n: usize| Some(Positive(n as u64));
        AnalyticsFile {
            enabled: Some(c.enabled),
            flush_interval_seconds: Some(Seconds(c.flush_interval)),
            max_body_bytes: count(c.max_body_bytes),
            max_features_per_request: count(c.max_features_per_request),
            max_pending_features: count(c.max_pending_features),
        }
    }
}

/// `Object<AnalyticsFile>` as `FlagpoleFile` holds it.
pub(super) type AnalyticsSection = Object<AnalyticsFile>;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::from_json;

    #[test]
    fn the_section_loads_and_wrong_values_name_their_key() {
        let config = json!({"flagpole": {"analytics": {"flush_interval_seconds": 2.5, "max_pending_features": 50}}});
        let c = from_json(config.as_object().unwrap())
            .unwrap()
            .config
            .analytics;
        assert_eq!(c.flush_interval, std::time::Duration::from_millis(2500));
        assert_eq!((c.max_pending_features, c.max_body_bytes), (50, 65_536));
        let bad = json!({"flagpole": {"analytics": {"max_body_bytes": 0}}});
        let e = from_json(bad.as_object().unwrap()).unwrap_err().0;
        assert!(e.contains("flagpole.analytics.max_body_bytes"), "{e}");
        let typo = json!({"flagpole": {"analytics": {"flush_interval_second": 1}}});
        let e = from_json(typo.as_object().unwrap()).unwrap_err().0;
        assert!(
            e.contains("did you mean 'flagpole.analytics.flush_interval_seconds'"),
            "{e}"
        );
    }
}
