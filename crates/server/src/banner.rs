//! What `flagpole serve` prints once it listens: the address; for the bundled example and for
//! documents given with `--document`, their keys and two requests to try; for every other
//! environment one line naming it by fingerprint and saying where its document came from. It is
//! printed once the start-up loads are done: an upstream environment's document may then come
//! from the fleet's Redis or a warm-start snapshot, or be still to come from upstream.
//!
//! Keys: plain lines are for a person at a terminal, and show the keys that person needs to try
//! the proxy at once: the environment's client-side key (public by design: SDKs ship it in web
//! and mobile apps) and the bundled example's server-side key (public: it is in the repository).
//! Any other server-side key is a secret and shows as its fingerprint. With
//! `logging.log_format = "json"` the lines are log events like every other line Flagpole writes
//! (target [`STARTUP_TARGET`], let through whatever the log level), and a log never carries a
//! key: environments are named by fingerprint and the requests to try show where the key goes.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::Path;

use crate::logging::STARTUP_TARGET;
use crate::store::{EnvSlot, Source, Store};
use flagpole_config::{Example, Plan};

/// Prints the start-up lines (`https`: the port serves TLS; `from_fleet`: the client keys of the
/// environments loaded from the fleet's Redis).
pub(crate) fn print(
    store: &Store,
    address: SocketAddr,
    https: bool,
    plan: &Plan,
    json: bool,
    from_fleet: &HashSet<String>,
) {
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
                let source = origin(&env, from_fleet);
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

/// Where the document of an environment not shown with its keys came from.
fn origin(env: &EnvSlot, from_fleet: &HashSet<String>) -> String {
    match &env.source {
        Source::File(p) => format!("file {}", p.display()),
        Source::Upstream { .. } if from_fleet.contains(&env.client_key) => {
            "the fleet's Redis".to_owned()
        }
        // Before the first poll, only the warm start can have loaded it.
        Source::Upstream { .. } if env.snapshot().is_some() => "the warm-start snapshot".to_owned(),
        _ => "upstream".to_owned(),
    }
}

fn from_command_line(plan: &Plan, path: &Path) -> bool {
    plan.command_line_documents.iter().any(|p| p == path)
}

/// An environment a person will try at once: its keys as the module doc says, and two requests.
fn print_keys(title: &str, store: &Store, env: &EnvSlot, base: &str, json: bool) {
    let tries = |key: &str| {
        [
            format!("curl -H 'X-Environment-Key: {key}' {base}/api/v1/flags/"),
            format!(
                "curl -H 'X-Environment-Key: {key}' '{base}/api/v1/identities/?identifier=alice'"
            ),
        ]
    };
    if json {
        let environment = crate::keys::fingerprint(&env.client_key);
        tracing::info!(target: STARTUP_TARGET, %environment, "{title}");
        for t in tries("<client-side key>") {
            tracing::info!(target: STARTUP_TARGET, "try: {t}");
        }
        return;
    }
    // The bundled example's keys are public; a configured server key is not.
    let public = matches!(env.source, Source::Embedded);
    eprintln!("{title}");
    eprintln!("  client-side key: {}", env.client_key);
    for key in store.server_keys(env) {
        if public {
            eprintln!("  server-side key: {key}");
        } else {
            eprintln!("  server-side key: {}", crate::keys::fingerprint(&key));
        }
    }
    eprintln!("try:");
    for t in tries(&env.client_key) {
        eprintln!("  {t}");
    }
}
