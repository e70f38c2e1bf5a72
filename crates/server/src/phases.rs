//! `serve`'s start-up phases, in the order `serve` (the crate root) runs them: the ports bound,
//! the warm-start directory opened, the first documents loaded, the fleet joined, polling
//! started, the front doors built, then serving until the drain. Each phase is a function with
//! what it needs as arguments, so `serve` reads as the list of phases.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::Semaphore;

use crate::shutdown::Shutdown;
use crate::sources::{local_file, upstream, warm_start::WarmStart};
use flagpole_config::Config;
/// The bundled example environment, served when nothing is configured or with `--example`.
pub(crate) const EXAMPLE_DOCUMENT: &str = include_str!("../../../examples/environment.json");
const EXAMPLE_SERVER_KEY: &str = "ser.example_server_key";

use crate::store::{EnvSlot, Source, Store};
use crate::{
    analytics, api, background, flagd, flagsets, received, server, shadow, shutdown, sources,
    streams, unleash,
};

/// Every port the proxy listens on, bound and not yet accepting.
pub(crate) struct Ports {
    pub(crate) main: tokio::net::TcpListener,
    pub(crate) address: std::net::SocketAddr,
    pub(crate) tls: Option<Arc<server::tls::Tls>>,
    pub(crate) plain: Option<tokio::net::TcpListener>,
    pub(crate) grpc: Option<tokio::net::TcpListener>,
    pub(crate) sync: Option<tokio::net::TcpListener>,
}

/// Binds every port at once, so orchestrators see a live process while documents load (a
/// certificate that cannot be used has stopped the start in the preflight).
pub(crate) async fn listen(
    config: &Config,
    tls: Option<Arc<server::tls::Tls>>,
) -> Result<Ports, String> {
    let main = bind(&config.server.host, config.server.port).await?;
    let address = main.local_addr().map_err(|e| e.to_string())?;
    let grpc = match config.server.grpc_port {
        Some(port) => Some(
            bind(&config.server.host, port)
                .await
                .map_err(|e| format!("{e} (flagpole.grpc.port)"))?,
        ),
        None => None,
    };
    let sync = match config.server.sync_port {
        Some(port) => Some(
            bind(&config.server.host, port)
                .await
                .map_err(|e| format!("{e} (flagpole.grpc.sync_port)"))?,
        ),
        None => None,
    };
    let plain = match config.server.tls.as_ref().and_then(|t| t.plain_port) {
        Some(port) => Some(bind(&config.server.host, port).await?),
        None => None,
    };
    Ok(Ports {
        main,
        address,
        tls,
        plain,
        grpc,
        sync,
    })
}

/// The warm-start directory, when configured (created if missing).
pub(crate) fn warm_start(config: &Config) -> Result<Option<Arc<WarmStart>>, String> {
    let Some(dir) = &config.upstream.snapshot_dir else {
        return Ok(None);
    };
    let warm = WarmStart::new(dir.clone())
        .map_err(|e| format!("flagpole.snapshot_dir {}: {e}", dir.display()))?;
    Ok(Some(Arc::new(warm)))
}

/// The first documents: the bundled example, local files and warm-start copies, loaded in
/// parallel, bounded by the cores (readiness counts them as they arrive); then one watcher
/// follows every file. Compressing a large body a request asked for waits until they are all
/// loaded (served uncompressed until then).
pub(crate) async fn load_documents(
    plan: StartPlan,
    warm: Option<Arc<WarmStart>>,
    shutdown: &Shutdown,
) -> Result<(), String> {
    let deferred = background::hold_deferred().await;
    let mut files: Vec<sources::file_watcher::WatchedFile> = Vec::new();
    let mut loads = Vec::new();
    for (slot, source) in plan {
        match source {
            Plan::Embedded => {
                let example = bytes::Bytes::from_static(EXAMPLE_DOCUMENT.as_bytes());
                slot.publish(received::Incoming::Bytes(example))
                    .await
                    .map_err(|e| format!("the bundled example: {}", e.message(&slot.client_key)))?;
                slot.mark_success(SystemTime::now());
            }
            Plan::File(path, bytes) => {
                files.push((slot.clone(), path.clone()));
                loads.push(StartLoad::File(slot, path, bytes));
            }
            Plan::Upstream => {
                if warm.is_some() {
                    loads.push(StartLoad::Warm(slot));
                }
            }
        }
    }
    // A file given to serve that is not a document is a mistake: nothing starts (the first
    // refusal, naming the file and what is wrong in it). Later changes to it are only refused.
    let refused = parking_lot::Mutex::new(None);
    sources::startup::bounded(loads.into_iter().map(|load| {
        let (warm, refused) = (warm.clone(), &refused);
        async move {
            match load {
                StartLoad::File(slot, path, bytes) => {
                    if let Err(reason) = local_file::publish(&slot, &path, bytes).await {
                        refused.lock().get_or_insert(reason);
                    }
                }
                StartLoad::Warm(slot) => {
                    if let Some(warm) = warm {
                        warm.restore(&slot).await;
                    }
                }
            }
        }
    }))
    .await;
    if let Some(reason) = refused.into_inner() {
        return Err(reason);
    }
    drop(deferred);
    shutdown.spawn(sources::file_watcher::watch(
        files,
        shutdown.requested.clone(),
    ));
    Ok(())
}

