//! OFREP's change stream (spec ofrep §7): `GET /ofrep/v1/events?t=<token>&since=<id>` as
//! Server-Sent Events. Each environment has one shared "latest event" cell (a `watch` channel in
//! its `EnvSlot`); a connection holds its socket, a receiver (a pointer and a version number)
//! and a heartbeat timer: no queue, no copy of anything. Revisions that arrive faster than a
//! connection drains collapse into the latest, which is what a client needs: "refetch now".
//!
//! `EventSource` cannot send headers, so the credential rides in the URL: a token derived from
//! the client key with HMAC, equal on every replica, revealing nothing about the key.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use arc_swap::ArcSwap;
use base64::Engine as _;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use http_body::Frame;
use sha2::Sha256;
use tokio_stream::wrappers::WatchStream;
use tokio_stream::Stream;

use crate::config::Config;
use crate::snapshot::Snapshot;
use crate::store::{EnvSlot, Store};

/// One change, ready to write in each stream format.
#[derive(Debug)]
pub struct StreamEvent {
    /// `<seq>-<rev>`.
    pub id: String,
    pub seq: u64,
    pub rev: String,
    /// OFREP: `id:`, `event: message`, `data: {"type":"refetchEvaluation",…}`.
    pub bytes: Bytes,
    /// Flagsmith real-time: `event: environment_updated`, `data: {"updated_at": <seconds>}`;
    /// the SDKs refetch the environment document when it is newer than theirs.
    pub flagsmith: Bytes,
}

/// Which protocol a stream speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Ofrep,
    Flagsmith,
}

impl StreamEvent {
    /// The event announcing `snapshot`.
    pub fn announcing(snapshot: &Snapshot) -> StreamEvent {
        let seq = snapshot.updated_at_ms;
        let rev = snapshot.content_revision.clone();
        let id = format!("{seq}-{rev}");
        let mut data = serde_json::Map::new();
        data.insert("type".into(), "refetchEvaluation".into());
        data.insert("etag".into(), rev.clone().into());
        if seq > 0 {
            data.insert("lastModified".into(), (seq / 1000).into());
        }
        let text = format!(
            "id: {id}\nevent: message\ndata: {}\n\n",
            serde_json::Value::Object(data)
        );
        let flagsmith = format!(
            "event: environment_updated\ndata: {{\"updated_at\": {}}}\n\n",
            seq as f64 / 1000.0
        );
        StreamEvent {
            id,
            seq,
            rev,
            bytes: Bytes::from(text),
            flagsmith: Bytes::from(flagsmith),
        }
    }
}

/// Per-environment stream facts, fixed at start: the URL token and the ETag settings hash
/// (which includes the token, so a rotated secret changes every ETag).
#[derive(Debug)]
pub struct EnvStream {
    pub token: String,
    pub etag_settings: String,
}

/// The stream side of OFREP: tokens, open-connection count, shutdown.
#[derive(Debug)]
pub struct Streams {
    tokens: ArcSwap<Tokens>,
    /// `ofrep.sse.secret`, and the settings every ETag hashes.
    secret: Option<String>,
    ofrep: crate::config::OfrepConfig,
    open: Arc<AtomicUsize>,
    closing: tokio::sync::watch::Sender<bool>,
}

/// Stream facts per client key and the environment each token opens (replaced whole when an
/// environment is added or removed).
#[derive(Clone, Debug, Default)]
struct Tokens {
    by_client_key: HashMap<String, Arc<EnvStream>>,
    by_token: HashMap<String, Arc<EnvSlot>>,
}

impl Streams {
    pub fn new(config: &Config, store: &Store) -> Streams {
        let streams = Streams {
            tokens: ArcSwap::default(),
            secret: config.ofrep.sse.secret.clone(),
            ofrep: config.ofrep.clone(),
            open: Arc::new(AtomicUsize::new(0)),
            closing: tokio::sync::watch::Sender::new(false),
        };
        for env in store.environments() {
            let configured = config
                .environments
                .key_pairs
                .iter()
                .find(|p| p.client_side_key == env.client_key)
                .map(|p| p.server_side_key.as_str());
            streams.register(&env, configured);
        }
        streams
    }

    /// Gives `env` its token. The HMAC key: `ofrep.sse.secret`, else the environment's
    /// configured server key, else its client key (discovered environments: their server keys
    /// rotate, and a token must outlive a rotation).
    pub fn register(&self, env: &Arc<EnvSlot>, configured_server_key: Option<&str>) {
        let secret = self
            .secret
            .as_deref()
            .or(configured_server_key)
            .unwrap_or(&env.client_key);
        let token = token(secret, &env.client_key);
        let etag_settings = super::canonical::settings_tag(&self.ofrep, Some(&token));
        self.tokens.rcu(|current| {
            let mut next = Tokens::clone(current);
            next.by_token.insert(token.clone(), env.clone());
            next.by_client_key.insert(
                env.client_key.clone(),
                Arc::new(EnvStream {
                    token: token.clone(),
                    etag_settings: etag_settings.clone(),
                }),
            );
            next
        });
    }

    /// Forgets a removed environment's token and ends its open streams.
    pub fn unregister(&self, env: &EnvSlot) {
        self.tokens.rcu(|current| {
            let mut next = Tokens::clone(current);
            if let Some(stream) = next.by_client_key.remove(&env.client_key) {
                next.by_token.remove(&stream.token);
            }
            next
        });
        env.retire();
    }

