//! Configuration: the Flagsmith Edge Proxy's `config.json`, unchanged (both the Python and the
//! Rust peer's keys are accepted), plus Flagpole's own keys under `"flagpole"` and `"ofrep"`.
//!
//! Sources, later wins: built-in defaults → the file (`--config`, `$CONFIG_PATH`, else
//! `./config.json` if present) → one environment variable per top-level key ([`env`]; a
//! misspelt variable stops startup naming the one meant). The merged JSON is deserialized into
//! structs that mirror the file ([`file`]), the one list of keys, from which the JSON Schema is
//! derived ([`schema`]). An unknown key close to a known one, anywhere in the file, stops
//! startup naming that key ([`suggest`]); any other unknown key does too inside the `flagpole`
//! section (naming its keys, as the schema refuses it) and is a warning elsewhere; a wrong type, a
//! value outside the bounds the schema states ([`bounds`]) or keys that contradict each other
//! ([`rules`]) stop it naming the key, the value and what is allowed. The result is the [`Config`] the server reads
//! ([`settings`]); what to serve at start (configured environments, or the bundled example) is
//! decided by [`start`]. [`effective`] writes a `Config` back in the file's key names, and
//! [`reference`] the table of every key (docs/configuration.md).

mod analytics;
mod bounds;
mod env;
mod file;
pub mod flags;
mod fleet;
mod ofrep;
mod reference;
mod rules;
mod schema;
mod settings;
mod shadow;
mod start;
mod suggest;
mod telemetry;
mod tls;
pub mod unleash;
mod values;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub use env::Variable;
pub use fleet::redact as redact_redis_url;
pub use fleet::FleetConfig;
pub use reference::reference;
pub use schema::schema;
pub use settings::{
    AnalyticsConfig, Config, Environments, Health, KeyPair, Limits, LogLevel, Logging, OfrepConfig,
    Server, ShadowConfig, SseConfig, Telemetry, Upstream,
};
pub use start::{start, Example, Plan, ServeOptions, Startup};
pub use telemetry::{Export, OtelConfig, Protocol, SamplerKind, Signal};
pub use tls::TlsConfig;

/// `abc…` + 8 hex digits of a hash: enough to tell keys apart in logs, useless to an attacker.
/// The one way a key (or token) appears anywhere: a configuration error, a log line, a status
/// page.
pub fn fingerprint(key: &str) -> String {
    let hash = xxhash_rust::xxh3::xxh3_64(key.as_bytes());
    let prefix: String = key.chars().take(3).collect();
    format!("{prefix}…{:08x}", (hash >> 32) as u32)
}

/// A configuration problem that stops startup: one line, naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// The configuration and what loading it found.
#[derive(Debug, Default)]
pub struct Loaded {
    pub config: Config,
    /// To log once logging is up: unknown keys, ignored keys that deserve a note.
    pub warnings: Vec<String>,
    pub sources: Sources,
}

/// Where the configuration came from.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Sources {
    /// The file read, if any.
    pub file: Option<PathBuf>,
    /// The environment variables that set keys.
    pub variables: Vec<Variable>,
}

impl Sources {
    /// No file and no variable: nothing at all was configured.
    pub fn is_empty(&self) -> bool {
        self.file.is_none() && self.variables.is_empty()
    }
}

impl fmt::Display for Sources {
    /// `file ./config.json and the environment variable API_URL`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.variables.iter().map(|v| v.name.as_str()).collect();
        let variables = match names.as_slice() {
            [] => None,
            [one] => Some(format!("the environment variable {one}")),
            many => Some(format!("the environment variables {}", many.join(", "))),
        };
        match (&self.file, variables) {
            (Some(file), Some(v)) => write!(f, "file {} and {v}", file.display()),
            (Some(file), None) => write!(f, "file {}", file.display()),
            (None, Some(v)) => f.write_str(&v),
            (None, None) => f.write_str("no configuration file or variable"),
        }
    }
}

/// Loads the configuration. `explicit` is `--config`; `env` is the process environment.
pub fn load(explicit: Option<&Path>, env: &[(String, String)]) -> Result<Loaded, ConfigError> {
    env::check_names(env)?;
    let file = locate(explicit, env);
    let mut root = match &file {
        Some(path) => read_file(path)?,
        None => Map::new(),
    };
    let variables = env::apply(&mut root, env);
    let mut warnings = Vec::new();
    let mut config = parse(root, &variables, &mut warnings)?;
    telemetry::apply_env(&mut config.otel, env)?;
    Ok(Loaded {
        config,
        warnings,
        sources: Sources { file, variables },
    })
}

