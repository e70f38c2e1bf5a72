//! Environment variables: one per top-level key, named like it in any case (`API_URL`,
//! `environment_key_pairs`), as both Edge Proxies read them. A value that parses as JSON is
//! that JSON (`ENVIRONMENT_KEY_PAIRS='[…]'`, `SERVER='{"port": 8001}'`, `API_POLL_FREQUENCY=5`),
//! anything else a string (`API_URL=https://…`). A variable replaces the file's key whole,
//! including the key's other spelling (`API_POLL_FREQUENCY` replaces the file's
//! `api_poll_frequency_seconds`).
//!
//! Variables are read as strictly as the file: one close to a name Flagpole reads (within two
//! edits, or equal ignoring case and `_`: `ENVIROMENT_KEY_PAIRS`, `CONFIG_PTH`) is a typo that
//! would silently drop a setting (and with nothing else configured, serve the bundled example),
//! so loading stops naming the variable meant. Only names close to one Flagpole reads are
//! looked at, so the rest of the environment (`PATH`, `HOME`, …) never matters; `FLAGPOLE_*`
//! names are the project's own tools' (test knobs), never configuration (but for the one below), and `RUST_LOG` (and
//! its neighbours, `RUSTC_LOG`, `RUST_LOG_STYLE`) belong to the log filter and other tools.
//! `OTEL_*` names are OpenTelemetry's standard variables, read by `telemetry.rs`.
//!
//! One variable sets a key below the top level: `FLAGPOLE_FLEET_REDIS_URL`, the fleet's Redis URL
//! (`flagpole.fleet.redis_url`), merged into the `flagpole.fleet` section the file (or `FLAGPOLE`)
//! gives instead of replacing it. The URL holds a password, so it comes from a secret store
//! (a Kubernetes Secret) while the rest of the section stays in the file; a whole-section variable
//! would silently drop every other `flagpole` setting of the file. Names close to it are typos.

use serde_json::{Map, Value};

use super::file::ALIASES;
use super::suggest::{closest, top_level_keys};
use super::ConfigError;

/// The variable naming the configuration file, read beside the per-key ones.
pub(super) const CONFIG_PATH: &str = "CONFIG_PATH";

/// The variable that sets `flagpole.fleet.redis_url`, merged into the section.
pub(super) const FLEET_REDIS_URL: &str = "FLAGPOLE_FLEET_REDIS_URL";
/// The key path it sets, as messages name it.
pub(super) const FLEET_REDIS_URL_KEY: &str = "flagpole.fleet.redis_url";

/// A variable that set a top-level key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// As spelled in the environment.
    pub name: String,
    /// The key it sets: a top-level key, or a key path (`flagpole.fleet.redis_url`).
    pub key: String,
    /// Why its value is not JSON, if it is not (it was taken as a string).
    pub not_json: Option<String>,
}

/// The top-level keys a variable may set (`$schema` is no setting).
fn settable() -> Vec<&'static str> {
    let mut keys = top_level_keys();
    keys.retain(|k| !k.starts_with('$'));
    keys
}

/// Refuses variables that look like a misspelt one Flagpole reads, naming the one meant.
pub(super) fn check_names(env: &[(String, String)]) -> Result<(), ConfigError> {
    let keys = settable();
    // `FLAGS` is read when spelt exactly, but is no typo target: `CFLAGS` and `LDFLAGS`, the
    // compilers' variables, are within two edits of it and belong to other tools.
    let mut known: Vec<String> = keys
        .iter()
        .filter(|k| **k != "flags")
        .map(|k| k.to_ascii_uppercase())
        .collect();
    known.push(CONFIG_PATH.to_owned());
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    let mut typos = Vec::new();
    for (name, _) in env {
        let upper = name.to_ascii_uppercase();
        if upper != FLEET_REDIS_URL && closest(&upper, &[FLEET_REDIS_URL]).is_some() {
            typos.push(format!(
                "environment variable {name} is not one Flagpole reads: did you mean {FLEET_REDIS_URL}?"
            ));
            continue;
        }
        if known.contains(&upper.as_str())
            || upper.starts_with("FLAGPOLE_")
            || upper.starts_with("RUST")
            || super::telemetry::is_otel_variable(&upper)
        {
            continue;
        }
        if let Some(meant) = closest(&upper, &known) {
            typos.push(format!(
                "environment variable {name} is not one Flagpole reads: did you mean {meant}?"
            ));
        }
    }
    match typos.is_empty() {
        true => Ok(()),
        false => Err(ConfigError(typos.join("; "))),
    }
}

