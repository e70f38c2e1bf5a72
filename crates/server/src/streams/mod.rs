//! Change streams, for both protocols that speak Server-Sent Events: OFREP's
//! (`GET /ofrep/v1/events?t=<token>&since=<id>`) and the Flagsmith SDKs' real-time stream. The
//! store announces each new content revision in a plain per-environment cell; this module turns
//! it into each protocol's bytes (`event`), keeps the open-connection count under its cap, and
//! serves each connection's body (`body`).
//!
//! `EventSource` cannot send headers, so an OFREP credential rides in the URL: a token derived
//! from the client key with HMAC, equal on every replica, revealing nothing about the key.

mod body;
mod event;

pub(crate) use body::EventStream;
pub(crate) use event::{event_id, Format};

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use base64::Engine as _;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio_stream::wrappers::WatchStream;

use crate::store::{EnvSlot, Store};
use body::{Announcements, OpenGuard};
use flagpole_config::Config;

/// Per-environment stream facts, fixed at start: the URL token and the ETag settings hash
/// (which includes the token, so a rotated secret changes every ETag).
#[derive(Debug)]
pub(crate) struct EnvStream {
    pub token: String,
    pub etag_settings: String,
    /// The environment's latest announcement, rendered once for all its streams.
    announcements: Arc<Announcements>,
}

/// Every environment's stream facts and the open-connection count.
#[derive(Debug)]
pub(crate) struct Streams {
    tokens: ArcSwap<Tokens>,
    /// `ofrep.sse.secret`, and the settings every ETag hashes.
    secret: Option<String>,
    ofrep: flagpole_config::OfrepConfig,
    /// The settings tag of an ETag with no stream token (flag sets, an environment added
    /// later): the same for every request, so computed once.
    keyless_settings: String,
    open: Arc<AtomicUsize>,
}

/// Stream facts per client key and the environment each token opens (replaced whole when an
/// environment is added or removed).
#[derive(Clone, Debug, Default)]
struct Tokens {
    by_client_key: HashMap<String, Arc<EnvStream>>,
    by_token: HashMap<String, Arc<EnvSlot>>,
}

impl Streams {
    pub(crate) fn new(config: &Config, store: &Store) -> Streams {
        let streams = Streams {
            tokens: ArcSwap::default(),
            secret: config.ofrep.sse.secret.clone(),
            ofrep: config.ofrep.clone(),
            keyless_settings: crate::canonical::settings_tag(&config.ofrep, None),
            open: Arc::new(AtomicUsize::new(0)),
        };
        // One table for all the configured environments (registering them one at a time would
        // copy it once per environment).
        let server_keys: HashMap<&str, &str> = config
            .environments
            .key_pairs
            .iter()
            .rev() // the first pair of a client key wins, as it always has
            .map(|p| (p.client_side_key.as_str(), p.server_side_key.as_str()))
            .collect();
        let mut tokens = Tokens::default();
        for env in store.environments() {
            let configured = server_keys.get(env.client_key.as_str()).copied();
            streams.insert(&mut tokens, &env, configured);
        }
        streams.tokens.store(Arc::new(tokens));
        streams
    }

    /// The settings every ETag without a stream token hashes (`canonical::settings_tag`).
    pub(crate) fn keyless_settings(&self) -> &str {
        &self.keyless_settings
    }

    /// Adds `env`'s stream facts to `tokens`.
    fn insert(&self, tokens: &mut Tokens, env: &Arc<EnvSlot>, configured_server_key: Option<&str>) {
        let secret = self
            .secret
            .as_deref()
            .or(configured_server_key)
            .unwrap_or(&env.client_key);
        let token = token(secret, &env.client_key);
        let etag_settings = crate::canonical::settings_tag(&self.ofrep, Some(&token));
        tokens.by_token.insert(token.clone(), env.clone());
        tokens.by_client_key.insert(
            env.client_key.clone(),
            Arc::new(EnvStream {
                token,
                etag_settings,
                announcements: Arc::default(),
            }),
        );
    }

