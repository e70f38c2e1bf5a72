//! The settings the rest of the server reads: the configuration once loaded and validated,
//! grouped by what it is about (`config.server.port`, `config.limits.max_body_bytes`,
//! `config.upstream.poll_frequency`, …) rather than by where a key sits in the file. Defaults are
//! the Flagsmith Edge Proxy's wherever it has one.
//!
//! `Serialize` is for debugging output only: `flagpole check` prints the effective configuration
//! in the file's own key names (`file.rs`, `File::from_settings`).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Serialize, Serializer};

pub use super::analytics::AnalyticsConfig;
pub use super::ofrep::{OfrepConfig, SseConfig};
pub use super::shadow::ShadowConfig;
pub use super::values::LogLevel;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Config {
    pub environments: Environments,
    pub upstream: Upstream,
    pub server: Server,
    pub limits: Limits,
    pub logging: Logging,
    pub health: Health,
    pub telemetry: Telemetry,
    pub ofrep: OfrepConfig,
    /// `flagpole.analytics`: SDK flag analytics forwarded upstream.
    pub analytics: AnalyticsConfig,
    /// `flagpole.shadow`: identity answers compared with the Flagsmith API.
    pub shadow: ShadowConfig,
    /// `flagpole.fleet`: replicas sharing one Redis; `None`: each replica on its own.
    pub fleet: Option<super::fleet::FleetConfig>,
    /// `flagpole.telemetry` and the `OTEL_*` variables: OpenTelemetry export.
    pub otel: super::telemetry::OtelConfig,
    /// `flags` and `--flags`: flagd flag-definition sources, in merge order (tokens and
    /// headers are secrets: left out of this form; the file form redacts them).
    #[serde(skip)]
    pub flags: Vec<super::flags::FlagSource>,
    /// `unleash` and the `--unleash-*` options: Unleash Edge's offline mode (tokens are
    /// secrets: left out of this form; the file form redacts them).
    #[serde(skip)]
    pub unleash: super::unleash::Unleash,
}

/// Which environments are served.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Environments {
    /// Polled from upstream (or, for a client key a local document has, its server keys).
    pub key_pairs: Vec<KeyPair>,
    /// Local environment documents (`flagpole.documents`, then `--document`).
    pub documents: Vec<PathBuf>,
    /// Environments discovered upstream with this key (the Rust Edge Proxy's `proxy_key`).
    pub proxy_key: Option<String>,
}

/// One configured environment: the server key Flagpole fetches with, and the client key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyPair {
    pub server_side_key: String,
    pub client_side_key: String,
}

/// The Flagsmith API documents come from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Upstream {
    pub api_url: String,
    #[serde(rename = "poll_frequency_seconds", serialize_with = "seconds")]
    pub poll_frequency: Duration,
    /// Bounds a whole fetch, body included.
    #[serde(rename = "poll_timeout_seconds", serialize_with = "seconds")]
    pub poll_timeout: Duration,
    pub max_concurrent_fetches: usize,
    /// How often usage counts are posted upstream (with `proxy_key`).
    #[serde(rename = "usage_report_interval_seconds", serialize_with = "seconds")]
    pub usage_report_interval: Duration,
    /// Where the last good document of each polled environment is kept for a warm start.
    pub snapshot_dir: Option<PathBuf>,
}

/// The listener.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Server {
    pub host: String,
    pub port: u16,
    #[serde(rename = "keep_alive_timeout_seconds", serialize_with = "seconds")]
    pub keep_alive_timeout: Duration,
    /// How long requests in flight may take to finish after SIGTERM.
    #[serde(rename = "shutdown_timeout_seconds", serialize_with = "seconds")]
    pub shutdown_timeout: Duration,
    /// CORS: `None` = any origin (`["*"]`).
    pub allow_origins: Option<Vec<String>>,
    /// `flagpole.grpc.port`: the flagd-compatible listener (gRPC and Connect) on the same host;
    /// `None` (the default) = not served.
    pub grpc_port: Option<u16>,
    /// `flagpole.grpc.sync_port`: flagd's sync service alone on a port of its own (as flagd's
    /// 8015); `None` (the default) = only on the flagd listener.
    pub sync_port: Option<u16>,
    /// HTTPS on `port` (`server.tls`); `None` = plain HTTP.
    pub tls: Option<super::TlsConfig>,
}

