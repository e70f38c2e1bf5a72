//! The snapshot store: per environment one atomic pointer to its current [`Snapshot`], plus the
//! key table requests are authenticated against. Readers load the pointer (no lock, no wait)
//! and hold the snapshot by reference count for as long as the request needs it; a new
//! snapshot is built off to the side and swapped in whole.

// A fast hasher: the key table is built from the config, callers only look up.
use foldhash::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use serde_json::Value;

use crate::ofrep::sse::StreamEvent;
use crate::rate_limit::KeyLimits;
use crate::snapshot::{KeyKind, Snapshot};

/// Where an environment's document comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Polled from the upstream API with this server key.
    Upstream { server_key: String },
    /// A local file (never stale: it changes only when the file does).
    File(std::path::PathBuf),
    /// The bundled example document.
    Embedded,
}

/// One environment.
#[derive(Debug)]
pub struct EnvSlot {
    pub client_key: String,
    pub source: Source,
    snapshot: ArcSwapOption<Snapshot>,
    /// Milliseconds since the epoch of the last successful update (0 = never).
    last_success_ms: AtomicU64,
    /// The last failure, cleared on success (logged once per change).
    last_error: Mutex<Option<String>>,
    /// The ETag upstream gave with the current document.
    pub upstream_etag: Mutex<Option<String>>,
    /// Serialises publishing (builders run one at a time per environment).
    publish: tokio::sync::Mutex<()>,
    /// The latest OFREP change event: one shared cell that every open stream watches.
    pub events: tokio::sync::watch::Sender<Option<Arc<StreamEvent>>>,
    /// Wakes the upstream poller before its period is up (a client has seen a newer revision
    /// elsewhere), and when that last happened (at most once a second).
    pub poll_now: tokio::sync::Notify,
    last_forced_poll: Mutex<Option<std::time::Instant>>,
    /// Requests served, per resource (status page, metrics, usage reporting).
    pub usage: crate::usage::Usage,
}

/// What publishing a document did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// A new revision is being served; `took` is from receiving the document to the swap
    /// (compile and prepare; compression of the document follows in the background).
    NewRevision { revision: u64, took: Duration },
    /// The document equals the one served: nothing changed.
    Unchanged(u64),
}

impl EnvSlot {
    pub fn new(client_key: String, source: Source) -> EnvSlot {
        EnvSlot {
            client_key,
            source,
            snapshot: ArcSwapOption::empty(),
            last_success_ms: AtomicU64::new(0),
            last_error: Mutex::new(None),
            upstream_etag: Mutex::new(None),
            publish: tokio::sync::Mutex::new(()),
            events: tokio::sync::watch::Sender::new(None),
            poll_now: tokio::sync::Notify::new(),
            last_forced_poll: Mutex::new(None),
            usage: Default::default(),
        }
    }