/// Applies the variables to `root`: those that name a top-level key, then
/// `FLAGPOLE_FLEET_REDIS_URL` into the `flagpole.fleet` section they and the file leave. Returns
/// them in the order applied.
pub(super) fn apply(root: &mut Map<String, Value>, env: &[(String, String)]) -> Vec<Variable> {
    let mut applied = apply_top_level(root, env);
    let fleet_url = env
        .iter()
        .rev()
        .find(|(name, _)| name.eq_ignore_ascii_case(FLEET_REDIS_URL));
    if let Some((name, url)) = fleet_url {
        merge_fleet_url(root, url);
        applied.push(Variable {
            name: name.clone(),
            key: FLEET_REDIS_URL_KEY.into(),
            not_json: None,
        });
    }
    applied
}

/// Sets `flagpole.fleet.redis_url`, making the sections that are missing (or `null`); a section
/// that is not an object is left for the loader to refuse by name.
fn merge_fleet_url(root: &mut Map<String, Value>, url: &str) {
    let mut section = &mut *root;
    for name in ["flagpole", "fleet"] {
        let member = section
            .entry(name)
            .and_modify(|v| {
                if v.is_null() {
                    *v = Value::Object(Map::new());
                }
            })
            .or_insert_with(|| Value::Object(Map::new()));
        match member {
            Value::Object(inner) => section = inner,
            _ => return,
        }
    }
    section.insert("redis_url".into(), Value::String(url.to_owned()));
}

fn apply_top_level(root: &mut Map<String, Value>, env: &[(String, String)]) -> Vec<Variable> {
    let known = settable();
    let mut applied = Vec::new();
    for (name, value) in env {
        let key = name.to_ascii_lowercase();
        if !known.contains(&key.as_str()) {
            continue;
        }
        let (parsed, not_json) = match serde_json::from_str::<Value>(value) {
            Ok(v) => (v, None),
            Err(e) => (Value::String(value.clone()), Some(e.to_string())),
        };
        for spelling in spellings(&key) {
            root.remove(spelling);
        }
        root.insert(key.clone(), parsed);
        applied.push(Variable {
            name: name.clone(),
            key,
            not_json,
        });
    }
    applied
}

/// Every spelling of the setting `key` names (itself included).
pub(super) fn spellings(key: &str) -> Vec<&str> {
    let canonical = ALIASES
        .iter()
        .find(|(alias, _)| *alias == key)
        .map_or(key, |(_, canonical)| canonical);
    let mut all = vec![canonical];
    all.extend(
        ALIASES
            .iter()
            .filter(|(_, c)| *c == canonical)
            .map(|(alias, _)| *alias),
    );
    all
}

