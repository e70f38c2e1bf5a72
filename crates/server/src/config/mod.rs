//! Configuration: the Flagsmith Edge Proxy's `config.json`, unchanged (both the Python and the
//! Rust peer's keys are accepted), plus Flagpole's own keys under `"flagpole"`.
//!
//! Sources, later wins: built-in defaults → the file (`--config`, `$CONFIG_PATH`, else
//! `./config.json` if present) → one environment variable per top-level key (same name, any
//! case; nested values as JSON). Unknown keys are warnings; invalid values stop startup with a
//! message naming the key.

pub mod ofrep;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// One configured environment: the server key Flagpole fetches with, and the client key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPair {
    pub server_side_key: String,
    pub client_side_key: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub environment_key_pairs: Vec<KeyPair>,
    pub api_url: String,
    pub api_poll_frequency: Duration,
    pub api_poll_timeout: Duration,
    /// `None` = any origin (`["*"]`).
    pub allow_origins: Option<Vec<String>>,
    pub log_level: String,
    pub log_json: bool,
    pub access_log: bool,
    pub host: String,
    pub port: u16,
    pub keep_alive_timeout: Duration,
    /// `None` = never stale.
    pub stale_grace: Option<Duration>,
    pub proxy_key: Option<String>,
    /// Flagpole's own settings.
    pub documents: Vec<PathBuf>,
    pub snapshot_dir: Option<PathBuf>,
    pub max_body_bytes: usize,
    pub max_header_bytes: usize,
    pub header_read_timeout: Duration,
    pub max_trait_value_length: usize,
    /// Open connections at most; more wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// A client that reads nothing of its response for this long is disconnected.
    pub write_timeout: Duration,
    pub shutdown_timeout: Duration,
    pub max_concurrent_fetches: usize,
    /// How often usage counts are posted upstream (with `proxy_key`).
    pub usage_report_interval: Duration,
    /// Flagsmith API requests a second per key (429 above it); `None` = unlimited.
    pub rate_limit_per_key_rps: Option<u32>,
    /// `flagpole.metrics.enabled`: Prometheus metrics at `/metrics`.
    pub metrics_enabled: bool,
    /// `flagpole.status_page.enabled`: the status page at `/proxy/status`.
    pub status_page_enabled: bool,
    /// The `"ofrep"` section.
    pub ofrep: crate::config::ofrep::OfrepConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            environment_key_pairs: Vec::new(),
            api_url: "https://edge.api.flagsmith.com/api/v1".into(),
            api_poll_frequency: Duration::from_secs(10),
            api_poll_timeout: Duration::from_secs(5),
            allow_origins: None,
            log_level: "INFO".into(),
            log_json: false,
            access_log: false,
            host: "0.0.0.0".into(),
            port: 8000,
            keep_alive_timeout: Duration::from_secs(5),
            stale_grace: Some(Duration::from_secs(30)),
            proxy_key: None,
            documents: Vec::new(),
            snapshot_dir: None,
            max_body_bytes: 1 << 20,
            max_header_bytes: 16 * 1024,
            header_read_timeout: Duration::from_secs(10),
            max_trait_value_length: 2000,
            max_connections: 25_000,
            write_timeout: Duration::from_secs(30),
            shutdown_timeout: Duration::from_secs(10),
            max_concurrent_fetches: 8,
            usage_report_interval: Duration::from_secs(60),
            rate_limit_per_key_rps: None,
            metrics_enabled: true,
            status_page_enabled: true,
            ofrep: Default::default(),
        }
    }
}

/// A configuration problem that stops startup, naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Keys either peer accepts at the top level (some are accepted and ignored).
const TOP_LEVEL_KEYS: &[&str] = &[
    "environment_key_pairs",
    "api_url",
    "api_poll_frequency_seconds",
    "api_poll_frequency",
    "api_poll_timeout_seconds",
    "api_poll_timeout",
    "allow_origins",
    "endpoint_caches",
    "logging",
    "server",
    "health_check",
    "proxy_key",
    "flagpole",
    "ofrep",
];

