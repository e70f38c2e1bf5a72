//! Loading many documents at once, bounded by the cores: at start every local file is read and
//! its key found in parallel, then parsed, compiled and prepared in parallel (each build on the
//! blocking pool, as any update is). One at a time, a thousand small documents or a hundred
//! large ones would keep the proxy unready for seconds on a machine with idle cores; all at
//! once, they would hold every document's parse tree in memory together.

use std::future::Future;
use std::path::PathBuf;

use bytes::Bytes;
use futures_util::StreamExt;
use serde::Deserialize;

/// How many documents are worked on at once: the cores this process may use.
pub(crate) fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `jobs`, at most [`workers`] at a time, until all have finished.
pub(crate) async fn bounded<F: Future<Output = ()>>(jobs: impl IntoIterator<Item = F>) {
    futures_util::stream::iter(jobs)
        .for_each_concurrent(workers(), |job| job)
        .await;
}

/// A local document file read at start: its path, its bytes, and the `api_key` that names its
/// environment.
pub(crate) struct DocumentFile {
    pub path: PathBuf,
    pub bytes: Bytes,
    pub api_key: String,
}

/// Reads every file and finds its `api_key`, on [`workers`] threads, in order. The first file
/// that cannot be read, is not JSON, has no `api_key` (as the file watcher and
/// `local_file::read` word it) or lacks what every environment document has (the engine's
/// check, naming the JSON path) is the error, and nothing starts.
pub(crate) fn read_all(paths: &[PathBuf]) -> Result<Vec<DocumentFile>, String> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let per_thread = paths.len().div_ceil(workers());
    std::thread::scope(|scope| {
        let chunks: Vec<_> = paths
            .chunks(per_thread)
            .map(|chunk| scope.spawn(move || chunk.iter().map(read_one).collect::<Vec<_>>()))
            .collect();
        chunks
            .into_iter()
            .flat_map(|chunk| chunk.join().expect("a document reader thread"))
            .collect()
    })
}

/// The key of a document and the members every document has, found without building a tree
/// of the rest (nearly all of a large document is its identity overrides; the snapshot build
/// reads the bytes again anyway).
#[derive(Deserialize)]
struct Outline {
    api_key: Option<serde_json::Value>,
    feature_states: Option<serde_json::Value>,
    project: Option<serde_json::Value>,
}

fn read_one(path: &PathBuf) -> Result<DocumentFile, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match serde_json::from_slice::<Outline>(&bytes) {
        Ok(Outline {
            api_key: Some(serde_json::Value::String(api_key)),
            feature_states,
            project,
        }) => {
            // What every document has, checked as the engine will (so `check` refuses it too).
            let key = serde_json::Value::String(api_key.clone());
            flagpole_engine::document::check_members(
                Some(&key),
                feature_states.as_ref(),
                project.as_ref(),
            )
            .map_err(|e| format!("{}: not an environment document: {e}", path.display()))?;
            Ok(DocumentFile {
                path: path.clone(),
                bytes: bytes.into(),
                api_key,
            })
        }
        // Whatever is wrong, the full reading says it in the words it always has.
        _ => match crate::sources::local_file::read(path) {
            Err(message) => Err(message),
            Ok(_) => Err(format!(
                "{}: not an environment document (no api_key)",
                path.display()
            )),
        },
    }
}