/// What a request, a connection or a key may cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_header_bytes: usize,
    #[serde(rename = "header_read_timeout_seconds", serialize_with = "seconds")]
    pub header_read_timeout: Duration,
    pub max_trait_value_length: usize,
    /// Open connections at most; more wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// A client that reads nothing of its response for this long is disconnected.
    #[serde(rename = "write_timeout_seconds", serialize_with = "seconds")]
    pub write_timeout: Duration,
    /// Flagsmith API requests a second per key (429 above it); `None` = unlimited.
    pub rate_limit_per_key_rps: Option<u32>,
    /// Identity answers kept per environment for repeat requests, in bytes (0 = none kept).
    pub identity_cache_bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Logging {
    pub level: LogLevel,
    /// `logging.log_format = "json"`: every line on stderr is a JSON object.
    pub json: bool,
    pub access_log: bool,
}

/// Readiness.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Health {
    /// How long past a missed poll an environment may go before it is stale; `None` = never.
    #[serde(rename = "stale_grace_seconds", serialize_with = "optional_seconds")]
    pub stale_grace: Option<Duration>,
}

/// Flagpole's own observability endpoints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Telemetry {
    /// Prometheus metrics at `/metrics`.
    pub metrics: bool,
    /// The per-environment families in `/metrics` (a dozen series per environment); off for
    /// very large deployments, which keep the totals.
    pub metrics_per_environment: bool,
    /// The status page at `/proxy/status`.
    pub status_page: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            environments: Environments::default(),
            upstream: Upstream {
                api_url: "https://edge.api.flagsmith.com/api/v1".into(),
                poll_frequency: Duration::from_secs(10),
                poll_timeout: Duration::from_secs(5),
                max_concurrent_fetches: 8,
                usage_report_interval: Duration::from_secs(60),
                snapshot_dir: None,
            },
            server: Server {
                host: "0.0.0.0".into(),
                port: 8000,
                keep_alive_timeout: Duration::from_secs(5),
                shutdown_timeout: Duration::from_secs(10),
                allow_origins: None,
                grpc_port: None,
                sync_port: None,
                tls: None,
            },
            limits: Limits {
                max_body_bytes: 1 << 20,
                max_header_bytes: 16 * 1024,
                header_read_timeout: Duration::from_secs(10),
                max_trait_value_length: 2000,
                max_connections: 25_000,
                write_timeout: Duration::from_secs(30),
                rate_limit_per_key_rps: None,
                identity_cache_bytes: 16 << 20,
            },
            logging: Logging {
                level: LogLevel::INFO,
                json: false,
                access_log: false,
            },
            health: Health {
                stale_grace: Some(Duration::from_secs(30)),
            },
            telemetry: Telemetry {
                metrics: true,
                metrics_per_environment: true,
                status_page: true,
            },
            ofrep: OfrepConfig::default(),
            analytics: AnalyticsConfig::default(),
            shadow: ShadowConfig::default(),
            fleet: None,
            otel: super::telemetry::OtelConfig::default(),
            flags: Vec::new(),
            unleash: super::unleash::Unleash::default(),
        }
    }
}

impl Config {
    /// A copy safe to print: keys and secrets as the logs show them
    /// ([`fingerprint`](crate::fingerprint)), a password in `api_url` masked.
    pub fn redacted(&self) -> Config {
        let hide = |key: &String| crate::fingerprint(key);
        let mut c = self.clone();
        for pair in &mut c.environments.key_pairs {
            pair.server_side_key = hide(&pair.server_side_key);
            pair.client_side_key = hide(&pair.client_side_key);
        }
        c.environments.proxy_key = c.environments.proxy_key.as_ref().map(hide);
        c.ofrep.sse.secret = c.ofrep.sse.secret.as_ref().map(hide);
        c.otel.redact();
        if let Some(fleet) = &mut c.fleet {
            fleet.redis_url = super::fleet::redact(&fleet.redis_url);
            for sentinel in &mut fleet.sentinels {
                *sentinel = super::fleet::redact(sentinel);
            }
        }
        for api_url in [Some(&mut c.upstream.api_url), c.shadow.api_url.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Ok(mut url) = url::Url::parse(api_url) {
                if url.password().is_some() && url.set_password(Some("redacted")).is_ok() {
                    *api_url = url.as_str().trim_end_matches('/').to_owned();
                }
            }
        }
        c
    }
}

pub(super) use super::values::seconds;

fn optional_seconds<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => seconds(d, s),
        None => s.serialize_none(),
    }
}
