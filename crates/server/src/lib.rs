//! Flagpole's proxy: a drop-in Flagsmith Edge Proxy built on immutable, pre-serialised
//! snapshots. Flow: a source (upstream poll, local file, warm-start file) yields a document →
//! the engine compiles it → a [`Snapshot`](snapshot::Snapshot) pre-serialises every
//! caller-independent response → the [`Store`](store::Store) swaps it in atomically → a request
//! looks up its key, evaluates only what depends on the identity, and writes bytes.

// Without `bench`, the items the benchmarks reach stay `pub` in their modules but unexported;
// the workspace's lint runs with `bench` on (the bench crates enable it), where they are reached.
#![cfg_attr(
    not(feature = "bench"),
    allow(unreachable_pub, reason = "pub only for the `bench` feature's exports")
)]

// Layers, each depending only on those listed before it (ARCHITECTURE.md, "Invariants"):
// foundations …
mod background;
mod body;
mod canonical;
mod canonical_text;
pub use flagpole_config as config;
mod json;
mod keys;
mod logging;
mod memory;
mod rate_limit;
mod received;
mod shutdown;
mod tasks;
mod usage;
// … one environment at one revision, then all of them …
mod snapshot;
mod store;
// … what feeds and watches the store …
mod analytics;
mod flagsets;
mod shadow;
mod sources;
mod streams;
mod telemetry;
mod unleash;
// … the vendor-neutral OpenFeature layer every OpenFeature front door resolves through …
mod openfeature;
// … the front doors, and the listener they are served on.
mod api;
mod server;
// … the flagd front door, with a listener of its own.
mod flagd;
// … what `serve` (and `flagpole check`) checks before it listens, and what `serve` prints once
// it listens.
mod banner;
mod phases;
mod preflight;

// The public API, and all of it: what the `flagpole` binary (`serve`, `check`, `eval`,
// `health`) uses. Everything else is crate-private.
pub use background::blocking_threads;
pub use config::ServeOptions;
pub use logging::fatal;
pub use memory::{configure_allocator, on_worker_park, set_thread_cache_flush};
pub use received::{Received, Rejected};
pub use snapshot::{identity_response, KeyKind, Snapshot};

// What the benchmarks measure besides (snapshot builds, identity caching, the store's memory):
// only with the `bench` feature, so that the binary's API stays the list above.
#[cfg(feature = "bench")]
pub use api::flagsmith::identities::IdentityRequest;
#[cfg(feature = "bench")]
pub use body::{Encoding, PreparedBody};
#[cfg(feature = "bench")]
pub use received::Incoming;
#[cfg(feature = "bench")]
pub use snapshot::etag_memo::EtagMemo;
#[cfg(feature = "bench")]
pub use snapshot::identity_cache;
#[cfg(feature = "bench")]
pub use store::{build_snapshot, EnvSlot, Source, Store};

use std::sync::Arc;

use crate::phases::{
    build_store, front_doors, listen, load_documents, run, start_fleet, start_polling, warm_start,
};
use crate::shutdown::Shutdown;

/// Every check `serve` makes before it listens beyond the configuration's own (documents, TLS
/// files, the snapshot directory): what `flagpole check` runs so that it passes only when `serve`
/// would start. It creates and writes nothing.
pub fn preflight(config: &config::Config) -> Result<(), String> {
    preflight::run(config, preflight::Mode::Look).map(drop)
}

/// Runs the proxy until SIGINT/SIGTERM, in start-up phases: configuration, the store and its
/// environments, the ports, the first documents, polling, the front doors, then serving until
/// the drain. Errors are start-up errors (bad config, port in use).
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
    let shutdown = Shutdown::new();
    telemetry::init(&config, &shutdown);

    let example = startup.plan.example != config::Example::No;
    // What would stop the start is found before anything listens (as `flagpole check` finds it).
    let ready = preflight::run(&config, preflight::Mode::Serve)?;
    let (store, plan) = build_store(&config, ready.documents, example, &shutdown)?;
    let store = Arc::new(store);
    let ports = listen(&config, ready.tls.map(Arc::new)).await?;
    if let Some(tls) = &ports.tls {
        shutdown.spawn(tls.clone().watch(shutdown.requested.clone()));
    }
    let warm = warm_start(&config)?;
    load_documents(plan, warm.clone(), &shutdown).await?;
    let (fleet, from_fleet) = start_fleet(&config, &store, warm.as_deref(), &shutdown).await?;
    // flagd flag sets: the files the preflight compiled, warm-start copies of URL sources, then
    // the watcher and a poller per URL (in a fleet, one per URL across the fleet).
    let flag_sets =
        flagsets::sources::start(&config, ready.flags, warm.clone(), fleet.clone(), &shutdown)
            .await?;
    // Unleash toggles: the files the preflight compiled, then watched; or the upstream polled
    // (its warm-start copies served first; in a fleet, one poller per token across the fleet).
    let unleash = match ready.unleash {
        Some(loaded) => Some(
            unleash::sources::start(
                loaded,
                &config.unleash,
                warm.clone(),
                fleet.clone(),
                &shutdown,
            )
            .await,
        ),
        None => None,
    };
    // Once the start-up loads are done, so that it says where each document came from.
    banner::print(
        &store,
        ports.address,
        ports.tls.is_some(),
        &startup.plan,
        config.logging.json,
        &from_fleet,
    );
    let pollers = start_polling(&config, &store, warm, fleet.clone(), &shutdown);
    // Which documents are stale (OpenFeature answers say so), judged as readiness judges.
    shutdown.spawn(
        store
            .clone()
            .judge_staleness_until_shutdown(store::StaleRule::of(&config)),
    );
    let state = front_doors(
        &config,
        &store,
        pollers.as_ref(),
        fleet,
        flag_sets,
        &shutdown,
    )
    .await;
    run(ports, state, unleash, &config, &shutdown).await;
    Ok(())
}