/// In a fleet (`flagpole.fleet`), the fleet joined through its one door (what Redis holds served
/// at once, then membership and change notices until shutdown). With the fleet, the client keys
/// of the environments served from Redis.
pub(crate) async fn start_fleet(
    config: &Config,
    store: &Store,
    warm: Option<&WarmStart>,
    shutdown: &Shutdown,
) -> Result<(Option<Arc<sources::fleet::Fleet>>, HashSet<String>), String> {
    let joined = sources::fleet::join(config.fleet.as_ref(), store, warm, shutdown).await?;
    Ok(match joined {
        Some(joined) => (Some(joined.fleet), joined.from_store),
        None => (None, HashSet::new()),
    })
}

/// A poller per upstream environment (in a fleet, one that polls only while it holds the
/// environment's lease). The HTTP client (TLS roots and all) only when something
/// is polled or discovered: an offline proxy stays smaller without it.
pub(crate) fn start_polling(
    config: &Arc<Config>,
    store: &Store,
    warm: Option<Arc<WarmStart>>,
    fleet: Option<Arc<sources::fleet::Fleet>>,
    shutdown: &Shutdown,
) -> Option<upstream::Pollers> {
    let polled = store
        .environments()
        .iter()
        .any(|slot| matches!(slot.source, Source::Upstream { .. }));
    if !polled && config.environments.proxy_key.is_none() {
        return None;
    }
    let pollers = upstream::Pollers {
        client: upstream::client(),
        config: config.clone(),
        limit: Arc::new(Semaphore::new(config.upstream.max_concurrent_fetches)),
        warm,
        tasks: shutdown.tasks.clone(),
        runner: fleet.map(|fleet| -> Arc<dyn upstream::EnvironmentRunner> { fleet }),
    };
    for slot in store.environments() {
        pollers.spawn(slot.clone());
    }
    Some(pollers)
}

/// What the front doors share: change streams, `proxy_key` discovery (its first listing
/// awaited, bounded by the poll timeout, so the environments it names are known before requests
/// are served) and usage reports, flag analytics and their forwarder, shadow verification.
pub(crate) async fn front_doors(
    config: &Arc<Config>,
    store: &Arc<Store>,
    pollers: Option<&upstream::Pollers>,
    fleet: Option<Arc<sources::fleet::Fleet>>,
    flag_sets: Arc<flagsets::FlagSets>,
    shutdown: &Shutdown,
) -> api::AppState {
    let streams = Arc::new(streams::Streams::new(config, store));
    if let (Some(proxy_key), Some(pollers)) = (&config.environments.proxy_key, pollers) {
        let mut discovery = sources::discovery::Discovery::new(
            proxy_key.clone(),
            store.clone(),
            streams.clone(),
            pollers.clone(),
            fleet.clone(),
        );
        discovery.sync_once().await;
        shutdown.spawn(discovery.run(shutdown.requested.clone()));
        shutdown.spawn(sources::usage_report::run(
            store.clone(),
            pollers.client.clone(),
            config.clone(),
            proxy_key.clone(),
            shutdown.drained.clone(),
        ));
    }
    let analytics = Arc::new(analytics::Analytics::new(config.analytics.clone()));
    if config.analytics.enabled {
        // Offline environments are counted all the same; only a proxy that polls needs the client.
        let upstream = pollers.map(|p| analytics::forward::Upstream {
            client: p.client.clone(),
            api_url: config.upstream.api_url.clone(),
            timeout: config.upstream.poll_timeout,
        });
        shutdown.spawn(analytics::forward::run(
            analytics.clone(),
            upstream,
            shutdown.drained.clone(),
        ));
    }
    let shadow = (config.shadow.sample_rate > 0.0)
        .then(|| {
            let client = pollers.map_or_else(upstream::client, |p| p.client.clone());
            shadow::Shadow::start(config, client, shutdown)
        })
        .flatten();
    api::AppState {
        store: store.clone(),
        config: config.clone(),
        streams,
        analytics,
        shadow,
        fleet,
        flag_sets,
        unleash: None,
    }
}

