//! What `flagpole serve` prints once it listens: the address; for the bundled example and for
//! documents given with `--document`, their keys and two requests to try; for every other
//! environment one line naming it by fingerprint (configured keys are secrets). Plain lines for
//! a person, or, with `logging.log_format = "json"`, one JSON log event per line like every
//! other line Flagpole writes (target [`STARTUP_TARGET`], let through whatever the log level).

use std::net::SocketAddr;
use std::path::Path;

use crate::config::{Example, Plan};
use crate::logging::STARTUP_TARGET;
use crate::store::{EnvSlot, Source, Store};

/// Prints the start-up lines (`https`: the port serves TLS).
pub fn print(store: &Store, address: SocketAddr, https: bool, plan: &Plan, json: bool) {
    let scheme = if https { "https" } else { "http" };
    let listening = format!(
        "flagpole {} listening on {scheme}://{address}",
        env!("CARGO_PKG_VERSION")
    );
    if json {
        tracing::info!(target: STARTUP_TARGET, %address, "{listening}");
    } else {
        eprintln!("{listening}");
    }
    let host = if address.ip().is_unspecified() {
        "localhost".to_owned()
    } else {
        address.ip().to_string()
    };
    let base = format!("{scheme}://{host}:{}", address.port());
    for env in store.environments() {
        let title = match &env.source {
            Source::Embedded => Some(match plan.example {
                Example::NothingConfigured => "serving the bundled example environment: no \
                    configuration found (--config, $CONFIG_PATH, ./config.json, environment \
                    variables)"
                    .to_owned(),
                Example::Asked => "serving the bundled example environment (--example)".into(),
                Example::No => "serving the bundled example environment".into(),
            }),
            Source::File(path) if from_command_line(plan, path) => {
                Some(format!("serving {}", path.display()))
            }
            _ => None,
        };
        match title {
            Some(title) => print_keys(&title, store, &env, &base, json),
            None => {
                let source = match &env.source {
                    Source::File(p) => format!("file {}", p.display()),
                    _ => "upstream".to_owned(),
                };
                let environment = crate::keys::fingerprint(&env.client_key);
                let line = format!("environment {environment} from {source}");
                if json {
                    tracing::info!(target: STARTUP_TARGET, %environment, %source, "{line}");
                } else {
                    eprintln!("{line}");
                }
            }
        }
    }
}

fn from_command_line(plan: &Plan, path: &Path) -> bool {
    plan.command_line_documents.iter().any(|p| p == path)
}

/// An environment a person will try at once: its keys in full and two requests.
fn print_keys(title: &str, store: &Store, env: &EnvSlot, base: &str, json: bool) {
    let server_keys = store.server_keys(env);
    let tries = [
        format!(
            "curl -H 'X-Environment-Key: {}' {base}/api/v1/flags/",
            env.client_key
        ),
        format!(
            "curl -H 'X-Environment-Key: {}' '{base}/api/v1/identities/?identifier=alice'",
            env.client_key
        ),
    ];
    if json {
        let client_side_key = &env.client_key;
        let server_side_keys = server_keys.join(", ");
        tracing::info!(target: STARTUP_TARGET, %client_side_key, %server_side_keys, "{title}");
        for t in &tries {
            tracing::info!(target: STARTUP_TARGET, "try: {t}");
        }
        return;
    }
    eprintln!("{title}");
    eprintln!("  client-side key: {}", env.client_key);
    for key in &server_keys {
        eprintln!("  server-side key: {key}");
    }
    eprintln!("try:");
    for t in &tries {
        eprintln!("  {t}");
    }
}
