//! The snapshot store: per environment one atomic pointer to its current [`Snapshot`], plus the
//! key table requests are authenticated against. Readers load the pointer (no lock, no wait)
//! and hold the snapshot by reference count for as long as the request needs it; a new
//! snapshot is built off to the side and swapped in whole.

// A fast hasher: the key table is looked up per request and rebuilt only when keys change.
use foldhash::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::rate_limit::KeyLimits;
use crate::received::{content_revision, Incoming, Received, Rejected};
use crate::snapshot::{KeyKind, Snapshot};

mod staleness;
pub(crate) use staleness::StaleRule;

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
    /// Whether the document is stale by the readiness rule ([`StaleRule`]): the OpenFeature
    /// front doors answer `STALE` meanwhile. Flipped by the store's judge (`staleness.rs`).
    stale: AtomicBool,
    /// Wakes that judge (the store's own, given when the slot is added): a stale environment
    /// that succeeds is fresh again at once, not at the judge's next round.
    judge: Arc<tokio::sync::Notify>,
    /// The ETag upstream gave with the current document.
    pub upstream_etag: Mutex<Option<String>>,
    /// Serialises publishing (builders run one at a time per environment).
    publish: tokio::sync::Mutex<()>,
    /// The content revision served now: one shared cell that change streams and waiting
    /// requests watch (a plain notification; the stream module renders it per protocol).
    pub revisions: tokio::sync::watch::Sender<Option<Arc<Revision>>>,
    /// Wakes the upstream poller before its period is up (a client has seen a newer revision
    /// elsewhere), and when that last happened (at most once a second).
    pub poll_now: tokio::sync::Notify,
    last_forced_poll: Mutex<Option<std::time::Instant>>,
    /// Requests served, per resource (status page, metrics, usage reporting).
    pub usage: crate::usage::Usage,
    /// Added by `proxy_key` discovery (and so removable by it).
    pub discovered: bool,
    /// The server key upstream fetches use, once discovery has rotated it.
    fetch_key: Mutex<Option<String>>,
    /// Cancelled when the environment stops being served: removed by discovery, or the proxy
    /// shutting down (a child of the store's token). Its poller and change streams end.
    pub stop: CancellationToken,
}

/// A content revision, as announced to whoever watches an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// The document's `updated_at` in Unix milliseconds (0 when unknown).
    pub updated_at_ms: u64,
    /// The snapshot's content revision (equal on every replica).
    pub content_revision: String,
    /// Whether the document is stale ([`EnvSlot::is_stale`]): a switch either way is announced
    /// as well, with the same content revision.
    pub stale: bool,
}