/// Serves until a signal, then drains: the listeners, then the background work's last steps,
/// all within one budget (`shutdown_timeout_seconds`).
pub(crate) async fn run(
    ports: Ports,
    state: api::AppState,
    unleash: Option<Arc<unleash::Unleash>>,
    config: &Arc<Config>,
    shutdown: &Shutdown,
) {
    // The OpenFeature doors (OFREP, flagd) answer Unleash tokens too.
    let state = api::AppState {
        unleash: unleash.clone(),
        ..state
    };
    let flagd_ports = [
        (
            ports.grpc,
            flagd::listener::Services::All,
            "flagd (gRPC) listening",
        ),
        (
            ports.sync,
            flagd::listener::Services::SyncOnly,
            "flagd sync listening",
        ),
    ];
    let flagd_doors: Vec<_> = flagd_ports
        .into_iter()
        .filter_map(|(listener, services, what)| {
            let listener = listener?;
            if let Ok(address) = listener.local_addr() {
                tracing::info!(%address, "{what}");
            }
            let flagd = flagd::Flagd::new(
                state.clone(),
                shutdown.requested.clone(),
                shutdown.tasks.clone(),
            );
            Some(shutdown.tasks.spawn(flagd::listener::serve(
                listener,
                flagd,
                services,
                config.clone(),
                shutdown.requested.clone(),
            )))
        })
        .collect();
    let api = api::Api::new(state).with_unleash(unleash);
    shutdown.spawn(shutdown::request_on_signal(shutdown.requested.clone()));
    let listeners = server::Listeners {
        main: ports.main,
        tls: ports.tls,
        plain: ports.plain,
    };
    let deadline = server::serve(listeners, api, config, shutdown.requested.clone()).await;
    for door in flagd_doors {
        let _ = tokio::time::timeout_at(deadline.into(), door).await;
    }
    shutdown.finish(deadline).await;
}

pub(crate) async fn bind(host: &str, port: u16) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| format!("cannot listen on {host}:{port}: {e}"))
}

pub(crate) enum Plan {
    Embedded,
    /// A local file, and its bytes as read at start.
    File(PathBuf, bytes::Bytes),
    Upstream,
}

/// What start-up loads in parallel before the first polls.
pub(crate) enum StartLoad {
    File(Arc<EnvSlot>, PathBuf, bytes::Bytes),
    Warm(Arc<EnvSlot>),
}

/// Each environment and how its first document arrives.
pub(crate) type StartPlan = Vec<(Arc<EnvSlot>, Plan)>;

/// Environments from the config: local files first (their client key is their `api_key`), then
/// upstream pairs not covered by a file; the bundled example when the start plan says so.
pub(crate) fn build_store(
    config: &Config,
    documents: Vec<sources::startup::DocumentFile>,
    example: bool,
    shutdown: &Shutdown,
) -> Result<(Store, StartPlan), String> {
    let store = Store::new(
        config.limits.rate_limit_per_key_rps,
        config.ofrep.rate_limit_per_key_rps,
        shutdown.requested.clone(),
    );
    let mut plan = Vec::new();
    let mut server_keys: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for pair in &config.environments.key_pairs {
        server_keys
            .entry(pair.client_side_key.as_str())
            .or_default()
            .push(pair.server_side_key.clone());
    }
    let mut covered = std::collections::HashSet::new();
    let mut sources = Vec::new();
    let mut adding = Vec::new();
    for file in documents {
        let keys = server_keys
            .get(file.api_key.as_str())
            .cloned()
            .unwrap_or_default();
        covered.insert(file.api_key.clone());
        adding.push((
            EnvSlot::new(file.api_key, Source::File(file.path.clone())),
            keys,
        ));
        sources.push(Plan::File(file.path, file.bytes));
    }
    for (client_key, keys) in &server_keys {
        if covered.contains(*client_key) {
            continue;
        }
        let source = Source::Upstream {
            server_key: keys[0].clone(),
        };
        adding.push((EnvSlot::new((*client_key).to_owned(), source), keys.clone()));
        sources.push(Plan::Upstream);
    }
    // One change of the key table for all of them.
    plan.extend(store.add_all(adding).into_iter().zip(sources));
    if example {
        let doc: serde_json::Value =
            serde_json::from_str(EXAMPLE_DOCUMENT).expect("the bundled example is valid JSON");
        let client_key = doc["api_key"]
            .as_str()
            .expect("example has an api_key")
            .to_owned();
        let slot = store.add(
            EnvSlot::new(client_key, Source::Embedded),
            &[EXAMPLE_SERVER_KEY.to_owned()],
        );
        plan.push((slot, Plan::Embedded));
    }
    Ok((store, plan))
}
