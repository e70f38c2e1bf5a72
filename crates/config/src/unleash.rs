//! The `unleash` section: Flagpole as an Unleash edge, in one of Unleash Edge's two modes.
//! Offline, client-features files (Unleash's `/api/client/features` body, as exported or
//! fetched once) are served; with an upstream, the Unleash server's client API is polled with
//! each client token. Either way Unleash SDKs read `/api/client/*` and `/api/frontend` with the
//! tokens listed here; the command line (`--unleash-features`, `--unleash-upstream`,
//! `--unleash-client-token`, `--unleash-frontend-token`, the intervals) adds to it or overrides
//! it. Tokens are secrets: the printed configuration redacts them, logs show fingerprints only.

use std::path::PathBuf;
use std::time::Duration;

use super::values::{BaseUrl, Seconds};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The Unleash settings, as the server reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unleash {
    /// Client-features files, merged in order (a later file's toggle wins on a name).
    pub features: Vec<PathBuf>,
    /// Tokens for the client API (`/api/client/*`, server-side SDKs).
    pub client_tokens: Vec<String>,
    /// Tokens for the frontend API (`/api/frontend`, `/api/proxy`, browser and mobile SDKs).
    pub frontend_tokens: Vec<String>,
    /// The Unleash server polled with each client token (its base URL, without `/api`).
    pub upstream: Option<String>,
    /// Time between two fetches of one client token's features from the upstream.
    pub refresh_interval: Duration,
    /// Time between two forwardings of the SDKs' registrations and metrics to the upstream.
    pub metrics_interval: Duration,
}

/// Unleash Edge's defaults (`--features-refresh-interval-seconds`, `--metrics-interval-seconds`).
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(15);
pub const DEFAULT_METRICS_INTERVAL: Duration = Duration::from_secs(60);

impl Default for Unleash {
    fn default() -> Self {
        Unleash {
            features: Vec::new(),
            client_tokens: Vec::new(),
            frontend_tokens: Vec::new(),
            upstream: None,
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
            metrics_interval: DEFAULT_METRICS_INTERVAL,
        }
    }
}

impl Unleash {
    /// Whether anything Unleash is configured.
    pub fn is_configured(&self) -> bool {
        !self.features.is_empty() || self.upstream.is_some()
    }
}

/// The `unleash` section of config.json.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(super) struct UnleashFile {
    /// Unleash client-features files (the body of Unleash's `GET /api/client/features`),
    /// served offline as Unleash Edge's offline mode serves its bootstrap file, watched and
    /// reloaded when they change (a file that does not load keeps the last good toggles);
    /// several files are merged, a later file's toggle winning on a name.
    /// `flagpole serve --unleash-features FILE` adds one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<PathBuf>,
    /// Unleash client tokens (`project:environment.secret`, `*` for every project,
    /// `[a,b]` for several) accepted on `/api/client/features`, `/api/client/register` and
    /// `/api/client/metrics`, in the `Authorization` header. `--unleash-client-token` adds one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_tokens: Vec<String>,
    /// Unleash frontend tokens (same shape) accepted on `/api/frontend` and the legacy
    /// `/api/proxy`. `--unleash-frontend-token` adds one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frontend_tokens: Vec<String>,
    /// An Unleash server to serve from instead of files (its base URL without `/api`, as
    /// Unleash Edge's `--upstream-url`): its `/api/client/features` is polled with each client
    /// token, and the SDKs' registrations and metrics are forwarded to it in bulk.
    /// `--unleash-upstream URL` sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<BaseUrl>,
    /// Seconds between two fetches of one client token's features (default 15, as Unleash
    /// Edge's `--features-refresh-interval-seconds`). `--unleash-refresh-interval` sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval_seconds: Option<Seconds>,
    /// Seconds between two forwardings of the SDKs' registrations and metrics to the upstream
    /// (default 60, as Unleash Edge's `--metrics-interval-seconds`).
    /// `--unleash-metrics-interval` sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_interval_seconds: Option<Seconds>,
}

impl UnleashFile {
    pub(super) fn to_settings(&self) -> Unleash {
        Unleash {
            features: self.features.clone(),
            client_tokens: self.client_tokens.clone(),
            frontend_tokens: self.frontend_tokens.clone(),
            upstream: self.upstream.as_ref().map(|u| u.0.clone()),
            refresh_interval: self
                .refresh_interval_seconds
                .map_or(DEFAULT_REFRESH_INTERVAL, |s| s.0),
            metrics_interval: self
                .metrics_interval_seconds
                .map_or(DEFAULT_METRICS_INTERVAL, |s| s.0),
        }
    }

    pub(super) fn from_settings(u: &Unleash) -> UnleashFile {
        let redacted = |tokens: &[String]| tokens.iter().map(|_| "<redacted>".to_owned()).collect();
        UnleashFile {
            features: u.features.clone(),
            client_tokens: redacted(&u.client_tokens),
            frontend_tokens: redacted(&u.frontend_tokens),
            upstream: u.upstream.clone().map(BaseUrl),
            refresh_interval_seconds: Some(Seconds(u.refresh_interval)),
            metrics_interval_seconds: Some(Seconds(u.metrics_interval)),
        }
    }
}
