//! The fleet store: replicas sharing one Redis (`flagpole.fleet`). Each environment is polled
//! upstream by one replica for the whole fleet, the holder of its lease (`lease.rs`); the holder
//! writes each new document to Redis and announces it (`stored.rs`), and every other replica
//! loads it from there on the announcement (`notices.rs`) or its own periodic check
//! (`environment.rs`). A new replica serves what Redis holds before any upstream answer.
//!
//! Redis is a source like the upstream: what it holds is validated and compiled as an upstream
//! answer is, and its trouble never fails a request. While it does not answer, every replica
//! polls the upstream itself, as without a fleet (`reach.rs` logs it, `backoff.rs` spaces the
//! attempts to connect again); when it answers again, leases resume.
//!
//! Flag-set URL sources (`flags`) and the Unleash edge's feeds are shared the same way, by one
//! loop (`raw.rs`): one lease per URL (`flagsets/fleet.rs`) or per upstream and client token
//! (`unleash/fleet.rs`), the raw text and its ETag stored and announced (`stored.rs`), the lease
//! kept up as an environment's is (`tenure.rs`).
//!
//! Redis key names carry a digest of the client key (or URL, or token), never a key itself.
//!
//! One door: start-up calls [`join`], which makes the handle, serves what Redis holds and
//! starts the membership and the notices; every module here is private, and what the rest of
//! the server names is the short list re-exported below.

mod backoff;
mod discovery;
mod environment;
mod figures;
mod lease;
mod membership;
mod notices;
mod raw;
mod reach;
mod share;
mod stored;
mod tenure;
mod traced;

// What the rest of the server names of the fleet, besides `join`, `Joined` and the `Fleet`
// handle below; everything else stays inside. Flag-set URL sources and Unleash feeds say what
// their text is (`RawSource`, `RawSubject`, `Heard`) and run through `Fleet::run_raw`;
// `proxy_key` discovery shares its listing (`SharedListing`); the status page reads `Facts`.
// The poll loops run environments and Unleash feeds through traits of their own that the
// `Fleet` implements (`upstream::EnvironmentRunner`, `unleash::upstream::FeedRunner`).
pub(crate) use discovery::SharedListing;
pub(crate) use figures::Facts;
pub(crate) use raw::{Heard, RawSource, RawSubject};

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use redis::aio::ConnectionManagerConfig;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::shutdown::Shutdown;
use crate::sources::warm_start::WarmStart;
use crate::store::{EnvSlot, Source, Store};
use flagpole_config::FleetConfig;

/// Every Redis name Flagpole uses starts with this.
const PREFIX: &str = "flagpole";

/// How long one Redis command or connection attempt may take before Redis counts as down.
const TIMEOUT: Duration = Duration::from_secs(1);

/// How Redis is reached: one address, or the master Redis Sentinel names (asked again each time
/// a connection is made, so that after a failover the promoted replica is used).
enum Target {
    Direct(redis::Client),
    Sentinel(tokio::sync::Mutex<SentinelClient>),
}

/// One replica's handle on the shared store.
pub(crate) struct Fleet {
    target: Target,
    connection: Mutex<Option<traced::Connection>>,
    /// When a connection may be tried again (one attempt at a time; every environment asks).
    connecting: tokio::sync::Mutex<backoff::Backoff>,
    /// This replica's name in leases and the member list (random: a restart is a new member).
    replica: String,
    lease: Duration,
    reach: reach::Reach,
    /// Leases held and being taken here, and replicas alive in the fleet.
    shares: share::Shares,
    /// Per environment served here (by digest): woken when the store announces its document.
    notices: Mutex<HashMap<String, Arc<Notify>>>,
    figures: figures::Figures,
}

