//! The `"ofrep"` section of `config.json` (or the `OFREP` environment variable holding it).

use serde_json::{Map, Value};

use crate::config::ConfigError;

#[derive(Clone, Debug, PartialEq)]
pub struct OfrepConfig {
    /// Whether client keys may use OFREP.
    pub client_keys: bool,
    /// Whether server keys may use OFREP.
    pub server_keys: bool,
    /// Request bodies above this are refused with 413.
    pub max_body_bytes: usize,
    /// An enabled string value that parses as a JSON object or array is sent as that value.
    pub parse_json_strings: bool,
    /// Requests without an identity are refused (`TARGETING_KEY_MISSING`).
    pub require_targeting_key: bool,
    /// The public origin (and path prefix) of this proxy, for absolute stream URLs.
    pub public_base_url: Option<String>,
    pub sse: SseConfig,
    /// How long a bulk request carrying a newer `flagConfigLastModified` waits for this replica
    /// to fetch the newer document.
    pub freshness_wait_ms: u64,
    /// OFREP requests a second per key (429 above it); `None` = unlimited.
    pub rate_limit_per_key_rps: Option<u32>,
}

/// `ofrep.sse`: the change stream.
#[derive(Clone, Debug, PartialEq)]
pub struct SseConfig {
    /// Advertise and serve `/ofrep/v1/events`.
    pub enabled: bool,
    /// The HMAC key of stream tokens (equal on all replicas); default: the environment's server
    /// key, else its client key.
    pub secret: Option<String>,
    /// `inactivityDelaySec` advertised to clients.
    pub inactivity_delay_sec: u64,
    /// Seconds between `: ping` comments.
    pub heartbeat_sec: u64,
    /// Open streams above this are refused (503).
    pub max_connections: usize,
}

impl Default for SseConfig {
    fn default() -> Self {
        SseConfig {
            enabled: true,
            secret: None,
            inactivity_delay_sec: 120,
            heartbeat_sec: 15,
            max_connections: 10_000,
        }
    }
}

impl OfrepConfig {
    /// A hash of every setting that changes response bodies, plus the environment's stream
    /// token: part of every ETag, so that a changed setting never yields a wrong 304.
    pub fn etag_settings(&self, stream_token: Option<&str>) -> String {
        let described = serde_json::json!({
            // Bump whenever a release could change a body for the same inputs.
            "map": "ofrep-map/1",
            "parse_json_strings": self.parse_json_strings,
            "require_targeting_key": self.require_targeting_key,
            "public_base_url": self.public_base_url,
            "sse_enabled": self.sse.enabled,
            "sse_inactivity_delay_sec": self.sse.inactivity_delay_sec,
            "sse_token": stream_token,
        });
        crate::canonical::hex(&crate::canonical::sha256(&described), 32)
    }
}

impl Default for OfrepConfig {
    fn default() -> Self {
        OfrepConfig {
            client_keys: true,
            server_keys: true,
            max_body_bytes: 65_536,
            parse_json_strings: false,
            require_targeting_key: false,
            public_base_url: None,
            sse: SseConfig::default(),
            freshness_wait_ms: 2000,
            rate_limit_per_key_rps: None,
        }
    }
}

const KEYS: &[&str] = &[
    "client_keys",
    "server_keys",
    "max_body_bytes",
    "parse_json_strings",
    "require_targeting_key",
    "public_base_url",
    "sse",
    "freshness_wait_ms",
    "rate_limit_per_key_rps",
];