    /// The current snapshot (a reference-count increment; never blocks).
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        self.snapshot.load_full()
    }

    /// Compiles and swaps in a document, unless it equals the current one. `received` is the
    /// document's bytes as they arrived when they are exactly the document (one page, one file):
    /// they are served as they are instead of being serialised again. The build runs on a
    /// blocking thread; a document the engine rejects leaves the current snapshot in place.
    pub async fn publish(
        self: &Arc<Self>,
        document: Value,
        received: Option<Bytes>,
    ) -> Result<Published, String> {
        let _guard = self.publish.lock().await;
        let started = std::time::Instant::now();
        if document.get("api_key").and_then(Value::as_str) != Some(self.client_key.as_str()) {
            return Err(format!(
                "the document's api_key is not this environment's client key ({})",
                crate::logging::fingerprint(&self.client_key)
            ));
        }
        let current = self.snapshot();
        // Serialising, comparing and building are CPU work on megabytes: keep them off the
        // async workers that serve requests.
        let (built, document) = crate::background::run(move || {
            let bytes = match received {
                Some(bytes) => bytes,
                None => {
                    Bytes::from(serde_json::to_vec(&document).expect("a JSON value serialises"))
                }
            };
            if let Some(current) = &current {
                if current.document.bytes == bytes {
                    return (Ok(None), document);
                }
            }
            let revision = current.as_ref().map_or(1, |c| c.revision + 1);
            let built = Snapshot::build_with_bytes(&document, bytes, revision, true).map(Some);
            (built, document)
        })
        .await
        .map_err(|e| format!("snapshot build failed: {e}"))?;
        let built = built.map_err(|e| format!("the engine rejects the document: {e}"))?;
        let Some(snapshot) = built else {
            return Ok(Published::Unchanged(
                self.snapshot().map_or(0, |s| s.revision),
            ));
        };
        let revision = snapshot.revision;
        let snapshot = Arc::new(snapshot);
        let previous = self.snapshot.swap(Some(snapshot.clone()));
        // Announce only a new content revision: bytes that differ in layout alone (member
        // order, whitespace) change nothing a client could refetch.
        let event = StreamEvent::announcing(&snapshot);
        self.events.send_if_modified(|latest| {
            if latest.as_ref().is_some_and(|l| l.id == event.id) {
                return false;
            }
            *latest = Some(Arc::new(event));
            true
        });
        // After the swap, off the request path: compress the new document (served uncompressed
        // until then), free the parsed tree and the old snapshot (once its last reader lets go)
        // and hand the memory back.
        let took = started.elapsed();
        tokio::spawn(crate::background::run(move || {
            drop(document);
            drop(previous);
            snapshot.finish_compression();
            drop(snapshot);
            crate::memory::release_free_memory();
        }));
        Ok(Published::NewRevision { revision, took })
    }

    /// Asks the upstream poller to fetch now (single-flight: at most once a second). Returns
    /// whether a fetch was requested; local files and the example are never stale.
    pub fn request_refresh(&self) -> bool {
        if !matches!(self.source, Source::Upstream { .. }) {
            return false;
        }
        let mut last = self.last_forced_poll.lock().expect("lock");
        let now = std::time::Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            return false;
        }
        *last = Some(now);
        self.poll_now.notify_one();
        true
    }

    pub fn mark_success(&self, at: SystemTime) {
        let ms = at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        self.last_success_ms.store(ms.max(1), Ordering::Release);
        let mut last = self.last_error.lock().expect("lock");
        if last.take().is_some() {
            tracing::info!(environment = %crate::logging::fingerprint(&self.client_key), "environment document updates recovered");
        }
    }

    /// Records a failure; logs only when the reason changes.
    pub fn mark_failure(&self, reason: String) {
        let mut last = self.last_error.lock().expect("lock");
        if last.as_deref() != Some(reason.as_str()) {
            tracing::warn!(environment = %crate::logging::fingerprint(&self.client_key), %reason, "environment document update failed; serving the last good document");
            *last = Some(reason);
        }
    }

    pub fn last_success(&self) -> Option<SystemTime> {
        match self.last_success_ms.load(Ordering::Acquire) {
            0 => None,
            ms => Some(UNIX_EPOCH + Duration::from_millis(ms)),
        }
    }

    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().expect("lock").clone()
    }
}

/// A key a caller may present.
#[derive(Clone, Debug)]
pub struct KeyEntry {
    pub kind: KeyKind,
    pub env: Arc<EnvSlot>,
    /// This key's request-rate buckets (none when no limit is configured).
    pub limits: Arc<KeyLimits>,
}

/// All environments and the keys that reach them.
#[derive(Debug, Default)]
pub struct Store {
    keys: HashMap<String, KeyEntry>,
    envs: Vec<Arc<EnvSlot>>,
    /// Requests a second per key: (Flagsmith API, OFREP); `None` = unlimited.
    rate_limits: (Option<u32>, Option<u32>),
    shutting_down: AtomicBool,
}

impl Store {
    /// An empty store whose keys get these per-key rate limits (Flagsmith API, OFREP).
    pub fn with_rate_limits(flagsmith_rps: Option<u32>, ofrep_rps: Option<u32>) -> Store {
        Store {
            rate_limits: (flagsmith_rps, ofrep_rps),
            ..Store::default()
        }
    }

    /// Adds an environment reachable with its client key and any server keys.
    pub fn add(&mut self, slot: EnvSlot, server_keys: &[String]) -> Arc<EnvSlot> {
        let slot = Arc::new(slot);
        let entry = |kind| KeyEntry {
            kind,
            env: slot.clone(),
            limits: Arc::new(KeyLimits::new(self.rate_limits.0, self.rate_limits.1)),
        };
        self.keys
            .insert(slot.client_key.clone(), entry(KeyKind::Client));
        for key in server_keys {
            self.keys.insert(key.clone(), entry(KeyKind::Server));
        }
        self.envs.push(slot.clone());
        slot
    }

    pub fn lookup(&self, key: &str) -> Option<&KeyEntry> {
        self.keys.get(key)
    }

    pub fn environments(&self) -> &[Arc<EnvSlot>] {
        &self.envs
    }

    /// Server keys that reach an environment.
    pub fn server_keys(&self, env: &EnvSlot) -> Vec<&str> {
        self.keys
            .iter()
            .filter(|(_, e)| e.kind == KeyKind::Server && std::ptr::eq(e.env.as_ref(), env))
            .map(|(k, _)| k.as_str())
            .collect()
    }

    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }
}