impl Fleet {
    /// The handle; nothing is connected yet. A URL the client refuses stops the start.
    fn new(config: &FleetConfig) -> Result<Arc<Fleet>, String> {
        let target = match &config.sentinel_master {
            Some(master) => Target::Sentinel(tokio::sync::Mutex::new(sentinel(config, master)?)),
            None => {
                Target::Direct(redis::Client::open(config.redis_url.as_str()).map_err(|e| {
                    format!(
                        "flagpole.fleet.redis_url {}: {e}",
                        flagpole_config::redact_redis_url(&config.redis_url)
                    )
                })?)
            }
        };
        crate::telemetry::fleet::start();
        let shown = match &config.sentinel_master {
            Some(master) => {
                let all: Vec<String> = config
                    .sentinels
                    .iter()
                    .map(|s| flagpole_config::redact_redis_url(s))
                    .collect();
                format!("master {master} of sentinels {}", all.join(", "))
            }
            None => flagpole_config::redact_redis_url(&config.redis_url),
        };
        Ok(Arc::new(Fleet {
            target,
            connection: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(backoff::Backoff::default()),
            replica: format!("{:016x}", rand::random::<u64>()),
            lease: config.lease,
            reach: reach::Reach::new(shown),
            shares: share::Shares::new(),
            notices: Mutex::new(HashMap::new()),
            figures: figures::Figures::default(),
        }))
    }

    /// A client for Redis: the one address, or the master the sentinels name now.
    async fn client(&self) -> redis::RedisResult<redis::Client> {
        match &self.target {
            Target::Direct(client) => Ok(client.clone()),
            Target::Sentinel(sentinel) => sentinel.lock().await.async_get_client().await,
        }
    }

    /// A connection (multiplexed, reconnecting by itself once made), or `None` while Redis
    /// cannot be reached; then callers carry on without it.
    async fn connection(&self) -> Option<traced::Connection> {
        if let Some(c) = self.connection.lock().clone() {
            return Some(c);
        }
        // Another task connecting, or a recent attempt failed: Redis counts as down for now.
        let mut backoff = self.connecting.try_lock().ok()?;
        if let Some(c) = self.connection.lock().clone() {
            return Some(c);
        }
        if !backoff.due(Instant::now()) {
            return None;
        }
        // One attempt each time: the waits between attempts are the backoff's. (A connection
        // lost later is dropped, so that connecting again goes through the backoff too.)
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(0);
        let made = tokio::time::timeout(4 * TIMEOUT, async {
            let client = self.client().await?;
            let manager = client.get_connection_manager_with_config(config).await?;
            redis::RedisResult::Ok(traced::Connection::new(
                manager,
                client.get_connection_info(),
            ))
        })
        .await;
        let why = match made {
            Ok(Ok(c)) => {
                backoff.succeeded();
                *self.connection.lock() = Some(c.clone());
                return Some(c);
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => "connecting timed out".to_owned(),
        };
        backoff.failed(Instant::now());
        self.reach.failed(&why);
        None
    }

    /// Records how a command went: Redis is reachable while commands succeed. A reply Redis
    /// gives as an error (a script's, say) still means it answered, except that a replica
    /// refusing writes is no longer the master (after a failover).
    fn answered<T>(&self, result: Result<T, &redis::RedisError>) {
        match result {
            Ok(_) => self.reach.answered(),
            Err(e)
                if e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly) =>
            {
                // The next connection is made afresh, after the backoff's wait (with Sentinel,
                // asking where the master is now), not retried by every command meanwhile.
                *self.connection.lock() = None;
                self.reach.failed(&e.to_string())
            }
            Err(e) => {
                tracing::warn!(error = %e, "the fleet's Redis refused a command");
                self.reach.answered()
            }
        }
    }

    fn reachable(&self) -> bool {
        self.reach.up()
    }

    /// What the status page shows of the fleet.
    pub(crate) fn facts(&self) -> Facts {
        let mut facts = Facts {
            store_reachable: self.reachable(),
            replicas: self.shares.replicas(),
            leases_held: self.shares.held(),
            documents_from_store: 0,
            documents_from_upstream: 0,
            upstream_fetches_saved: 0,
            store_values_refused: 0,
        };
        self.figures.fill(&mut facts);
        facts
    }

    /// Subjects polled for the fleet served here, environments and flag-set URLs (each
    /// replica's share of the leases is counted from them).
    fn subjects(&self) -> usize {
        self.notices.lock().len()
    }

    /// A subject (an environment, a flag-set URL) served here from now on: its notice to wait
    /// on.
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

