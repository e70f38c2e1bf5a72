//! `config.json` as written: serde structs that mirror the file, section by section, and their
//! conversion into the [`Config`] the server reads.
//!
//! Every key either peer accepts is declared here (the Python Edge Proxy 2.x and the Rust one,
//! with both spellings where they differ), so a real Edge Proxy config has no unknown key:
//! keys Flagpole has no use for are declared as ignored, and the few whose absence a user would
//! notice log a note. Absent and `null` mean the default, except where `null` has a meaning of
//! its own (the health check's grace period).

use std::path::PathBuf;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::analytics::AnalyticsSection;
use super::ofrep::OfrepFile;
use super::settings::{Config, KeyPair};
use super::shadow::ShadowSection;
use super::tls::TlsFile;
use super::values::{present, BaseUrl, Key, Object, Port, Positive, Seconds, ServerKey};

/// Top-level spellings of the same setting: `(alias, canonical)`. The serde aliases below
/// accept either; this list is what lets a file with both, or an environment variable for one
/// and the file for the other, resolve instead of failing as a duplicate.
pub(super) const ALIASES: &[(&str, &str)] = &[
    ("api_poll_frequency", "api_poll_frequency_seconds"),
    ("api_poll_timeout", "api_poll_timeout_seconds"),
];

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct File {
    environment_key_pairs: Option<Vec<Object<KeyPairFile>>>,
    api_url: Option<BaseUrl>,
    #[serde(alias = "api_poll_frequency")]
    api_poll_frequency_seconds: Option<Seconds>,
    #[serde(alias = "api_poll_timeout")]
    api_poll_timeout_seconds: Option<Seconds>,
    allow_origins: Option<Vec<String>>,
    /// Ignored: every response is prepared once per document revision.
    endpoint_caches: Option<Value>,
    logging: Option<Object<LoggingFile>>,
    server: Option<Object<ServerFile>>,
    health_check: Option<Object<HealthCheckFile>>,
    /// The Rust Edge Proxy's environment discovery.
    proxy_key: Option<String>,
    /// Flagpole's own settings.
    flagpole: Option<Object<FlagpoleFile>>,
    ofrep: Option<Object<OfrepFile>>,
}

#[derive(Deserialize)]
pub(super) struct KeyPairFile {
    server_side_key: ServerKey,
    client_side_key: Key,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct LoggingFile {
    log_level: Option<String>,
    log_format: Option<LogFormat>,
    enable_access_log: Option<bool>,
    // Ignored: colours only ever go to a terminal; the Python proxy's spellings and the Rust one's.
    colours: Option<Value>,
    colors: Option<Value>,
    use_colors: Option<Value>,
    // Ignored: the message is always `message` (plain) or `fields.message` (JSON).
    log_event_field_name: Option<Value>,
    /// Ignored with a note: Flagpole logs to standard error only.
    log_filename: Option<Value>,
    // Ignored: Python `logging.config` overrides have no Rust equivalent.
    #[serde(rename = "override")]
    override_: Option<Value>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(super) enum LogFormat {
    Generic,
    Json,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ServerFile {
    host: Option<String>,
    port: Option<Port>,
    timeout_keep_alive: Option<Seconds>,
    /// Flagpole's HTTPS termination.
    tls: Option<Object<TlsFile>>,
    // Ignored: uvicorn's options (forwarded headers, auto-reload, its own logging config).
    proxy_headers: Option<Value>,
    reload: Option<Value>,
    log_config: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct HealthCheckFile {
    /// `null`: never stale.
    #[serde(deserialize_with = "present")]
    environment_update_grace_period_seconds: Option<Option<Seconds>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct FlagpoleFile {
    documents: Option<Vec<DocumentFile>>,
    snapshot_dir: Option<PathBuf>,
    limits: Option<Object<LimitsFile>>,
    shutdown_timeout_seconds: Option<Seconds>,
    max_concurrent_fetches: Option<Positive>,
    metrics: Option<Object<MetricsFile>>,
    status_page: Option<Object<SwitchFile>>,
    usage_report_interval_seconds: Option<Seconds>,
    identity_cache: Option<Object<IdentityCacheFile>>,
    analytics: Option<AnalyticsSection>,
    shadow: Option<ShadowSection>,
    grpc: Option<Object<GrpcFile>>,
}

/// `{"port": N}`: the flagd-compatible listener (gRPC and Connect); absent means off.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct GrpcFile {
    port: Option<Port>,
}

/// `{"max_bytes": N}`; 0 turns the cache off.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct IdentityCacheFile {
    max_bytes: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct LimitsFile {
    max_body_bytes: Option<Positive>,
    max_header_bytes: Option<Positive>,
    header_read_timeout_seconds: Option<Seconds>,
    max_trait_value_length: Option<Positive>,
    rate_limit_per_key_rps: Option<Positive>,
    max_connections: Option<Positive>,
    write_timeout_seconds: Option<Seconds>,
}

/// `{"enabled": true|false}`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct SwitchFile {
    enabled: Option<bool>,
}

/// `{"enabled": true|false, "per_environment": true|false}`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct MetricsFile {
    enabled: Option<bool>,
    per_environment: Option<bool>,
}

/// A local document: `"file.json"` or `{"path": "file.json"}`.
pub(super) struct DocumentFile(PathBuf);

#[derive(Deserialize)]
pub(super) struct DocumentObject {
    path: PathBuf,
}

impl<'de> Deserialize<'de> for DocumentFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DocumentFile;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("{\"path\": \"file.json\"}")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<DocumentFile, E> {
                Ok(DocumentFile(PathBuf::from(s)))
            }
            // Through the map's own deserializer, so unknown members are reported as anywhere.
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DocumentFile, A::Error> {
                DocumentObject::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|o| DocumentFile(o.path))
            }
        }
        d.deserialize_any(V)
    }
}

