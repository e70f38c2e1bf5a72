//! The Unleash toggles after start. Offline, each features file is watched by the file watcher
//! (its watches in place before the proxy serves) and read again when it changes, off the
//! request path; a file that cannot be read or does not load keeps the last good toggles, and
//! why is logged with the JSON path of the fault. With an upstream, a poller per client token
//! (`upstream.rs`), in a fleet one replica's for the whole fleet (`fleet.rs`).

use std::path::Path;
use std::sync::Arc;

use crate::shutdown::Shutdown;
use crate::sources::file_watcher::{FileFed, FileSource, WatchedFile};

use super::{Feed, Origin, Unleash};

/// The toggles the preflight loaded, served from now on: their files watched, or the upstream
/// polled (warm-start copies served first; in a fleet, then what Redis holds), until shutdown.
pub(crate) async fn start(
    loaded: super::Loaded,
    config: &flagpole_config::unleash::Unleash,
    warm: Option<Arc<crate::sources::warm_start::WarmStart>>,
    fleet: Option<Arc<crate::sources::fleet::Fleet>>,
    shutdown: &Shutdown,
) -> Arc<Unleash> {
    let unleash = Arc::new(Unleash::new(loaded));
    let (client, frontend) = unleash.token_counts();
    let files = match unleash.origin() {
        Origin::Files(files) => files.clone(),
        Origin::Upstream(url) => {
            tracing::info!(
                upstream = %url,
                client_tokens = client,
                frontend_tokens = frontend,
                "Unleash toggles from an upstream"
            );
            let runner = fleet.map(|fleet| -> Arc<dyn super::upstream::FeedRunner> { fleet });
            super::upstream::start(&unleash, url, config, warm, runner, shutdown).await;
            shutdown.spawn(super::usage::run(
                unleash.clone(),
                url.clone(),
                config.metrics_interval,
                shutdown.drained.clone(),
            ));
            return unleash;
        }
    };
    let feed = unleash.feeds()[0].clone();
    let view = feed.view().expect("the preflight built the files' view");
    tracing::info!(
        files = files.len(),
        toggles = view.features.len(),
        client_tokens = client,
        frontend_tokens = frontend,
        "Unleash toggles loaded"
    );
    for warning in view.features.warnings() {
        tracing::warn!(toggle = %warning.toggle, reason = %warning.message, "Unleash toggle not compiled; it evaluates off");
    }
    let watched: Vec<WatchedFile> = files
        .iter()
        .enumerate()
        .map(|(index, path)| FileSource::watched(&feed, index, path.clone()))
        .collect();
    shutdown.spawn(crate::sources::file_watcher::watch(
        watched,
        shutdown.requested.clone(),
    ));
    unleash
}

/// The features files feed the one feed, each its `index`-th text.
impl FileFed for Feed {
    const WHAT: &'static str = "the Unleash features file";
    type Refusal = String;

    async fn take(self: &Arc<Self>, index: usize, bytes: Vec<u8>) -> Result<bool, String> {
        self.publish_off_the_side(index, bytes).await
    }

    fn reloaded(&self, _index: usize, path: &Path) {
        tracing::info!(
            file = %path.display(),
            toggles = self.view().map_or(0, |v| v.features.len()),
            "Unleash features file reloaded"
        );
    }

    fn refused(&self, path: &Path, reason: String) {
        tracing::warn!(
            file = %path.display(),
            %reason,
            "Unleash features file refused ({reason}); the last good toggles are kept"
        );
    }
}