    /// Gives `env` its token. The HMAC key: `ofrep.sse.secret`, else the environment's
    /// configured server key, else its client key (discovered environments: their server keys
    /// rotate, and a token must outlive a rotation).
    pub(crate) fn register(&self, env: &Arc<EnvSlot>, configured_server_key: Option<&str>) {
        self.tokens.rcu(|current| {
            let mut next = Tokens::clone(current);
            self.insert(&mut next, env, configured_server_key);
            next
        });
    }

    /// Forgets a removed environment's token and ends its open streams.
    pub(crate) fn unregister(&self, env: &EnvSlot) {
        self.tokens.rcu(|current| {
            let mut next = Tokens::clone(current);
            if let Some(stream) = next.by_client_key.remove(&env.client_key) {
                next.by_token.remove(&stream.token);
            }
            next
        });
        env.retire();
    }

    pub(crate) fn of(&self, client_key: &str) -> Option<Arc<EnvStream>> {
        self.tokens.load().by_client_key.get(client_key).cloned()
    }

    pub(crate) fn by_token(&self, token: &str) -> Option<Arc<EnvSlot>> {
        self.tokens.load().by_token.get(token).cloned()
    }

    /// Open streams now.
    pub(crate) fn open_count(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Opens a stream on `env` if under `max` connections. `last_id` is what an OFREP client
    /// already has (`Last-Event-ID`, else `since`); a Flagsmith SDK is always sent the current
    /// change (it compares `updated_at` with its own document's).
    pub(crate) fn open(
        &self,
        env: &EnvSlot,
        format: Format,
        last_id: Option<&str>,
        heartbeat: Duration,
        max: usize,
    ) -> Option<EventStream> {
        let announcements = self
            .of(&env.client_key)
            .map_or_else(Arc::default, |s| s.announcements.clone());
        let followed = Followed {
            revisions: env.revisions.subscribe(),
            stop: env.stop.clone(),
            announcements,
        };
        self.open_on(followed, format, last_id, heartbeat, max)
    }

    /// Opens an OFREP stream on a flagd flag set's revisions (`flagsets`), ending at `stop`.
    pub(crate) fn open_flag_set(
        &self,
        revisions: tokio::sync::watch::Receiver<Option<Arc<crate::store::Revision>>>,
        stop: tokio_util::sync::CancellationToken,
        last_id: Option<&str>,
        heartbeat: Duration,
        max: usize,
    ) -> Option<EventStream> {
        let followed = Followed {
            revisions,
            stop,
            announcements: Arc::default(),
        };
        self.open_on(followed, Format::Ofrep, last_id, heartbeat, max)
    }

    fn open_on(
        &self,
        followed: Followed,
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
        let Followed {
            revisions,
            stop,
            announcements,
        } = followed;
        let current = revisions.borrow().clone();
        let mut first = b"retry: 5000\n: flagpole change stream\n\n".to_vec();
        let told = current.clone();
        if let Some(current) = current {
            let send = match format {
                Format::Ofrep => event::catch_up(last_id, &current),
                Format::Flagsmith => true,
            };
            if send {
                first.extend_from_slice(&announcements.of(&current).bytes(format));
            }
        }
        let start = tokio::time::Instant::now() + heartbeat;
        let mut ticks = tokio::time::interval_at(start, heartbeat);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Some(EventStream {
            format,
            first: Some(Bytes::from(first)),
            changes: WatchStream::from_changes(revisions),
            told,
            announcements,
            stopped: Box::pin(stop.cancelled_owned()),
            ticks,
            _guard: guard,
        })
    }
}

/// What a stream follows: a revision cell, when it ends, and the shared renderings.
struct Followed {
    revisions: tokio::sync::watch::Receiver<Option<Arc<crate::store::Revision>>>,
    stop: tokio_util::sync::CancellationToken,
    announcements: Arc<Announcements>,
}

/// `t`: the first 22 characters of unpadded base64url of
/// HMAC-SHA256(secret, "flagpole-ofrep-sse/1\n" + client key).
pub(crate) fn token(secret: &str, client_key: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(b"flagpole-ofrep-sse/1\n");
    mac.update(client_key.as_bytes());
    let encoded =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    encoded[..22].to_owned()
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
}