impl File {
    /// The settings this file asks for over the defaults; notes on ignored keys go to
    /// `warnings`.
    pub(super) fn settings(self, warnings: &mut Vec<String>) -> Config {
        let mut c = Config::default();
        if let Some(pairs) = self.environment_key_pairs {
            c.environments.key_pairs = pairs
                .into_iter()
                .map(|Object(p)| KeyPair {
                    server_side_key: p.server_side_key.0,
                    client_side_key: p.client_side_key.0,
                })
                .collect();
        }
        c.environments.proxy_key = self.proxy_key;
        if let Some(url) = self.api_url {
            c.upstream.api_url = url.0;
        }
        if let Some(Seconds(d)) = self.api_poll_frequency_seconds {
            c.upstream.poll_frequency = d;
        }
        if let Some(Seconds(d)) = self.api_poll_timeout_seconds {
            c.upstream.poll_timeout = d;
        }
        if let Some(origins) = self.allow_origins {
            c.server.allow_origins = (!origins.iter().any(|o| o == "*")).then_some(origins);
        }
        if self.endpoint_caches.is_some_and(|v| !v.is_null()) {
            warnings.push("endpoint_caches is ignored: Flagpole pre-computes every response per document revision".into());
        }
        if let Some(Object(logging)) = self.logging {
            if let Some(level) = logging.log_level {
                c.logging.level = level;
            }
            if let Some(format) = logging.log_format {
                c.logging.json = format == LogFormat::Json;
            }
            if let Some(on) = logging.enable_access_log {
                c.logging.access_log = on;
            }
            if logging.log_filename.is_some_and(|v| !v.is_null()) {
                warnings.push(
                    "logging.log_filename is ignored: Flagpole logs to standard error only".into(),
                );
            }
        }
        if let Some(Object(server)) = self.server {
            if let Some(host) = server.host {
                c.server.host = host;
            }
            if let Some(Port(port)) = server.port {
                c.server.port = port;
            }
            if let Some(Seconds(d)) = server.timeout_keep_alive {
                c.server.keep_alive_timeout = d;
            }
            c.server.tls = server.tls.map(|Object(tls)| tls.settings());
        }
        if let Some(grace) = self
            .health_check
            .and_then(|h| h.0.environment_update_grace_period_seconds)
        {
            c.health.stale_grace = grace.map(|s| s.0);
        }
        if let Some(Object(f)) = self.flagpole {
            f.apply(&mut c);
        }
        if let Some(Object(ofrep)) = self.ofrep {
            c.ofrep = ofrep.settings(warnings);
        }
        c
    }
}

impl FlagpoleFile {
    fn apply(self, c: &mut Config) {
        c.environments.documents = self
            .documents
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.0)
            .collect();
        c.upstream.snapshot_dir = self.snapshot_dir;
        if let Some(Object(file)) = self.limits {
            let limits = &mut c.limits;
            if let Some(n) = file.max_body_bytes {
                limits.max_body_bytes = n.usize();
            }
            // Below 8 KiB ordinary requests would be refused.
            if let Some(n) = file.max_header_bytes {
                limits.max_header_bytes = n.usize().max(8192);
            }
            if let Some(n) = file.max_trait_value_length {
                limits.max_trait_value_length = n.usize();
            }
            if let Some(n) = file.max_connections {
                limits.max_connections = n.usize();
            }
            // Shorter would cut clients that are merely slow to start reading.
            if let Some(Seconds(d)) = file.write_timeout_seconds {
                limits.write_timeout = d.max(std::time::Duration::from_millis(100));
            }
            limits.rate_limit_per_key_rps = file.rate_limit_per_key_rps.map(Positive::u32);
            if let Some(Seconds(d)) = file.header_read_timeout_seconds {
                limits.header_read_timeout = d;
            }
        }
        if let Some(Seconds(d)) = self.shutdown_timeout_seconds {
            c.server.shutdown_timeout = d;
        }
        if let Some(Seconds(d)) = self.usage_report_interval_seconds {
            c.upstream.usage_report_interval = d;
        }
        if let Some(n) = self.max_concurrent_fetches {
            c.upstream.max_concurrent_fetches = n.usize();
        }
        if let Some(n) = self.identity_cache.and_then(|c| c.0.max_bytes) {
            c.limits.identity_cache_bytes = n;
        }
        if let Some(Port(port)) = self.grpc.and_then(|g| g.0.port) {
            c.server.grpc_port = Some(port);
        }
        if let Some(metrics) = self.metrics.map(|m| m.0) {
            if let Some(on) = metrics.enabled {
                c.telemetry.metrics = on;
            }
            if let Some(on) = metrics.per_environment {
                c.telemetry.metrics_per_environment = on;
            }
        }
        if let Some(on) = self.status_page.and_then(|s| s.0.enabled) {
            c.telemetry.status_page = on;
        }
        if let Some(Object(section)) = self.analytics {
            c.analytics = section.settings();
        }
        if let Some(Object(section)) = self.shadow {
            c.shadow = section.settings();
        }
    }
}