/// What loading found besides the config: warnings to log once logging is up.
#[derive(Debug, Default)]
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<String>,
    /// Where the file came from, if any.
    pub source: Option<PathBuf>,
}

/// Loads the configuration. `explicit` is `--config`; `env` is the process environment.
pub fn load(explicit: Option<&Path>, env: &[(String, String)]) -> Result<Loaded, ConfigError> {
    let env_path = env
        .iter()
        .find(|(k, _)| k == "CONFIG_PATH")
        .map(|(_, v)| PathBuf::from(v));
    let path = explicit.map(Path::to_path_buf).or(env_path);
    let (mut root, source) = match path {
        Some(p) => (read_file(&p)?, Some(p)),
        None if Path::new("config.json").exists() => (
            read_file(Path::new("config.json"))?,
            Some(PathBuf::from("config.json")),
        ),
        None => (Map::new(), None),
    };
    // Environment variables override top-level keys, case-insensitively.
    for (name, value) in env {
        let key = name.to_ascii_lowercase();
        if TOP_LEVEL_KEYS.contains(&key.as_str()) {
            let parsed = serde_json::from_str::<Value>(value)
                .unwrap_or_else(|_| Value::String(value.clone()));
            root.insert(key, parsed);
        }
    }
    let mut loaded = from_json(&root)?;
    loaded.source = source;
    Ok(loaded)
}

fn read_file(path: &Path) -> Result<Map<String, Value>, ConfigError> {
    let text = std::fs::read(path)
        .map_err(|e| ConfigError(format!("cannot read config {}: {e}", path.display())))?;
    match serde_json::from_slice::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ConfigError(format!(
            "config {}: must be a JSON object",
            path.display()
        ))),
        Err(e) => Err(ConfigError(format!(
            "config {}: malformed JSON: {e}",
            path.display()
        ))),
    }
}

/// Builds a config from a parsed `config.json` object.
pub fn from_json(root: &Map<String, Value>) -> Result<Loaded, ConfigError> {
    let mut c = Config::default();
    let mut warnings = Vec::new();
    for key in root.keys() {
        if !TOP_LEVEL_KEYS.contains(&key.as_str()) {
            warnings.push(format!("unknown config key '{key}' ignored"));
        }
    }
    if let Some(v) = root.get("environment_key_pairs") {
        c.environment_key_pairs = key_pairs(v)?;
    }
    if let Some(v) = root.get("api_url") {
        let url = string(v, "api_url")?;
        url::Url::parse(&url).map_err(|e| ConfigError(format!("api_url: not a URL: {e}")))?;
        c.api_url = url.trim_end_matches('/').to_owned();
    }
    for key in ["api_poll_frequency_seconds", "api_poll_frequency"] {
        if let Some(v) = root.get(key) {
            c.api_poll_frequency = seconds(v, key, false)?.unwrap_or(c.api_poll_frequency);
        }
    }
    for key in ["api_poll_timeout_seconds", "api_poll_timeout"] {
        if let Some(v) = root.get(key) {
            c.api_poll_timeout = seconds(v, key, false)?.unwrap_or(c.api_poll_timeout);
        }
    }
    if let Some(v) = root.get("allow_origins") {
        let origins = string_list(v, "allow_origins")?;
        c.allow_origins = if origins.iter().any(|o| o == "*") {
            None
        } else {
            Some(origins)
        };
    }
    if root.get("endpoint_caches").is_some_and(|v| !v.is_null()) {
        warnings.push("endpoint_caches is ignored: Flagpole pre-computes every response per document revision".into());
    }
    if let Some(v) = root.get("logging") {
        let logging = object(v, "logging")?;
        known(
            logging,
            "logging",
            &[
                "log_level",
                "log_format",
                "enable_access_log",
                "colours",
                "colors",
                "use_colors",
                "log_event_field_name",
                "override",
            ],
            &mut warnings,
        );
        if let Some(v) = logging.get("log_level") {
            c.log_level = string(v, "logging.log_level")?;
        }
        if let Some(v) = logging.get("log_format") {
            c.log_json = match string(v, "logging.log_format")?.as_str() {
                "generic" => false,
                "json" => true,
                other => {
                    return Err(ConfigError(format!(
                        "logging.log_format: must be \"generic\" or \"json\", not {other:?}"
                    )))
                }
            };
        }
        if let Some(v) = logging.get("enable_access_log") {
            c.access_log = boolean(v, "logging.enable_access_log")?;
        }
    }
    if let Some(v) = root.get("server") {
        let server = object(v, "server")?;
        known(
            server,
            "server",
            &[
                "host",
                "port",
                "proxy_headers",
                "reload",
                "timeout_keep_alive",
            ],
            &mut warnings,
        );
        if let Some(v) = server.get("host") {
            c.host = string(v, "server.host")?;
        }
        if let Some(v) = server.get("port") {
            c.port = v
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| {
                    ConfigError("server.port: must be an integer from 0 to 65535".into())
                })?;
        }
        if let Some(v) = server.get("timeout_keep_alive") {
            c.keep_alive_timeout =
                seconds(v, "server.timeout_keep_alive", false)?.unwrap_or(c.keep_alive_timeout);
        }
    }
    if let Some(v) = root.get("health_check") {
        let hc = object(v, "health_check")?;
        known(
            hc,
            "health_check",
            &["environment_update_grace_period_seconds"],
            &mut warnings,
        );
        if let Some(v) = hc.get("environment_update_grace_period_seconds") {
            c.stale_grace = seconds(
                v,
                "health_check.environment_update_grace_period_seconds",
                true,
            )?;
        }
    }
    if let Some(v) = root.get("proxy_key") {
        if !v.is_null() {
            c.proxy_key = Some(string(v, "proxy_key")?);
        }
    }
    if let Some(v) = root.get("flagpole") {
        flagpole_keys(object(v, "flagpole")?, &mut c, &mut warnings)?;
    }
    if let Some(v) = root.get("ofrep").filter(|v| !v.is_null()) {
        c.ofrep = crate::config::ofrep::parse(v, &mut warnings)?;
    }
    Ok(Loaded {
        config: c,
        warnings,
        source: None,
    })
}

