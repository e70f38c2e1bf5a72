//! What `flagpole serve` starts with: the loaded configuration with the command line applied,
//! and whether the bundled example environment is served.
//!
//! The example's keys are public, so serving it by accident is the worst thing a mistaken
//! configuration could do. It is served only when nothing at all is configured (no file, no
//! variable, no `--document`: the README's first command) or when asked for (`--example`). A
//! configuration that yields no environment is an error saying what is missing and what was
//! read; `flagpole check` runs this same step (and so the rule that the listeners' ports,
//! `--port` applied, differ).

use std::path::PathBuf;

use super::{Config, ConfigError, Loaded, Sources};

/// Command-line arguments of `serve` (and `check`) that bear on the configuration.
#[derive(Debug, Default, Clone)]
pub struct ServeOptions {
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--document`, served after `flagpole.documents`.
    pub documents: Vec<PathBuf>,
    /// `--flags`: flagd flag files, served after the `flags` list.
    pub flags: Vec<String>,
    /// `--unleash-features`: Unleash client-features files, served after `unleash.features`.
    pub unleash_features: Vec<PathBuf>,
    /// `--unleash-client-token`: client tokens, added to `unleash.client_tokens`.
    pub unleash_client_tokens: Vec<String>,
    /// `--unleash-frontend-token`: frontend tokens, added to `unleash.frontend_tokens`.
    pub unleash_frontend_tokens: Vec<String>,
    /// `--unleash-upstream`: the Unleash server polled (overrides `unleash.upstream`).
    pub unleash_upstream: Option<String>,
    /// `--unleash-refresh-interval` (overrides `unleash.refresh_interval_seconds`).
    pub unleash_refresh_interval: Option<std::time::Duration>,
    /// `--unleash-metrics-interval` (overrides `unleash.metrics_interval_seconds`).
    pub unleash_metrics_interval: Option<std::time::Duration>,
    pub host: Option<String>,
    pub port: Option<u16>,
    /// `--example`: serve the bundled example environment, whatever else is configured.
    pub example: bool,
}

/// Whether (and why) the bundled example environment is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Example {
    No,
    /// Nothing is configured at all.
    NothingConfigured,
    /// `--example`.
    Asked,
}

/// The configuration to serve with, and the plan for the environments.
#[derive(Debug)]
pub struct Startup {
    pub config: Config,
    pub plan: Plan,
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub example: Example,
    /// The documents given with `--document` (announced with their keys, as the example is).
    pub command_line_documents: Vec<PathBuf>,
    pub sources: Sources,
}

/// Applies the command line to a loaded configuration and decides what is served; an error when
/// a configuration exists but names no environment.
pub fn start(loaded: Loaded, options: &ServeOptions) -> Result<Startup, ConfigError> {
    let Loaded {
        mut config,
        sources,
        ..
    } = loaded;
    config
        .environments
        .documents
        .extend(options.documents.iter().cloned());
    config
        .flags
        .extend(options.flags.iter().map(super::flags::FlagSource::from_uri));
    let unleash = &mut config.unleash;
    unleash
        .features
        .extend(options.unleash_features.iter().cloned());
    unleash
        .client_tokens
        .extend(options.unleash_client_tokens.iter().cloned());
    unleash
        .frontend_tokens
        .extend(options.unleash_frontend_tokens.iter().cloned());
    if let Some(url) = &options.unleash_upstream {
        unleash.upstream = Some(url.trim_end_matches('/').to_owned());
    }
    if let Some(interval) = options.unleash_refresh_interval {
        unleash.refresh_interval = interval;
    }
    if let Some(interval) = options.unleash_metrics_interval {
        unleash.metrics_interval = interval;
    }
    if let Some(host) = &options.host {
        config.server.host = host.clone();
    }
    if let Some(port) = options.port {
        config.server.port = port;
    }
    super::rules::listeners(&config, options.port.is_some())?;
    let envs = &config.environments;
    // Flag sets alone are something to serve: a flagd user needs no Flagsmith environment.
    let configured = !envs.key_pairs.is_empty()
        || !envs.documents.is_empty()
        || envs.proxy_key.is_some()
        || !config.flags.is_empty()
        || config.unleash.is_configured();
    let example = if options.example {
        Example::Asked
    } else if sources.is_empty()
        && options.documents.is_empty()
        && config.flags.is_empty()
        && !config.unleash.is_configured()
    {
        Example::NothingConfigured
    } else if configured {
        Example::No
    } else {
        return Err(ConfigError(format!(
            "no environment to serve: no environment_key_pairs, proxy_key or \
             flagpole.documents, and no flags (read: {sources}); configure one, pass --document \
             FILE or --flags FILE, or pass \
             --example to serve the bundled example"
        )));
    };
    Ok(Startup {
        config,
        plan: Plan {
            example,
            command_line_documents: options.documents.clone(),
            sources,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::from_json;
    use serde_json::json;

    fn loaded(v: serde_json::Value) -> Loaded {
        let mut l = from_json(v.as_object().unwrap()).unwrap();
        l.sources.file = Some("config.json".into());
        l
    }

    #[test]
    fn nothing_configured_serves_the_example() {
        let startup = start(Loaded::default(), &ServeOptions::default()).unwrap();
        assert_eq!(startup.plan.example, Example::NothingConfigured);
        let with_port = ServeOptions {
            port: Some(0),
            ..Default::default()
        };
        let startup = start(Loaded::default(), &with_port).unwrap();
        assert_eq!(startup.plan.example, Example::NothingConfigured);
        assert_eq!(startup.config.server.port, 0);
    }

    #[test]
    fn a_configuration_without_environments_is_an_error() {
        let e = start(loaded(json!({})), &ServeOptions::default()).unwrap_err();
        assert!(
            e.0.starts_with(
                "no environment to serve: no environment_key_pairs, proxy_key or \
                 flagpole.documents, and no flags (read: file config.json);"
            ),
            "{e}"
        );
        assert!(e.0.contains("--example"), "{e}");
        let e = start(
            loaded(json!({"environment_key_pairs": [], "server": {"port": 8001}})),
            &ServeOptions::default(),
        )
        .unwrap_err();
        assert!(e.0.contains("no environment"), "{e}");
    }

    #[test]
    fn environments_from_any_source_count() {
        let pair = json!({"environment_key_pairs": [{"server_side_key": "ser.a", "client_side_key": "a"}]});
        for (config, documents) in [
            (pair, vec![]),
            (json!({"proxy_key": "p"}), vec![]),
            (json!({"flagpole": {"documents": ["env.json"]}}), vec![]),
            (json!({}), vec![PathBuf::from("env.json")]),
        ] {
            let options = ServeOptions {
                documents,
                ..Default::default()
            };
            let startup = start(loaded(config.clone()), &options).unwrap();
            assert_eq!(startup.plan.example, Example::No, "{config}");
        }
        let documents_only = ServeOptions {
            documents: vec![PathBuf::from("env.json")],
            ..Default::default()
        };
        let startup = start(Loaded::default(), &documents_only).unwrap();
        assert_eq!(startup.plan.example, Example::No);
        assert_eq!(
            startup.config.environments.documents,
            [PathBuf::from("env.json")]
        );
    }

    #[test]
    fn example_when_asked_whatever_is_configured() {
        let asked = ServeOptions {
            example: true,
            ..Default::default()
        };
        assert_eq!(
            start(loaded(json!({})), &asked).unwrap().plan.example,
            Example::Asked
        );
    }
}
