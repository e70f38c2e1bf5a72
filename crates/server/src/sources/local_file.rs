//! Local environment documents (offline mode): loaded at start, reloaded when the file changes.
//! A half-written or invalid file never replaces the good document: it is reported and the
//! next change is tried again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify::{RecursiveMode, Watcher};
use serde_json::Value;

use crate::received::{Incoming, Rejected};
use crate::store::{EnvSlot, Published};

/// Reads and parses a document file; returns the document and the file's bytes.
pub fn read(path: &Path) -> Result<(Value, Vec<u8>), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let document: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: invalid JSON: {e}", path.display()))?;
    if document.get("api_key").and_then(Value::as_str).is_none() {
        return Err(format!(
            "{}: not an environment document (no api_key)",
            path.display()
        ));
    }
    Ok((document, bytes))
}

/// Loads the file into the slot now (reading it on a blocking thread; it is parsed once, when
/// its snapshot is built).
pub async fn load(slot: &Arc<EnvSlot>, path: &Path) {
    let owned = path.to_path_buf();
    let read = crate::background::run(move || std::fs::read(&owned))
        .await
        .map_err(|e| format!("reading the document failed: {e}"))
        .and_then(|read| read.map_err(|e| format!("cannot read {}: {e}", path.display())));
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(reason) => return slot.mark_failure(reason),
    };
    match slot.publish(Incoming::Bytes(bytes.into())).await {
        Ok(published) => {
            slot.mark_success(SystemTime::now());
            if let Published::NewRevision { revision, took } = published {
                let build_ms = took.as_millis() as u64;
                tracing::info!(file = %path.display(), revision, build_ms, "environment document loaded");
            }
        }
        Err(rejected) => slot.mark_failure(rejection(path, &rejected, &slot.client_key)),
    }
}

/// Why the file was not taken, in the words [`read`] uses for what it checks.
fn rejection(path: &Path, rejected: &Rejected, client_key: &str) -> String {
    match rejected {
        Rejected::InvalidJson(e) => format!("{}: invalid JSON: {e}", path.display()),
        Rejected::NotAnObject | Rejected::NoApiKey => format!(
            "{}: not an environment document (no api_key)",
            path.display()
        ),
        other => format!("{}: {}", path.display(), other.message(client_key)),
    }
}

/// Watches the file and reloads it on change until the environment stops.
pub async fn watch(slot: Arc<EnvSlot>, path: PathBuf) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let file_name = path.file_name().map(|n| n.to_owned());
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            // Reading the file ourselves raises access events (open, close): reacting to those
            // would reload forever. Only a change of content or of which file the name means
            // counts.
            let changes = matches!(
                event.kind,
                notify::EventKind::Create(_)
                    | notify::EventKind::Modify(_)
                    | notify::EventKind::Remove(_)
                    | notify::EventKind::Any
            );
            if changes
                && event
                    .paths
                    .iter()
                    .any(|p| p.file_name() == file_name.as_deref())
            {
                let _ = tx.send(());
            }
        }
    });
    let mut watcher = match watcher {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "cannot watch the document file; changes need a restart");
            return;
        }
    };
    // Watch the directory: editors and `mv` replace the file rather than write into it.
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
        tracing::warn!(file = %path.display(), error = %e, "cannot watch the document file; changes need a restart");
        return;
    }
    loop {
        tokio::select! {
            event = rx.recv() => {
                if event.is_none() {
                    return;
                }
                // Let a burst of writes settle, then read once.
                tokio::time::sleep(Duration::from_millis(150)).await;
                while rx.try_recv().is_ok() {}
                load(&slot, &path).await;
            }
            _ = slot.stop.cancelled() => return,
        }
    }
}
