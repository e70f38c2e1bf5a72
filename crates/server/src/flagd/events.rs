//! `EventStream`: `provider_ready` at once (on every connect, so a provider that reconnects
//! knows it is back), then a `configuration_change` naming every flag of the environments the
//! stream follows already, `configuration_change` naming the changed flags on every new content
//! revision of one of them, `keep_alive` between them (every `ofrep.sse.heartbeat_sec`), and
//! `UNAVAILABLE` when the proxy shuts down or a keyed stream's environment stops being served.
//!
//! The first notice is for reconnects: the Python and Java providers keep their cached answers
//! over a reconnect shorter than their grace period, and a flag may have changed meanwhile (the
//! proxy restarted with a newer document); a provider connecting for the first time has nothing
//! cached to drop. The end is an error on purpose: the providers reconnect on a stream error,
//! while a stream that ends cleanly leaves the JS provider with no stream at all and its cached
//! answers served for good.
//!
//! A keyed stream follows its key's environment. A key-less stream (the JS provider's) follows
//! every environment its connection's keyed calls present (`peers`), from the snapshot each was
//! first answered from, saying only `provider_ready` and `keep_alive` until there is one.
//!
//! The providers drop their cached answers for the flags a `configuration_change` names: which
//! those are is the OpenFeature layer's to say (`openfeature::changes`), per engine.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::tasks::Tasks;
use prost_types::Struct;
use tokio::sync::{mpsc, watch};
use tokio::time::Interval;
use tokio_stream::wrappers::{ReceiverStream, WatchStream};
use tokio_stream::{StreamExt, StreamMap};
use tokio_util::sync::CancellationToken;
use tonic::Status;

mod sets;

use super::peers::Presented;
use super::{proto, Events};
use crate::api::AppState;
use crate::openfeature::changes::{Change, Fingerprints, Memo};

/// Whose changes a stream reports.
pub(super) enum Source {
    /// The stream's own key.
    Key(Presented),
    /// No key: every environment its connection presents a key for, now or later.
    Connection(watch::Receiver<Vec<Presented>>),
    /// The flag set a selector picks (`None`: every source merged).
    FlagSet(Option<String>),
    /// An Unleash token's toggles: `provider_ready` and keep-alives, so a provider is ready;
    /// no change notices follow them yet.
    Toggles,
}

/// What the stream tasks of one front door share: each snapshot's fingerprints, computed once
/// however many streams follow its environment.
#[derive(Default)]
pub(super) struct Shared {
    fingerprints: Memo,
}

/// An environment a stream follows, and the flags as it last told them.
struct Followed {
    presented: Presented,
    told: Arc<Fingerprints>,
    /// Whether the document was stale when the flags were last told.
    told_stale: bool,
}

/// Opens a stream of one version's messages, built by `message(type, data)`; its task runs on
/// `tasks` (the proxy's exit waits for it) and ends when `stopping` is cancelled.
pub(super) fn open<T, F>(
    state: &AppState,
    tasks: &Tasks,
    shared: Arc<Shared>,
    source: Source,
    stopping: CancellationToken,
    message: F,
) -> Events<T>
where
    T: Send + 'static,
    F: Fn(&str, Option<Struct>) -> T + Send + Sync + 'static,
{
    // Small: a slow reader gets the latest news late, it does not queue revisions.
    let (tx, rx) = mpsc::channel(4);
    let keep_alive = Duration::from_secs(state.config.ofrep.sse.heartbeat_sec.max(1));
    let flag_sets = state.flag_sets.clone();
    tasks.spawn(async move {
        let end = match source {
            Source::FlagSet(selector) => {
                let set = crate::openfeature::changes::FlagSetFollower::new(&flag_sets, selector);
                sets::run(&tx, set, &stopping, keep_alive, &message).await
            }
            source => run(&tx, &shared, source, &stopping, keep_alive, &message).await,
        };
        if let Err(status) = end {
            let _ = tx.send(Err(status)).await;
        }
    });
    Box::pin(ReceiverStream::<Result<T, Status>>::new(rx))
}

