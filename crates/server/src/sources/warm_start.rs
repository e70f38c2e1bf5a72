//! Warm start: each new good document is written to the snapshot directory atomically (temp
//! file, fsync, rename), and on start the saved documents are served at once, before upstream
//! answers (or when it never does). Health reports their real age. The same for flagd URL
//! sources and Unleash client tokens' features.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::received::{Incoming, Rejected};
use crate::snapshot::Snapshot;
use crate::store::EnvSlot;

#[derive(Debug)]
pub(crate) struct WarmStart {
    dir: PathBuf,
}

impl WarmStart {
    pub(crate) fn new(dir: PathBuf) -> std::io::Result<WarmStart> {
        std::fs::create_dir_all(&dir)?;
        Ok(WarmStart { dir })
    }

    /// File stem for an environment: a hash of its client key (keys never become file names).
    fn stem(&self, client_key: &str) -> PathBuf {
        self.dir.join(format!(
            "env-{:032x}",
            xxhash_rust::xxh3::xxh3_128(client_key.as_bytes())
        ))
    }

    /// Saves the snapshot's document and when it was last confirmed by upstream.
    pub(crate) async fn save(&self, slot: &EnvSlot, snapshot: &Arc<Snapshot>, at: SystemTime) {
        let stem = self.stem(&slot.client_key);
        let document = snapshot.document.bytes_once();
        let etag = slot.upstream_etag.lock().clone();
        save_with_meta(stem, document, etag, at, "the warm-start snapshot").await;
    }

    /// Serves the saved document, if any, with its saved age. Returns whether one was loaded.
    pub(crate) async fn restore(&self, slot: &Arc<EnvSlot>) -> bool {
        let stem = self.stem(&slot.client_key);
        let Ok(bytes) = std::fs::read(stem.with_extension("json")) else {
            return false;
        };
        match slot.publish(Incoming::Bytes(bytes.into())).await {
            Ok(_) => {}
            Err(Rejected::InvalidJson(_)) => {
                tracing::warn!("ignoring an unreadable warm-start snapshot");
                return false;
            }
            Err(_) => return false,
        }
        let meta: Value = std::fs::read(stem.with_extension("meta.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        let saved_at = meta
            .get("saved_at_ms")
            .and_then(Value::as_u64)
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms));
        slot.mark_success(saved_at.unwrap_or(UNIX_EPOCH + Duration::from_millis(1)));
        *slot.upstream_etag.lock() = meta
            .get("upstream_etag")
            .and_then(Value::as_str)
            .map(str::to_owned);
        tracing::info!(environment = %crate::keys::fingerprint(&slot.client_key), "serving the warm-start snapshot until upstream answers");
        true
    }
}

impl WarmStart {
    /// Where a flagd URL source's last good answer is kept: a hash of its URL.
    fn flag_source(&self, uri: &str) -> PathBuf {
        self.dir.join(format!(
            "flags-{:032x}.json",
            xxhash_rust::xxh3::xxh3_128(uri.as_bytes())
        ))
    }

    /// Saves a flagd URL source's last good answer (atomically, on the blocking pool).
    pub(crate) async fn save_flags(&self, uri: &str, text: String) {
        let path = self.flag_source(uri);
        let result = crate::background::run(move || write_atomic(&path, text.as_bytes())).await;
        if let Ok(Err(e)) = result {
            tracing::warn!(error = %e, "cannot save the flag source's warm-start copy");
        }
    }

    /// A flagd URL source's saved answer, if any.
    pub(crate) fn read_flags(&self, uri: &str) -> Option<String> {
        std::fs::read_to_string(self.flag_source(uri)).ok()
    }
}

impl WarmStart {
    /// Where an Unleash client token's last good features are kept: a hash of the upstream and
    /// the token (a token never becomes a file name).
    fn unleash_feed(&self, upstream: &str, token: &str) -> PathBuf {
        let key = format!("{upstream}\n{token}");
        self.dir.join(format!(
            "unleash-{:032x}",
            xxhash_rust::xxh3::xxh3_128(key.as_bytes())
        ))
    }

    /// Saves a client token's features body as the upstream sent it, with its ETag and when
    /// (atomically, on the blocking pool).
    pub(crate) async fn save_unleash(
        &self,
        upstream: &str,
        token: &str,
        body: Vec<u8>,
        etag: Option<String>,
    ) {
        let stem = self.unleash_feed(upstream, token);
        let what = "the Unleash features' warm-start copy";
        save_with_meta(stem, body, etag, SystemTime::now(), what).await;
    }

    /// A client token's saved features: the body, its ETag and when it was saved.
    pub(crate) fn read_unleash(&self, upstream: &str, token: &str) -> Option<SavedFeatures> {
        let stem = self.unleash_feed(upstream, token);
        let body = std::fs::read(stem.with_extension("json")).ok()?;
        let meta: Value = std::fs::read(stem.with_extension("meta.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        Some(SavedFeatures {
            body,
            etag: meta
                .get("upstream_etag")
                .and_then(Value::as_str)
                .map(str::to_owned),
            saved_at: meta
                .get("saved_at_ms")
                .and_then(Value::as_u64)
                .map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
        })
    }
}

/// An Unleash client token's features as last saved.
pub(crate) struct SavedFeatures {
    pub(crate) body: Vec<u8>,
    pub(crate) etag: Option<String>,
    pub(crate) saved_at: Option<SystemTime>,
}

/// Writes `stem.json` (the body) and `stem.meta.json` (when it was confirmed upstream, and its
/// ETag), each atomically, on the blocking pool; a failure is logged as `what`.
async fn save_with_meta(
    stem: PathBuf,
    body: impl AsRef<[u8]> + Send + 'static,
    etag: Option<String>,
    at: SystemTime,
    what: &'static str,
) {
    let meta = json!({
        "saved_at_ms": at.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64,
        "upstream_etag": etag,
    });
    let result = crate::background::run(move || {
        write_atomic(&stem.with_extension("json"), body.as_ref())?;
        write_atomic(
            &stem.with_extension("meta.json"),
            meta.to_string().as_bytes(),
        )
    })
    .await;
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "cannot save {what}"),
        Err(e) => tracing::warn!(error = %e, "cannot save {what}"),
    }
}

/// Write to a temporary file, fsync it, rename it over the target, fsync the directory.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}
