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
//! The providers drop their cached answers for the flags a `configuration_change` names. A
//! flag's environment-level state is compared between revisions; a flag that can vary by
//! context is always named, since its segments or overrides may have changed without that
//! state changing. A client key is told only of the flags it may see. When the document turns
//! stale, or fresh again, every flag is named: each answer's reason changes (`STALE`), and a
//! provider must not keep serving the `STATIC` answer it cached before.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::tasks::Tasks;
use parking_lot::Mutex;
use prost_types::Struct;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::{ReceiverStream, WatchStream};
use tokio_stream::{StreamExt, StreamMap};
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::peers::Presented;
use super::{proto, Events};
use crate::api::AppState;
use crate::snapshot::{KeyKind, Snapshot};

/// Per flag: its environment-level state (hashed), whether it can vary, whether client keys
/// see it.
type Fingerprints = HashMap<String, (u64, bool, bool)>;

/// Whose changes a stream reports.
pub(super) enum Source {
    /// The stream's own key.
    Key(Presented),
    /// No key: every environment its connection presents a key for, now or later.
    Connection(watch::Receiver<Vec<Presented>>),
}

/// What the stream tasks of one front door share: each snapshot's fingerprints, computed once
/// however many streams follow its environment.
#[derive(Default)]
pub(super) struct Shared {
    /// By snapshot address; the weak pointer keeps the address from being reused meanwhile.
    fingerprints: Mutex<HashMap<usize, Known>>,
}

type Known = (Weak<Snapshot>, Arc<Fingerprints>);

impl Shared {
    fn fingerprints(&self, snapshot: &Arc<Snapshot>) -> Arc<Fingerprints> {
        let key = Arc::as_ptr(snapshot) as usize;
        if let Some((_, known)) = self.fingerprints.lock().get(&key) {
            return known.clone();
        }
        let computed = Arc::new(fingerprints(snapshot));
        let mut all = self.fingerprints.lock();
        all.retain(|_, (snapshot, _)| snapshot.strong_count() > 0);
        all.insert(key, (Arc::downgrade(snapshot), computed.clone()));
        computed
    }
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
    tasks.spawn(async move {
        if let Err(status) = run(&tx, &shared, source, &stopping, keep_alive, &message).await {
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
    let send = |event| async move { tx.send(Ok(event)).await.is_ok() };
    if !send(message("provider_ready", None)).await {
        return Ok(());
    }
    let (keyed, mut presented) = match source {
        Source::Key(p) => (Some(p), None),
        Source::Connection(rx) => (None, Some(rx)),
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
                        Some(snapshot) if !at_open => shared.fingerprints(&snapshot),
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
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
    loop {
        for index in news.drain(..) {
            if let Some(data) = tell(shared, &mut followed[index]) {
                if !send(message("configuration_change", Some(data))).await {
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
                if !send(message("keep_alive", None)).await {
                    return Ok(());
                }
            }
        }
    }
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
    let now = shared.fingerprints(&snapshot);
    let stale = followed.presented.env.is_stale();
    let switched = stale != followed.told_stale;
    let notice = changed_flags(&followed.told, &now, followed.presented.kind, switched);
    followed.told = now;
    followed.told_stale = stale;
    notice
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
            let client_sees = snapshot.is_visible(KeyKind::Client, f.key, f.enabled);
            (
                f.key.to_owned(),
                (hash, snapshot.env.can_vary(f.key), client_sees),
            )
        })
        .collect()
}

/// `{"flags": {<key>: {"type": "update"|"write"|"delete"}}}`, flagd's change notice, of the
/// flags a key of `kind` sees before or after (`every`: each one it sees, changed or not);
/// `None` when there are none.
fn changed_flags(
    before: &Fingerprints,
    after: &Fingerprints,
    kind: KeyKind,
    every: bool,
) -> Option<Struct> {
    let sees = |f: &&(u64, bool, bool)| kind == KeyKind::Server || f.2;
    let keys: HashSet<&String> = before.keys().chain(after.keys()).collect();
    let mut flags = BTreeMap::new();
    for key in keys {
        let change = match (before.get(key).filter(sees), after.get(key).filter(sees)) {
            (None, Some(_)) => "write",
            (Some(_), None) => "delete",
            (Some(a), Some(b)) if every || a != b || a.1 || b.1 => "update",
            _ => continue,
        };
        let mut fields = BTreeMap::new();
        fields.insert("type".to_owned(), proto::string(change));
        fields.insert("flagKey".to_owned(), proto::string(key.clone()));
        flags.insert(key.clone(), structure(fields));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(notice: Option<Struct>) -> Vec<(String, String)> {
        let Some(notice) = notice else {
            return Vec::new();
        };
        let Some(prost_types::value::Kind::StructValue(flags)) =
            notice.fields["flags"].kind.clone()
        else {
            panic!("no flags");
        };
        flags
            .fields
            .into_iter()
            .map(|(key, change)| {
                let Some(prost_types::value::Kind::StructValue(change)) = change.kind else {
                    panic!("not a struct");
                };
                let Some(prost_types::value::Kind::StringValue(kind)) =
                    change.fields["type"].kind.clone()
                else {
                    panic!("no type");
                };
                (key, kind)
            })
            .collect()
    }

    fn prints(entries: &[(&str, u64, bool, bool)]) -> Fingerprints {
        entries
            .iter()
            .map(|&(k, h, vary, client)| (k.to_owned(), (h, vary, client)))
            .collect()
    }

    #[test]
    fn a_notice_names_what_changed_as_the_key_sees_it() {
        let before = prints(&[
            ("same", 1, false, true),
            ("changed", 1, false, true),
            ("gone", 1, false, true),
            ("targeted", 1, true, true),
            ("secret", 1, false, false),
        ]);
        let after = prints(&[
            ("same", 1, false, true),
            ("changed", 2, false, true),
            ("new", 1, false, true),
            ("targeted", 1, true, true),
            ("secret", 2, false, false),
        ]);
        let server = names(changed_flags(&before, &after, KeyKind::Server, false));
        let want = |list: &[(&str, &str)]| {
            list.iter()
                .map(|(k, t)| (k.to_string(), t.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            server,
            want(&[
                ("changed", "update"),
                ("gone", "delete"),
                ("new", "write"),
                ("secret", "update"),
                ("targeted", "update"),
            ])
        );
        let client = names(changed_flags(&before, &after, KeyKind::Client, false));
        assert_eq!(
            client,
            want(&[
                ("changed", "update"),
                ("gone", "delete"),
                ("new", "write"),
                ("targeted", "update"),
            ])
        );
        let only_secret = prints(&[("secret", 3, false, false)]);
        let before_secret = prints(&[("secret", 1, false, false)]);
        assert!(changed_flags(&before_secret, &only_secret, KeyKind::Client, false).is_none());
        // Nothing known before (that snapshot is gone): everything it sees is news.
        let all = names(changed_flags(
            &Fingerprints::new(),
            &after,
            KeyKind::Client,
            false,
        ));
        assert_eq!(all.len(), 4, "{all:?}");
        // A stale switch: every flag the key sees, unchanged ones too.
        let switched = names(changed_flags(&after, &after, KeyKind::Client, true));
        assert_eq!(
            switched,
            want(&[
                ("changed", "update"),
                ("new", "update"),
                ("same", "update"),
                ("targeted", "update"),
            ])
        );
    }
}
