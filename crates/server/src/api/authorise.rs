//! The one authorisation step every front door takes: key → environment → rate limit → kind
//! of key (→ snapshot). Refusals are counted: an unknown key once for the process, the rest on
//! the environment the key reached. How the key is presented (which header, the URL) and how a
//! refusal reads are each API's own; the order of the checks and what they consult are shared
//! here, so a request is limited and counted alike whichever door it came in by.

use std::sync::Arc;

use crate::keys::KeyKind;
use crate::snapshot::Snapshot;
use crate::store::{EnvSlot, Store};

/// Which API is asking: each has its own rate-limit bucket per key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Flagsmith,
    Ofrep,
}

/// What a front door accepts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gate {
    pub family: Family,
    pub client_keys: bool,
    pub server_keys: bool,
}

/// A key accepted: its kind and its environment, whose document may not have arrived yet.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub kind: KeyKind,
    pub env: Arc<EnvSlot>,
}

/// A key accepted, with its environment's current snapshot.
#[derive(Debug)]
pub(crate) struct Authorised {
    pub kind: KeyKind,
    pub env: Arc<EnvSlot>,
    pub snapshot: Arc<Snapshot>,
}

/// Why a key was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    UnknownKey,
    /// Over the key's rate: retry after this many whole seconds.
    RateLimited(u64),
    /// A kind of key this front door does not accept.
    KindNotAllowed,
    /// The environment's first document has not arrived yet.
    NotLoaded,
}

/// The checks that need no document: the key is known, within its rate, and of a kind the door
/// accepts. For what works before an environment's document arrives (flag analytics, change
/// streams); everything that answers from the document takes [`authorise`].
pub(crate) fn admit(store: &Store, key: &str, gate: Gate) -> Result<Admitted, Refusal> {
    let Some(entry) = store.lookup(key) else {
        store.unrecognised.count();
        return Err(Refusal::UnknownKey);
    };
    let limiter = match gate.family {
        Family::Flagsmith => entry.limits.flagsmith.as_ref(),
        Family::Ofrep => entry.limits.ofrep.as_ref(),
    };
    if let Err(seconds) = crate::rate_limit::check(limiter) {
        entry.env.usage.reject();
        return Err(Refusal::RateLimited(seconds));
    }
    let allowed = match entry.kind {
        KeyKind::Client => gate.client_keys,
        KeyKind::Server => gate.server_keys,
    };
    if !allowed {
        entry.env.usage.reject();
        return Err(Refusal::KindNotAllowed);
    }
    Ok(Admitted {
        kind: entry.kind,
        env: entry.env,
    })
}

/// [`admit`], then the environment's current snapshot.
pub(crate) fn authorise(store: &Store, key: &str, gate: Gate) -> Result<Authorised, Refusal> {
    let Admitted { kind, env } = admit(store, key, gate)?;
    let snapshot = env.snapshot().ok_or(Refusal::NotLoaded)?;
    Ok(Authorised {
        kind,
        env,
        snapshot,
    })
}
