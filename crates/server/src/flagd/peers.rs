//! What one connection of the flagd listener has presented keys for, so that key-less event
//! streams on it know whose changes to report.
//!
//! The JS flagd provider (0.16.x) opens `EventStream` with no metadata at all, though its
//! resolver calls carry `flagd-selector`; grpc-js puts every provider of a process (one per
//! domain, each with its own key) on one HTTP/2 connection. So every accepted connection gets a
//! [`Connection`] (a request extension, set by the listener): each keyed call records its
//! environment there, and each key-less stream on that connection reports the changes of every
//! environment recorded — those presented before it opened and those presented later — and
//! never of one this connection has not presented a key for. The record lives exactly as long
//! as the connection, so it cannot pass to another client. (Behind an HTTP/2 proxy that pools
//! the connections of different clients, send the key on the stream as well.)

use std::sync::{Arc, Weak};

use tokio::sync::watch;

use crate::api::authorise::Authorised;
use crate::keys::KeyKind;
use crate::snapshot::Snapshot;
use crate::store::EnvSlot;

/// An environment a connection has presented a key for.
#[derive(Clone)]
pub(crate) struct Presented {
    pub env: Arc<EnvSlot>,
    /// The widest kind presented for it: client keys are told only of what they may see.
    pub kind: KeyKind,
    /// The snapshot the first such call was answered from: what came after it is news.
    pub since: Weak<Snapshot>,
}

impl Presented {
    pub(crate) fn of(authorised: &Authorised) -> Presented {
        Presented {
            env: authorised.env.clone(),
            kind: authorised.kind,
            since: Arc::downgrade(&authorised.snapshot),
        }
    }

    /// Whether this already covers a call of `kind` to `env`.
    fn covers(&self, env: &Arc<EnvSlot>, kind: KeyKind) -> bool {
        Arc::ptr_eq(&self.env, env) && (self.kind == KeyKind::Server || kind == KeyKind::Client)
    }
}

/// One connection's environments; its key-less streams watch them.
pub(crate) struct Connection {
    presented: watch::Sender<Vec<Presented>>,
}

impl Connection {
    pub(crate) fn new() -> Arc<Connection> {
        Arc::new(Connection {
            presented: watch::Sender::new(Vec::new()),
        })
    }

    /// A keyed call on this connection reached `authorised.env`. Once per environment and
    /// kind it writes; every other call only reads a short list.
    pub(crate) fn seen(&self, authorised: &Authorised) {
        let (env, kind) = (&authorised.env, authorised.kind);
        if self.presented.borrow().iter().any(|p| p.covers(env, kind)) {
            return;
        }
        self.presented.send_if_modified(|list| {
            if list.iter().any(|p| p.covers(env, kind)) {
                return false;
            }
            match list.iter_mut().find(|p| Arc::ptr_eq(&p.env, env)) {
                Some(p) => p.kind = KeyKind::Server,
                None => list.push(Presented::of(authorised)),
            }
            true
        });
    }

    /// What a key-less stream follows: the list now, and each time it grows.
    pub(crate) fn watch(&self) -> watch::Receiver<Vec<Presented>> {
        self.presented.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::received::Incoming;
    use crate::store::Source;

    async fn authorised(client_key: &str, kind: KeyKind) -> Authorised {
        let env = Arc::new(EnvSlot::new(client_key.to_owned(), Source::Embedded));
        let mut document: serde_json::Value =
            serde_json::from_str(crate::phases::EXAMPLE_DOCUMENT).unwrap();
        document["api_key"] = client_key.into();
        let document = bytes::Bytes::from(serde_json::to_vec(&document).unwrap());
        env.publish(Incoming::Bytes(document))
            .await
            .map_err(|e| e.message(client_key))
            .unwrap();
        let snapshot = env.snapshot().unwrap();
        Authorised {
            kind,
            env,
            snapshot,
        }
    }

    #[tokio::test]
    async fn a_connection_records_each_environment_once_at_its_widest_kind() {
        let connection = Connection::new();
        let mut streams = connection.watch();
        let client = authorised("one", KeyKind::Client).await;
        connection.seen(&client);
        assert!(streams.has_changed().unwrap());
        let list = streams.borrow_and_update().clone();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].kind, KeyKind::Client);
        connection.seen(&client);
        assert!(
            !streams.has_changed().unwrap(),
            "a second call adds nothing"
        );

        let server = Authorised {
            kind: KeyKind::Server,
            ..client
        };
        connection.seen(&server);
        assert_eq!(streams.borrow_and_update()[0].kind, KeyKind::Server);
        let client_again = Authorised {
            kind: KeyKind::Client,
            env: server.env.clone(),
            snapshot: server.snapshot.clone(),
        };
        connection.seen(&client_again);
        assert!(
            !streams.has_changed().unwrap(),
            "a server key covers client calls"
        );

        connection.seen(&authorised("two", KeyKind::Server).await);
        let list = streams.borrow_and_update().clone();
        let keys: Vec<&str> = list.iter().map(|p| p.env.client_key.as_str()).collect();
        assert_eq!(keys, ["one", "two"]);
        // What a stream opened later starts from.
        assert_eq!(connection.watch().borrow().len(), 2);
    }
}
