//! `EventStream`: `provider_ready` at once, `configuration_change` naming the changed flags on
//! every new content revision, `keep_alive` between them (every `ofrep.sse.heartbeat_sec`), and
//! a clean end when the environment stops being served or the proxy shuts down.
//!
//! A stream opened without a key (the JS provider's) waits for its connection's first keyed
//! call to learn its environment (`peers`), saying only `provider_ready` and `keep_alive` until
//! then.
//!
//! The providers drop their cached answers for the flags a `configuration_change` names. A
//! flag's environment-level state is compared between revisions; a flag that can vary by
//! context is always named, since its segments or overrides may have changed without that
//! state changing.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use prost_types::Struct;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::peers::Waiting;
use super::{proto, Events};
use crate::api::AppState;
use crate::snapshot::Snapshot;
use crate::store::EnvSlot;

/// A flag's environment-level state and whether it can vary, to tell what changed.
type Fingerprints = HashMap<String, (u64, bool)>;

/// Whose changes a stream reports.
pub(super) enum Source {
    Env(Arc<EnvSlot>),
    /// Not known yet: the environment of the connection's first keyed call.
    Connection(Waiting),
}

/// Opens a stream of one version's messages, built by `message(type, data)`; it ends when
/// `stopping` is cancelled (shutdown) or its environment stops being served.
pub(super) fn open<T, F>(
    state: &AppState,
    source: Source,
    stopping: CancellationToken,
    message: F,
) -> Events<T>
where
    T: Send + 'static,
    F: Fn(&str, Option<Struct>) -> T + Send + 'static,
{
    // Small: a slow reader gets the latest news late, it does not queue revisions.
    let (tx, rx) = mpsc::channel(4);
    let keep_alive = Duration::from_secs(state.config.ofrep.sse.heartbeat_sec.max(1));
    // Not yet on a tracker (`crate::tasks`): the stream ends with `stopping` or its reader.
    #[allow(
        clippy::disallowed_methods,
        reason = "to move onto the shutdown's task tracker, which this module has no handle to yet"
    )]
    tokio::spawn(async move {
        if tx.send(Ok(message("provider_ready", None))).await.is_err() {
            return;
        }
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
        let env = match source {
            Source::Env(env) => env,
            Source::Connection(mut waiting) => loop {
                let event = tokio::select! {
                    () = stopping.cancelled() => return,
                    () = tx.closed() => return,
                    changed = waiting.bound.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        let bound = waiting.bound.borrow_and_update().clone();
                        match bound {
                            Some(env) => break env,
                            None => continue,
                        }
                    }
                    _ = ticks.tick() => message("keep_alive", None),
                };
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
            },
        };
        let mut revisions = env.revisions.subscribe();
        revisions.borrow_and_update();
        let mut seen = env.snapshot().map(|s| fingerprints(&s)).unwrap_or_default();
        loop {
            let event = tokio::select! {
                () = env.stop.cancelled() => break,
                () = stopping.cancelled() => break,
                () = tx.closed() => break,
                changed = revisions.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    revisions.borrow_and_update();
                    let Some(snapshot) = env.snapshot() else { continue };
                    let now = fingerprints(&snapshot);
                    let changed = changed_flags(&seen, &now);
                    seen = now;
                    message("configuration_change", Some(changed))
                }
                _ = ticks.tick() => message("keep_alive", None),
            };
            if tx.send(Ok(event)).await.is_err() {
                break;
            }
        }
    });
    Box::pin(ReceiverStream::<Result<T, Status>>::new(rx))
}

fn fingerprints(snapshot: &Snapshot) -> Fingerprints {
    let Ok(result) = snapshot.env.own_flags() else {
        return Fingerprints::new();
    };
    result
        .flags
        .iter()
        .map(|f| {
            let mut text = crate::json::to_vec(f.enabled);
            text.push(b' ');
            text.extend_from_slice(&crate::json::to_vec(f.value));
            let hash = xxhash_rust::xxh3::xxh3_64(&text);
            (f.key.to_owned(), (hash, snapshot.env.can_vary(f.key)))
        })
        .collect()
}

/// `{"flags": {<key>: {"type": "update"|"write"|"delete"}}}`: flagd's change notice.
fn changed_flags(before: &Fingerprints, after: &Fingerprints) -> Struct {
    let keys: HashSet<&String> = before.keys().chain(after.keys()).collect();
    let mut flags = BTreeMap::new();
    for key in keys {
        let kind = match (before.get(key), after.get(key)) {
            (None, Some(_)) => "write",
            (Some(_), None) => "delete",
            (Some(a), Some(b)) if a != b || a.1 || b.1 => "update",
            _ => continue,
        };
        let mut change = BTreeMap::new();
        change.insert("type".to_owned(), proto::string(kind));
        change.insert("flagKey".to_owned(), proto::string(key.clone()));
        flags.insert(
            key.clone(),
            prost_types::Value {
                kind: Some(prost_types::value::Kind::StructValue(Struct {
                    fields: change,
                })),
            },
        );
    }
    let mut data = BTreeMap::new();
    data.insert(
        "flags".to_owned(),
        prost_types::Value {
            kind: Some(prost_types::value::Kind::StructValue(Struct {
                fields: flags,
            })),
        },
    );
    Struct { fields: data }
}
