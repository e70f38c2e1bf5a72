//! `config.json` as written: serde structs that mirror the file, section by section, their
//! conversion into the [`Config`] the server reads, and back (the effective configuration
//! `flagpole check` prints, in the file's own key names).
//!
//! These structs are the one list of configuration keys: the JSON Schema (`flagpole config
//! schema`), the did-you-mean for unknown keys, the reference table (docs/configuration.md) and
//! the printed configuration are all derived from them. A field's doc comment is its description
//! in the schema and the table; a bound on its value is a `schemars` attribute, which the loader
//! enforces from the schema (`bounds.rs`).
//!
//! Every key either peer accepts is declared here (the Python Edge Proxy 2.x and the Rust one,
//! with both spellings where they differ), so a real Edge Proxy config has no unknown key:
//! keys Flagpole has no use for are declared as ignored (`deprecated` in the schema), and the
//! few whose absence a user would notice log a note. Absent and `null` mean the default, except
//! where `null` has a meaning of its own (the health check's grace period).

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::analytics::AnalyticsSection;
use super::flags::FlagSourceFile;
use super::ofrep::OfrepFile;
use super::settings::{Config, KeyPair};
use super::shadow::ShadowSection;
use super::tls::TlsFile;
use super::unleash::UnleashFile;
use super::values::{present, BaseUrl, Key, LogLevel, Object, Port, Positive, Seconds, ServerKey};

/// Top-level spellings of the same setting: `(alias, canonical)`. The serde aliases below
/// accept either; this list is what lets a file with both, or an environment variable for one
/// and the file for the other, resolve instead of failing as a duplicate (and what adds the
/// aliases to the schema).
pub(super) const ALIASES: &[(&str, &str)] = &[
    ("api_poll_frequency", "api_poll_frequency_seconds"),
    ("api_poll_timeout", "api_poll_timeout_seconds"),
];

/// The grace period when none is given: 30 s, or the poll period when that is longer (a
/// shorter one would call an environment stale after a single late poll).
const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// Flagpole's configuration (`config.json`): the Flagsmith Edge Proxy's keys, plus `flagpole`
/// and `ofrep`.
#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct File {
    /// The JSON Schema this file follows, for editors (`flagpole config schema`); not read.
    #[serde(rename = "$schema", skip_serializing)]
    schema: Option<String>,
    /// The environments to serve: `{"server_side_key": "ser.…", "client_side_key": "…"}` each; the server key fetches the document, both keys are accepted from clients.
    environment_key_pairs: Option<Vec<Object<KeyPairFile>>>,
    /// The Flagsmith API documents are fetched from.
    api_url: Option<BaseUrl>,
    /// Seconds between two fetches of each environment's document (also `api_poll_frequency`; given both ways, this spelling wins).
    #[serde(alias = "api_poll_frequency")]
    #[schemars(range(min = 1))]
    api_poll_frequency_seconds: Option<Seconds>,
    /// Seconds a whole fetch may take, body included (also `api_poll_timeout`).
    #[serde(alias = "api_poll_timeout")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    api_poll_timeout_seconds: Option<Seconds>,
    /// CORS: the origins browsers may call from; `["*"]`: any.
    allow_origins: Option<Vec<String>>,
    /// Ignored (a note is logged): every response is prepared once per document revision.
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    endpoint_caches: Option<Value>,
    /// Log lines on standard error.
    logging: Option<Object<LoggingFile>>,
    /// The HTTP listener.
    server: Option<Object<ServerFile>>,
    /// Readiness.
    health_check: Option<Object<HealthCheckFile>>,
    /// Environments discovered upstream with this key (the Rust Edge Proxy's `GET {api_url}/proxy/config/`), usage reported with it.
    proxy_key: Option<String>,
    /// Flagpole's own settings.
    flagpole: Option<Object<FlagpoleFile>>,
    /// OpenFeature Remote Evaluation Protocol (`/ofrep/v1/…`).
    ofrep: Option<Object<OfrepFile>>,
    /// flagd flag-definition sources (files watched, http(s) URLs polled), merged as flagd merges its sources and served keyless to the OpenFeature front doors; `flagpole serve --flags PATH` adds files.
    flags: Option<Vec<Object<FlagSourceFile>>>,
    /// Unleash Edge's offline mode: client-features files served to Unleash SDKs (`/api/client/features`, `/api/frontend`) with the tokens listed here.
    unleash: Option<Object<UnleashFile>>,
}

