//! Logging set-up (`tracing`): a human format by default, JSON with `logging.log_format=json`,
//! the level from `logging.log_level` unless `RUST_LOG` is set. Keys never appear in logs: they
//! are shown as a short, non-reversible fingerprint.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber (once; later calls are ignored).
pub fn init(level: &str, json: bool) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(level.to_ascii_lowercase()));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// `abc…` + 8 hex digits of a hash: enough to tell keys apart in logs, useless to an attacker.
pub fn fingerprint(key: &str) -> String {
    let hash = xxhash_rust::xxh3::xxh3_64(key.as_bytes());
    let prefix: String = key.chars().take(3).collect();
    format!("{prefix}…{:08x}", (hash >> 32) as u32)
}