/// The stream's life; `Err` is the status it ends with, `Ok` that the caller left.
async fn run<T, F>(
    tx: &mpsc::Sender<Result<T, Status>>,
    shared: &Shared,
    source: Source,
    stopping: &CancellationToken,
    keep_alive: Duration,
    message: &F,
) -> Result<(), Status>
where
    F: Fn(&str, Option<Struct>) -> T + Sync,
{
    let Some(mut ticks) = ready(tx, keep_alive, message).await else {
        return Ok(());
    };
    let (keyed, mut presented) = match source {
        Source::Key(p) => (Some(p), None),
        Source::Connection(rx) => (None, Some(rx)),
        Source::FlagSet(_) | Source::Toggles => (None, None),
    };
    let mut followed: Vec<Followed> = Vec::new();
    let mut revisions = StreamMap::new();
    // `at_open`: what the provider may hold is unknown (a provider reconnecting keeps the
    // answers it cached before), so every flag is news.
    let learn = |list: &[Presented],
                 at_open: bool,
                 followed: &mut Vec<Followed>,
                 revisions: &mut StreamMap<usize, _>| {
        let mut news = Vec::new();
        for p in list {
            match followed
                .iter_mut()
                .find(|f| Arc::ptr_eq(&f.presented.env, &p.env))
            {
                Some(f) => f.presented.kind = p.kind,
                None => {
                    let told = match p.since.upgrade() {
                        Some(snapshot) if !at_open => shared.fingerprints.fingerprints(&snapshot),
                        // At open, or that snapshot is gone (replaced since): all is news.
                        _ => Arc::default(),
                    };
                    let since = p.since.clone();
                    revisions.insert(
                        followed.len(),
                        WatchStream::from_changes(p.env.revisions.subscribe()),
                    );
                    followed.push(Followed {
                        told_stale: p.env.is_stale(),
                        presented: p.clone(),
                        told,
                    });
                    // Published between that call and now: news at once.
                    let current = p.env.snapshot();
                    if at_open
                        || current.is_some_and(|c| !std::ptr::eq(since.as_ptr(), Arc::as_ptr(&c)))
                    {
                        news.push(followed.len() - 1);
                    }
                }
            }
        }
        news
    };
    let mut news = match (&keyed, &mut presented) {
        (Some(p), _) => learn(std::slice::from_ref(p), true, &mut followed, &mut revisions),
        (None, Some(rx)) => {
            let list = rx.borrow_and_update().clone();
            learn(&list, true, &mut followed, &mut revisions)
        }
        (None, None) => Vec::new(),
    };
    let stop = keyed.as_ref().map(|p| p.env.stop.clone());
    loop {
        for index in news.drain(..) {
            if let Some(data) = tell(shared, &mut followed[index]) {
                if !send(tx, message("configuration_change", Some(data))).await {
                    return Ok(());
                }
            }
        }
        tokio::select! {
            biased;
            () = stopping.cancelled() => {
                return Err(Status::unavailable("the proxy is shutting down: reconnect"));
            }
            () = stopped(&stop) => {
                return Err(Status::unavailable("this environment is no longer served here"));
            }
            () = tx.closed() => return Ok(()),
            Some(list) = grown(&mut presented) => {
                news = learn(&list, false, &mut followed, &mut revisions);
            }
            Some((index, _)) = revisions.next() => news.push(index),
            _ = ticks.tick() => {
                if !send(tx, message("keep_alive", None)).await {
                    return Ok(());
                }
            }
        }
    }
}

/// What every stream does first: `provider_ready`, then the keep-alive ticks (the first one a
/// period from now); `None`: the caller left.
async fn ready<T, F>(
    tx: &mpsc::Sender<Result<T, Status>>,
    keep_alive: Duration,
    message: &F,
) -> Option<Interval>
where
    F: Fn(&str, Option<Struct>) -> T,
{
    if !send(tx, message("provider_ready", None)).await {
        return None;
    }
    Some(tokio::time::interval_at(
        tokio::time::Instant::now() + keep_alive,
        keep_alive,
    ))
}

/// Sends one message; `false`: the caller left.
async fn send<T>(tx: &mpsc::Sender<Result<T, Status>>, event: T) -> bool {
    tx.send(Ok(event)).await.is_ok()
}

/// Completes when the keyed stream's environment stops being served (never for a key-less one).
async fn stopped(stop: &Option<CancellationToken>) {
    match stop {
        Some(stop) => stop.cancelled().await,
        None => std::future::pending().await,
    }
}

/// The connection's list once it has changed (never for a keyed stream, nor once the
/// connection is gone).
async fn grown(presented: &mut Option<watch::Receiver<Vec<Presented>>>) -> Option<Vec<Presented>> {
    let Some(rx) = presented else {
        return std::future::pending().await;
    };
    if rx.changed().await.is_err() {
        return std::future::pending().await;
    }
    Some(rx.borrow_and_update().clone())
}

/// The change notice for a followed environment's current snapshot, if it names anything.
fn tell(shared: &Shared, followed: &mut Followed) -> Option<Struct> {
    let snapshot = followed.presented.env.snapshot()?;
    let now = shared.fingerprints.fingerprints(&snapshot);
    let stale = followed.presented.env.is_stale();
    let switched = stale != followed.told_stale;
    let changes = followed
        .told
        .changed(&now, followed.presented.kind, switched);
    followed.told = now;
    followed.told_stale = stale;
    notice(changes)
}

/// flagd's change notice naming these flags with their kind of change; `None` for none.
fn notice(changes: Vec<(String, Change)>) -> Option<Struct> {
    let mut flags = BTreeMap::new();
    for (key, change) in changes {
        let mut fields = BTreeMap::new();
        fields.insert("type".to_owned(), proto::string(change.as_str()));
        fields.insert("flagKey".to_owned(), proto::string(&key));
        flags.insert(key, structure(fields));
    }
    if flags.is_empty() {
        return None;
    }
    let mut data = BTreeMap::new();
    data.insert("flags".to_owned(), structure(flags));
    Some(Struct { fields: data })
}

fn structure(fields: BTreeMap<String, prost_types::Value>) -> prost_types::Value {
    prost_types::Value {
        kind: Some(prost_types::value::Kind::StructValue(Struct { fields })),
    }
}