/// Variables as the process hands them over, from literal pairs (the tests' shorthand).
#[cfg(test)]
pub(super) fn variables(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::variables as env;
    use super::*;
    use serde_json::json;

    #[test]
    fn variables_replace_top_level_keys_in_any_case() {
        let mut root = json!({"api_poll_frequency_seconds": 20, "api_url": "https://file.test"})
            .as_object()
            .unwrap()
            .clone();
        let applied = apply(
            &mut root,
            &env(&[
                ("Api_Poll_Frequency", "3"),
                ("SERVER", r#"{"port": 8001}"#),
                ("API_URL", "https://env.test/api/v1"),
                ("PATH", "/usr/bin"),
            ]),
        );
        assert_eq!(
            Value::Object(root),
            json!({"api_poll_frequency": 3, "server": {"port": 8001},
                   "api_url": "https://env.test/api/v1"})
        );
        let names: Vec<_> = applied.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["Api_Poll_Frequency", "SERVER", "API_URL"]);
        assert!(applied[2].not_json.is_some() && applied[0].not_json.is_none());
    }

    #[test]
    fn the_fleet_url_variable_is_merged_into_the_section() {
        let mut root = json!({"flagpole": {"metrics": {"enabled": false},
            "fleet": {"lease_seconds": 5}}})
        .as_object()
        .unwrap()
        .clone();
        let url = "rediss://u:p@redis.test:6380/0";
        let applied = apply(&mut root, &env(&[(FLEET_REDIS_URL, url)]));
        assert_eq!(
            Value::Object(root),
            json!({"flagpole": {"metrics": {"enabled": false},
                "fleet": {"lease_seconds": 5, "redis_url": url}}})
        );
        assert_eq!(applied[0].key, "flagpole.fleet.redis_url");
        // No section at all, or a null one: made. After FLAGPOLE, whatever the order given.
        for file in [json!({}), json!({"flagpole": {"fleet": null}})] {
            let mut root = file.as_object().unwrap().clone();
            apply(
                &mut root,
                &env(&[
                    (FLEET_REDIS_URL, url),
                    ("FLAGPOLE", r#"{"grpc": {"port": 9}}"#),
                ]),
            );
            assert_eq!(
                Value::Object(root),
                json!({"flagpole": {"grpc": {"port": 9}, "fleet": {"redis_url": url}}})
            );
        }
    }

    #[test]
    fn misspelt_variables_name_the_one_meant() {
        for (name, meant) in [
            ("ENVIROMENT_KEY_PAIRS", "ENVIRONMENT_KEY_PAIRS"),
            ("environmentkeypairs", "ENVIRONMENT_KEY_PAIRS"),
            ("API_ULR", "API_URL"),
            ("CONFIG_PTH", "CONFIG_PATH"),
            ("API_POLL_FREQUENCY_SECOND", "API_POLL_FREQUENCY_SECONDS"),
            ("SEVRER", "SERVER"),
            ("FLAGPOLE_FLEET_REDIS_ULR", "FLAGPOLE_FLEET_REDIS_URL"),
            ("FLAGPOLE_FLEET_REDIS_UR", "FLAGPOLE_FLEET_REDIS_URL"),
        ] {
            let e = check_names(&env(&[(name, "x")])).unwrap_err().0;
            assert_eq!(
                e,
                format!(
                    "environment variable {name} is not one Flagpole reads: did you mean {meant}?"
                )
            );
        }
    }

    #[test]
    fn the_rest_of_the_environment_is_left_alone() {
        let common = [
            "PATH",
            "HOME",
            "USER",
            "SHELL",
            "TERM",
            "LANG",
            "PWD",
            "OLDPWD",
            "HOSTNAME",
            "SHLVL",
            "LOGNAME",
            "MAIL",
            "EDITOR",
            "PAGER",
            "TMPDIR",
            "TZ",
            "CI",
            "DEBUG",
            "NODE_ENV",
            "PORT",
            "HOST",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "NO_PROXY",
            "CFLAGS",
            "LDFLAGS",
            "FLAG",
            "RUST_LOG",
            "RUSTC_LOG",
            "RUST_LOG_STYLE",
            "RUST_BACKTRACE",
            "CARGO_HOME",
            "JAVA_HOME",
            "GOPATH",
            "PYTHONPATH",
            "VIRTUAL_ENV",
            "KUBERNETES_SERVICE_HOST",
            "KUBERNETES_PORT",
            "DISPLAY",
            "COLORTERM",
            "SSL_CERT_FILE",
            "MALLOC_ARENA_MAX",
            "_RJEM_MALLOC_CONF",
            "FLAGPOLE_BIN",
            "FLAGPOLE_UPDATE_GOLDEN",
            "FLAGPOLE_PORT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_SERVICE_NAME",
            "OTEL_TRACES_SAMPLER_ARG",
            "OTEL_SDK_DISABLED",
            "API_KEY",
            "SERVER_NAME",
            "PROXY_HOST",
            "LOG_LEVEL",
            "CONFIG",
            "OFREP_URL",
            // And the names Flagpole reads, in any case.
            "CONFIG_PATH",
            "API_URL",
            "server",
            "Flagpole",
            "API_POLL_FREQUENCY",
            "flagpole_fleet_redis_url",
        ];
        let all: Vec<(&str, &str)> = common.iter().map(|n| (*n, "1")).collect();
        assert_eq!(check_names(&env(&all)), Ok(()));
    }

    #[test]
    fn spellings_of_a_setting() {
        assert_eq!(
            spellings("api_poll_timeout"),
            ["api_poll_timeout_seconds", "api_poll_timeout"]
        );
        assert_eq!(spellings("api_url"), ["api_url"]);
    }
}
