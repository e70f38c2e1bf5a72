//! Local environment documents (offline mode): loaded at start, reloaded when the file changes
//! (`file_watcher.rs` watches them all).
//! A half-written or invalid file never replaces the good document: it is reported and the
//! next change is tried again.

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;

use crate::received::{Incoming, Rejected};
use crate::store::{EnvSlot, Published};

/// Reads and parses a document file; returns the document and the file's bytes.
pub(crate) fn read(path: &Path) -> Result<(Value, Vec<u8>), String> {
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
pub(crate) async fn load(slot: &Arc<EnvSlot>, path: &Path) {
    let owned = path.to_path_buf();
    let read = crate::background::run(move || std::fs::read(&owned))
        .await
        .map_err(|e| format!("reading the document failed: {e}"))
        .and_then(|read| read.map_err(|e| format!("cannot read {}: {e}", path.display())));
    match read {
        // Refused: recorded for the status page and logged; the next change is tried again.
        Ok(bytes) => drop(publish(slot, path, bytes.into()).await),
        Err(reason) => slot.mark_failure(reason),
    }
}

/// Publishes the file's bytes, already read, into the slot; logs a new revision, records a
/// rejection (and answers it: at start, a file that is not a document stops the start).
pub(crate) async fn publish(
    slot: &Arc<EnvSlot>,
    path: &Path,
    bytes: bytes::Bytes,
) -> Result<(), String> {
    match slot.publish(Incoming::Bytes(bytes)).await {
        Ok(published) => {
            slot.mark_success(SystemTime::now());
            if let Published::NewRevision { revision, took } = published {
                let build_ms = took.as_millis() as u64;
                tracing::info!(file = %path.display(), revision, build_ms, "environment document loaded");
            }
            Ok(())
        }
        Err(rejected) => {
            let reason = rejection(path, &rejected, &slot.client_key);
            slot.mark_failure(reason.clone());
            Err(reason)
        }
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
