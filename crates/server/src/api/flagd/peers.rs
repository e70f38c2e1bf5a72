//! Key-less event streams, bound to the environment of their connection.
//!
//! The JS flagd provider (0.16.x) opens `EventStream` with no metadata at all, though its
//! resolver calls carry `flagd-selector`, all on one HTTP/2 connection. Such a stream is
//! accepted, says `provider_ready`, and waits: the first keyed call from the same peer
//! address (the same TCP connection) binds it to that call's environment, and from then on it
//! reports that environment's changes. Nothing about any environment reaches a caller that never
//! presented a key. (Behind an HTTP/2 proxy that pools connections, send a key on the stream.)

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::store::EnvSlot;

/// Where a waiting stream learns its environment.
type Binding = watch::Sender<Option<Arc<EnvSlot>>>;

/// Waiting (or bound) key-less streams by peer address.
#[derive(Default)]
pub(super) struct Peers {
    waiting: Mutex<HashMap<SocketAddr, (u64, Binding)>>,
    /// How many there are: a keyed call looks further only when some exist.
    count: AtomicUsize,
    next_id: AtomicU64,
}

/// A key-less stream's place in [`Peers`]; removed when dropped.
pub(super) struct Waiting {
    peers: Arc<Peers>,
    peer: SocketAddr,
    id: u64,
    pub bound: watch::Receiver<Option<Arc<EnvSlot>>>,
}

impl Peers {
    /// Registers a key-less stream from `peer`.
    pub(super) fn wait(self: &Arc<Self>, peer: SocketAddr) -> Waiting {
        let (tx, rx) = watch::channel(None);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if self.waiting.lock().insert(peer, (id, tx)).is_none() {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        Waiting {
            peers: self.clone(),
            peer,
            id,
            bound: rx,
        }
    }

    /// A keyed call from `peer` reached `env`: binds a stream waiting on that connection.
    pub(super) fn seen(&self, peer: Option<SocketAddr>, env: &Arc<EnvSlot>) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Some(peer) = peer else { return };
        if let Some((_, tx)) = self.waiting.lock().get(&peer) {
            tx.send_if_modified(|bound| {
                if bound.as_ref().is_some_and(|b| Arc::ptr_eq(b, env)) {
                    return false;
                }
                *bound = Some(env.clone());
                true
            });
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut waiting = self.peers.waiting.lock();
        // Only our own entry: a newer stream from the same peer may have replaced it.
        if waiting
            .get(&self.peer)
            .is_some_and(|(id, _)| *id == self.id)
        {
            waiting.remove(&self.peer);
            self.peers.count.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
