//! Everything `serve` checks before it listens, beyond the configuration itself, as one
//! function that `flagpole check` runs too, so that `check` exits 0 only when `serve` would
//! start: every local document read and named by its `api_key`, the TLS certificate and key
//! readable and matching, the snapshot directory writable. (The configuration's own checks,
//! listeners' ports included, are `config::load` and `config::start`.) What it reads is handed
//! to `serve`, so nothing is read twice.

use std::path::Path;

use crate::config::Config;
use crate::server::tls::Tls;
use crate::sources::startup::{read_all, DocumentFile};

/// What the checks read, for `serve` to start with.
pub(crate) struct Ready {
    /// The local documents (`flagpole.documents`, then `--document`), in order.
    pub(crate) documents: Vec<DocumentFile>,
    /// The TLS acceptor, when `server.tls` is set.
    pub(crate) tls: Option<Tls>,
}

/// Runs the checks; the first failure is the error that stops the start.
pub(crate) fn run(config: &Config) -> Result<Ready, String> {
    let documents = read_all(&config.environments.documents)?;
    let tls = config.server.tls.as_ref().map(Tls::new).transpose()?;
    if let Some(dir) = &config.upstream.snapshot_dir {
        writable(dir).map_err(|e| {
            format!(
                "flagpole.snapshot_dir: {} is not a writable directory: {e}",
                dir.display()
            )
        })?;
    }
    Ok(Ready { documents, tls })
}

/// Creates the directory if needed and writes (and removes) a file in it, as the warm-start
/// save will.
fn writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".flagpole-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_directory_that_cannot_be_written_is_refused() {
        let dir = std::env::temp_dir().join(format!("flagpole-preflight-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a-file");
        std::fs::write(&file, b"").unwrap();
        let mut config = Config::default();
        config.upstream.snapshot_dir = Some(dir.join("snapshots"));
        assert!(run(&config).is_ok());
        // A directory cannot be made below a file.
        config.upstream.snapshot_dir = Some(file.join("snapshots"));
        let e = run(&config).err().unwrap();
        assert!(
            e.starts_with("flagpole.snapshot_dir: ") && e.contains("not a writable directory"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