/// What publishing a document did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// A new revision is being served; `took` is from receiving the document to the swap
    /// (compile and prepare; compression of the document follows in the background).
    NewRevision { revision: u64, took: Duration },
    /// The document's content equals the one served (its bytes may differ): nothing changed.
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
            stale: AtomicBool::new(false),
            judge: Arc::default(),
            upstream_etag: Mutex::new(None),
            publish: tokio::sync::Mutex::new(()),
            revisions: tokio::sync::watch::Sender::new(None),
            poll_now: tokio::sync::Notify::new(),
            last_forced_poll: Mutex::new(None),
            usage: Default::default(),
            discovered: false,
            fetch_key: Mutex::new(None),
            stop: CancellationToken::new(),
        }
    }

    /// The server key to fetch this environment's document with (upstream sources only).
    pub fn fetch_key(&self) -> Option<String> {
        if let Some(key) = self.fetch_key.lock().clone() {
            return Some(key);
        }
        match &self.source {
            Source::Upstream { server_key } if !server_key.is_empty() => Some(server_key.clone()),
            _ => None,
        }
    }

    fn set_fetch_key(&self, key: &str) {
        *self.fetch_key.lock() = Some(key.to_owned());
    }

    /// The environment is no longer served: its poller and change streams end.
    pub fn retire(&self) {
        self.stop.cancel();
    }

    /// The current snapshot (a reference-count increment; never blocks).
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        self.snapshot.load_full()
    }

    /// Compiles and swaps in a document, unless its content equals the current one's. Bytes that
    /// are exactly the document (one page, one file) are served as they are instead of being
    /// serialised again. The build runs on a blocking thread; a document that is not this
    /// environment's, or that the engine rejects, leaves the current snapshot in place.
    ///
    /// Equal content is judged by the bytes first (equal bytes: nothing else is read), then by
    /// the content revision (canonical JSON, hashed without compiling): bytes that differ in
    /// layout alone (member order, whitespace, escapes; a merged document against its own
    /// warm-start copy; a file saved again) are the same revision. Only a new content revision
    /// is a new revision: no new ETags, no change event, no caches dropped for a document that
    /// changes nothing. The content revision spells numbers as RFC 8785 does, so `1` and `1.0`
    /// are the same content to it, as they are to the change streams and OFREP ETags.
    pub async fn publish(self: &Arc<Self>, document: Incoming) -> Result<Published, Rejected> {
        let _guard = self.publish.lock().await;
        let started = std::time::Instant::now();
        let current = self.snapshot();
        let client_key = self.client_key.clone();
        // Serialising, comparing and building are CPU work on megabytes: keep them off the
        // async workers that serve requests.
        let (built, document) = crate::background::run(move || {
            let bytes = match &document {
                Incoming::Bytes(bytes) => bytes.clone(),
                Incoming::Tree(doc) => Bytes::from(crate::json::to_vec(doc)),
            };
            let mut known = None;
            if let Some(current) = &current {
                if current.document.is(&bytes) {
                    return (Ok(None), document);
                }
                known = content_revision(&document, &bytes);
                if known.as_ref() == Some(&current.content_revision) {
                    return (Ok(None), document);
                }
            }
            let revision = current.as_ref().map_or(1, |c| c.revision + 1);
            let built =
                build_with(&document, bytes, &client_key, revision, known).map(|snapshot| {
                    // A document the text reading left to the tree is judged by the build's revision.
                    if let Some(current) = &current {
                        if snapshot.content_revision == current.content_revision {
                            return None;
                        }
                        // What clients asked of the current revision is written for the new one
                        // here, off the request path.
                        snapshot.write_like(current);
                    }
                    Some(snapshot)
                });
            (built, document)
        })
        .await
        .map_err(|e| Rejected::Internal(e.to_string()))?;
        let built = built?;
        let Some(snapshot) = built else {
            return Ok(Published::Unchanged(
                self.snapshot().map_or(0, |s| s.revision),
            ));
        };
        let revision = snapshot.revision;
        let snapshot = Arc::new(snapshot);
        let previous = self.snapshot.swap(Some(snapshot.clone()));
        // A new snapshot is a new content revision (equal content was turned away above); the
        // cell still compares, so that a watcher is never woken for what it has.
        let mut announced = Revision {
            updated_at_ms: snapshot.updated_at_ms,
            content_revision: snapshot.content_revision.clone(),
            stale: false,
        };
        self.revisions.send_if_modified(|latest| {
            // Read under the cell's lock, as a switch announces it: the cell ends up saying
            // what the flag says, whichever of the two goes last.
            announced.stale = self.is_stale();
            if latest.as_deref() == Some(&announced) {
                return false;
            }
            *latest = Some(Arc::new(announced));
            true
        });
        // After the swap, off the request path: free a merged tree (if pages were merged) and
        // the old snapshot (once its last reader lets go) and hand the memory back; have the new
        // large bodies compressed as the old ones were asked for (served uncompressed until then).
        let took = started.elapsed();
        if let Some(previous) = &previous {
            snapshot.compress_like(previous);
        }
        crate::background::detach(move || {
            drop(document);
            drop(previous);
            crate::memory::release_free_memory();
        });
        Ok(Published::NewRevision { revision, took })
    }

    /// Asks the upstream poller to fetch now (single-flight: at most once a second). Returns
    /// whether a fetch was requested; local files and the example are never stale.
    pub fn request_refresh(&self) -> bool {
        if !matches!(self.source, Source::Upstream { .. }) {
            return false;
        }
        let mut last = self.last_forced_poll.lock();
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
        if self.is_stale() {
            self.judge.notify_one();
        }
        let mut last = self.last_error.lock();
        if last.take().is_some() {
            tracing::info!(environment = %crate::keys::fingerprint(&self.client_key), "environment document updates recovered");
        }
    }

    /// Records a failure; logs only when the reason changes.
    pub fn mark_failure(&self, reason: String) {
        let mut last = self.last_error.lock();
        if last.as_deref() != Some(reason.as_str()) {
            let environment = crate::keys::fingerprint(&self.client_key);
            if self.snapshot().is_some() {
                tracing::warn!(%environment, %reason, "environment document update failed; serving the last good document");
            } else {
                tracing::warn!(%environment, %reason, "environment document update failed; no document yet: its requests get 503 until one arrives");
            }
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
        self.last_error.lock().clone()
    }
}

/// The snapshot a document makes for the environment `client_key`: what
/// [`EnvSlot::publish`] builds on its blocking thread before the swap (the benchmarks time it).
/// `bytes` are the document as served: the received bytes, or the merged tree serialised.
#[cfg(feature = "bench")]
pub fn build_snapshot(
    document: &Incoming,
    bytes: Bytes,
    client_key: &str,
    revision: u64,
) -> Result<Snapshot, Rejected> {
    build_with(document, bytes, client_key, revision, None)
}

