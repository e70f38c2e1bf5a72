//! Flagpole's proxy: a drop-in Flagsmith Edge Proxy built on immutable, pre-serialised
//! snapshots. Flow: a source (upstream poll, local file, warm-start file) yields a document →
//! the engine compiles it → a [`Snapshot`](snapshot::Snapshot) pre-serialises every
//! caller-independent response → the [`Store`](store::Store) swaps it in atomically → a request
//! looks up its key, evaluates only what depends on the identity, and writes bytes.

// Layers, each depending only on those listed before it (ARCHITECTURE.md, "Invariants"):
// foundations …
pub mod background;
pub mod body;
pub mod canonical;
pub mod canonical_text;
pub mod config;
pub mod json;
pub mod keys;
pub mod logging;
pub mod memory;
pub mod rate_limit;
pub mod received;
pub mod usage;
// … one environment at one revision, then all of them …
pub mod snapshot;
pub mod store;
// … what feeds and watches the store …
pub mod analytics;
pub mod shadow;
pub mod shutdown;
pub mod sources;
pub mod streams;
pub mod telemetry;
// … the front doors, and the listener they are served on.
pub mod api;
pub mod server;
// … what `serve` (and `flagpole check`) checks before it listens, and what `serve` prints once
// it listens.
pub mod banner;
pub mod preflight;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::Semaphore;

use crate::config::Config;
use crate::shutdown::Shutdown;
use crate::sources::{local_file, upstream, warm_start::WarmStart};
use crate::store::{EnvSlot, Source, Store};

/// The bundled example environment, served when nothing is configured or with `--example`.
pub const EXAMPLE_DOCUMENT: &str = include_str!("../../../examples/environment.json");
pub const EXAMPLE_SERVER_KEY: &str = "ser.example_server_key";

pub use config::ServeOptions;