fn flagpole_keys(
    f: &Map<String, Value>,
    c: &mut Config,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    known(
        f,
        "flagpole",
        &[
            "documents",
            "snapshot_dir",
            "limits",
            "shutdown_timeout_seconds",
            "max_concurrent_fetches",
            "metrics",
            "status_page",
            "usage_report_interval_seconds",
        ],
        warnings,
    );
    if let Some(v) = f.get("documents") {
        let items = v.as_array().ok_or_else(|| {
            ConfigError("flagpole.documents: must be a list of {\"path\": …}".into())
        })?;
        for (i, item) in items.iter().enumerate() {
            let path = match item {
                Value::String(p) => p.clone(),
                Value::Object(o) => string(
                    o.get("path").unwrap_or(&Value::Null),
                    &format!("flagpole.documents[{i}].path"),
                )?,
                _ => {
                    return Err(ConfigError(format!(
                        "flagpole.documents[{i}]: must be {{\"path\": \"file.json\"}}"
                    )))
                }
            };
            c.documents.push(PathBuf::from(path));
        }
    }
    if let Some(v) = f.get("snapshot_dir").filter(|v| !v.is_null()) {
        c.snapshot_dir = Some(PathBuf::from(string(v, "flagpole.snapshot_dir")?));
    }
    if let Some(v) = f.get("limits") {
        let limits = object(v, "flagpole.limits")?;
        known(
            limits,
            "flagpole.limits",
            &[
                "max_body_bytes",
                "max_header_bytes",
                "header_read_timeout_seconds",
                "max_trait_value_length",
                "rate_limit_per_key_rps",
                "max_connections",
                "write_timeout_seconds",
            ],
            warnings,
        );
        let positive = |key: &str| -> Result<Option<usize>, ConfigError> {
            match limits.get(key) {
                None => Ok(None),
                Some(v) => v
                    .as_u64()
                    .filter(|n| *n > 0)
                    .map(|n| Some(n as usize))
                    .ok_or_else(|| {
                        ConfigError(format!("flagpole.limits.{key}: must be a positive integer"))
                    }),
            }
        };
        if let Some(n) = positive("max_body_bytes")? {
            c.max_body_bytes = n;
        }
        if let Some(n) = positive("max_header_bytes")? {
            c.max_header_bytes = n.max(8192);
        }
        if let Some(n) = positive("max_trait_value_length")? {
            c.max_trait_value_length = n;
        }
        if let Some(n) = positive("max_connections")? {
            c.max_connections = n;
        }
        if let Some(v) = limits.get("write_timeout_seconds") {
            c.write_timeout = seconds(v, "flagpole.limits.write_timeout_seconds", false)?
                .unwrap_or(c.write_timeout)
                .max(Duration::from_millis(100));
        }
        if let Some(n) = positive("rate_limit_per_key_rps")? {
            c.rate_limit_per_key_rps = Some(u32::try_from(n).unwrap_or(u32::MAX));
        }
        if let Some(v) = limits.get("header_read_timeout_seconds") {
            c.header_read_timeout =
                seconds(v, "flagpole.limits.header_read_timeout_seconds", false)?
                    .unwrap_or(c.header_read_timeout);
        }
    }
    if let Some(v) = f.get("shutdown_timeout_seconds") {
        c.shutdown_timeout =
            seconds(v, "flagpole.shutdown_timeout_seconds", false)?.unwrap_or(c.shutdown_timeout);
    }
    if let Some(v) = f.get("usage_report_interval_seconds") {
        c.usage_report_interval = seconds(v, "flagpole.usage_report_interval_seconds", false)?
            .unwrap_or(c.usage_report_interval);
    }
    if let Some(enabled) = switch(f, "metrics", warnings)? {
        c.metrics_enabled = enabled;
    }
    if let Some(enabled) = switch(f, "status_page", warnings)? {
        c.status_page_enabled = enabled;
    }
    if let Some(v) = f.get("max_concurrent_fetches") {
        c.max_concurrent_fetches = v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
            ConfigError("flagpole.max_concurrent_fetches: must be a positive integer".into())
        })? as usize;
    }
    Ok(())
}