/// [`build_snapshot`] with the document's content revision when publishing already has it.
fn build_with(
    document: &Incoming,
    bytes: Bytes,
    client_key: &str,
    revision: u64,
    known: Option<String>,
) -> Result<Snapshot, Rejected> {
    let received = match document {
        Incoming::Bytes(_) => Received::from_bytes_with(&bytes, Some(client_key), known)?,
        Incoming::Tree(doc) => Received::from_tree_with(doc, Some(client_key), known)?,
    };
    Snapshot::from_received(received, bytes, revision, true).map_err(Rejected::Engine)
}

/// A key a caller may present.
#[derive(Clone, Debug)]
pub struct KeyEntry {
    pub kind: KeyKind,
    pub env: Arc<EnvSlot>,
    /// This key's request-rate buckets (none when no limit is configured).
    pub limits: Arc<KeyLimits>,
    /// A discovered server key stops resolving at this time.
    pub expires_at: Option<SystemTime>,
    /// From the config file (never removed by discovery).
    pub configured: bool,
}

/// Which keys reach which environments: replaced whole when discovery changes it, so a reader
/// sees the old table or the new one, never half of a change.
#[derive(Clone, Debug, Default)]
struct KeyTable {
    keys: HashMap<String, KeyEntry>,
    envs: Vec<Arc<EnvSlot>>,
}

/// An environment as `GET {api_url}/proxy/config/` lists it, its server keys already filtered
/// to the usable ones (active, not expired).
#[derive(Clone, Debug, PartialEq)]
pub struct DiscoveredEnv {
    pub client_key: String,
    pub server_keys: Vec<(String, Option<SystemTime>)>,
}

/// What applying a discovery listing changed.
#[derive(Debug, Default)]
pub struct KeyChanges {
    pub added: Vec<Arc<EnvSlot>>,
    pub removed: Vec<Arc<EnvSlot>>,
    /// Environments whose set of server keys changed (added, rotated or expired keys).
    pub rotated: Vec<Arc<EnvSlot>>,
}

/// All environments and the keys that reach them.
#[derive(Debug, Default)]
pub struct Store {
    table: arc_swap::ArcSwap<KeyTable>,
    /// Serialises writers of `table` (readers never wait).
    writer: Mutex<()>,
    /// Requests a second per key: (Flagsmith API, OFREP); `None` = unlimited.
    rate_limits: (Option<u32>, Option<u32>),
    /// The proxy's shutdown: every environment's `stop` is a child of it.
    shutdown: CancellationToken,
    /// Requests whose key reached no environment (or that had none).
    pub unrecognised: crate::usage::Unrecognised,
    /// Wakes the staleness judge (`staleness.rs`); every environment holds a clone.
    judge: Arc<tokio::sync::Notify>,
}

impl Store {
    /// An empty store whose keys get these per-key rate limits (Flagsmith API, OFREP), and
    /// whose environments stop when `shutdown` is cancelled.
    pub fn new(
        flagsmith_rps: Option<u32>,
        ofrep_rps: Option<u32>,
        shutdown: CancellationToken,
    ) -> Store {
        Store {
            rate_limits: (flagsmith_rps, ofrep_rps),
            shutdown,
            ..Store::default()
        }
    }

    fn entry(&self, kind: KeyKind, env: &Arc<EnvSlot>, configured: bool) -> KeyEntry {
        KeyEntry {
            kind,
            env: env.clone(),
            limits: Arc::new(KeyLimits::new(self.rate_limits.0, self.rate_limits.1)),
            expires_at: None,
            configured,
        }
    }

    /// Adds a configured environment reachable with its client key and any server keys.
    pub fn add(&self, slot: EnvSlot, server_keys: &[String]) -> Arc<EnvSlot> {
        self.add_all(vec![(slot, server_keys.to_vec())])
            .pop()
            .expect("one environment added")
    }

    /// Adds configured environments, each reachable with its client key and server keys, in one
    /// change of the key table (adding a thousand one at a time would copy it a thousand times).
    pub fn add_all(&self, environments: Vec<(EnvSlot, Vec<String>)>) -> Vec<Arc<EnvSlot>> {
        let _writing = self.writer.lock();
        let mut table = KeyTable::clone(&self.table.load());
        let mut added = Vec::with_capacity(environments.len());
        for (mut slot, server_keys) in environments {
            slot.stop = self.shutdown.child_token();
            slot.judge = self.judge.clone();
            let slot = Arc::new(slot);
            table.keys.insert(
                slot.client_key.clone(),
                self.entry(KeyKind::Client, &slot, true),
            );
            for key in server_keys {
                let entry = self.entry(KeyKind::Server, &slot, true);
                table.keys.insert(key, entry);
            }
            table.envs.push(slot.clone());
            added.push(slot);
        }
        self.table.store(Arc::new(table));
        added
    }

