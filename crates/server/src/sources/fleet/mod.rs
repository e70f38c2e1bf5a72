//! The fleet store: replicas sharing one Redis (`flagpole.fleet`). Each environment is polled
//! upstream by one replica for the whole fleet, the holder of its lease (`lease.rs`); the holder
//! writes each new document to Redis and announces it (`stored.rs`), and every other replica
//! loads it from there on the announcement (`notices.rs`) or its own periodic check
//! (`environment.rs`). A new replica serves what Redis holds before any upstream answer.
//!
//! Redis is a source like the upstream: what it holds is validated and compiled as an upstream
//! answer is, and its trouble never fails a request. While it does not answer, every replica
//! polls the upstream itself, as without a fleet; when it answers again, leases resume.
//!
//! Redis key names carry a digest of the client key, never a key itself.

pub(crate) mod environment;
pub(crate) mod lease;
pub(crate) mod membership;
pub(crate) mod notices;
pub(crate) mod share;
pub(crate) mod stored;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use crate::config::FleetConfig;

/// Every Redis name Flagpole uses starts with this.
const PREFIX: &str = "flagpole";

/// How long one Redis command or connection attempt may take before Redis counts as down.
const TIMEOUT: Duration = Duration::from_secs(1);

/// A failed connection is tried again at most this often (every environment asks for it).
const RECONNECT_EVERY: Duration = Duration::from_secs(1);

/// One replica's handle on the shared store.
pub(crate) struct Fleet {
    client: redis::Client,
    connection: Mutex<Option<ConnectionManager>>,
    /// When the last connection attempt started (one at a time).
    connecting: tokio::sync::Mutex<Option<Instant>>,
    /// This replica's name in leases and the member list (random: a restart is a new member).
    pub replica: String,
    pub lease: Duration,
    reachable: AtomicBool,
    /// Leases held and being taken here, and replicas alive in the fleet.
    shares: share::Shares,
    /// Per environment served here (by digest): woken when the store announces its document.
    notices: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Fleet {
    /// The handle; nothing is connected yet. A URL the client refuses stops the start.
    pub(crate) fn new(config: &FleetConfig) -> Result<Arc<Fleet>, String> {
        let client = redis::Client::open(config.redis_url.as_str()).map_err(|e| {
            format!(
                "flagpole.fleet.redis_url {}: {e}",
                crate::config::redact_redis_url(&config.redis_url)
            )
        })?;
        crate::telemetry::fleet::store_reachable(false);
        crate::telemetry::fleet::leases_held(0);
        Ok(Arc::new(Fleet {
            client,
            connection: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(None),
            replica: format!("{:016x}", rand::random::<u64>()),
            lease: config.lease,
            reachable: AtomicBool::new(false),
            shares: share::Shares::new(),
            notices: Mutex::new(HashMap::new()),
        }))
    }

    /// A connection (multiplexed, reconnecting by itself once made), or `None` while Redis
    /// cannot be reached; then callers carry on without it.
    pub(crate) async fn connection(&self) -> Option<ConnectionManager> {
        if let Some(c) = self.connection.lock().clone() {
            return Some(c);
        }
        // Another task connecting, or a recent attempt failed: Redis counts as down for now.
        let mut last = self.connecting.try_lock().ok()?;
        if let Some(c) = self.connection.lock().clone() {
            return Some(c);
        }
        if last.is_some_and(|t| t.elapsed() < RECONNECT_EVERY) {
            return None;
        }
        *last = Some(Instant::now());
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(RECONNECT_EVERY);
        let made = tokio::time::timeout(
            2 * TIMEOUT,
            self.client.get_connection_manager_with_config(config),
        )
        .await;
        match made {
            Ok(Ok(c)) => {
                *self.connection.lock() = Some(c.clone());
                Some(c)
            }
            Ok(Err(e)) => {
                self.answered::<()>(Err(&e));
                None
            }
            Err(_) => {
                self.set_reachable(false, "connecting timed out");
                None
            }
        }
    }

    /// Records how a command went: Redis is reachable while commands succeed. A reply Redis
    /// gives as an error (a script's, say) still means it answered.
    pub(crate) fn answered<T>(&self, result: Result<T, &redis::RedisError>) {
        match result {
            Ok(_) => self.set_reachable(true, ""),
            Err(e)
                if e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal() =>
            {
                self.set_reachable(false, &e.to_string())
            }
            Err(e) => {
                tracing::warn!(error = %e, "the fleet's Redis refused a command");
                self.set_reachable(true, "")
            }
        }
    }

    fn set_reachable(&self, up: bool, why: &str) {
        if self.reachable.swap(up, Ordering::AcqRel) != up {
            crate::telemetry::fleet::store_reachable(up);
            if up {
                tracing::info!("the fleet's Redis answers: environments polled once for the fleet");
            } else {
                tracing::warn!(reason = %why, "the fleet's Redis does not answer: this replica polls upstream itself until it does");
            }
        }
    }

    pub(crate) fn reachable(&self) -> bool {
        self.reachable.load(Ordering::Acquire)
    }

    /// Environments served here (each replica's share of the leases is counted from them).
    fn environments(&self) -> usize {
        self.notices.lock().len()
    }

    /// An environment served here from now on: its notice to wait on.
    fn register(&self, id: &str) -> Arc<Notify> {
        self.notices
            .lock()
            .entry(id.to_owned())
            .or_insert_with(|| Arc::new(Notify::new()))
            .clone()
    }

    fn unregister(&self, id: &str) {
        self.notices.lock().remove(id);
    }
}

/// Cold start: every environment Redis holds a document for is served from it at once (before
/// any upstream answer; readiness counts them as they load). Redis not answering: nothing.
pub(crate) async fn start_from_store(fleet: &Arc<Fleet>, slots: Vec<Arc<crate::store::EnvSlot>>) {
    let Some(conn) = fleet.connection().await else {
        return;
    };
    crate::sources::startup::bounded(slots.into_iter().map(|slot| {
        let mut conn = conn.clone();
        async move {
            let id = environment_id(&slot.client_key);
            let loaded = stored::load(&mut conn, &id, &slot, None).await;
            fleet.answered(loaded.as_ref());
        }
    }))
    .await;
}

/// The digest an environment is known by in Redis: SHA-256 of its client key, 128 bits in hex.
pub(crate) fn environment_id(client_key: &str) -> String {
    let digest = Sha256::digest(client_key.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Redis names: an environment's document (a hash), its lease, its fencing counter; the
/// channel new documents are announced on; the member list.
fn document_key(id: &str) -> String {
    format!("{PREFIX}:env:{id}:document")
}

fn lease_key(id: &str) -> String {
    format!("{PREFIX}:env:{id}:lease")
}

fn fence_key(id: &str) -> String {
    format!("{PREFIX}:env:{id}:fence")
}

const CHANNEL: &str = "flagpole:documents";
const MEMBERS: &str = "flagpole:replicas";

#[cfg(test)]
mod tests {
    #[test]
    fn redis_names_carry_a_digest_never_the_key() {
        let id = super::environment_id("ser.secret_server_side_key");
        assert_eq!(id.len(), 32);
        assert!(!super::document_key(&id).contains("secret"));
        assert_eq!(id, super::environment_id("ser.secret_server_side_key"));
        assert_ne!(id, super::environment_id("ser.secret_server_side_kez"));
    }
}