/// `--config`, else `$CONFIG_PATH`, else `./config.json` when it exists.
fn locate(explicit: Option<&Path>, env: &[(String, String)]) -> Option<PathBuf> {
    let from_env = env
        .iter()
        .find(|(k, _)| k == env::CONFIG_PATH)
        .map(|(_, v)| PathBuf::from(v));
    let default = Path::new("config.json");
    explicit
        .map(Path::to_path_buf)
        .or(from_env)
        .or_else(|| default.exists().then(|| default.to_path_buf()))
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

/// Builds a config from a parsed `config.json` object alone (no file, no variables).
pub fn from_json(root: &Map<String, Value>) -> Result<Loaded, ConfigError> {
    let mut warnings = Vec::new();
    let config = parse(root.clone(), &[], &mut warnings)?;
    Ok(Loaded {
        config,
        warnings,
        sources: Sources::default(),
    })
}

/// The configuration as a file that loads back into it, in the file's own key names, every
/// key with its value (defaults included), keys and secrets as the logs show them
/// ([`Config::redacted`]): what `flagpole check` prints.
pub fn effective(config: &Config) -> Value {
    serde_json::to_value(file::File::from_settings(&config.redacted()))
        .expect("the configuration serializes")
}

/// The merged JSON → [`Config`]: typos first (they explain most other errors), then types,
/// then the bounds of each value, then the rules between keys.
fn parse(
    mut root: Map<String, Value>,
    variables: &[Variable],
    warnings: &mut Vec<String>,
) -> Result<Config, ConfigError> {
    resolve_aliases(&mut root, warnings);
    let root = Value::Object(root);
    let unknown = suggest::sort(&suggest::unknown(&root));
    if !unknown.refused.is_empty() {
        return Err(ConfigError(unknown.refused.join("; ")));
    }
    let file: file::File =
        serde_path_to_error::deserialize(&root).map_err(|e| describe(&e, variables))?;
    bounds::check(&root, variables)?;
    warnings.extend(unknown.ignored);
    let config = file.settings(warnings);
    rules::grace(&config)?;
    rules::fleet(&config)?;
    Ok(config)
}

/// A file with both spellings of one setting: the canonical one wins (as in the Python Edge
/// Proxy), the other is reported.
fn resolve_aliases(root: &mut Map<String, Value>, warnings: &mut Vec<String>) {
    for (alias, canonical) in file::ALIASES {
        if root.contains_key(*canonical) && root.remove(*alias).is_some() {
            warnings.push(format!(
                "config key '{alias}' ignored: '{canonical}' is also given"
            ));
        }
    }
}

/// ` (from the environment variable NAME)` when the key at `path` was set by one, else empty.
fn origin(path: &str, variables: &[Variable]) -> String {
    let within = |key: &str| {
        path.strip_prefix(key)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    };
    match variables.iter().rev().find(|v| within(&v.key)) {
        Some(v) => format!(" (from the environment variable {})", v.name),
        None => String::new(),
    }
}

/// `key.path: what is wrong`, saying which environment variable the key came from.
fn describe(
    e: &serde_path_to_error::Error<serde_json::Error>,
    variables: &[Variable],
) -> ConfigError {
    let path = e.path().to_string();
    let top = path.split(['.', '[']).next().unwrap_or_default();
    let message = e.inner().to_string();
    let from = origin(&path, variables);
    // A structure was wanted and the variable held something that is not JSON: say so, rather
    // than echo the value (it may hold keys).
    let not_json = variables.iter().rev().find(|v| v.key == top).and_then(|v| {
        let why = v.not_json.as_deref()?;
        message.starts_with("invalid type: string").then_some(why)
    });
    // A value of the wrong type: say the key's bounds too (`a number of seconds (at least 1)`).
    let bounds = match bounds::allowed_at(&path) {
        Some(allowed) if message.starts_with("invalid") => format!(" ({allowed})"),
        _ => String::new(),
    };
    match not_json {
        Some(why) => ConfigError(format!("{path}{from}: not valid JSON: {why}")),
        None => ConfigError(format!("{path}{from}: {message}{bounds}")),
    }
}

#[cfg(test)]
mod tests;