    pub fn of(&self, client_key: &str) -> Option<Arc<EnvStream>> {
        self.tokens.load().by_client_key.get(client_key).cloned()
    }

    pub fn by_token(&self, token: &str) -> Option<Arc<EnvSlot>> {
        self.tokens.load().by_token.get(token).cloned()
    }

    /// Open streams now.
    pub fn open_count(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Ends every stream (shutdown).
    pub fn close_all(&self) {
        self.closing.send_replace(true);
    }

    /// Opens a stream on `env` if under `max` connections. `last_id` is what an OFREP client
    /// already has (`Last-Event-ID`, else `since`); a Flagsmith SDK is always sent the current
    /// change (it compares `updated_at` with its own document's).
    pub fn open(
        &self,
        env: &EnvSlot,
        format: Format,
        last_id: Option<&str>,
        heartbeat: Duration,
        max: usize,
    ) -> Option<EventStream> {
        if self.open.fetch_add(1, Ordering::AcqRel) >= max {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let guard = OpenGuard(self.open.clone());
        let events = env.events.subscribe();
        let current = events.borrow().clone();
        let mut first = b"retry: 5000\n: flagpole change stream\n\n".to_vec();
        match (format, current) {
            (Format::Ofrep, Some(current)) if catch_up(last_id, &current) => {
                first.extend_from_slice(&current.bytes)
            }
            (Format::Flagsmith, Some(current)) => first.extend_from_slice(&current.flagsmith),
            _ => {}
        }
        let start = tokio::time::Instant::now() + heartbeat;
        let mut ticks = tokio::time::interval_at(start, heartbeat);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Some(EventStream {
            format,
            first: Some(Bytes::from(first)),
            changes: WatchStream::from_changes(events),
            closing: WatchStream::new(self.closing.subscribe()),
            retired: WatchStream::new(env.retired.subscribe()),
            ticks,
            _guard: guard,
        })
    }
}

/// The 200 that carries a stream: never cached, never buffered by a reverse proxy.
pub fn response(body: EventStream) -> crate::http::Response {
    use http::{header, HeaderValue};
    let mut response = http::Response::new(http_body_util::Either::Right(Box::new(body)));
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Whether a client that has `last_id` should be sent `current` at once: yes unless it has it,
/// or it has seen a newer revision than this replica (which sends when it catches up).
fn catch_up(last_id: Option<&str>, current: &StreamEvent) -> bool {
    let Some((seq, rev)) = last_id.and_then(|id| id.split_once('-')) else {
        return true;
    };
    let Ok(seq) = seq.parse::<u64>() else {
        return true;
    };
    rev != current.rev && seq <= current.seq
}

/// `t`: the first 22 characters of unpadded base64url of
/// HMAC-SHA256(secret, "flagpole-ofrep-sse/1\n" + client key).
pub fn token(secret: &str, client_key: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(b"flagpole-ofrep-sse/1\n");
    mac.update(client_key.as_bytes());
    let encoded =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    encoded[..22].to_owned()
}

struct OpenGuard(Arc<AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The body of one stream: the opening lines, then events and heartbeats until shutdown or
/// until the client goes away (hyper drops the body).
pub struct EventStream {
    format: Format,
    first: Option<Bytes>,
    changes: WatchStream<Option<Arc<StreamEvent>>>,
    closing: WatchStream<bool>,
    /// The environment was removed (key discovery).
    retired: WatchStream<bool>,
    ticks: tokio::time::Interval,
    _guard: OpenGuard,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventStream")
    }
}

impl http_body::Body for EventStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        while let Poll::Ready(closing) = Pin::new(&mut this.closing).poll_next(cx) {
            if closing != Some(false) {
                return Poll::Ready(None);
            }
        }
        while let Poll::Ready(retired) = Pin::new(&mut this.retired).poll_next(cx) {
            if retired != Some(false) {
                return Poll::Ready(None);
            }
        }
        match Pin::new(&mut this.changes).poll_next(cx) {
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Ready(Some(Some(event))) => {
                this.ticks.reset();
                let bytes = match this.format {
                    Format::Ofrep => event.bytes.clone(),
                    Format::Flagsmith => event.flagsmith.clone(),
                };
                return Poll::Ready(Some(Ok(Frame::data(bytes))));
            }
            Poll::Ready(Some(None)) | Poll::Pending => {}
        }
        if this.ticks.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b": ping\n\n")))));
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_stable_short_and_keyed() {
        let t = token("ser.secret", "client-key");
        assert_eq!(t.len(), 22);
        assert_eq!(t, token("ser.secret", "client-key"));
        assert_ne!(t, token("other", "client-key"));
        assert!(t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    }

    #[test]
    fn catch_up_rules() {
        let current = StreamEvent {
            id: "2000-bbb".into(),
            seq: 2000,
            rev: "bbb".into(),
            bytes: Bytes::new(),
            flagsmith: Bytes::new(),
        };
        assert!(catch_up(None, &current));
        assert!(catch_up(Some("garbage"), &current));
        assert!(catch_up(Some("1000-aaa"), &current));
        assert!(!catch_up(Some("2000-bbb"), &current));
        assert!(!catch_up(Some("3000-ccc"), &current));
    }
}
