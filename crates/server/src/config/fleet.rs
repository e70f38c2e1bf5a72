//! The `flagpole.fleet` section: replicas sharing one Redis, so that each environment is polled
//! upstream by one replica for the whole fleet and a new replica starts from what Redis holds.
//! Absent: no Redis at all, every replica polls for itself (the store is in `sources/fleet/`).

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::values::{seconds, Seconds};

#[derive(Clone, PartialEq, Serialize)]
pub struct FleetConfig {
    /// `redis://` or `rediss://` (TLS), an ACL user and password in it when Redis asks for them.
    pub redis_url: String,
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

/// The section as written: `redis_url` is required once the section is there.
#[derive(Deserialize, Serialize, JsonSchema)]
pub(super) struct FleetFile {
    /// The shared Redis: `redis://host:6379/0`, or `rediss://user:password@host:6380/0` for TLS with an ACL user. It holds documents as sensitive as the server keys.
    redis_url: RedisUrl,
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
            lease: DEFAULT_LEASE,
        }
    }
}

impl FleetFile {
    pub(super) fn settings(self) -> FleetConfig {
        let mut c = FleetConfig::with_url(self.redis_url.0);
        if let Some(Seconds(d)) = self.lease_seconds {
            c.lease = d;
        }
        c
    }

    pub(super) fn from_settings(c: &FleetConfig) -> FleetFile {
        FleetFile {
            redis_url: RedisUrl(c.redis_url.clone()),
            lease_seconds: Some(Seconds(c.lease)),
        }
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
        // The messages never repeat the value: it may hold a password.
        // Serde's own error for a missing key or a wrong type (it names the key, not a value).
        let text = String::deserialize(d)?;
        let url =
            url::Url::parse(&text).map_err(|e| de::Error::custom(format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "redis" | "rediss") {
            return Err(de::Error::custom(
                "must start with redis:// or rediss:// (TLS)",
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(de::Error::custom("names no host"));
        }
        Ok(RedisUrl(text))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use std::time::Duration;

    use crate::config::from_json;

    fn load(v: serde_json::Value) -> Result<crate::config::Config, String> {
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
