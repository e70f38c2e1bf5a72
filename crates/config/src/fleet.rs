//! The `flagpole.fleet` section: replicas sharing one Redis, so that each environment is polled
//! upstream by one replica for the whole fleet and a new replica starts from what Redis holds.
//! Redis is one URL (`redis_url`), or the master Redis Sentinel names (`sentinels` and
//! `sentinel_master`; which of the two is given is a rule of `rules.rs`). Absent: no Redis at
//! all, every replica polls for itself (the store is in `sources/fleet/`).

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::values::{seconds, Seconds};

#[derive(Clone, PartialEq, Serialize)]
pub struct FleetConfig {
    /// `redis://` or `rediss://` (TLS), an ACL user and password in it when Redis asks for them;
    /// empty with Sentinel.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub redis_url: String,
    /// Sentinels, as `redis://` or `rediss://` URLs; empty without Sentinel.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sentinels: Vec<String>,
    /// The name the sentinels know the master by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sentinel_master: Option<String>,
    /// How long a replica's claim to poll an environment lasts without renewal: a replica that
    /// dies or hangs hands its environments over within this.
    #[serde(rename = "lease_seconds", serialize_with = "seconds")]
    pub lease: Duration,
}

impl fmt::Debug for FleetConfig {
    // The URL may carry a password: debug output shows it as the logs do.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetConfig")
            .field("redis_url", &redact(&self.redis_url))
            .field(
                "sentinels",
                &self.sentinels.iter().map(|s| redact(s)).collect::<Vec<_>>(),
            )
            .field("sentinel_master", &self.sentinel_master)
            .field("lease", &self.lease)
            .finish()
    }
}

/// The URL with its password replaced by `redacted`.
pub fn redact(redis_url: &str) -> String {
    match url::Url::parse(redis_url) {
        Ok(mut url) if url.password().is_some() => {
            let _ = url.set_password(Some("redacted"));
            url.to_string()
        }
        _ => redis_url.to_owned(),
    }
}

/// The section as written: `redis_url`, or `sentinels` with `sentinel_master`.
#[derive(Deserialize, Serialize, JsonSchema)]
pub(super) struct FleetFile {
    /// The shared Redis: `redis://host:6379/0`, or `rediss://user:password@host:6380/0` for TLS with an ACL user. It holds documents as sensitive as the server keys. Not with `sentinels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redis_url: Option<RedisUrl>,
    /// Redis Sentinel instead of `redis_url`: the sentinels, as `host:port`, or as `redis://` / `rediss://` URLs when they need TLS or a password; the user, password, database and TLS of the first are used for the master too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sentinels: Option<Vec<SentinelAddr>>,
    /// The name the sentinels monitor the master by (`sentinel monitor <name> …`); with `sentinels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sentinel_master: Option<String>,
    /// Seconds a replica's lease on an environment lasts without renewal (renewed every third of it); a replica that stops hands its environments over within this.
    #[serde(default)]
    #[schemars(range(min = 1, max = 3600))]
    lease_seconds: Option<Seconds>,
}

/// Leases last this long unless configured.
const DEFAULT_LEASE: Duration = Duration::from_secs(15);

impl FleetConfig {
    /// The section with only its URL given.
    pub(super) fn with_url(redis_url: String) -> FleetConfig {
        FleetConfig {
            redis_url,
            sentinels: Vec::new(),
            sentinel_master: None,
            lease: DEFAULT_LEASE,
        }
    }
}

impl FleetFile {
    pub(super) fn settings(self) -> FleetConfig {
        let mut c = FleetConfig::with_url(self.redis_url.map(|u| u.0).unwrap_or_default());
        c.sentinels = self
            .sentinels
            .unwrap_or_default()
            .into_iter()
            .map(|s| s.0)
            .collect();
        c.sentinel_master = self.sentinel_master;
        if let Some(Seconds(d)) = self.lease_seconds {
            c.lease = d;
        }
        c
    }

    pub(super) fn from_settings(c: &FleetConfig) -> FleetFile {
        FleetFile {
            redis_url: (!c.redis_url.is_empty()).then(|| RedisUrl(c.redis_url.clone())),
            sentinels: (!c.sentinels.is_empty())
                .then(|| c.sentinels.iter().cloned().map(SentinelAddr).collect()),
            sentinel_master: c.sentinel_master.clone(),
            lease_seconds: Some(Seconds(c.lease)),
        }
    }
}

/// A sentinel: `host:port`, kept as the `redis://host:port` it means, or a `redis://` or
/// `rediss://` URL.
#[derive(Serialize)]
#[serde(transparent)]
struct SentinelAddr(String);

impl JsonSchema for SentinelAddr {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SentinelAddr".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "minLength": 1})
    }
}

impl<'de> Deserialize<'de> for SentinelAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.contains("://") {
            return RedisUrl::parse(text).map(|u| SentinelAddr(u.0));
        }
        let port = text
            .rsplit_once(':')
            .filter(|(host, _)| !host.is_empty())
            .and_then(|(_, port)| port.parse::<u16>().ok())
            .filter(|port| *port != 0);
        if port.is_none() {
            return Err(de::Error::custom(format!(
                "'{text}' is not host:port (or a redis:// URL)"
            )));
        }
        let url = format!("redis://{text}");
        url::Url::parse(&url).map_err(|e| de::Error::custom(format!("'{text}': {e}")))?;
        Ok(SentinelAddr(url))
    }
}

