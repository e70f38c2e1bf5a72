//! Where flag sets come from: files (read and compiled before the proxy listens, then watched
//! by the one file watcher) and http(s) URLs (polled on each source's own schedule with
//! `If-None-Match`, on the upstream poller's HTTP client). A file or answer that does not
//! compile keeps the last good set; the refusal is logged naming the source, the flag's JSON
//! path and why, and counted for `/metrics`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::config::flags::FlagSource;
use crate::config::Config;
use crate::shutdown::Shutdown;
use crate::sources::file_watcher::{Watched, WatchedFile};
use crate::sources::poll_schedule::PollSchedule;

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
/// poller per URL source until shutdown.
pub(crate) async fn start(
    config: &Arc<Config>,
    files: Vec<Option<String>>,
    shutdown: &Shutdown,
) -> Result<Arc<FlagSets>, String> {
    let sets = Arc::new(FlagSets::new(&config.flags));
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
        tracing::info!(file = %path, flags = flag_count(&sets, index), "flag file loaded");
        watched.push((
            Arc::new(FileSource {
                sets: sets.clone(),
                index,
            }),
            PathBuf::from(path),
        ));
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
            shutdown.spawn(poll(
                sets.clone(),
                index,
                client.clone(),
                config.clone(),
                shutdown.requested.clone(),
            ));
        }
    }
    Ok(sets)
}

fn flag_count(sets: &FlagSets, index: usize) -> usize {
    let name = sets.sources[index].name().to_owned();
    sets.view(Some(&format!("source={name}")))
        .map_or(0, |v| v.set.len())
}

/// A file source, as the file watcher reloads it.
struct FileSource {
    sets: Arc<FlagSets>,
    index: usize,
}

impl Watched for FileSource {
    fn reload(
        self: Arc<Self>,
        path: PathBuf,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(async move {
            let read = crate::background::run({
                let path = path.clone();
                move || std::fs::read_to_string(&path)
            })
            .await;
            match read {
                Ok(Ok(text)) => self.take(&path, &text),
                Ok(Err(e)) => {
                    tracing::warn!(file = %path.display(), error = %e, "cannot read the flag file; the last good flags are kept")
                }
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "reading the flag file failed")
                }
            }
        })
    }
}

impl FileSource {
    fn take(&self, path: &Path, text: &str) {
        match self.sets.publish(self.index, text) {
            Ok(true) => tracing::info!(
                file = %path.display(),
                flags = flag_count(&self.sets, self.index),
                "flag file reloaded"
            ),
            Ok(false) => {}
            Err(e) => tracing::warn!(
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

/// Polls one URL source until `stop`: at once, then every `interval` (a phase of its own plus
/// jitter, as environments are polled); conditional on the last `ETag`; marked stale when its
/// last good answer is older than the interval plus the grace period.
async fn poll(
    sets: Arc<FlagSets>,
    index: usize,
    client: reqwest::Client,
    config: Arc<Config>,
    stop: tokio_util::sync::CancellationToken,
) {
    let source = sets.sources[index].clone();
    let interval = source.config.interval;
    let grace = config.health.stale_grace;
    let mut schedule = PollSchedule::new(interval, Instant::now());
    let mut etag: Option<String> = None;
    let mut last_good: Option<Instant> = None;
    let started = Instant::now();
    loop {
        let fetched = tokio::time::timeout(
            config.upstream.poll_timeout,
            fetch(&client, &source.config, etag.as_deref()),
        )
        .await
        .unwrap_or_else(|_| Err("timed out".into()));
        match fetched {
            Ok(Fetched::NotModified) => last_good = Some(Instant::now()),
            Ok(Fetched::Body { text, etag: tag }) => match sets.publish(index, &text) {
                Ok(changed) => {
                    last_good = Some(Instant::now());
                    etag = tag;
                    if changed {
                        tracing::info!(url = %source.config.uri, flags = flag_count(&sets, index), "flag source loaded");
                    }
                }
                Err(e) => tracing::warn!(
                    url = %source.config.uri,
                    path = %e.path,
                    reason = %e.message,
                    "flag source refused ({}: {}); the last good flags are kept",
                    e.path,
                    e.message
                ),
            },
            Err(reason) => {
                *source.last_error.lock() = Some(reason.clone());
                tracing::warn!(url = %source.config.uri, %reason, "flag source fetch failed; the last good flags are kept");
            }
        }
        if let Some(grace) = grace {
            let since = last_good.unwrap_or(started).elapsed();
            sets.set_stale(index, source.loaded() && since > interval + grace);
        }
        let next = schedule.next_after(Instant::now());
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()) => {}
            _ = stop.cancelled() => return,
        }
    }
}

enum Fetched {
    NotModified,
    Body { text: String, etag: Option<String> },
}

async fn fetch(
    client: &reqwest::Client,
    source: &FlagSource,
    etag: Option<&str>,
) -> Result<Fetched, String> {
    let mut request = client.get(&source.uri).header("accept", "application/json");
    if let Some(auth) = &source.auth_header {
        request = request.header("authorization", auth);
    }
    for (name, value) in &source.headers {
        request = request.header(name, value);
    }
    if let Some(etag) = etag {
        request = request.header("if-none-match", etag);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_MODIFIED {
        return Ok(Fetched::NotModified);
    }
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let etag = response
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.map_err(|e| e.to_string())?;
    Ok(Fetched::Body { text, etag })
}