/// `flagpole.<name>.enabled`, if given (`{"enabled": true|false}`).
fn switch(
    f: &Map<String, Value>,
    name: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<bool>, ConfigError> {
    let Some(v) = f.get(name).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let key = format!("flagpole.{name}");
    let section = object(v, &key)?;
    known(section, &key, &["enabled"], warnings);
    section
        .get("enabled")
        .map(|v| boolean(v, &format!("{key}.enabled")))
        .transpose()
}

fn known(map: &Map<String, Value>, prefix: &str, keys: &[&str], warnings: &mut Vec<String>) {
    for k in map.keys() {
        if !keys.contains(&k.as_str()) {
            warnings.push(format!("unknown config key '{prefix}.{k}' ignored"));
        }
    }
}

fn object<'v>(v: &'v Value, key: &str) -> Result<&'v Map<String, Value>, ConfigError> {
    v.as_object()
        .ok_or_else(|| ConfigError(format!("{key}: must be an object")))
}

fn string(v: &Value, key: &str) -> Result<String, ConfigError> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| ConfigError(format!("{key}: must be a string")))
}

fn boolean(v: &Value, key: &str) -> Result<bool, ConfigError> {
    v.as_bool()
        .ok_or_else(|| ConfigError(format!("{key}: must be true or false")))
}

fn string_list(v: &Value, key: &str) -> Result<Vec<String>, ConfigError> {
    let items = v
        .as_array()
        .ok_or_else(|| ConfigError(format!("{key}: must be a list of strings")))?;
    items.iter().map(|i| string(i, key)).collect()
}

/// A non-negative number of seconds; `null` allowed only when `nullable` (→ `None`).
fn seconds(v: &Value, key: &str, nullable: bool) -> Result<Option<Duration>, ConfigError> {
    if v.is_null() && nullable {
        return Ok(None);
    }
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(Duration::from_secs_f64(n))),
        _ => Err(ConfigError(format!(
            "{key}: must be a non-negative number of seconds"
        ))),
    }
}