/// A `redis://` or `rediss://` URL with a host.
#[derive(Serialize)]
#[serde(transparent)]
struct RedisUrl(String);

impl JsonSchema for RedisUrl {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RedisUrl".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "uri", "pattern": "^rediss?://"})
    }
}

impl<'de> Deserialize<'de> for RedisUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Serde's own error for a missing key or a wrong type (it names the key, not a value).
        RedisUrl::parse(String::deserialize(d)?)
    }
}

impl RedisUrl {
    /// The messages never repeat the value: it may hold a password.
    fn parse<E: de::Error>(text: String) -> Result<Self, E> {
        let url = url::Url::parse(&text).map_err(|e| E::custom(format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "redis" | "rediss") {
            return Err(E::custom("must start with redis:// or rediss:// (TLS)"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(E::custom("names no host"));
        }
        Ok(RedisUrl(text))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use std::time::Duration;

    use crate::from_json;

    fn load(v: serde_json::Value) -> Result<crate::Config, String> {
        from_json(v.as_object().unwrap())
            .map(|l| l.config)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn absent_means_no_fleet_and_the_lease_has_a_default() {
        assert_eq!(load(json!({})).unwrap().fleet, None);
        let c = load(json!({"flagpole": {"fleet": {"redis_url": "redis://127.0.0.1:6379/0"}}}))
            .unwrap()
            .fleet
            .unwrap();
        assert_eq!(c.lease, Duration::from_secs(15));
        let c = load(json!({"flagpole": {"fleet": {"redis_url": "rediss://u:p@r.test:6380", "lease_seconds": 5}}}))
            .unwrap()
            .fleet
            .unwrap();
        assert_eq!(c.lease, Duration::from_secs(5));
    }

    #[test]
    fn bad_urls_and_leases_are_named_without_the_password() {
        for url in ["http://r.test", "not a url", "redis://", ""] {
            let e = load(json!({"flagpole": {"fleet": {"redis_url": url}}})).unwrap_err();
            assert!(e.contains("flagpole.fleet.redis_url"), "{url}: {e}");
        }
        let e = load(json!({"flagpole": {"fleet": {"redis_url": "https://u:hunter2@r.test"}}}))
            .unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
        let e = load(
            json!({"flagpole": {"fleet": {"redis_url": "redis://r.test", "lease_seconds": 0.2}}}),
        )
        .unwrap_err();
        assert!(e.contains("flagpole.fleet.lease_seconds"), "{e}");
        let e = load(json!({"flagpole": {"fleet": {"lease_seconds": 5}}})).unwrap_err();
        assert!(e.contains("redis_url"), "{e}");
    }

    #[test]
    fn sentinels_name_the_master_instead_of_a_url() {
        let c = load(json!({"flagpole": {"fleet": {
            "sentinels": ["10.0.0.1:26379", "rediss://u:hunter2@s.test:26380"],
            "sentinel_master": "flags"}}}))
        .unwrap();
        let fleet = c.fleet.clone().unwrap();
        assert_eq!(
            fleet.sentinels,
            ["redis://10.0.0.1:26379", "rediss://u:hunter2@s.test:26380"]
        );
        assert_eq!(fleet.sentinel_master.as_deref(), Some("flags"));
        assert!(fleet.redis_url.is_empty());
        assert!(!format!("{:?}", c.fleet).contains("hunter2"));
        assert!(!serde_json::to_string(&c.redacted().fleet)
            .unwrap()
            .contains("hunter2"));
        for bad in [
            "10.0.0.1",
            ":26379",
            "s.test:0",
            "s.test:port",
            "http://s.test:1",
        ] {
            let e =
                load(json!({"flagpole": {"fleet": {"sentinels": [bad], "sentinel_master": "m"}}}))
                    .unwrap_err();
            assert!(e.contains("flagpole.fleet.sentinels"), "{bad}: {e}");
        }
        for (fleet, says) in [
            (json!({"sentinels": ["s:1"]}), "sentinel_master"),
            (json!({"sentinel_master": "m"}), "sentinels"),
            (
                json!({"sentinels": [], "sentinel_master": "m"}),
                "sentinels",
            ),
            (
                json!({"sentinels": ["s:1"], "sentinel_master": " "}),
                "sentinel_master",
            ),
            (
                json!({"redis_url": "redis://r.test", "sentinels": ["s:1"], "sentinel_master": "m"}),
                "not both",
            ),
            (json!({}), "redis_url"),
        ] {
            let e = load(json!({"flagpole": {"fleet": fleet}})).unwrap_err();
            assert!(e.contains(says), "{fleet}: {e}");
        }
    }

    #[test]
    fn the_password_is_redacted() {
        let c = load(
            json!({"flagpole": {"fleet": {"redis_url": "rediss://app:hunter2@r.test:6380/0"}}}),
        )
        .unwrap();
        let shown = c.redacted().fleet.unwrap().redis_url;
        assert_eq!(shown, "rediss://app:redacted@r.test:6380/0");
        assert!(!format!("{:?}", c.fleet).contains("hunter2"));
    }
}
