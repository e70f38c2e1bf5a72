//! The `flags` list: flagd flag-definition sources, modelled on flagd's sources
//! configuration (`uri`, `interval`, `authHeader`, `headers`) plus what Flagpole adds: a
//! name for `source=` selectors and the bearer tokens a set may require from its callers.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The poll period of an http(s) source when none is configured (flagd's default).
pub const DEFAULT_INTERVAL_SECS: u64 = 5;

/// One flag source, as the server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagSource {
    /// A file path, or an `http://`/`https://` URL.
    pub uri: String,
    /// What `source=<name>` selectors match besides the `uri`.
    pub name: Option<String>,
    /// The poll period of a URL source.
    pub interval: Duration,
    /// The whole `Authorization` header sent when fetching a URL source.
    pub auth_header: Option<String>,
    /// Other headers sent when fetching a URL source.
    pub headers: BTreeMap<String, String>,
    /// Bearer tokens a caller must present to read a set holding this source's flags; empty:
    /// keyless, as flagd serves flag sets.
    pub tokens: Vec<String>,
}

impl FlagSource {
    /// A source from a path or URL alone (`flagpole serve --flags`).
    pub fn from_uri(uri: impl Into<String>) -> FlagSource {
        FlagSource {
            uri: uri.into(),
            name: None,
            interval: Duration::from_secs(DEFAULT_INTERVAL_SECS),
            auth_header: None,
            headers: BTreeMap::new(),
            tokens: Vec::new(),
        }
    }

    /// Fetched over HTTP(S) rather than read from a file.
    pub fn is_url(&self) -> bool {
        self.uri.starts_with("http://") || self.uri.starts_with("https://")
    }

    /// The file path of a file source (`file:` prefix, as flagd writes it, allowed).
    pub fn path(&self) -> Option<&str> {
        (!self.is_url()).then(|| self.uri.strip_prefix("file:").unwrap_or(&self.uri))
    }
}

/// One entry of the `flags` list in config.json.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlagSourceFile {
    /// A flagd flag file: a path (`file:` prefix allowed) or an `http://`/`https://` URL.
    pub uri: String,
    /// A name for `source=<name>` selectors (the `uri` always works too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Seconds between polls of a URL source (conditional requests with `If-None-Match`); 5 when
    /// not given, as in flagd. Stale (OpenFeature `STALE`, strict readiness 503) once its last
    /// good answer is older than this plus `health_check.environment_update_grace_period_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub interval: Option<u64>,
    /// The complete `Authorization` header value sent when fetching a URL source
    /// (e.g. `Bearer …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_header: Option<String>,
    /// Other HTTP headers sent when fetching a URL source.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Bearer tokens a caller must present (`Authorization: Bearer …`) to read a flag set with
    /// this source's flags; none: served without a key, as flagd serves flag sets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<String>,
}

impl FlagSourceFile {
    pub fn to_settings(&self) -> FlagSource {
        FlagSource {
            uri: self.uri.clone(),
            name: self.name.clone(),
            interval: Duration::from_secs(self.interval.unwrap_or(DEFAULT_INTERVAL_SECS).max(1)),
            auth_header: self.auth_header.clone(),
            headers: self.headers.clone(),
            tokens: self.tokens.clone(),
        }
    }

    pub fn from_settings(source: &FlagSource) -> FlagSourceFile {
        FlagSourceFile {
            uri: source.uri.clone(),
            name: source.name.clone(),
            interval: source.is_url().then_some(source.interval.as_secs()),
            auth_header: source.auth_header.as_ref().map(|_| "<redacted>".to_owned()),
            headers: source.headers.clone(),
            tokens: source
                .tokens
                .iter()
                .map(|_| "<redacted>".to_owned())
                .collect(),
        }
    }
}
