//! The `"ofrep"` section of `config.json` (or the `OFREP` environment variable holding it): the
//! file's shape and the settings the OFREP front door reads. It lives with the rest of the
//! configuration so that configuration depends on no front door.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::values::{BaseUrl, NonEmpty, Object, Positive};

#[derive(Clone, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize)]
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

/// The section as written; absent and `null` members both mean the default.
#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct OfrepFile {
    /// Client-side keys may use OFREP.
    client_keys: Option<bool>,
    /// Server-side keys may use OFREP.
    server_keys: Option<bool>,
    /// Request bodies above this get 413.
    max_body_bytes: Option<Positive>,
    /// An enabled string value that parses as a JSON object or array is sent as that value.
    parse_json_strings: Option<bool>,
    /// Requests without a targeting key are refused (`TARGETING_KEY_MISSING`).
    require_targeting_key: Option<bool>,
    /// The public origin (and path prefix) of this proxy, for absolute stream URLs; `null`: from the request.
    public_base_url: Option<BaseUrl>,
    /// The change stream (`/ofrep/v1/events`).
    sse: Option<Object<SseFile>>,
    /// Milliseconds a bulk request carrying a newer `flagConfigLastModified` waits for this replica to fetch the newer document.
    freshness_wait_ms: Option<u64>,
    /// OFREP requests a second per key (bursts up to the same number), 429 above it; `null`: unlimited.
    rate_limit_per_key_rps: Option<Positive>,
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct SseFile {
    /// Advertise and serve `/ofrep/v1/events`.
    enabled: Option<bool>,
    /// The HMAC key of stream tokens (the same on every replica); `null`: the environment's server key, else its client key.
    secret: Option<NonEmpty>,
    /// `inactivityDelaySec` advertised to clients.
    inactivity_delay_sec: Option<Positive>,
    /// Seconds between `: ping` comments.
    heartbeat_sec: Option<Positive>,
    /// Open streams above this are refused (503).
    max_connections: Option<Positive>,
    /// Ignored (a note is logged when above 0): streams are closed only on shutdown, key removal or a write error.
    #[serde(skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    max_lifetime_sec: Option<Value>,
}

impl OfrepFile {
    pub(super) fn settings(self, warnings: &mut Vec<String>) -> OfrepConfig {
        let d = OfrepConfig::default();
        let sse = self.sse.map(|s| s.0).unwrap_or_default();
        if sse
            .max_lifetime_sec
            .as_ref()
            .and_then(Value::as_u64)
            .is_some_and(|n| n > 0)
        {
            warnings.push(
                "ofrep.sse.max_lifetime_sec is ignored: streams are closed only on shutdown, key \
                 removal or a write error (web providers report every server close as STALE)"
                    .into(),
            );
        }
        OfrepConfig {
            client_keys: self.client_keys.unwrap_or(d.client_keys),
            server_keys: self.server_keys.unwrap_or(d.server_keys),
            max_body_bytes: self
                .max_body_bytes
                .map_or(d.max_body_bytes, Positive::usize),
            parse_json_strings: self.parse_json_strings.unwrap_or(d.parse_json_strings),
            require_targeting_key: self
                .require_targeting_key
                .unwrap_or(d.require_targeting_key),
            public_base_url: self.public_base_url.map(|u| u.0),
            sse: SseConfig {
                enabled: sse.enabled.unwrap_or(d.sse.enabled),
                secret: sse.secret.map(|s| s.0),
                inactivity_delay_sec: sse
                    .inactivity_delay_sec
                    .map_or(d.sse.inactivity_delay_sec, |n| n.0),
                heartbeat_sec: sse.heartbeat_sec.map_or(d.sse.heartbeat_sec, |n| n.0),
                max_connections: sse
                    .max_connections
                    .map_or(d.sse.max_connections, Positive::usize),
            },
            freshness_wait_ms: self.freshness_wait_ms.unwrap_or(d.freshness_wait_ms),
            rate_limit_per_key_rps: self.rate_limit_per_key_rps.map(Positive::u32),
        }
    }

    pub(super) fn from_settings(c: &OfrepConfig) -> OfrepFile {
        OfrepFile {
            client_keys: Some(c.client_keys),
            server_keys: Some(c.server_keys),
            max_body_bytes: Some(Positive(c.max_body_bytes as u64)),
            parse_json_strings: Some(c.parse_json_strings),
            require_targeting_key: Some(c.require_targeting_key),
            public_base_url: c.public_base_url.clone().map(BaseUrl),
            sse: Some(Object(SseFile {
                enabled: Some(c.sse.enabled),
                secret: c.sse.secret.clone().map(NonEmpty),
                inactivity_delay_sec: Some(Positive(c.sse.inactivity_delay_sec)),
                heartbeat_sec: Some(Positive(c.sse.heartbeat_sec)),
                max_connections: Some(Positive(c.sse.max_connections as u64)),
                max_lifetime_sec: None,
            })),
            freshness_wait_ms: Some(c.freshness_wait_ms),
            rate_limit_per_key_rps: c.rate_limit_per_key_rps.map(|n| Positive(n.into())),
        }
    }
}
