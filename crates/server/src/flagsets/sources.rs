//! Where flag sets come from: files (read and compiled before the proxy listens, then watched
//! by the one file watcher; each replica reads its own, even in a fleet) and http(s) URLs
//! (polled by `poll.rs`; in a fleet, one replica polls each URL for all: `fleet.rs`). A file or
//! answer that does not compile keeps the last good set; the refusal is logged naming the
//! source, the flag's JSON path and why, and counted for `/metrics`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::shutdown::Shutdown;
use crate::sources::file_watcher::{FileFed, FileSource, WatchedFile};
use crate::sources::fleet::Fleet;
use crate::sources::warm_start::WarmStart;
use flagpole_config::flags::FlagSource;
use flagpole_config::Config;

use super::FlagSets;

/// Reads and compiles every file source before the proxy listens: the text of each (`None` for
/// a URL), or the first file that does not compile, named with the JSON path of the fault.
pub(crate) fn read_files(sources: &[FlagSource]) -> Result<Vec<Option<String>>, String> {
    sources
        .iter()
        .map(|source| {
            let Some(path) = source.path() else {
                return Ok(None);
            };
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("flag file {path}: cannot read it: {e}"))?;
            super::view::check(&text)
                .map_err(|e| format!("flag file {path}: {}: {}", e.path, e.message))?;
            Ok(Some(text))
        })
        .collect()
}

/// The flag sets of the process: files published from what the preflight read, watched, and a
/// poller per URL source until shutdown (in a fleet, one that polls only while it holds the
/// URL's lease).
pub(crate) async fn start(
    config: &Arc<Config>,
    files: Vec<Option<String>>,
    warm: Option<Arc<WarmStart>>,
    fleet: Option<Arc<Fleet>>,
    shutdown: &Shutdown,
) -> Result<Arc<FlagSets>, String> {
    let sets = Arc::new(FlagSets::new(&config.flags));
    let (stop, stopping) = (shutdown.requested.clone(), sets.stopping());
    shutdown.spawn(async move {
        stop.cancelled().await;
        stopping.cancel();
    });
    let mut watched: Vec<WatchedFile> = Vec::new();
    for (index, text) in files.into_iter().enumerate() {
        let Some(text) = text else { continue };
        let path = sets.sources[index]
            .config
            .path()
            .unwrap_or_default()
            .to_owned();
        sets.publish(index, &text)
            .map_err(|e| format!("flag file {path}: {}: {}", e.path, e.message))?;
        tracing::info!(file = %path, flags = sets.source_flag_count(index), "flag file loaded");
        watched.push(FileSource::watched(&sets, index, PathBuf::from(path)));
    }
    shutdown.spawn(crate::sources::file_watcher::watch(
        watched,
        shutdown.requested.clone(),
    ));
    let urls: Vec<usize> = (0..sets.sources.len())
        .filter(|&i| sets.sources[i].config.is_url())
        .collect();
    if !urls.is_empty() {
        let client = crate::sources::upstream::client();
        for index in urls {
            // The last good answer saved in the snapshot directory is served until the URL
            // answers (or when it never does), as environments warm-start.
            let uri = &sets.sources[index].config.uri;
            if let Some(text) = warm.as_ref().and_then(|w| w.read_flags(uri)) {
                match sets.publish_off_the_side(index, text).await {
                    Ok(_) => {
                        tracing::info!(url = %uri, "serving the flag source's warm-start copy until it answers")
                    }
                    Err(e) => {
                        tracing::warn!(url = %uri, path = %e.path, reason = %e.message, "ignoring the flag source's warm-start copy")
                    }
                }
            }
            let url = super::poll::UrlSource::new(
                sets.clone(),
                index,
                client.clone(),
                config.clone(),
                warm.clone(),
            );
            let stop = shutdown.requested.clone();
            match &fleet {
                Some(fleet) => shutdown.spawn(super::fleet::run(url, fleet.clone(), stop)),
                None => shutdown.spawn(super::poll::run(url, stop)),
            }
        }
    }
    Ok(sets)
}

/// Why a flag file's new bytes were refused.
pub(crate) enum Refused {
    NotUtf8(std::string::FromUtf8Error),
    Flags(flagpole_flagd::DefinitionError),
}

/// The flag files are sources of the flag sets, each its `index`-th.
impl FileFed for FlagSets {
    const WHAT: &'static str = "the flag file";
    type Refusal = Refused;

    async fn take(self: &Arc<Self>, index: usize, bytes: Vec<u8>) -> Result<bool, Self::Refusal> {
        let text = String::from_utf8(bytes).map_err(Refused::NotUtf8)?;
        self.publish_off_the_side(index, text)
            .await
            .map_err(Refused::Flags)
    }

    fn reloaded(&self, index: usize, path: &Path) {
        tracing::info!(
            file = %path.display(),
            flags = self.source_flag_count(index),
            "flag file reloaded"
        );
    }

    fn refused(&self, path: &Path, refusal: Self::Refusal) {
        match refusal {
            Refused::NotUtf8(e) => {
                tracing::warn!(file = %path.display(), error = %e, "the flag file is not UTF-8; the last good flags are kept")
            }
            Refused::Flags(e) => tracing::warn!(
                file = %path.display(),
                path = %e.path,
                reason = %e.message,
                "flag file refused ({}: {}); the last good flags are kept",
                e.path,
                e.message
            ),
        }
    }
}