    /// Makes the discovered environments exactly `listed`: new ones are added
    /// (polled from `Source::Upstream` with their first server key), server keys follow the
    /// listing (rotation), discovered environments no longer listed are removed. Configured
    /// environments and keys are never removed. Rate-limit buckets survive for kept keys.
    pub fn apply_discovery(&self, listed: &[DiscoveredEnv]) -> KeyChanges {
        let _writing = self.writer.lock();
        let current = self.table.load_full();
        let mut changes = KeyChanges::default();
        let mut table = KeyTable::default();
        for (key, entry) in &current.keys {
            if entry.configured {
                table.keys.insert(key.clone(), entry.clone());
            }
        }
        for env in &current.envs {
            let listed_here = listed.iter().any(|l| l.client_key == env.client_key);
            if env.discovered && !listed_here {
                changes.removed.push(env.clone());
            } else {
                table.envs.push(env.clone());
            }
        }
        for found in listed {
            let slot = match table.envs.iter().find(|e| e.client_key == found.client_key) {
                Some(slot) => slot.clone(),
                None => {
                    let first = found.server_keys.first().map(|(k, _)| k.clone());
                    let mut slot = EnvSlot::new(
                        found.client_key.clone(),
                        Source::Upstream {
                            server_key: first.unwrap_or_default(),
                        },
                    );
                    slot.discovered = true;
                    slot.stop = self.shutdown.child_token();
                    slot.judge = self.judge.clone();
                    let slot = Arc::new(slot);
                    table.envs.push(slot.clone());
                    changes.added.push(slot.clone());
                    slot
                }
            };
            let reuse = |key: &str, kind: KeyKind| match current.keys.get(key) {
                Some(old) if Arc::ptr_eq(&old.env, &slot) && old.kind == kind => {
                    Some(old.limits.clone())
                }
                _ => None,
            };
            table
                .keys
                .entry(found.client_key.clone())
                .or_insert_with(|| KeyEntry {
                    limits: reuse(&found.client_key, KeyKind::Client)
                        .unwrap_or_else(|| self.entry(KeyKind::Client, &slot, false).limits),
                    ..self.entry(KeyKind::Client, &slot, false)
                });
            for (key, expires_at) in &found.server_keys {
                if table.keys.get(key).is_some_and(|e| e.configured) {
                    continue;
                }
                let mut entry = self.entry(KeyKind::Server, &slot, false);
                if let Some(limits) = reuse(key, KeyKind::Server) {
                    entry.limits = limits;
                }
                entry.expires_at = *expires_at;
                table.keys.insert(key.clone(), entry);
            }
            if slot.discovered {
                let before = key_set(&current, &slot);
                let after = key_set(&table, &slot);
                if before != after && !changes.added.iter().any(|a| Arc::ptr_eq(a, &slot)) {
                    changes.rotated.push(slot.clone());
                }
                if let Some((key, _)) = found.server_keys.first() {
                    slot.set_fetch_key(key);
                }
            }
        }
        self.table.store(Arc::new(table));
        changes
    }

    /// The entry of a key, if it currently reaches an environment (a discovered server key
    /// only until it expires).
    pub fn lookup(&self, key: &str) -> Option<KeyEntry> {
        let table = self.table.load();
        let entry = table.keys.get(key)?;
        if entry.expires_at.is_some_and(|at| SystemTime::now() >= at) {
            return None;
        }
        Some(entry.clone())
    }

    /// The environments served now.
    pub fn environments(&self) -> Vec<Arc<EnvSlot>> {
        self.table.load().envs.clone()
    }

    /// Server keys that reach an environment.
    pub fn server_keys(&self, env: &EnvSlot) -> Vec<String> {
        let mut keys: Vec<String> = key_set(&self.table.load(), env).into_iter().collect();
        keys.sort();
        keys
    }

    /// Whether the proxy is shutting down (readiness answers 503 from then on).
    pub fn is_shutting_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }
}

fn key_set(table: &KeyTable, env: &EnvSlot) -> std::collections::BTreeSet<String> {
    table
        .keys
        .iter()
        .filter(|(_, e)| e.kind == KeyKind::Server && std::ptr::eq(e.env.as_ref(), env))
        .map(|(k, _)| k.clone())
        .collect()
}

#[cfg(test)]
mod tests;
