//! Logging set-up (`tracing`): a human format by default, JSON with `logging.log_format=json`,
//! the level from `logging.log_level` unless `RUST_LOG` is set. Keys never appear in logs: they
//! are shown as a short, non-reversible fingerprint (`keys::fingerprint`). With `logging.enable_access_log` the
//! access log (target `flagpole::access`, at INFO) is let through whatever the level, unless
//! `RUST_LOG` says otherwise. With JSON, every line Flagpole writes is JSON: the start-up lines
//! (target [`STARTUP_TARGET`], let through like the access log) and a fatal error too
//! ([`fatal`]).

use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::EnvFilter;

use flagpole_config::LogLevel;

/// The `tracing` target of the access log (written by the front doors, let through here).
pub(crate) const ACCESS_LOG_TARGET: &str = "flagpole::access";

/// The target of the lines printed at start (address, keys to try).
pub(crate) const STARTUP_TARGET: &str = "flagpole::startup";

/// Whether the installed subscriber writes JSON.
static JSON: AtomicBool = AtomicBool::new(false);

/// Installs the global subscriber (once; later calls are ignored). `level` is a name from the
/// closed list `logging.log_level` takes (Python's names too), so it always yields a filter.
pub(crate) fn init(level: &LogLevel, json: bool, access_log: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        let mut directives = level.directive().to_owned();
        directives.push(',');
        directives.push_str(STARTUP_TARGET);
        directives.push_str("=info");
        if access_log {
            directives.push(',');
            directives.push_str(ACCESS_LOG_TARGET);
            directives.push_str("=info");
        }
        EnvFilter::new(directives)
    });
    // Colours only on a terminal: a log file or a collector gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let installed = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    if installed.is_ok() {
        JSON.store(json, Ordering::Relaxed);
    }
}

/// Reports the error that ends the process: a JSON event once JSON logging is set up, else
/// `error: …` (before the configuration is read its log format is unknown).
pub fn fatal(message: &str) {
    if JSON.load(Ordering::Relaxed) {
        tracing::error!(target: STARTUP_TARGET, "{message}");
    } else {
        eprintln!("error: {message}");
    }
}