/// Runs the proxy until SIGINT/SIGTERM. Errors are startup errors (bad config, port in use).
pub async fn serve(options: ServeOptions) -> Result<(), String> {
    let env: Vec<(String, String)> = std::env::vars().collect();
    let loaded = config::load(options.config.as_deref(), &env).map_err(|e| e.to_string())?;
    let logs = &loaded.config.logging;
    logging::init(&logs.level, logs.json, logs.access_log);
    if let Some(source) = &loaded.sources.file {
        tracing::info!(file = %source.display(), "configuration loaded");
    }
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    let startup = config::start(loaded, &options).map_err(|e| e.to_string())?;
    let config = Arc::new(startup.config);
    telemetry::init(&config);

    let shutdown = Shutdown::new();
    let example = startup.plan.example != config::Example::No;
    // What would stop the start is found before anything listens (as `flagpole check` finds it).
    let ready = preflight::run(&config)?;
    let (store, plan) = build_store(&config, ready.documents, example, &shutdown)?;
    let store = Arc::new(store);
    let tls = ready.tls.map(Arc::new);
    // Bind at once, so orchestrators see a live process while documents load.
    let listener = bind(&config.server.host, config.server.port).await?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let grpc_listener = match config.server.grpc_port {
        Some(port) => Some(
            bind(&config.server.host, port)
                .await
                .map_err(|e| format!("{e} (flagpole.grpc.port)"))?,
        ),
        None => None,
    };
    let plain = match config.server.tls.as_ref().and_then(|t| t.plain_port) {
        Some(port) => Some(bind(&config.server.host, port).await?),
        None => None,
    };
    if let Some(tls) = &tls {
        shutdown.spawn(tls.clone().watch(shutdown.requested.clone()));
    }
    banner::print(
        &store,
        address,
        tls.is_some(),
        &startup.plan,
        config.logging.json,
    );

    let warm = match &config.upstream.snapshot_dir {
        Some(dir) => {
            Some(Arc::new(WarmStart::new(dir.clone()).map_err(|e| {
                format!("flagpole.snapshot_dir {}: {e}", dir.display())
            })?))
        }
        None => None,
    };
    // Documents are loaded in parallel, bounded by the cores (readiness counts them as they
    // arrive); then one watcher follows every file. Compressing a large body a request asked
    // for waits until they are all loaded (served uncompressed until then).
    let deferred = background::hold_deferred().await;
    let mut files = Vec::new();
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
    sources::startup::bounded(loads.into_iter().map(|load| {
        let warm = warm.clone();
        async move {
            match load {
                StartLoad::File(slot, path, bytes) => {
                    local_file::publish(&slot, &path, bytes).await
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
    // In a fleet, what Redis holds is served at once (newer than a warm-start copy, or where
    // there is none), whether or not the upstream answers.
    let fleet = match &config.fleet {
        Some(fleet) => Some(sources::fleet::Fleet::new(fleet)?),
        None => None,
    };
    if let Some(fleet) = &fleet {
        let polled = store
            .environments()
            .iter()
            .filter(|slot| matches!(slot.source, Source::Upstream { .. }))
            .cloned()
            .collect();
        sources::fleet::start_from_store(fleet, polled).await;
        shutdown.spawn(sources::fleet::membership::run(
            fleet.clone(),
            shutdown.requested.clone(),
        ));
        shutdown.spawn(sources::fleet::notices::run(
            fleet.clone(),
            shutdown.requested.clone(),
        ));
    }
    drop(deferred);
    shutdown.spawn(sources::file_watcher::watch(
        files,
        shutdown.requested.clone(),
    ));
    // The HTTP client (TLS roots and all) only when something is polled: an offline proxy
    // stays smaller without it.
    let polled = store
        .environments()
        .iter()
        .any(|slot| matches!(slot.source, Source::Upstream { .. }));
    let client = (polled || config.environments.proxy_key.is_some()).then(upstream::client);
    let pollers = client.map(|client| upstream::Pollers {
        client,
        config: config.clone(),
        limit: Arc::new(Semaphore::new(config.upstream.max_concurrent_fetches)),
        warm: warm.clone(),
        tasks: shutdown.tasks.clone(),
        runner: fleet.clone().map(sources::fleet::environment::runner),
    });
    if let Some(pollers) = &pollers {
        for slot in store.environments() {
            pollers.spawn(slot.clone());
        }
    }

    let streams = Arc::new(streams::Streams::new(&config, &store));
    if let (Some(proxy_key), Some(pollers)) = (&config.environments.proxy_key, &pollers) {
        // The first listing is awaited (bounded by the poll timeout), so that the environments
        // it names are known before requests are served.
        let mut discovery = sources::discovery::Discovery::new(
            proxy_key.clone(),
            store.clone(),
            streams.clone(),
            pollers.clone(),
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
        let upstream = pollers.as_ref().map(|p| analytics::forward::Upstream {
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
            let client = pollers
                .as_ref()
                .map_or_else(upstream::client, |p| p.client.clone());
            shadow::Shadow::start(&config, client, shutdown.requested.clone())
        })
        .flatten();
    let state = api::AppState {
        store: store.clone(),
        config: config.clone(),
        streams,
        analytics,
        shadow,
    };
    let grpc = grpc_listener.map(|listener| {
        if let Ok(address) = listener.local_addr() {
            tracing::info!(%address, "flagd (gRPC) listening");
        }
        let flagd = api::flagd::Flagd::new(state.clone(), shutdown.requested.clone());
        tokio::spawn(server::grpc::serve(
            listener,
            flagd,
            config.clone(),
            shutdown.requested.clone(),
        ))
    });
    let api = api::Api::new(state);
    let requested = shutdown.requested.clone();
    tokio::spawn(async move {
        shutdown::signal().await;
        tracing::info!("shutting down: draining requests in flight");
        requested.cancel();
    });
    // The drain and the background work's last steps share one budget.
    let listeners = server::Listeners {
        main: listener,
        tls,
        plain,
    };
    let deadline = server::serve(listeners, api, &config, shutdown.requested.clone()).await;
    if let Some(grpc) = grpc {
        let _ = tokio::time::timeout_at(deadline.into(), grpc).await;
    }
    shutdown.finish(deadline).await;
    Ok(())
}

async fn bind(host: &str, port: u16) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| format!("cannot listen on {host}:{port}: {e}"))
}

enum Plan {
    Embedded,
    /// A local file, and its bytes as read at start.
    File(PathBuf, bytes::Bytes),
    Upstream,
}

/// What start-up loads in parallel before the first polls.
enum StartLoad {
    File(Arc<EnvSlot>, PathBuf, bytes::Bytes),
    Warm(Arc<EnvSlot>),
}

/// Each environment and how its first document arrives.
type StartPlan = Vec<(Arc<EnvSlot>, Plan)>;

/// Environments from the config: local files first (their client key is their `api_key`), then
/// upstream pairs not covered by a file; the bundled example when the start plan says so.
fn build_store(
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
