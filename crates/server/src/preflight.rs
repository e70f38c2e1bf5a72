//! Everything `serve` checks before it listens, beyond the configuration itself, as one
//! function that `flagpole check` runs too, so that `check` exits 0 only when `serve` would
//! start: every local document read and named by its `api_key`, every flagd flag file and Unleash features file compiled, the TLS certificate and key
//! readable and matching, the snapshot directory writable. (The configuration's own checks,
//! listeners' ports included, are `config::load` and `config::start`.) What it reads is handed
//! to `serve`, so nothing is read twice.
//!
//! `check` only looks: it may run on a machine that will never serve (a CI runner, a laptop),
//! so it creates and writes nothing there. It asks the system whether the snapshot directory
//! could be written (or, when it does not exist yet, whether its nearest existing parent lets it
//! be made); `serve` makes the directory and writes a probe file, as the warm-start save will.

use std::path::Path;

use crate::server::tls::Tls;
use crate::sources::startup::{read_all, DocumentFile};
use flagpole_config::Config;

/// What the checks read, for `serve` to start with.
pub(crate) struct Ready {
    /// The local documents (`flagpole.documents`, then `--document`), in order.
    pub(crate) documents: Vec<DocumentFile>,
    /// The TLS acceptor, when `server.tls` is set.
    pub(crate) tls: Option<Tls>,
    /// Each flag source's text when it is a file (read and compiled), `None` for a URL.
    pub(crate) flags: Vec<Option<String>>,
    /// The Unleash features files (read and compiled) and tokens, when configured.
    pub(crate) unleash: Option<crate::unleash::Loaded>,
}

/// Whether the checks may change the machine they run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `serve`: the snapshot directory is made and written to.
    Serve,
    /// `check`: nothing is created or written.
    Look,
}

/// Runs the checks; the first failure is the error that stops the start.
pub(crate) fn run(config: &Config, mode: Mode) -> Result<Ready, String> {
    let documents = read_all(&config.environments.documents)?;
    let tls = config.server.tls.as_ref().map(Tls::new).transpose()?;
    let flags = crate::flagsets::sources::read_files(&config.flags)?;
    let unleash = crate::unleash::load(&config.unleash)?;
    if let Some(dir) = &config.upstream.snapshot_dir {
        let checked = match mode {
            Mode::Serve => writable(dir),
            Mode::Look => could_write(dir),
        };
        checked.map_err(|e| {
            format!(
                "flagpole.snapshot_dir: {} is not a writable directory: {e}",
                dir.display()
            )
        })?;
    }
    Ok(Ready {
        documents,
        tls,
        flags,
        unleash,
    })
}

/// Creates the directory if needed and writes (and removes) a file in it, as the warm-start
/// save will.
fn writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".flagpole-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// Whether `serve` could make `dir` (if missing) and write in it, asking the system
/// (`access(2)`, as this user) instead of trying.
fn could_write(dir: &Path) -> std::io::Result<()> {
    let mut existing = dir;
    while !existing.exists() {
        match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => existing = parent,
            // A relative path's first component: the working directory holds it.
            _ => {
                existing = Path::new(".");
                break;
            }
        }
    }
    if !existing.is_dir() {
        // What making the directory would have failed with (the same message as `serve`'s).
        return Err(std::io::Error::from_raw_os_error(libc::ENOTDIR));
    }
    may_write_in(existing)
}

/// `access(dir, W_OK | X_OK)`: entries may be made in `dir`.
#[allow(
    unsafe_code,
    reason = "access is a C call; its one precondition, a NUL-terminated path, CString keeps"
)]
fn may_write_in(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    match unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
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
        config.upstream.snapshot_dir = Some(dir.join("snapshots").join("deeper"));
        // Looking creates nothing, and finds the parent writable.
        assert!(run(&config, Mode::Look).is_ok());
        assert!(
            !dir.join("snapshots").exists(),
            "looking made the directory"
        );
        assert!(run(&config, Mode::Serve).is_ok());
        assert!(dir.join("snapshots").join("deeper").is_dir());
        assert!(run(&config, Mode::Look).is_ok(), "an existing directory");
        // A directory cannot be made below a file.
        config.upstream.snapshot_dir = Some(file.join("snapshots"));
        for mode in [Mode::Look, Mode::Serve] {
            let e = run(&config, mode).err().unwrap();
            assert!(
                e.starts_with("flagpole.snapshot_dir: ") && e.contains("not a writable directory"),
                "{mode:?}: {e}"
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