    /// Polls (or follows the fleet's holder of) one raw text until `stop`: `source` says how
    /// to poll and serve it, `subject` what it is (its lease and Redis names).
    pub(crate) async fn run_raw<S: RawSource>(
        self: Arc<Self>,
        source: S,
        subject: RawSubject,
        stop: CancellationToken,
    ) {
        raw::run(source, subject.tenure(), self, stop).await;
    }
}

/// A replica that has joined the fleet.
pub(crate) struct Joined {
    /// The handle on the shared store: an environment's runner for the poll loop
    /// (`upstream::EnvironmentRunner`), the raw texts' loop ([`Fleet::run_raw`]), the shared
    /// `proxy_key` listing ([`SharedListing`]), the status page's [`Fleet::facts`].
    pub fleet: Arc<Fleet>,
    /// The client keys of the environments served from Redis at start (for the banner).
    pub from_store: HashSet<String>,
}

/// The one door into the fleet (`flagpole.fleet`; `None`: no fleet, nothing done). What Redis
/// holds for the upstream environments is served at once (newer than a warm-start copy, or where
/// there is none; before any upstream answer, whether or not the upstream answers); then this
/// replica's membership and the change notices run, on the shutdown's tracker, until shutdown.
/// A Redis address the client refuses stops the start.
pub(crate) async fn join(
    settings: Option<&FleetConfig>,
    store: &Store,
    warm: Option<&WarmStart>,
    shutdown: &Shutdown,
) -> Result<Option<Joined>, String> {
    let Some(settings) = settings else {
        return Ok(None);
    };
    let fleet = Fleet::new(settings)?;
    let polled = store
        .environments()
        .iter()
        .filter(|slot| matches!(slot.source, Source::Upstream { .. }))
        .cloned()
        .collect();
    let from_store = start_from_store(&fleet, polled, warm).await;
    shutdown.spawn(membership::run(fleet.clone(), shutdown.requested.clone()));
    shutdown.spawn(notices::run(fleet.clone(), shutdown.requested.clone()));
    Ok(Some(Joined { fleet, from_store }))
}

/// The Sentinel client for `master`: the sentinels as configured; the master reached with the
/// user, password, database and TLS of the first.
fn sentinel(config: &FleetConfig, master: &str) -> Result<SentinelClient, String> {
    use redis::IntoConnectionInfo;
    let shown = |s: &str| flagpole_config::redact_redis_url(s);
    let first = config
        .sentinels
        .first()
        .ok_or("flagpole.fleet.sentinels: empty")?;
    let info = first
        .as_str()
        .into_connection_info()
        .map_err(|e| format!("flagpole.fleet.sentinels {}: {e}", shown(first)))?;
    let mut node = SentinelNodeConnectionInfo::default()
        .set_redis_connection_info(info.redis_settings().clone());
    if matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. }) {
        node = node.set_tls_mode(redis::TlsMode::Secure);
    }
    SentinelClient::build(
        config.sentinels.iter().map(String::as_str).collect(),
        master,
        Some(node),
        SentinelServerType::Master,
    )
    .map_err(|e| {
        let all: Vec<String> = config.sentinels.iter().map(|s| shown(s)).collect();
        format!("flagpole.fleet.sentinels {}: {e}", all.join(", "))
    })
}

/// Cold start: every environment Redis holds a document for is served from it at once (before
/// any upstream answer; readiness counts them as they load). Redis not answering: nothing.
/// Returns the client keys of the environments now served from Redis (for the banner).
async fn start_from_store(
    fleet: &Arc<Fleet>,
    slots: Vec<Arc<EnvSlot>>,
    warm: Option<&WarmStart>,
) -> HashSet<String> {
    let loaded_here = Mutex::new(HashSet::new());
    let Some(conn) = fleet.connection().await else {
        return loaded_here.into_inner();
    };
    crate::sources::startup::bounded(slots.into_iter().map(|slot| {
        let mut conn = conn.clone();
        let loaded_here = &loaded_here;
        async move {
            let names = Names::environment(&slot.client_key);
            let loaded = stored::load(&mut conn, &names, &slot, None, &fleet.figures, warm).await;
            fleet.answered(loaded.as_ref());
            if matches!(loaded, Ok(stored::Loaded::New)) {
                loaded_here.lock().insert(slot.client_key.clone());
            }
        }
    }))
    .await;
    loaded_here.into_inner()
}