fn key_pairs(v: &Value) -> Result<Vec<KeyPair>, ConfigError> {
    let items = v.as_array().ok_or_else(|| {
        ConfigError(
            "environment_key_pairs: must be a list of {server_side_key, client_side_key}".into(),
        )
    })?;
    let mut pairs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = |name: &str| -> Result<String, ConfigError> {
            let s = item
                .get(name)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    ConfigError(format!(
                        "environment_key_pairs[{i}].{name}: must be a non-empty string"
                    ))
                })?;
            Ok(s.to_owned())
        };
        let server_side_key = field("server_side_key")?;
        if !server_side_key.starts_with("ser.") {
            return Err(ConfigError(format!(
                "environment_key_pairs[{i}].server_side_key: must start with \"ser.\""
            )));
        }
        pairs.push(KeyPair {
            server_side_key,
            client_side_key: field("client_side_key")?,
        });
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load_json(v: Value) -> Result<Loaded, ConfigError> {
        from_json(v.as_object().unwrap())
    }

    #[test]
    fn peers_configs_load() {
        let python = json!({"environment_key_pairs": [{"server_side_key": "ser.abc", "client_side_key": "abc"}],
            "api_poll_frequency": 5, "api_poll_timeout": 2, "api_url": "https://example.test/api/v1/",
            "allow_origins": ["https://a.test"], "endpoint_caches": {"flags": {"use_cache": false}},
            "logging": {"log_level": "DEBUG", "log_format": "json", "enable_access_log": true, "colours": true},
            "server": {"host": "127.0.0.1", "port": 8001, "proxy_headers": true, "timeout_keep_alive": 7},
            "health_check": {"environment_update_grace_period_seconds": null}});
        let loaded = load_json(python).unwrap();
        let c = loaded.config;
        assert_eq!(c.api_url, "https://example.test/api/v1");
        assert_eq!(c.api_poll_frequency, Duration::from_secs(5));
        assert_eq!(c.allow_origins, Some(vec!["https://a.test".to_string()]));
        assert!(c.log_json && c.access_log);
        assert_eq!((c.host.as_str(), c.port), ("127.0.0.1", 8001));
        assert_eq!(c.stale_grace, None);
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    }

    #[test]
    fn invalid_values_name_the_key() {
        let e = load_json(
            json!({"environment_key_pairs": [{"server_side_key": "abc", "client_side_key": "x"}]}),
        )
        .unwrap_err();
        assert!(
            e.0.contains("environment_key_pairs[0].server_side_key"),
            "{e}"
        );
        let e = load_json(json!({"server": {"port": 70000}})).unwrap_err();
        assert!(e.0.contains("server.port"), "{e}");
        let e = load_json(json!({"api_poll_frequency_seconds": "soon"})).unwrap_err();
        assert!(e.0.contains("api_poll_frequency_seconds"), "{e}");
    }

    #[test]
    fn unknown_keys_warn() {
        let loaded = load_json(json!({"bogus": 1, "server": {"bogus": 2}})).unwrap();
        assert_eq!(loaded.warnings.len(), 2);
    }

    #[test]
    fn environment_overrides_file() {
        let env = vec![
            ("API_POLL_FREQUENCY_SECONDS".to_string(), "3".to_string()),
            (
                "ENVIRONMENT_KEY_PAIRS".to_string(),
                r#"[{"server_side_key":"ser.a","client_side_key":"a"}]"#.to_string(),
            ),
        ];
        let loaded = load(Some(Path::new("/nonexistent-flagpole-config.json")), &env);
        assert!(loaded.is_err(), "an explicit missing file is an error");
        let dir = std::env::temp_dir().join(format!("flagpole-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.json");
        std::fs::write(&file, r#"{"api_poll_frequency_seconds": 20}"#).unwrap();
        let c = load(Some(&file), &env).unwrap().config;
        assert_eq!(c.api_poll_frequency, Duration::from_secs(3));
        assert_eq!(c.environment_key_pairs[0].client_side_key, "a");
        std::fs::remove_dir_all(&dir).ok();
    }
}