/// Reads the section; unknown members are warnings, wrong types stop startup naming the key.
pub fn parse(v: &Value, warnings: &mut Vec<String>) -> Result<OfrepConfig, ConfigError> {
    let mut c = OfrepConfig::default();
    let map: &Map<String, Value> = v
        .as_object()
        .ok_or_else(|| ConfigError("ofrep: must be an object".into()))?;
    for k in map.keys() {
        if !KEYS.contains(&k.as_str()) {
            warnings.push(format!("unknown config key 'ofrep.{k}' ignored"));
        }
    }
    let flag = |key: &str, default: bool| -> Result<bool, ConfigError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(ConfigError(format!("ofrep.{key}: must be true or false"))),
        }
    };
    c.client_keys = flag("client_keys", c.client_keys)?;
    c.server_keys = flag("server_keys", c.server_keys)?;
    c.parse_json_strings = flag("parse_json_strings", c.parse_json_strings)?;
    c.require_targeting_key = flag("require_targeting_key", c.require_targeting_key)?;
    if let Some(v) = map.get("max_body_bytes").filter(|v| !v.is_null()) {
        c.max_body_bytes =
            v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                ConfigError("ofrep.max_body_bytes: must be a positive integer".into())
            })? as usize;
    }
    if let Some(v) = map.get("public_base_url").filter(|v| !v.is_null()) {
        let text = v
            .as_str()
            .ok_or_else(|| ConfigError("ofrep.public_base_url: must be a string".into()))?;
        url::Url::parse(text)
            .map_err(|e| ConfigError(format!("ofrep.public_base_url: not a URL: {e}")))?;
        c.public_base_url = Some(text.trim_end_matches('/').to_owned());
    }
    if let Some(v) = map.get("freshness_wait_ms").filter(|v| !v.is_null()) {
        c.freshness_wait_ms = v.as_u64().ok_or_else(|| {
            ConfigError("ofrep.freshness_wait_ms: must be a non-negative integer".into())
        })?;
    }
    if let Some(v) = map.get("rate_limit_per_key_rps").filter(|v| !v.is_null()) {
        let rps = v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
            ConfigError("ofrep.rate_limit_per_key_rps: must be a positive integer".into())
        })?;
        c.rate_limit_per_key_rps = Some(u32::try_from(rps).unwrap_or(u32::MAX));
    }
    if let Some(v) = map.get("sse").filter(|v| !v.is_null()) {
        c.sse = parse_sse(v, warnings)?;
    }
    Ok(c)
}

fn parse_sse(v: &Value, warnings: &mut Vec<String>) -> Result<SseConfig, ConfigError> {
    let map = v
        .as_object()
        .ok_or_else(|| ConfigError("ofrep.sse: must be an object".into()))?;
    const SSE_KEYS: &[&str] = &[
        "enabled",
        "secret",
        "inactivity_delay_sec",
        "heartbeat_sec",
        "max_connections",
        "max_lifetime_sec",
    ];
    for k in map.keys() {
        if !SSE_KEYS.contains(&k.as_str()) {
            warnings.push(format!("unknown config key 'ofrep.sse.{k}' ignored"));
        }
    }
    let mut c = SseConfig::default();
    if let Some(v) = map.get("enabled").filter(|v| !v.is_null()) {
        c.enabled = v
            .as_bool()
            .ok_or_else(|| ConfigError("ofrep.sse.enabled: must be true or false".into()))?;
    }
    if let Some(v) = map.get("secret").filter(|v| !v.is_null()) {
        c.secret = Some(
            v.as_str()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| ConfigError("ofrep.sse.secret: must be a non-empty string".into()))?
                .to_owned(),
        );
    }
    let positive = |key: &str, default: u64| -> Result<u64, ConfigError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| ConfigError(format!("ofrep.sse.{key}: must be a positive integer"))),
        }
    };
    c.inactivity_delay_sec = positive("inactivity_delay_sec", c.inactivity_delay_sec)?;
    c.heartbeat_sec = positive("heartbeat_sec", c.heartbeat_sec)?;
    c.max_connections = positive("max_connections", c.max_connections as u64)? as usize;
    if map
        .get("max_lifetime_sec")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > 0)
    {
        warnings.push(
            "ofrep.sse.max_lifetime_sec is ignored: streams are closed only on shutdown, key \
             removal or a write error (web providers report every server close as STALE)"
                .into(),
        );
    }
    Ok(c)
}