/// The digest a key is known by in Redis: SHA-256 of it, 128 bits in hex.
fn environment_id(key: &str) -> String {
    digest(key.as_bytes())
}

/// SHA-256 of `bytes`, 128 bits in hex: what Redis knows a key, a URL or a text by.
fn digest(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The Redis names of one thing polled upstream for the fleet: an environment (by the digest of
/// its client key), the `proxy_key` listing (by the digest of the proxy key) or a flag-set URL
/// (by the digest of the URL) or an Unleash feed (by the digest of its upstream and client
/// token). Its document (a
/// hash), its lease, its fencing counter; `id` is what the notice of a new document carries.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Names {
    id: String,
    document: String,
    lease: String,
    fence: String,
}

impl Names {
    fn environment(client_key: &str) -> Names {
        Names::of("env", environment_id(client_key))
    }

    fn discovery(proxy_key: &str) -> Names {
        Names::of("discovery", environment_id(proxy_key))
    }

    /// A flag-set URL source, by the digest of its URL (which may carry a token).
    fn flag_source(uri: &str) -> Names {
        Names::of("flags", environment_id(uri))
    }

    /// An Unleash client token's feed from `upstream`, by the digest of both (never the token).
    fn unleash_feed(upstream: &str, token: &str) -> Names {
        let both = format!("{}\n{token}", upstream.trim_end_matches('/'));
        Names::of("unleash", digest(both.as_bytes()))
    }

    fn of(kind: &str, id: String) -> Names {
        Names {
            document: format!("{PREFIX}:{kind}:{id}:document"),
            lease: format!("{PREFIX}:{kind}:{id}:lease"),
            fence: format!("{PREFIX}:{kind}:{id}:fence"),
            id,
        }
    }
}

/// Lua that names a script's answer codes with the values the Rust side reads them by, so that
/// both sides say what a number means and cannot disagree on it: `local FREE, HELD = 0, 1`.
fn lua_codes<T: std::fmt::Display>(codes: &[(&str, T)]) -> String {
    let names: Vec<&str> = codes.iter().map(|(name, _)| *name).collect();
    let values: Vec<String> = codes.iter().map(|(_, value)| value.to_string()).collect();
    format!("local {} = {}\n", names.join(", "), values.join(", "))
}

/// The channel new documents are announced on; the member list.
const CHANNEL: &str = "flagpole:documents";
const MEMBERS: &str = "flagpole:replicas";

#[cfg(test)]
mod tests {
    #[test]
    fn a_script_names_its_codes_with_the_rust_values() {
        assert_eq!(
            super::lua_codes(&[("FREE", 0), ("HELD", 1)]),
            "local FREE, HELD = 0, 1\n"
        );
    }

    #[test]
    fn redis_names_carry_a_digest_never_the_key() {
        let id = super::environment_id("ser.secret_server_side_key");
        assert_eq!(id.len(), 32);
        let names = super::Names::environment("ser.secret_server_side_key");
        assert_eq!(names.document, format!("flagpole:env:{id}:document"));
        let listing = super::Names::discovery("secret_proxy_key");
        let flags = super::Names::flag_source("https://u:secret@flags.test/f.json?token=secret");
        let feed = super::Names::unleash_feed("https://unleash.test/api/", "*:development.secret");
        assert_eq!(
            feed,
            super::Names::unleash_feed("https://unleash.test/api", "*:development.secret")
        );
        assert_ne!(
            feed,
            super::Names::unleash_feed("https://unleash.test/api", "*:production.secret")
        );
        for name in [
            &feed.document,
            &feed.lease,
            &flags.document,
            &flags.lease,
            &names.document,
            &names.lease,
            &names.fence,
            &listing.document,
            &listing.lease,
        ] {
            assert!(!name.contains("secret"), "{name}");
        }
        assert_ne!(listing.lease, names.lease);
        assert_eq!(id, super::environment_id("ser.secret_server_side_key"));
        assert_ne!(id, super::environment_id("ser.secret_server_side_kez"));
    }
}
