//! One watcher for every local file the proxy serves (environment documents and flagd flag
//! files): one OS thread and one inotify instance (on Linux) for the whole process, one watch
//! per distinct directory, and events routed to whoever reads the file ([`Watched`]) by name. A watcher per file would cost a thread and an inotify instance
//! each, and Linux allows 128 instances per user by default, so an organisation-wide proxy with
//! hundreds of documents would silently lose hot reload for all but the first hundred or so.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio_util::sync::CancellationToken;

use crate::sources::local_file;
use crate::store::EnvSlot;

/// What reads a watched file and reloads it when it changes.
pub(crate) trait Watched: Send + Sync {
    /// Reads the file again and publishes what it holds (refusals are the reader's to report).
    fn reload(
        self: Arc<Self>,
        path: PathBuf,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
}

/// Reads a watched file again on the blocking pool (a slow disk never holds a worker); a file
/// that cannot be read is logged as `what` ("the flag file") and `None`: its reader keeps the
/// last good content.
pub(crate) async fn read_again(path: &std::path::Path, what: &str) -> Option<Vec<u8>> {
    let read = crate::background::run({
        let path = path.to_owned();
        move || std::fs::read(path)
    })
    .await;
    match read {
        Ok(Ok(bytes)) => Some(bytes),
        Ok(Err(e)) => {
            tracing::warn!(file = %path.display(), error = %e, "cannot read {what}; the last good content is kept");
            None
        }
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "reading {what} failed");
            None
        }
    }
}

impl Watched for EnvSlot {
    fn reload(
        self: Arc<Self>,
        path: PathBuf,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(async move {
            if !self.stop.is_cancelled() {
                local_file::load(&self, &path).await;
            }
        })
    }
}

/// A source made of files, each its `index`-th text, which the watcher reloads one at a time
/// (the Unleash features files, the flag files): how one file's new bytes are taken, and what
/// is logged of it.
pub(crate) trait FileFed: Send + Sync + 'static {
    /// What a file is called in the logs ("the flag file").
    const WHAT: &'static str;
    /// Why a file's bytes were refused.
    type Refusal: Send;
    /// Takes the file's new bytes, off the request path: whether they changed anything.
    fn take(
        self: &Arc<Self>,
        index: usize,
        bytes: Vec<u8>,
    ) -> impl std::future::Future<Output = Result<bool, Self::Refusal>> + Send;
    /// Logs the `index`-th file taken with new content.
    fn reloaded(&self, index: usize, path: &Path);
    /// Logs a file refused (the source keeps its last good content).
    fn refused(&self, path: &Path, refusal: Self::Refusal);
}

/// One file of a [`FileFed`] source, as the watcher reloads it.
pub(crate) struct FileSource<S> {
    source: Arc<S>,
    index: usize,
}

impl<S: FileFed> FileSource<S> {
    /// The source's `index`-th file, at `path`, to be watched.
    pub(crate) fn watched(source: &Arc<S>, index: usize, path: PathBuf) -> WatchedFile {
        let reader = Arc::new(FileSource {
            source: source.clone(),
            index,
        });
        (reader, path)
    }
}

impl<S: FileFed> Watched for FileSource<S> {
    fn reload(
        self: Arc<Self>,
        path: PathBuf,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(async move {
            let Some(bytes) = read_again(&path, S::WHAT).await else {
                return;
            };
            match self.source.take(self.index, bytes).await {
                Ok(true) => self.source.reloaded(self.index, &path),
                Ok(false) => {}
                Err(refusal) => self.source.refused(&path, refusal),
            }
        })
    }
}

/// A watched file: who reloads it, and its path.
pub(crate) type WatchedFile = (Arc<dyn Watched>, PathBuf);

/// How long a burst of writes to the same files is left to settle before they are read.
const SETTLE: Duration = Duration::from_millis(150);

/// Where a document lives, as the watcher sees it: the canonical directory (what event paths
/// start with) and the file name.
fn watched_path(path: &Path) -> PathBuf {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    match path.file_name() {
        Some(name) => dir.join(name),
        None => dir,
    }
}

/// Watches every `(reader, file)`: the watches are in place when this returns (so a change
/// made once the proxy reports ready is seen), and the returned future reloads an environment
/// when its file changes, until `stop` is cancelled. Directories are watched rather than files:
/// editors and `mv` replace a file instead of writing into it.
pub(crate) fn watch(
    files: Vec<WatchedFile>,
    stop: CancellationToken,
) -> impl std::future::Future<Output = ()> {
    let watching = (!files.is_empty()).then(|| start(&files)).flatten();
    async move {
        if let Some((watcher, rx)) = watching {
            reload_on_change(files, watcher, rx, stop).await;
        }
    }
}

/// The watcher, with a watch on every directory, and where it sends the index of a changed file.
fn start(
    files: &[WatchedFile],
) -> Option<(
    notify::RecommendedWatcher,
    tokio::sync::mpsc::UnboundedReceiver<usize>,
)> {
    // Full watched path → the readers of that file (usually one).
    let mut routes: HashMap<PathBuf, Vec<usize>> = HashMap::new();
    for (index, (_, path)) in files.iter().enumerate() {
        routes.entry(watched_path(path)).or_default().push(index);
    }
    let directories: BTreeSet<PathBuf> = routes
        .keys()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    let routes = Arc::new(routes);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let table = routes.clone();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        // Reading the files ourselves raises access events (open, close): reacting to those
        // would reload forever. Only a change of content or of which file a name means counts.
        let changes = matches!(
            event.kind,
            notify::EventKind::Create(_)
                | notify::EventKind::Modify(_)
                | notify::EventKind::Remove(_)
                | notify::EventKind::Any
        );
        if !changes {
            return;
        }
        for path in &event.paths {
            for &index in table.get(path).into_iter().flatten() {
                let _ = tx.send(index);
            }
        }
    });
    let mut watcher = match watcher {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, files = files.len(), "cannot watch the document files; changes need a restart");
            return None;
        }
    };
    for dir in &directories {
        if let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            tracing::warn!(directory = %dir.display(), error = %e, "cannot watch the documents' directory; changes to its files need a restart");
        }
    }
    tracing::debug!(
        files = files.len(),
        directories = directories.len(),
        "watching document files"
    );
    Some((watcher, rx))
}

/// Reloads each changed file (a burst of writes settled first) until `stop`; the watcher lives as
/// long as this runs.
async fn reload_on_change(
    files: Vec<WatchedFile>,
    _watcher: notify::RecommendedWatcher,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<usize>,
    stop: CancellationToken,
) {
    loop {
        let first = tokio::select! {
            first = rx.recv() => first,
            _ = stop.cancelled() => return,
        };
        let Some(first) = first else { return };
        // Let a burst of writes settle, then read each changed file once.
        tokio::select! {
            _ = tokio::time::sleep(SETTLE) => {}
            _ = stop.cancelled() => return,
        }
        let mut changed = BTreeSet::from([first]);
        while let Ok(index) = rx.try_recv() {
            changed.insert(index);
        }
        let reloads = changed.into_iter().map(|index| {
            let (reader, path) = &files[index];
            reader.clone().reload(path.clone())
        });
        crate::sources::startup::bounded(reloads).await;
    }
}
