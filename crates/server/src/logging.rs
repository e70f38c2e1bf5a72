//! Logging set-up (`tracing`): a human format by default, JSON with `logging.log_format=json`,
//! the level from `logging.log_level` unless `RUST_LOG` is set. Keys never appear in logs: they
//! are shown as a short, non-reversible fingerprint (`keys::fingerprint`). With `logging.enable_access_log` the
//! access log (target `flagpole::access`, at INFO) is let through whatever the level, unless
//! `RUST_LOG` says otherwise.

use tracing_subscriber::EnvFilter;

/// The `tracing` target of the access log (written by the front doors, let through here).
pub const ACCESS_LOG_TARGET: &str = "flagpole::access";

/// Installs the global subscriber (once; later calls are ignored).
pub fn init(level: &str, json: bool, access_log: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        let mut directives = level_directive(level).to_owned();
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
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// `logging.log_level` as a filter directive: Python's level names (the Edge Proxy's configs
/// say `WARNING`, `CRITICAL`) mapped to tracing's; anything else is passed on as given.
fn level_directive(level: &str) -> &str {
    match level.trim().to_ascii_lowercase().as_str() {
        "trace" => "trace",
        "debug" => "debug",
        "info" => "info",
        "warn" | "warning" => "warn",
        "error" | "critical" | "fatal" => "error",
        "off" | "none" => "off",
        _ => level,
    }
}