/// One environment: the server key Flagpole fetches with, and the client key.
#[derive(Deserialize, Serialize, JsonSchema)]
pub(super) struct KeyPairFile {
    /// The environment's server-side key (`ser.…`): fetches its document.
    server_side_key: ServerKey,
    /// The environment's client-side key.
    client_side_key: Key,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct LoggingFile {
    /// The least severe level logged: tracing's or Python's level names, any case; `RUST_LOG` overrides.
    log_level: Option<LogLevel>,
    /// `generic` (plain text) or `json` (every line a JSON object, start-up lines included).
    log_format: Option<LogFormat>,
    /// One line per request (target `flagpole::access`, at INFO whatever the level).
    enable_access_log: Option<bool>,
    /// Ignored: colours only ever go to a terminal.
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    colours: Option<Value>,
    /// Ignored: colours only ever go to a terminal.
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    colors: Option<Value>,
    /// Ignored: colours only ever go to a terminal.
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    use_colors: Option<Value>,
    /// Ignored: the message is always `message` (plain) or `fields.message` (JSON).
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    log_event_field_name: Option<Value>,
    /// Ignored (a note is logged): Flagpole logs to standard error only.
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    log_filename: Option<Value>,
    /// Ignored: Python `logging.config` overrides have no Rust equivalent.
    #[serde(rename = "override", skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    override_: Option<Value>,
}

#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(super) enum LogFormat {
    Generic,
    Json,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct ServerFile {
    /// The address to listen on (`--host` overrides).
    host: Option<String>,
    /// The port of the Flagsmith API, OFREP and operators' routes (`--port` overrides; 0: any free port).
    port: Option<Port>,
    /// Seconds an idle keep-alive connection stays open.
    #[schemars(extend("exclusiveMinimum" = 0))]
    timeout_keep_alive: Option<Seconds>,
    /// HTTPS on `server.port`, from a PEM certificate chain and key; `null`: plain HTTP.
    tls: Option<Object<TlsFile>>,
    /// Ignored: an option of the Python proxy's web server.
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    proxy_headers: Option<Value>,
    /// Ignored: an option of the Python proxy's web server.
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    reload: Option<Value>,
    /// Ignored: an option of the Python proxy's web server.
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    log_config: Option<Value>,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct HealthCheckFile {
    /// Seconds past a missed poll before readiness calls an environment stale and OpenFeature answers say `STALE` (per environment served); at least `api_poll_frequency_seconds` (default: 30 or the poll period when longer); `null`: never stale.
    #[serde(deserialize_with = "present")]
    environment_update_grace_period_seconds: Option<Option<Seconds>>,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct FlagpoleFile {
    /// Local environment documents (offline mode), reloaded when they change: `"file.json"` or `{"path": "file.json"}`.
    documents: Option<Vec<DocumentFile>>,
    /// A writable directory where each polled environment's last good document is kept, served at once after a restart.
    snapshot_dir: Option<PathBuf>,
    /// What a request, a connection or a key may cost.
    limits: Option<Object<LimitsFile>>,
    /// Seconds requests in flight may take to finish after SIGTERM.
    #[schemars(extend("exclusiveMinimum" = 0))]
    shutdown_timeout_seconds: Option<Seconds>,
    /// Upstream fetches running at once at most.
    max_concurrent_fetches: Option<Positive>,
    /// Prometheus metrics at `/metrics`.
    metrics: Option<Object<MetricsFile>>,
    /// The status page at `/proxy/status`.
    status_page: Option<Object<SwitchFile>>,
    /// Seconds between usage reports posted upstream (with `proxy_key`).
    #[schemars(extend("exclusiveMinimum" = 0))]
    usage_report_interval_seconds: Option<Seconds>,
    /// Identity answers kept per environment for repeat requests.
    identity_cache: Option<Object<IdentityCacheFile>>,
    /// SDK flag analytics (`POST /api/v1/analytics/flags/`), aggregated and forwarded upstream.
    analytics: Option<AnalyticsSection>,
    /// Shadow verification: a sample of identity requests also asked of the Flagsmith API and compared.
    shadow: Option<ShadowSection>,
    /// The flagd-compatible listener (gRPC and Connect) for the OpenFeature flagd providers.
    grpc: Option<Object<GrpcFile>>,
    /// Replicas sharing one Redis: each environment polled upstream by one replica for the whole fleet, new replicas started from what Redis holds; `null`: each replica on its own.
    fleet: Option<Object<super::fleet::FleetFile>>,
    /// OpenTelemetry: traces and metrics exported over OTLP (the standard `OTEL_*` variables say the same and win); nothing is exported unless an endpoint is set.
    telemetry: Option<super::telemetry::TelemetrySection>,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct GrpcFile {
    /// Its port, on `server.host`; `null`: not served. Must differ from the other listeners' ports.
    port: Option<Port>,
    /// flagd's sync service (`flagd.sync.v1.FlagSyncService`, which the flagd providers'
    /// in-process mode reads flag sets from) on a port of its own as well, as flagd serves it on
    /// 8015; `null`: only on `port`. Must differ from the other listeners' ports.
    sync_port: Option<Port>,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct IdentityCacheFile {
    /// Bytes of answers (and their keys) kept per environment and document revision; 0: none kept.
    max_bytes: Option<u64>,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct LimitsFile {
    /// Request bodies above this get 413.
    max_body_bytes: Option<Positive>,
    /// Request heads above this get 431 (at least 8 KiB: ordinary requests need that).
    #[schemars(range(min = 8192))]
    max_header_bytes: Option<Positive>,
    /// Seconds a client has to send a whole request head (idle keep-alive connections too).
    #[schemars(extend("exclusiveMinimum" = 0))]
    header_read_timeout_seconds: Option<Seconds>,
    /// Trait values longer than this are refused.
    max_trait_value_length: Option<Positive>,
    /// Flagsmith API requests a second per key (bursts up to the same number), 429 above it; `null`: unlimited.
    rate_limit_per_key_rps: Option<Positive>,
    /// Open connections at most; more wait in the listen backlog.
    max_connections: Option<Positive>,
    /// Seconds a client may read nothing of its response before it is disconnected.
    #[schemars(range(min = 0.1))]
    write_timeout_seconds: Option<Seconds>,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct SwitchFile {
    /// Serve it.
    enabled: Option<bool>,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct MetricsFile {
    /// Serve `/metrics` (404 when false).
    enabled: Option<bool>,
    /// The `flagpole_environment_*` families (a dozen series per environment); false keeps only the totals.
    per_environment: Option<bool>,
}

/// A local document: `"file.json"` or `{"path": "file.json"}`.
pub(super) struct DocumentFile(PathBuf);

#[derive(Deserialize, JsonSchema)]
pub(super) struct DocumentObject {
    /// The environment document's file.
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

impl Serialize for DocumentFile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl JsonSchema for DocumentFile {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DocumentFile".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let object = generator.subschema_for::<DocumentObject>();
        schemars::json_schema!({"anyOf": [{"type": "string"}, object]})
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
        c.health.stale_grace = match self
            .health_check
            .and_then(|h| h.0.environment_update_grace_period_seconds)
        {
            Some(grace) => grace.map(|s| s.0),
            None => Some(DEFAULT_GRACE.max(c.upstream.poll_frequency)),
        };
        if let Some(Object(f)) = self.flagpole {
            f.apply(&mut c);
        }
        if let Some(Object(ofrep)) = self.ofrep {
            c.ofrep = ofrep.settings(warnings);
        }
        c.flags = self
            .flags
            .unwrap_or_default()
            .iter()
            .map(|Object(f)| f.to_settings())
            .collect();
        if let Some(Object(u)) = self.unleash {
            c.unleash = u.to_settings();
        }
        c
    }

    /// `config` as a file that loads back into it: every key Flagpole reads, in the file's own
    /// names, defaults included (`null` where absent means the default and the default is
    /// "none"); ignored keys left out.
    pub(super) fn from_settings(c: &Config) -> File {
        let pairs = c.environments.key_pairs.iter().map(|p| {
            Object(KeyPairFile {
                server_side_key: ServerKey(p.server_side_key.clone()),
                client_side_key: Key(p.client_side_key.clone()),
            })
        });
        let origins = c.server.allow_origins.clone();
        File {
            environment_key_pairs: Some(pairs.collect()),
            api_url: Some(BaseUrl(c.upstream.api_url.clone())),
            api_poll_frequency_seconds: Some(Seconds(c.upstream.poll_frequency)),
            api_poll_timeout_seconds: Some(Seconds(c.upstream.poll_timeout)),
            allow_origins: Some(origins.unwrap_or_else(|| vec!["*".into()])),
            logging: Some(Object(LoggingFile {
                log_level: Some(c.logging.level),
                log_format: Some(match c.logging.json {
                    true => LogFormat::Json,
                    false => LogFormat::Generic,
                }),
                enable_access_log: Some(c.logging.access_log),
                ..LoggingFile::default()
            })),
            server: Some(Object(ServerFile {
                host: Some(c.server.host.clone()),
                port: Some(Port(c.server.port)),
                timeout_keep_alive: Some(Seconds(c.server.keep_alive_timeout)),
                tls: c
                    .server
                    .tls
                    .as_ref()
                    .map(|t| Object(TlsFile::from_settings(t))),
                ..ServerFile::default()
            })),
            health_check: Some(Object(HealthCheckFile {
                environment_update_grace_period_seconds: Some(c.health.stale_grace.map(Seconds)),
            })),
            proxy_key: c.environments.proxy_key.clone(),
            flagpole: Some(Object(FlagpoleFile::from_settings(c))),
            ofrep: Some(Object(OfrepFile::from_settings(&c.ofrep))),
            flags: Some(
                c.flags
                    .iter()
                    .map(|f| Object(FlagSourceFile::from_settings(f)))
                    .collect(),
            ),
            unleash: Some(Object(UnleashFile::from_settings(&c.unleash))),
            ..File::default()
        }
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
            if let Some(n) = file.max_header_bytes {
                limits.max_header_bytes = n.usize();
            }
            if let Some(n) = file.max_trait_value_length {
                limits.max_trait_value_length = n.usize();
            }
            if let Some(n) = file.max_connections {
                limits.max_connections = n.usize();
            }
            if let Some(Seconds(d)) = file.write_timeout_seconds {
                limits.write_timeout = d;
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
        if let Some(grpc) = self.grpc.map(|g| g.0) {
            if let Some(Port(port)) = grpc.port {
                c.server.grpc_port = Some(port);
            }
            if let Some(Port(port)) = grpc.sync_port {
                c.server.sync_port = Some(port);
            }
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
        c.fleet = self.fleet.map(|f| f.0.settings());
        if let Some(Object(section)) = self.telemetry {
            c.otel = section.settings();
        }
    }

    fn from_settings(c: &Config) -> FlagpoleFile {
        let limits = &c.limits;
        let count = |n: usize| Some(Positive(n as u64));
        FlagpoleFile {
            documents: Some(
                c.environments
                    .documents
                    .iter()
                    .cloned()
                    .map(DocumentFile)
                    .collect(),
            ),
            snapshot_dir: c.upstream.snapshot_dir.clone(),
            limits: Some(Object(LimitsFile {
                max_body_bytes: count(limits.max_body_bytes),
                max_header_bytes: count(limits.max_header_bytes),
                header_read_timeout_seconds: Some(Seconds(limits.header_read_timeout)),
                max_trait_value_length: count(limits.max_trait_value_length),
                rate_limit_per_key_rps: limits.rate_limit_per_key_rps.map(|n| Positive(n.into())),
                max_connections: count(limits.max_connections),
                write_timeout_seconds: Some(Seconds(limits.write_timeout)),
            })),
            shutdown_timeout_seconds: Some(Seconds(c.server.shutdown_timeout)),
            max_concurrent_fetches: count(c.upstream.max_concurrent_fetches),
            metrics: Some(Object(MetricsFile {
                enabled: Some(c.telemetry.metrics),
                per_environment: Some(c.telemetry.metrics_per_environment),
            })),
            status_page: Some(Object(SwitchFile {
                enabled: Some(c.telemetry.status_page),
            })),
            usage_report_interval_seconds: Some(Seconds(c.upstream.usage_report_interval)),
            identity_cache: Some(Object(IdentityCacheFile {
                max_bytes: Some(limits.identity_cache_bytes),
            })),
            analytics: Some(Object(super::analytics::AnalyticsFile::from_settings(
                &c.analytics,
            ))),
            shadow: Some(Object(super::shadow::ShadowFile::from_settings(&c.shadow))),
            grpc: Some(Object(GrpcFile {
                port: c.server.grpc_port.map(Port),
                sync_port: c.server.sync_port.map(Port),
            })),
            fleet: c
                .fleet
                .as_ref()
                .map(|f| Object(super::fleet::FleetFile::from_settings(f))),
            telemetry: Some(Object(super::telemetry::TelemetryFile::from_settings(
                &c.otel,
            ))),
        }
    }
}
